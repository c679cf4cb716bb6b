"""The `mem` application: registers each command module and turns errors into exit codes."""
from __future__ import annotations

import json
import sys

from memstrata import __version__

# typer and the command modules load on first use of `app` (see __getattr__ below), so that
# `mem` can hand a call to the warm service (memstrata.client, stdlib only) before importing them.

HELP = """memstrata: local, offline, persistent memory for AI agents.

Memories are Markdown files in a category tree under the root (--root, else $MEMSTRATA_HOME,
else ~/memory). Recall is semantic first (a bundled model, no network).

Examples:

\b
  mem init
  mem write "We chose Postgres for alpha" --title "DB choice" --category projects/alpha
  mem recall "which database did we pick?"
  mem list --category projects --json
"""

COMMAND_MODULES = (
    "entries", "trash", "config", "maintenance",
    # feature modules register themselves here when present
    "recall", "aging", "promotion", "versions", "agents", "service", "doctor", "secrets", "capture", "setup",
)


def _register_all(app) -> None:
    import importlib

    for name in COMMAND_MODULES:
        importlib.import_module(f"memstrata.cli.commands.{name}").register(app)


def _build_app():
    import typer

    app = typer.Typer(help=HELP, no_args_is_help=True, add_completion=False,
                      context_settings={"help_option_names": ["-h", "--help"]}, rich_markup_mode=None)

    def _version(value: bool):
        if value:
            typer.echo(f"memstrata {__version__}")
            raise typer.Exit()

    @app.callback()
    def _main(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                           help="Show the version and exit.")):
        pass

    _register_all(app)
    return app


_APP = None
_APP_LOCK = None


def __getattr__(name):
    # `from memstrata.cli.app import app` still works: the app is built on first access.
    global _APP, _APP_LOCK
    if name == "app":
        if _APP is None:
            import threading

            _APP_LOCK = _APP_LOCK or threading.Lock()
            with _APP_LOCK:
                if _APP is None:
                    _APP = _build_app()
        return _APP
    raise AttributeError(name)


_COMMAND = None
# Set by the warm service: (exception, command) -> a note for the one-line error, after logging
# the traceback (a process of its own shows no traceback, and none is kept; the service keeps one).
on_internal_error = None


def _click_command():
    """The click command of the app, built once (typer rebuilds it on every call of `app`,
    which costs tens of milliseconds per call in the long-lived service)."""
    global _COMMAND
    if _COMMAND is None:
        import typer.main

        app = __getattr__("app")
        with _APP_LOCK:
            if _COMMAND is None:
                _COMMAND = typer.main.get_command(app)
    return _COMMAND


def main(argv: list[str] | None = None) -> int:
    """Entry point of `mem`: every engine error becomes one line and a non-zero exit code.

    As a process entry point (argv None) it first offers the call to the root's warm service
    (memstrata.client); an explicit argv (tests, the service itself) always runs here.
    """
    from memstrata.service import client
    from memstrata.storage.modes import USER_UMASK_ENV

    args = client.global_options_last(list(sys.argv[1:] if argv is None else argv))
    if client.command_of(args) == "capture" and "--hook" in args and not {"--help", "-h"} & set(args):
        from memstrata.capture.hook import run  # an agent's hook: returns at once, never fails the agent

        return run(args)
    if argv is None:
        import os

        # what the engine and LanceDB create is private to the user; the user's own umask is kept for
        # the files the engine brings into an adopted vault (storage/modes.py), here and in the service
        os.environ[USER_UMASK_ENV] = oct(os.umask(0o077))
        code = client.run(args)
        if code is not None:
            return code
        if client.command_of(args) not in ("mcp", "serve"):  # servers stop as they always did
            _stop_like_ctrl_c()
    import typer

    from memstrata.cli.output import tolerant_streams
    from memstrata.errors import MemstrataError

    tolerant_streams()
    command = _click_command()
    wants_json = "--json" in args
    try:
        code = command.main(args=args, prog_name="mem", standalone_mode=False)
        sys.stdout.flush()  # a closed stdout shows here, not in the interpreter's exit
        return code if isinstance(code, int) else 0
    except BrokenPipeError:
        return _stdout_closed()
    except SystemExit as exc:
        if isinstance(exc.__context__, BrokenPipeError):  # click's own answer to EPIPE is exit 1
            return _stdout_closed()
        raise
    except MemstrataError as exc:
        _report(exc.message, exc.to_dict(), wants_json)
        return exc.exit_code
    except typer.Exit as exc:
        return exc.exit_code
    except typer.Abort:
        _report("aborted", {"error": "aborted", "message": "aborted"}, wants_json)
        return 130
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # click usage errors and anything unforeseen: still one line
        if type(exc).__name__ == "NoArgsIsHelpError":  # a bare group (`mem`, `mem config`): its help, not an error
            sys.stdout.write(exc.ctx.get_help() + "\n")
            return 0
        if isinstance(exc, _click_errors()):  # usage errors carry exit code 2
            message = _usage_line(exc)
            _report(message, {"error": "usage", "message": message}, wants_json)
            return exc.exit_code
        if isinstance(exc, OSError):
            message = f"{exc.strerror or exc}" + (f": {exc.filename}" if getattr(exc, "filename", None) else "")
        else:
            message = f"internal error: {type(exc).__name__}: {exc}"
        if on_internal_error is not None:  # the warm service: the traceback goes to its log
            message += on_internal_error(exc, client.command_of(args))
        _report(message, {"error": "internal", "message": message}, wants_json)
        return 1


def _stop_like_ctrl_c() -> None:
    """SIGTERM and SIGHUP (`timeout`, an agent's harness, a closed terminal) stop a command here as Ctrl-C
    does: its writes end as they do on KeyboardInterrupt (a batch settles, an import stops between
    model runs) instead of the process vanishing mid-write (exit 130)."""
    import signal

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    for name in ("SIGTERM", "SIGHUP"):
        try:
            if signal.getsignal(getattr(signal, name)) is signal.SIG_DFL:  # an ignored one stays so (`nohup`)
                signal.signal(getattr(signal, name), interrupt)
        except (AttributeError, ValueError, OSError):  # not on this system, or not the main thread
            pass


def _stdout_closed() -> int:
    """The reader of stdout went away (`mem ... | head -1`): end quietly, as Unix tools do (141:
    128 + SIGPIPE). Whatever the command wrote to the tree was done before its output."""
    if on_internal_error is None:  # our own process: its exit must not flush into the closed pipe again
        import os

        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
        except (OSError, ValueError):
            pass
    return 141


def _click_errors() -> tuple:
    """Click's exception base as typer raises it: recent typer versions vendor click as typer._click."""
    import importlib

    found = []
    for module in ("typer._click.exceptions", "click.exceptions"):
        try:
            found.append(importlib.import_module(module).ClickException)
        except ImportError:
            pass
    return tuple(found)


def _usage_line(exc) -> str:
    """Click's usage error as one line, naming the help of the command it was about."""
    message = " ".join(exc.format_message().split()).rstrip(".")
    ctx = getattr(exc, "ctx", None)
    if ctx is not None and getattr(exc, "exit_code", 1) == 2:
        message += f" (see `{ctx.command_path} --help`)"
    return message


def _report(message: str, data: dict, wants_json: bool) -> None:
    from memstrata.cli.output import utf8_stdout

    if wants_json:
        sys.stdout.write(json.dumps(data, ensure_ascii=not utf8_stdout(), default=str) + "\n")
    sys.stderr.write(f"mem: error: {message}\n")


if __name__ == "__main__":
    sys.exit(main())
