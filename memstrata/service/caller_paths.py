"""Which calls must run in the caller's own process because a path in them means something else to the service (stdlib only).

The service opens a call's files in its own process. Most paths mean the same there (same user,
same cwd, same files), but not the ones that name a process's own state: /dev/stdout,
/dev/stdin, /dev/fd/N (a shell's `>(cmd)` and `<(cmd)`), /proc/self/... In the service these are
its own descriptors (its stdout is service.log, its stdin /dev/null): an export replaced
service.log, `recall --queries /dev/stdin` read nothing. Such calls run in the caller's
process, exactly as with MEMSTRATA_SERVICE=off. A caller in another mount namespace or root
(a container, a chroot, a private /tmp) sees other files under every path: the service
compares `namespace()` with its own and refuses those calls (they run in the caller too).
"""
from __future__ import annotations

import os
import stat

_SPECIAL = ("/dev", "/proc")
_LONGEST = 4096  # PATH_MAX: a longer argument is text, not a path


def _under(path: str, top: str) -> bool:
    return path == top or path.startswith(top + "/")


def _special(path: str) -> bool:
    """A path under /proc (per-process by nature, even its regular files), or under /dev and not a
    regular file reached without a link (a device, a pipe, /dev/stdin -> /proc/self/fd/0)."""
    plain, real = os.path.abspath(path), os.path.realpath(path)
    if _under(plain, "/proc") or _under(real, "/proc"):
        return True
    if not (_under(plain, "/dev") or _under(real, "/dev")):
        return False
    try:
        return plain != real or not stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return True  # /dev/fd/N of a descriptor the service does not have, a missing device


def _values(argv: list[str]):
    """Every argument and option value (`--opt=value` gives its value)."""
    for arg in argv:
        if arg.startswith("--") and "=" in arg:
            yield arg.split("=", 1)[1]
        yield arg


def _paths(argv: list[str], cwd: str, home: str | None):
    """(argument, the path it names from `cwd`) for each argument that may be a path: not text with
    a newline or longer than PATH_MAX, and with a slash in it (or a leading ~)."""
    for value in _values(argv):
        if not value or len(value) > _LONGEST or "\n" in value or "\0" in value:
            continue
        if not (value.startswith("~") or "/" in value):
            continue
        if value.startswith("~") and home and (value == "~" or value.startswith("~/")):
            value_path = home + value[1:]
        else:
            value_path = value
        yield value, os.path.join(cwd, value_path)


def needs_caller(argv: list[str], cwd: str) -> bool:
    """True when a path in `argv` (or the cwd itself) is one the service would resolve as itself:
    the call must run in this process. A text that happens to be such a path only costs an
    in-process run."""
    if any(_under(os.path.realpath(cwd), top) for top in _SPECIAL):
        return True  # every relative path would be resolved in the service's /proc/self or /dev
    for _value, path in _paths(argv, cwd, os.environ.get("HOME")):
        try:
            if _special(path):
                return True
        except (OSError, ValueError):
            continue
    return False


def identities(argv: list[str], cwd: str, home: str | None) -> dict:
    """What each path in `argv` names, as (device, inode) or None (nothing there), seen from this
    process. The service compares the caller's with its own: a link through /dev/stdin or
    /proc/self (`~/in -> /dev/stdin`) names another file there, and the call runs in the caller."""
    found = {}
    for value, path in _paths(argv, cwd, home):
        try:
            st = os.stat(path)
            found[value] = [st.st_dev, st.st_ino]
        except (OSError, ValueError):
            found[value] = None
    return found


def namespace() -> list[int] | None:
    """What makes a path mean the same file in two processes of one user: the mount namespace and
    the root folder (device, inode). None where /proc cannot tell."""
    try:
        mnt = os.stat("/proc/self/ns/mnt").st_ino
        root = os.stat("/")
        return [mnt, root.st_dev, root.st_ino]
    except OSError:
        return None
