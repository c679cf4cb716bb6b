"""The `mem` application: registers each command module and turns errors into exit codes."""
from __future__ import annotations

import json
import sys

import typer

from memstrata import __version__

HELP = """memstrata: local, offline, persistent memory for AI agents.

Memories are Markdown files in a category tree under the root ($MEMSTRATA_HOME, else
~/memory, or --root). Recall is semantic first (a bundled model, no network).

Examples:

\b
  mem init
  mem write "We chose Postgres for alpha" --title "DB choice" --category projects/alpha
  mem recall "which database did we pick?"
  mem list --category projects --json
"""

app = typer.Typer(help=HELP, no_args_is_help=True, add_completion=False,
                  context_settings={"help_option_names": ["-h", "--help"]}, rich_markup_mode=None)

COMMAND_MODULES = (
    "entries", "trash", "config", "maintenance",
    # feature modules register themselves here when present
    "recall", "aging", "promotion", "versions", "agents", "service", "doctor",
)


def _register_all() -> None:
    import importlib

    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(f"memstrata.cli.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"memstrata.cli.commands.{name}":
                continue
            raise
        module.register(app)


def _version(value: bool):
    if value:
        typer.echo(f"memstrata {__version__}")
        raise typer.Exit()


@app.callback()
def _main(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="Show the version and exit.")):
    pass


_register_all()


def main(argv: list[str] | None = None) -> int:
    """Entry point of `mem`: every engine error becomes one line and a non-zero exit code."""
    from memstrata.errors import MemstrataError

    args = list(sys.argv[1:] if argv is None else argv)
    wants_json = "--json" in args
    try:
        app(args=args, prog_name="mem", standalone_mode=False)
        return 0
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
        import click

        if isinstance(exc, click.exceptions.UsageError):
            exc.show()
            return 2
        if isinstance(exc, click.exceptions.ClickException):
            exc.show()
            return exc.exit_code
        if isinstance(exc, OSError):
            message = f"{exc.strerror or exc}" + (f": {exc.filename}" if getattr(exc, "filename", None) else "")
        else:
            message = f"internal error: {type(exc).__name__}: {exc}"
        _report(message, {"error": "internal", "message": message}, wants_json)
        return 1


def _report(message: str, data: dict, wants_json: bool) -> None:
    if wants_json:
        sys.stdout.write(json.dumps(data, ensure_ascii=False, default=str) + "\n")
    sys.stderr.write(f"mem: error: {message}\n")


if __name__ == "__main__":
    sys.exit(main())
