"""The thin client of the local service: forwards a whole `mem` invocation over the user's socket.

Stdlib only (os, sys, socket, json, struct, fcntl), imported before typer or any command module,
so a call answered by the warm service costs one interpreter start plus one round trip.

One service per user serves every tree the user touches. Its socket is `mem.sock` in the
user's private runtime folder (rundir.py). The client resolves the root itself and refuses
a folder that is not a tree before connecting or starting anything.

Protocol (one request per connection, Unix stream socket `{runtime}/mem.sock`):

  client -> service   4-byte big-endian length + JSON
                      {"op": "run", "root", "argv", "cwd", "umask", "env", "enc", "term",
                       "ns", "paths"} (what the caller's paths name: caller_paths.py)
                      with the client's fds 0, 1, 2 attached (SCM_RIGHTS): the service's
                      worker writes straight into the caller's stdout/stderr and reads its
                      stdin, so output, isatty() and terminal size are the caller's own.
  service -> client   newline-delimited JSON: {"t": "started"} when the command begins,
                      then {"t": "exit", "code": N}; or {"t": "refused"} / {"t": "outdated"}
                      before starting (the caller then runs the call itself: also for a path
                      the service would resolve as itself, /dev/stdout, /proc/self/..., or a TZ
                      it cannot apply per call).

Results are identical with and without the service by construction: the service runs the
same `memstrata.cli.app.main(argv)` with the caller's cwd, umask and whole environment (for that
call only, and for the programs it starts). Calls that reach the network, credentials or an
identity (runs_in_caller) never go to the service: libraries such as LanceDB's object store read
the process environment natively and cache clients per process, so they run here, as the caller.

If the connection dies before "started", nothing ran: the client falls back to running the
call in-process. If it dies after, the client says so (exit 1), like a crashed process.
"""
from __future__ import annotations

import os
import socket
import stat
import sys

from memstrata.service import caller_paths, rundir
from memstrata.service.cold_hook import cold_hook
from memstrata.service.connection import (  # noqa: F401 - the client's names for its callers and tests
    CONNECT_TIMEOUT,
    Lines,
    connect,
    peer_uid,
    remove_stale_socket,
    request,
    send_message,
    untrusted_reason,
)

PROTOCOL = 2
# Commands that never go through the service (the service itself, long-lived stdio servers, and
# `setup`, which edits the caller's agent settings and needs no tree).
BYPASS = frozenset({"serve", "mcp", "setup"})
# Whole-tree scans that need no model: run in the caller, whose memory goes back at exit. Through the
# service, one `mem doctor` of 300,000 captured turns left it 2.1 GB larger for good (1.6 -> 3.7 GB
# resident), and was no faster (32 s either way).
IN_CALLER = frozenset({"doctor"})
# Calls the service stops at their next safe point when the caller goes away (Ctrl-C, a kill).
CANCELLABLE = frozenset({"import", "sync", "reindex"})
# Commands not worth starting a service for (they read the catalog only); every other command
# loads the model or opens the vector table, and a call of one starts the service on demand.
LIGHT = frozenset({"init", "list", "config", "stats", "index", "trash", "history", "serve", "mcp"})
# Command groups: named alone they print their help (or list the trash), which loads nothing.
GROUPS = frozenset({"config", "index", "review", "trash"})


GLOBAL_FLAGS = ("--json",)
GLOBAL_OPTIONS = ("--root",)


def global_options_last(argv: list[str]) -> list[str]:
    """`mem --root X --json list` as `mem list --root X --json`: the options every command takes,
    given before the command as people habitually do, moved after it (before any `--`)."""
    leading, rest, i = [], list(argv), 0
    while i < len(rest):
        arg = rest[i]
        if arg in GLOBAL_FLAGS or any(arg.startswith(o + "=") for o in GLOBAL_OPTIONS):
            leading.append(rest.pop(i))
        elif arg in GLOBAL_OPTIONS and i + 1 < len(rest):
            leading += [rest.pop(i), rest.pop(i)]
        else:
            break
    if not leading:
        return list(argv)
    cut = rest.index("--") if "--" in rest else len(rest)
    return rest[:cut] + leading + rest[cut:]


def resolve_root(argv: list[str]) -> str:
    """The root a call addresses: --root, else $MEMSTRATA_HOME, else ~/memory (as storage.tree does)."""
    chosen = None
    for i, arg in enumerate(argv):
        if arg == "--":
            break
        if arg == "--root" and i + 1 < len(argv):
            chosen = argv[i + 1]
        elif arg.startswith("--root="):
            chosen = arg[len("--root="):]
    if chosen in (None, ""):
        chosen = os.environ.get("MEMSTRATA_HOME") or "~/memory"
    return os.path.realpath(os.path.expanduser(str(chosen)))


def command_of(argv: list[str]) -> str | None:
    """The subcommand name (first argument that is not an option), if any."""
    for arg in argv:
        if arg == "--":
            return None
        if not arg.startswith("-"):
            return arg
    return None


def config_head(root: str) -> str | None:
    """The start of the root's config.md (an adopted vault's is in `.memstrata/`), or None when
    there is none (never blocks on a FIFO)."""
    from memstrata.storage import layout

    try:
        fd = os.open(str(layout.path(root, "config.md")), os.O_RDONLY | os.O_NONBLOCK)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            return os.read(fd, 16384).decode("utf-8", "replace")
        finally:
            os.close(fd)
    except OSError:
        return None


def is_tree(root: str) -> bool:
    """The same test as storage.tree.is_initialised: config.md names memstrata (read without yaml)."""
    head = config_head(root)
    return head is not None and head.lstrip("\ufeff").startswith("---") and "memstrata" in head.lower()


def service_mode(root: str) -> str:
    """auto | off: $MEMSTRATA_SERVICE, else the `service:` key of config.md (read without yaml)."""
    env = os.environ.get("MEMSTRATA_SERVICE", "").strip().lower()
    if env in ("auto", "off"):
        return env
    head = config_head(root) or ""
    if head.startswith("---"):
        for line in head.split("\n")[1:]:
            if line.strip() == "---":
                break
            if line.startswith("service:"):
                value = line.split(":", 1)[1].split("#", 1)[0].strip().strip("'\"").lower()
                return "off" if value in ("off", "false", "no") else "auto"
    return "auto"


def runs_in_caller(argv: list[str]) -> bool:
    """Whether a call reaches the network, credentials or an identity (a git remote, object
    storage): `mem sync --remote [NAME] [--watch S]`, `mem init --clone URL`, `mem index push|pull URI`.
    Such a call always runs in the caller's process, with the caller's environment and config
    files (AWS_*, GIT_*, SSH_*, proxies, HOME ...), never in the shared service (docs/service.md)."""
    command = command_of(argv)
    words, skip = [], False
    for arg in argv:
        if arg == "--":
            break
        if skip:
            skip = False
        elif arg in GLOBAL_OPTIONS:
            skip = True
        elif not arg.startswith("-"):
            words.append(arg)
    if command == "sync":
        return len(words) > 1 or any(a in ("--remote", "--watch") or a.startswith("--watch=") for a in argv)
    if command == "init":
        return any(a in ("--clone", "--index-from") or a.startswith(("--clone=", "--index-from=")) for a in argv)
    if command == "index":
        return len(words) > 1 and words[1] in ("push", "pull")
    return False


def _terminal_size():
    """What rich would see in this process: the first of fds 0, 1, 2 that is a terminal."""
    for fd in (0, 1, 2):
        try:
            size = os.get_terminal_size(fd)
        except (OSError, ValueError):
            continue
        # A terminal reporting 0x0 (a fresh pty) counts as no size, as rich treats it.
        return [size.columns, size.lines] if size.columns > 0 and size.lines > 0 else None
    return None


def _std_fds() -> list[int] | None:
    """fds 0, 1, 2 to pass along; /dev/null stands in for a closed one."""
    fds = []
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
            fds.append(fd)
        except OSError:
            fds.append(os.open(os.devnull, os.O_RDWR))
    return fds


def _utf8(stream) -> bool:
    enc = (getattr(stream, "encoding", None) or "").lower().replace("-", "").replace("_", "")
    return enc == "utf8"


def code_home() -> str:
    """Where this process's memstrata code lives: a service answers only the clients of its own
    install (another checkout or venv may be another version with other rules and formats)."""
    import memstrata

    return os.path.realpath(os.path.dirname(os.path.abspath(memstrata.__file__)))


_OTHER_INSTALL: list[str] = []  # set when the user's service belongs to another install (then none is started)
_FAILED: list[str] = []  # set when the running service failed this call: it runs here (a hook too), none is started
_REFUSED: list[str] = []  # set when the running service cannot run this call as its caller would: it runs here
_WARMING: list[bool] = []  # set when the running service is still warming up: a hook is answered here (cold_hook)


def forward(argv: list[str], root: str, folder: str | None = None) -> int | None:
    """Run `argv` (addressing the tree `root`) in the user's service. The exit code, or None
    when the call must run here."""
    sock = connect(folder)
    if sock is None:
        return None
    fds = _std_fds()
    umask = os.umask(0)
    os.umask(umask)
    try:
        cwd = os.getcwd()
    except OSError:
        sock.close()
        return None
    hook = command_of(argv) == "autoload" and "--hook" in argv
    message = {"op": "run", "v": PROTOCOL, "code": code_home(), "root": root, "argv": argv, "cwd": cwd, "umask": umask,
               "hook": hook, "ns": caller_paths.namespace(),
               "paths": caller_paths.identities(argv, cwd, os.environ.get("HOME")),
               "env": dict(os.environ),
               "enc": {"stdin": getattr(sys.stdin, "encoding", None) or "utf-8",
                       "stdout_errors": getattr(sys.stdout, "errors", None) or "strict",
                       "stderr_errors": getattr(sys.stderr, "errors", None) or "backslashreplace"},
               "term": _terminal_size()}
    lines = Lines(sock)
    try:
        try:
            send_message(sock, message, fds)
        except OSError:
            return None
        first = lines.next()
        if first is None or first.get("t") != "started":
            if first is not None and first.get("t") == "exit":
                return int(first.get("code", 1))
            if first is not None and first.get("t") == "refused":
                _REFUSED.append(str(first.get("message")))
            if first is not None and first.get("t") == "cold":
                _WARMING.append(True)
            if first is not None and first.get("t") == "other-install":
                _OTHER_INSTALL.append(str(first.get("code")))
            if first is not None and first.get("t") == "failed":
                # Never a silent re-run: the user learns the service's error (its traceback is in the log).
                _FAILED.append(str(first.get("message")))
                sys.stderr.write(f"mem: the memory service failed this call ({first.get('message')}; traceback "
                                 f"in {first.get('log')}); it ran in this process instead\n")
            return None  # nothing ran: do it in-process
        sock.settimeout(None)  # the command may take as long as it takes (an import, a sync)
        try:
            last = lines.next()
        except KeyboardInterrupt:
            if command_of(argv) not in CANCELLABLE:
                return 130
            # Ctrl-C: closing our end asks the service to stop at its next safe point; its one line
            # (what was done, that a rerun resumes) comes on our stderr. A second Ctrl-C leaves now.
            sock.shutdown(socket.SHUT_WR)
            last = lines.next()
        if last is None or last.get("t") != "exit":
            # A stop waits for the calls in flight, so only a crash or a kill gets here.
            if hook:
                return 0  # a hook never blocks the agent: it says nothing and exits 0 (docs/hooks.md)
            log = rundir.log_path(folder or rundir.candidate())
            sys.stderr.write(f"mem: error: the memory service stopped while running the command (it crashed "
                             f"or was killed; see {log}); a write may have been applied: check with `mem list` "
                             "before repeating it\n")
            return 1
        return int(last.get("code", 1))
    except KeyboardInterrupt:
        return 130
    finally:
        sock.close()


def service_command(root: str, wait_pid: int | None = None, idle_minutes: float | None = None,
                    root_idle_minutes: float | None = None) -> list[str]:
    """The command line of the service process (memstrata/service/host.py) for the tree `root`."""
    cmd = [sys.executable, "-m", "memstrata.service", "--root", str(root)]
    if wait_pid:
        cmd += ["--wait-pid", str(wait_pid)]
    if idle_minutes is not None:
        cmd += ["--idle-minutes", str(idle_minutes)]
    if root_idle_minutes is not None:
        cmd += ["--root-idle-minutes", str(root_idle_minutes)]
    return cmd


def spawn(root: str, wait_pid: int | None = None, idle_minutes: float | None = None,
          root_idle_minutes: float | None = None) -> bool:
    """Start the user's service in the background, opening the tree `root` first (own session,
    logs to service.log in the runtime folder). Never for a folder that is not a tree."""
    import subprocess

    if not is_tree(root):
        return False
    folder, reason = rundir.ensure(create=True)
    if reason:
        return False
    try:
        log = os.open(rundir.log_path(folder), os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
    except OSError:
        return False
    cmd = service_command(root, wait_pid, idle_minutes, root_idle_minutes)
    env = dict(os.environ)
    env[rundir.ENV] = folder  # the service serves the folder this client checked
    try:
        subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log, close_fds=True,
                         start_new_session=True, cwd=folder, env=env)
        return True
    except OSError:
        return False
    finally:
        os.close(log)


def under_test() -> bool:
    """Inside a pytest run (its env reaches subprocesses): use a running service, start none.

    Test suites make many short-lived roots; a warm service per root would hold hundreds of
    MB each for the idle time. Tests of the service itself drop PYTEST_CURRENT_TEST.
    """
    return "PYTEST_CURRENT_TEST" in os.environ


def run(argv: list[str]) -> int | None:
    """The fast path of `mem`: the service's exit code, or None to run in this process.

    With `service: auto`, a call of a heavy command that finds no service of the user starts one
    in the background and runs here (the service warms up once this process has exited, so the two
    never load the model at the same time); later calls go through the service.
    """
    command = command_of(argv)
    if command in BYPASS or command in IN_CALLER or not argv or runs_in_caller(argv):
        return None
    if not (_utf8(sys.stdout) and _utf8(sys.stderr)):
        return None  # the service's streams are UTF-8; keep other encodings exact in-process
    root = resolve_root(argv)
    if not is_tree(root):
        return None  # not a tree: the command says so in-process; no service is ever started for it
    if service_mode(root) == "off":
        return None
    displaced = rundir.displaced()
    if displaced:  # never a quiet squat: the call goes on through the fall-back folder
        sys.stderr.write(f"mem: note: {displaced}\n")
    try:
        if caller_paths.needs_caller(argv, os.getcwd()):
            return None  # /dev/stdout, /dev/fd/63, /proc/self/...: the service would resolve them as itself
    except OSError:
        return None  # no cwd: nothing to hand over
    code = forward(argv, root)
    if code is not None:
        return code
    if _WARMING:  # a hook while the service warms up: a session start now, a prompt nothing
        return cold_hook(argv, root, start=None, prompt_here=False)
    if _FAILED or _REFUSED:
        return None  # a service runs: none is started
    folder = rundir.candidate()
    blocker = rundir.socket_blocker(folder)
    hook = command == "autoload" and "--hook" in argv
    if blocker is not None:
        # Never a quiet fall-back for good: the user learns why every call is a cold start.
        sys.stderr.write(f"mem: note: this call ran without the memory service: {rundir.blocker_advice(folder, blocker)}\n")
        if not blocker[1]:  # a service started now could not listen there: none is started
            return cold_hook(argv, root, start=None, prompt_here=False) if hook else None  # a hook never waits
    if hook:
        here = under_test() or bool(_OTHER_INSTALL)  # no service is started: a prompt runs in this process
        return cold_hook(argv, root, start=None if here else lambda: spawn(root, wait_pid=os.getpid()),
                         prompt_here=here)
    if (command is not None and command not in LIGHT and "--help" not in argv and "-h" not in argv
            and not (command in GROUPS and argv == [command])
            and not under_test() and not _OTHER_INSTALL):
        spawn(root, wait_pid=os.getpid())
    return None
