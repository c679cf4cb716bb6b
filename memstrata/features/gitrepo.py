"""The `git` command, run as a subprocess on a memory tree (never a protocol of our own)."""
from __future__ import annotations

import os
import secrets
import socket
import subprocess
from pathlib import Path

from memstrata.errors import InvalidInput, MemstrataError
from memstrata.storage import layout
from memstrata.storage.modes import current_umask, vault_file_mode

TRAILER_MACHINE = "Memstrata-Machine"
GITATTRIBUTES_LINE = "*.md -merge"  # every .md both sides changed is resolved by memstrata, never by markers


class GitError(MemstrataError):
    """A git command failed (its message is git's own last line)."""

    exit_code = 1
    kind = "git"


# What this clone's $GIT_DIR/info/attributes ends with. Every attribute that changes the bytes
# git writes or how it merges is unset for every path: the files stay as memstrata wrote them
# (UTF-8, its own line ends), and every path both sides changed is left to the team merge rules.
PROTECT_LINES = (GITATTRIBUTES_LINE, "* -text -eol -working-tree-encoding -filter -ident -merge")

NETWORK_COMMANDS = ("fetch", "push", "clone", "ls-remote", "pull")
NETWORK_DEFAULTS = (20, 60, 900)  # the defaults of git_connect_timeout, git_idle_timeout, git_timeout


def _run_bounded(command: list[str], cwd: str, env: dict, total: float, umask: int) -> subprocess.CompletedProcess:
    """Run a git that talks to a remote in its own process group: past `total` seconds the whole
    group (git, its remote helper, ssh) is killed and TimeoutExpired raised."""
    import signal

    proc = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            umask=umask, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=total)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.communicate()
        raise
    return subprocess.CompletedProcess(command, proc.returncode, out, err)


# git modes of tree items memstrata never follows (safe_io refuses them on every read).
SPECIAL_MODES = {"120000": "symlink", "160000": "submodule"}


def own_machine_name(host: str, cloned: bool, token: str) -> str:
    """The name a clone with none set takes: the host name with `token` (random, kept in the clone's
    git config) when it has a remote, so two clones of one team tree on one host never share a
    journal file (each folds its own `.access/<machine>.log`: one shared file was folded twice);
    the bare host name for a lone repository (no remote: no other clone of it can exist yet, and
    the `.access/<host>.log` an earlier release left stays its own)."""
    return f"{host}-{token}" if cloned else host


class Git:
    """One working tree: run git in it with no prompts, and a private umask unless it is a user's vault."""

    def __init__(self, root, limits: tuple[int, int, int] | None = None):
        self.root = Path(root)
        # the engine's own tree is private (0700/0600): git writes it with umask 077. An adopted vault's
        # files are the user's: git writes them with the user's umask, as their own `git pull` would
        # (None: known by the tree's marker; `mem init --clone` sets it before the marker is checked out)
        self.users_modes: bool | None = None
        # (connect, idle, total) seconds for the commands that talk to a remote: the settings
        # git_connect_timeout, git_idle_timeout, git_timeout (storage/config.py)
        self.limits = limits or NETWORK_DEFAULTS

    def run(self, *args, check: bool = True, cwd=None, env: dict | None = None) -> subprocess.CompletedProcess:
        env = dict(os.environ, GIT_TERMINAL_PROMPT="0", LC_ALL="C", GIT_MERGE_AUTOEDIT="no", **(env or {}))
        network = bool(args) and args[0] in NETWORK_COMMANDS
        options = self._network_options(env) if network else []
        command = ["git", *self._identity(args), *options, *args]
        umask = current_umask() if self._users_modes() else 0o077
        try:
            if network:
                done = _run_bounded(command, str(cwd or self.root), env, self.limits[2], umask)
            else:
                done = subprocess.run(command, cwd=str(cwd or self.root), env=env, capture_output=True, text=True,
                                      umask=umask)
        except FileNotFoundError:
            raise GitError("git is not installed (team sync runs the git command)") from None
        except subprocess.TimeoutExpired:
            raise GitError(f"git {args[0]} gave up after {self.limits[2]}s: the remote does not answer "
                           f"(setting git_timeout)") from None
        if check and done.returncode != 0:
            lines = [ln for ln in (done.stderr or done.stdout).strip().splitlines() if ln.strip()]
            last = lines[-1] if lines else "exit " + str(done.returncode)
            if network and any("too slow" in ln or "timed out" in ln.lower() for ln in lines):
                last += f" (no answer within the git_connect_timeout/git_idle_timeout settings)"
            raise GitError(f"git {args[0]} failed: {last}")
        return done

    def _users_modes(self) -> bool:
        return self.users_modes if self.users_modes is not None else layout.is_adopted(self.root)

    def _network_options(self, env: dict) -> list[str]:
        """A remote that stops sending fails instead of hanging: curl's low-speed limit for http(s),
        ssh's connect timeout and keep-alives unless the user chose an ssh command of their own."""
        connect, idle, _ = self.limits
        if not env.get("GIT_SSH_COMMAND") and not env.get("GIT_SSH") and not subprocess.run(
                ["git", "config", "core.sshCommand"], cwd=str(self.root) if self.root.is_dir() else None,
                capture_output=True, text=True).stdout.strip():
            alive = max(1, idle // 3)
            env["GIT_SSH_COMMAND"] = (f"ssh -o ConnectTimeout={connect} -o ServerAliveInterval={alive} "
                                      f"-o ServerAliveCountMax=3 -o BatchMode=yes")
        return ["-c", "http.lowSpeedLimit=1", "-c", f"http.lowSpeedTime={idle}"]

    def out(self, *args, check: bool = True, env: dict | None = None) -> str:
        return self.run(*args, check=check, env=env).stdout.strip()

    def run_bytes(self, *args) -> bytes:
        """A command's output as bytes (a blob's exact content)."""
        done = subprocess.run(["git", *args], cwd=str(self.root), capture_output=True)
        if done.returncode != 0:
            raise GitError(f"git {args[0]} failed: {done.stderr.decode('utf-8', 'replace').strip()[-200:]}")
        return done.stdout

    def git_dir(self) -> Path:
        path = Path(self.out("rev-parse", "--absolute-git-dir"))
        return path

    def _identity(self, args) -> list[str]:
        """A commit needs an author: the user's own, else memstrata@machine."""
        if not args or args[0] not in ("commit", "merge", "commit-tree"):
            return []
        done = subprocess.run(["git", "config", "user.email"], cwd=str(self.root), capture_output=True, text=True)
        if done.stdout.strip():
            return []
        return ["-c", "user.name=memstrata", "-c", f"user.email=memstrata@{self.machine()}"]

    # -- facts -------------------------------------------------------------------------
    def is_repo(self) -> bool:
        done = self.run("rev-parse", "--show-toplevel", check=False)
        return done.returncode == 0 and Path(done.stdout.strip()).resolve() == self.root.resolve()

    def require_repo(self, remote: str) -> None:
        if not self.is_repo():
            raise InvalidInput(f"{self.root} is not a git repository; run `git init` and "
                               f"`git remote add {remote} URL` in it, or make the tree with `mem init --clone URL`")
        if remote not in self.out("remote").split():
            raise InvalidInput(f"the tree has no git remote {remote!r} (git remote add {remote} URL)")

    def head(self) -> str | None:
        done = self.run("rev-parse", "--verify", "-q", "HEAD", check=False)
        return done.stdout.strip() or None

    def branch(self) -> str:
        name = self.out("symbolic-ref", "--short", "-q", "HEAD", check=False)
        return name or "main"

    def ref_exists(self, ref: str) -> bool:
        return self.run("rev-parse", "--verify", "-q", ref, check=False).returncode == 0

    def is_ancestor(self, a: str, b: str) -> bool:
        return self.run("merge-base", "--is-ancestor", a, b, check=False).returncode == 0

    def machine(self) -> str:
        """This clone's name in commits, version histories and its journal files (`.access/<name>.*`):
        $MEMSTRATA_MACHINE, git config memstrata.machine, else one chosen now (`own_machine_name`)
        and kept in this clone's git config, so it stays the same for this clone."""
        name = os.environ.get("MEMSTRATA_MACHINE")
        if not name:
            name = self._configured_machine()
        if not name and self.is_repo():
            chosen = own_machine_name(socket.gethostname(), bool(self.out("remote", check=False)), secrets.token_hex(3))
            self.run("config", "memstrata.machine", chosen, check=False)
            name = self._configured_machine() or chosen  # another process may have chosen first: its name
        return name or socket.gethostname()

    def _configured_machine(self) -> str:
        done = subprocess.run(["git", "config", "memstrata.machine"], cwd=str(self.root), capture_output=True,
                              text=True)
        return done.stdout.strip()

    def show(self, spec: str) -> str | None:
        """A blob's text (`:2:path`, `REV:path`), None when it does not exist."""
        done = subprocess.run(["git", "show", spec], cwd=str(self.root), capture_output=True)
        if done.returncode != 0:
            return None
        return done.stdout.decode("utf-8", errors="replace")

    def changed(self, old: str | None, new: str) -> list[tuple[str, str]]:
        """(status letter, path) of what changed between two commits (no rename pairing)."""
        if old is None:
            text = self.out("ls-tree", "-r", "--name-only", "-z", new).strip("\0")
            return [("A", p) for p in text.split("\0") if p]
        text = self.run("diff", "--name-status", "--no-renames", "-z", old, new).stdout
        parts = [p for p in text.split("\0") if p]
        return list(zip(parts[0::2], parts[1::2]))

    def special_paths(self, rev: str, paths) -> list[dict]:
        """Of `paths`, those `rev` holds as a symlink or a submodule: never followed, reported."""
        wanted = [p for p in paths if p]
        if not wanted:
            return []
        text = self.run("ls-tree", "-z", rev, "--", *wanted, check=False).stdout
        out = []
        for item in text.split("\0"):
            if not item or "\t" not in item:
                continue
            info, path = item.split("\t", 1)
            mode = info.split()[0]
            if mode in SPECIAL_MODES:
                out.append({"path": path, "kind": SPECIAL_MODES[mode]})
        return out

    def protect_merges(self) -> bool:
        """PROTECT_LINES in $GIT_DIR/info/attributes, which outranks every .gitattributes: a peer's
        `*.md merge=union` can never make git merge two texts of one entry, and no pushed attribute
        (working-tree-encoding, eol, text, filter, ident) changes the bytes git writes into the tree."""
        path = Path(self.out("rev-parse", "--git-path", "info/attributes"))
        path = path if path.is_absolute() else self.root / path
        text = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""
        lines = text.splitlines()
        if lines[-len(PROTECT_LINES):] == list(PROTECT_LINES):
            return False  # last lines: nothing after them can override them
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as out:
            out.write(("" if not text or text.endswith("\n") else "\n") + "\n".join(PROTECT_LINES) + "\n")
        return True

    def undo_conversions(self) -> list[str]:
        """Files an attribute pulled before this clone was protected wrote converted (UTF-16, CRLF,
        an expanded $Id$): written back as committed, so the next commit does not take the
        converted bytes for an edit. A file whose text differs otherwise is left alone."""
        from memstrata.storage.atomic import atomic_write_bytes

        fixed = []
        for rel in self.run("diff", "--name-only", "-z").stdout.split("\0"):
            target = self.root / rel
            if not rel or target.is_symlink() or not target.is_file():
                continue
            committed = self.run_bytes("show", f":{rel}")
            if committed != target.read_bytes() and committed in _unconverted(target.read_bytes()):
                atomic_write_bytes(target, committed, root=self.root, mode=vault_file_mode(self.root, rel))
                fixed.append(rel)
        return fixed

    def unwritable(self, paths) -> list[str]:
        """Of `paths` (relative), those this file system cannot hold: a name longer than NAME_MAX
        bytes, or a whole path longer than PATH_MAX."""
        try:
            name_max, path_max = os.pathconf(self.root, "PC_NAME_MAX"), os.pathconf(self.root, "PC_PATH_MAX")
        except (OSError, ValueError):
            name_max, path_max = 255, 4096
        base = len(os.fsencode(str(self.root.resolve()))) + 1
        return [p for p in paths if base + len(os.fsencode(p)) >= path_max
                or any(len(os.fsencode(part)) > name_max for part in p.split("/"))]

    def skip_paths(self, paths) -> None:
        """Leave `paths` out of the working tree (sparse checkout, this clone only): git keeps them
        in the index and in every commit, never writes them here, and `add -A` never deletes them."""
        if not paths:
            return
        path = Path(self.out("rev-parse", "--git-path", "info/sparse-checkout"))
        path = path if path.is_absolute() else self.root / path
        text = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else "/*\n"
        have = set(text.splitlines())
        new = [f"!/{_escape_pattern(p)}" for p in paths]
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w", encoding="utf-8") as out:
            out.write(text + ("" if text.endswith("\n") else "\n") + "".join(f"{n}\n" for n in new if n not in have))
        self.run("config", "core.sparseCheckout", "true")
        self.run("config", "core.sparseCheckoutCone", "false")

    def staged(self) -> list[tuple[str, str]]:
        text = self.run("diff", "--cached", "--name-status", "--no-renames", "-z").stdout
        parts = [p for p in text.split("\0") if p]
        return list(zip(parts[0::2], parts[1::2]))

    def unmerged(self) -> dict[str, set[int]]:
        """Paths left unmerged by a merge: {path: stages present (1 base, 2 ours, 3 theirs)}."""
        out: dict[str, set[int]] = {}
        for item in self.run("ls-files", "-u", "-z").stdout.split("\0"):
            if not item:
                continue
            info, path = item.split("\t", 1)
            out.setdefault(path, set()).add(int(info.split()[2]))
        return out

    def writer_of(self, rev: str, path: str) -> str:
        """The machine that last committed `path` on `rev` (its sync commit trailer)."""
        text = self.out("log", "-1", f"--format=%(trailers:key={TRAILER_MACHINE},valueonly,separator=%x2C)",
                        rev, "--", path, check=False)
        return text.strip() or "another machine"


def _unconverted(data: bytes) -> list[bytes]:
    """What `data` may have been before git converted it on checkout (working-tree-encoding, eol, ident)."""
    import codecs
    import re

    out = [data]
    for bom, name in ((codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"),
                      (codecs.BOM_UTF32_LE, "utf-32-le"), (codecs.BOM_UTF32_BE, "utf-32-be")):
        if data.startswith(bom):
            try:
                out.append(data[len(bom):].decode(name).encode("utf-8"))
            except UnicodeDecodeError:
                pass
    for name in ("utf-16-le", "utf-16-be"):
        try:
            out.append(data.decode(name).encode("utf-8"))
        except UnicodeDecodeError:
            pass
    out += [d.replace(b"\r\n", b"\n") for d in out]
    out += [re.sub(rb"\$Id: [0-9a-f]{40,64} \$", b"$Id$", d) for d in out]
    return out


def _escape_pattern(path: str) -> str:
    """A path as a literal sparse-checkout (gitignore) pattern."""
    return "".join("\\" + ch if ch in "\\*?[]!# " else ch for ch in path)


def ensure_attributes(root) -> bool:
    """Write the .gitattributes line that keeps conflict markers out of entries; True if it changed."""
    from memstrata.storage.safe_io import is_regular_file, read_regular_text

    path = Path(root) / ".gitattributes"
    text = read_regular_text(path, 1024 * 1024) if is_regular_file(path) else ""  # never a link out of the tree
    if GITATTRIBUTES_LINE in text.splitlines():
        return False
    from memstrata.storage.atomic import atomic_write_text

    atomic_write_text(path, text + ("" if not text or text.endswith("\n") else "\n") + GITATTRIBUTES_LINE + "\n",
                      root=root)
    return True
