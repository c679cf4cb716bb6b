"""The per-user private runtime folder of the warm service (socket, lock, pid file, log); stdlib only.

$MEMSTRATA_RUNTIME_DIR if set, else $XDG_RUNTIME_DIR/memstrata when $XDG_RUNTIME_DIR is a
folder of ours, else /tmp/memstrata-<uid>. It is created mode 0700; an existing one is used
only if it is a real folder (not a symlink), owned by us and mode 0700, so no other user can
plant a socket there or connect to ours.

Another user can take the default name first (`mkdir -m 700 /tmp/memstrata-<uid>`): then the
service uses a private folder in the user's home instead, `$XDG_STATE_HOME/memstrata/run` (else
~/.local/state/memstrata/run), and every call says so on stderr (`displaced`), so the squatter
neither silences the prompt hook nor makes each call a cold start. A $MEMSTRATA_RUNTIME_DIR set
by hand is used as given (refused when unsafe, never replaced).
"""
from __future__ import annotations

import os
import stat

ENV = "MEMSTRATA_RUNTIME_DIR"
SOCKET_NAME = "mem.sock"
LOCK_NAME = "service.lock"     # held (flock) by the live service for its whole life
PID_NAME = "service.pid"
LOG_NAME = "service.log"


def candidate(env=None, uid: int | None = None) -> str:
    """The runtime folder this user's service uses (not checked, not created): the default one,
    or the private fall-back when another user holds the default name (`displaced`)."""
    env = os.environ if env is None else env
    uid = os.getuid() if uid is None else uid
    chosen = env.get(ENV)
    if chosen:
        return os.path.abspath(os.path.expanduser(chosen))
    default = default_folder(env, uid)
    if taken_reason(default, uid) is not None:
        return fallback_folder(env) or default
    return default


def displaced(env=None, uid: int | None = None) -> str | None:
    """One line when the default runtime folder is held by someone else and the service uses the
    fall-back instead (None otherwise, and when $MEMSTRATA_RUNTIME_DIR is set)."""
    env = os.environ if env is None else env
    uid = os.getuid() if uid is None else uid
    if env.get(ENV):
        return None
    default = default_folder(env, uid)
    reason = taken_reason(default, uid)
    if reason is None:
        return None
    other = fallback_folder(env)
    instead = f"the memory service uses {other} instead" if other else "no private folder is left for the service"
    return f"{default} cannot be this user's runtime folder ({reason}): {instead} (set {ENV} to choose one)"


def taken_reason(path: str, uid: int) -> str | None:
    """Why an existing folder at the default name is someone else's (a symlink, not a folder, another
    owner), or None (missing, or ours: a folder of ours with loose modes is refused by `check`)."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return unsafe_reason(uid, is_symlink=stat.S_ISLNK(st.st_mode), is_dir=stat.S_ISDIR(st.st_mode),
                         owner=st.st_uid, mode=0o700)


def fallback_folder(env=None) -> str | None:
    """The private fall-back in the user's home: $XDG_STATE_HOME/memstrata/run, else
    ~/.local/state/memstrata/run (None without an absolute home)."""
    env = os.environ if env is None else env
    base = env.get("XDG_STATE_HOME")
    if not (base and os.path.isabs(base)):
        home = env.get("HOME") or os.path.expanduser("~")
        if not (home and os.path.isabs(home)) or home == "/":
            return None
        base = os.path.join(home, ".local", "state")
    return os.path.join(base, "memstrata", "run")


def default_folder(env, uid: int) -> str:
    """$XDG_RUNTIME_DIR/memstrata when $XDG_RUNTIME_DIR is a folder of ours, else /tmp/memstrata-<uid>."""
    xdg = env.get("XDG_RUNTIME_DIR")
    if xdg and os.path.isabs(xdg):
        try:
            st = os.stat(xdg)
            if stat.S_ISDIR(st.st_mode) and st.st_uid == uid:
                return os.path.join(xdg, "memstrata")
        except OSError:
            pass
    return os.path.join("/tmp", f"memstrata-{uid}")


def unsafe_reason(my_uid: int, *, is_symlink: bool, is_dir: bool, owner: int, mode: int) -> str | None:
    """Why an existing runtime folder must not be used (None: it may): a symlink, not a folder,
    someone else's, or open to others (anything but 0700)."""
    if is_symlink:
        return "it is a symlink"
    if not is_dir:
        return "it is not a folder"
    if owner != my_uid:
        return f"it is owned by uid {owner}, not {my_uid}"
    if stat.S_IMODE(mode) != 0o700:
        return f"its mode is {stat.S_IMODE(mode):04o}, not 0700"
    return None


def check(path: str) -> str | None:
    """Why the runtime folder at `path` is unusable, or None (a missing folder is unusable too)."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        return f"cannot read it ({exc.strerror or exc})"
    return unsafe_reason(os.getuid(), is_symlink=stat.S_ISLNK(st.st_mode), is_dir=stat.S_ISDIR(st.st_mode),
                         owner=st.st_uid, mode=st.st_mode)


def ensure(create: bool = True, env=None) -> tuple[str, str | None]:
    """(folder, None) when the runtime folder is safe to use, creating it (0700) if asked;
    (folder, reason) when it is not."""
    path = candidate(env)
    if create and not os.path.lexists(path):
        try:
            parent = os.path.dirname(path)
            if not os.path.isdir(parent):
                os.makedirs(parent, mode=0o700, exist_ok=True)
            os.mkdir(path, 0o700)
            os.chmod(path, 0o700)  # whatever the umask
        except FileExistsError:
            pass  # made by a racing process: checked below like any existing folder
        except OSError as exc:
            return path, f"cannot create it ({exc.strerror or exc})"
    reason = check(path)
    return path, (f"the service's runtime folder {path} is not safe: {reason}" if reason else None)


def socket_path(folder: str) -> str:
    return os.path.join(folder, SOCKET_NAME)


def lock_path(folder: str) -> str:
    return os.path.join(folder, LOCK_NAME)


def pid_path(folder: str) -> str:
    return os.path.join(folder, PID_NAME)


def log_path(folder: str) -> str:
    return os.path.join(folder, LOG_NAME)


def socket_blocker(folder: str) -> tuple[str, bool] | None:
    """What sits at the socket's path when it is not a socket (a stale symlink, a file someone put
    there): (what it is, whether a new service may replace it), or None (a socket, or nothing).
    Only a symlink is replaced (the link goes, never what it points to); a file or folder that is
    not ours is never deleted."""
    path = socket_path(folder)
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if stat.S_ISSOCK(st.st_mode):
        return None
    if stat.S_ISLNK(st.st_mode):
        try:
            target = os.readlink(path)
        except OSError:
            target = "?"
        return f"a symlink (to {target})", True
    what = "a regular file" if stat.S_ISREG(st.st_mode) else "a folder" if stat.S_ISDIR(st.st_mode) else "not a socket"
    return what, False


def blocker_advice(folder: str, blocker: tuple[str, bool]) -> str:
    """One line on a socket path taken by something else: what it is, what to do."""
    what, replaceable = blocker
    path = socket_path(folder)
    if replaceable:
        return f"{path} is {what}, not the memory service's socket; `mem serve --detach` replaces the link"
    return (f"{path} is {what}, not the memory service's socket (memstrata never deletes what it did not "
            "make): move it away, or set MEMSTRATA_RUNTIME_DIR to another folder")
