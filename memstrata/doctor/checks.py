"""The doctor's checks of the tree itself: one scan of the files, then one function per kind of damage."""
from __future__ import annotations

import functools
import os
import re
import stat
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from memstrata.errors import CorruptEntry
from memstrata.storage.atomic import is_kept_file, is_temp_file
from memstrata.storage import layout
from memstrata.storage.catalog import CACHE_DIR, iter_entry_files, printable_name, read_entry_file
from memstrata.storage.entry_files import unreadable_hint
from memstrata.storage.entry import Entry, holder_rank
from memstrata.storage.holders import keeper_first
from memstrata.storage.lock import LOCK_FILE
from memstrata.storage.safe_io import ENGINE_DIRS

QUARANTINE_DIR = ".quarantine"
TEMP_MIN_AGE_SECONDS = 60.0  # a temp file younger than this may belong to a live writer
FULL_DIR = ".full"
VERSIONS_DIR = ".versions"
TRASH_DIR = ".trash"
VECTORS_DIR = ".vectors"
DERIVED_DIRS = (VECTORS_DIR, CACHE_DIR)
VCS_DIRS = (".git", ".hg", ".svn", ".jj")  # a tree kept in version control: the doctor never looks inside
_TEMP_PID = re.compile(r"^\..+\.(\d+)\.[0-9a-f]+\.tmp$")

# Finding kinds, in the order they are reported.
KINDS = (
    "lock_held", "lock_file", "symlink_outside", "unparseable", "duplicate_id", "temp_file", "kept_file",
    "orphan_sidecar", "orphan_versions", "missing_sidecar", "full_damaged", "trash_damaged", "catalog", "index_md",
    "vectors_missing", "vectors_unreadable", "model_mismatch", "vectors_index", "vectors_rows", "permissions",
    "secrets_allow_file", "secret", "shared_title",
)


@dataclass
class Finding:
    """One thing wrong with the tree (`fixable` False: only a person can decide)."""

    kind: str
    detail: str
    path: str | None = None
    id: str | None = None
    fixed: bool = False
    fixable: bool = True
    action: str | None = None  # what --fix did (or would do)
    notice: bool | None = None  # True: said, but no damage (the tree is healthy with it)

    def key(self) -> tuple:
        return (self.kind, self.path, self.id)

    def to_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v is not None}



# ----------------------------------------------------------------------------- the scan


@dataclass
class Scan:
    """What is on disk, read once: entries (with bodies), parse errors, temp files, symlinks."""

    root: Path
    entries: list[Entry] = field(default_factory=list)
    stats: dict = field(default_factory=dict)            # rel -> (size, mtime_ns)
    errors: dict = field(default_factory=dict)           # rel -> message
    temp_files: list = field(default_factory=list)       # (rel, age seconds)
    kept_files: list = field(default_factory=list)       # rel of each `.kept` file (doctor/kept_files.py)
    symlinks_out: list = field(default_factory=list)     # (rel, target)
    trash_ids: set = field(default_factory=set)
    bad_names: list = field(default_factory=list)      # names not UTF-8 or holding a newline (shown escaped)

    @property
    def ids(self) -> set[str]:
        return {e.id for e in self.entries if e.id}

    @functools.cached_property
    def indexed(self) -> tuple[dict, list[tuple[str, str, str]]]:
        """(rel -> why for the entries holding a credential as the index would see them: never indexed, the
        (row key, content hash, path) of each row the index should hold of the others): doctor/flagged.py."""
        from memstrata.doctor.flagged import indexed_pass

        return indexed_pass(self.root, self.entries)


def _walk(root: Path):
    """os.walk of the folders the doctor looks at (`_looked_at`)."""
    skip = _skipped(root)
    for folder, dirs, files in os.walk(root, followlinks=False):
        kept = _looked_at(root, folder, dirs, files, *skip)
        if kept is None:
            dirs[:] = []
            continue
        dirs[:], files = kept
        yield folder, dirs, files


def _skipped(root: Path) -> tuple[set, bool]:
    """(the derived stores' folders, whether the tree is an adopted vault): what `_looked_at` needs."""
    return {layout.at(root, d) for d in (VECTORS_DIR, CACHE_DIR, QUARANTINE_DIR)}, layout.is_adopted(root)


def _looked_at(root: Path, folder: str, dirs: list, files: list, derived: set, adopted: bool):
    """(subfolders, files) of `folder` the doctor looks at: not version control, not the derived stores
    (None: the folder is one), and in an adopted vault none of the user's top-level dot-files and folders."""
    rel_folder = os.path.relpath(folder, root).replace(os.sep, "/")
    if rel_folder in derived:  # derived stores; what is already set aside
        return None
    dirs = [d for d in dirs if d not in VCS_DIRS]
    if adopted and rel_folder == ".":  # a vault's own dot-folders (.obsidian, .trash ...) are the user's
        dirs = [d for d in dirs if not d.startswith(".") or d == layout.ENGINE_HOME]
        files = [f for f in files if not f.startswith(".") or is_kept_file(f)]  # ours, beside a note
    return dirs, files


# root -> {folder: (mtime_ns, subfolders, temps kept)} of this process's last sweep of it
_SWEPT: dict[str, dict[str, tuple]] = {}
_RACY_NS = 2_000_000_000  # a folder changed this recently may change again within the same mtime tick


def remove_dead_writers_temps(root: Path) -> list[str]:
    """Remove the temp files (storage.atomic's `.{name}.{pid}.{random}.tmp`) whose writer is dead:
    a copy of a note left by a killed write, never the user's. Run under the tree lock (sync,
    maintain, init); returns the paths removed.

    A folder whose mtime (it moves with every name made or removed in it) is what this process's
    last sweep saw, with no temp file left then, is not listed again: a warm service's sync with
    nothing changed lists no file of a 10k tree (listing them cost more than the rest of the sync)."""
    removed = []
    last, swept, now = _SWEPT.get(str(root), {}), {}, time.time_ns()
    for folder, files, st in _folders_to_sweep(root, last, swept, now):
        kept = False
        for name in files:
            pid = temp_pid(name)
            if pid is None:
                continue
            if pid == os.getpid() or _pid_alive(pid):
                kept = True
                continue
            path = os.path.join(folder, name)
            try:
                if os.path.islink(path):
                    kept = True
                    continue
                os.unlink(path)
                removed.append(os.path.relpath(path, root).replace(os.sep, "/"))
            except OSError:
                kept = True
        if not kept and now - st.st_mtime_ns > _RACY_NS:
            swept[folder] = (st.st_mtime_ns, swept[folder][1], False)
    _SWEPT[str(root)] = swept
    return removed


def _folders_to_sweep(root: Path, last: dict, swept: dict, now: int):
    """(folder, its file names, its lstat) for each folder of `_walk` that may hold a temp file the
    last sweep (`last`) did not see; what each folder holds goes into `swept` (temps kept: True until
    the caller finds none)."""
    skip = _skipped(root)
    stack = [str(root)]
    while stack:  # the folders of _walk, in its order
        folder = stack.pop()
        if os.path.relpath(folder, root).replace(os.sep, "/") in skip[0]:
            continue
        try:
            st = os.lstat(folder)
        except OSError:
            continue
        known = last.get(folder)
        if known is not None and not known[2] and known[0] == st.st_mtime_ns:
            swept[folder] = known
            stack.extend(reversed(known[1]))
            continue
        try:
            with os.scandir(folder) as items:
                found = [(item.name, item.is_dir(), item.is_symlink()) for item in items]
        except OSError:
            continue
        dirs, files = _looked_at(root, folder, [name for name, is_dir, link in found if is_dir and not link],
                                 [name for name, is_dir, _ in found if not is_dir], *skip)
        subfolders = [os.path.join(folder, d) for d in dirs]
        swept[folder] = (st.st_mtime_ns, subfolders, True)
        stack.extend(reversed(subfolders))
        yield folder, files, st


def scan_tree(root: Path) -> Scan:
    scan = Scan(root=root)
    for rel, st in sorted(iter_entry_files(root, bad_names=scan.bad_names)):
        scan.stats[rel] = (st.st_size, st.st_mtime_ns)
        try:
            scan.entries.append(read_entry_file(root, rel))
        except CorruptEntry as exc:
            scan.errors[rel] = exc.message
        except PermissionError:
            continue  # a mode problem, not damage: check_permissions reports it and --fix sets 0600
        except OSError as exc:
            scan.errors[rel] = exc.strerror or str(exc)
    real_root = os.path.realpath(root)
    now = time.time()
    engine_dirs = {layout.at(root, d) for d in ENGINE_DIRS}
    for folder, dirs, files in _walk(root):
        for name in list(dirs) + files:
            path = os.path.join(folder, name)
            rel = printable_name(os.path.relpath(path, root).replace(os.sep, "/"))  # a report prints every name
            if os.path.islink(path):
                target = os.path.realpath(path)
                if rel in engine_dirs or (target != real_root and not target.startswith(real_root + os.sep)):
                    scan.symlinks_out.append((rel, printable_name(os.readlink(path))))
                continue
            if name in files and is_temp_file(name):
                try:
                    scan.temp_files.append((rel, now - os.lstat(path).st_mtime))
                except FileNotFoundError:
                    pass
            elif name in files and is_kept_file(name):  # storage.replace_guard's, beside a note
                scan.kept_files.append(rel)
    trash = layout.path(root, TRASH_DIR)
    if trash.is_dir() and not trash.is_symlink():
        for path in trash.glob("*.md"):
            if path.name != "INDEX.md":
                scan.trash_ids.add(path.name.split("--")[0])
    return scan


# ----------------------------------------------------------------------------- checks (pure-ish)


def check_lock(root: Path) -> list[Finding]:
    """The tree lock is an flock: it dies with its holder, so a held lock means a live writer."""
    import fcntl

    lock_rel = layout.at(root, LOCK_FILE)
    try:
        mode = os.lstat(root / lock_rel).st_mode
    except OSError:
        return []
    if not stat.S_ISREG(mode):  # a link (a peer can push one) or a special file: no writer can lock the tree
        return [Finding("lock_file", f"{LOCK_FILE} is {'a symlink' if stat.S_ISLNK(mode) else 'not a regular file'}: "
                        "every write is refused", path=lock_rel, action="remove it (a link's target is untouched)")]

    path = root / lock_rel
    if not path.exists():
        return []
    fd = os.open(path, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.flock(fd, fcntl.LOCK_UN)
            return []
        except BlockingIOError:
            holder = lock_holder(path)
            who = f"process {holder}" if holder else "another process"
            return [Finding("lock_held", f"the tree lock is held by {who} (a live writer; it is released "
                            "when that process ends)", path=lock_rel, fixable=False)]
    finally:
        os.close(fd)


def lock_holder(path: Path) -> int | None:
    """The pid holding an flock on `path`, from /proc/locks (Linux), or None."""
    try:
        inode = os.stat(path).st_ino
        with open("/proc/locks", encoding="ascii") as handle:
            for line in handle:
                parts = line.split()
                if len(parts) > 5 and parts[1] == "FLOCK" and parts[5].endswith(f":{inode}"):
                    return int(parts[4])
    except (OSError, ValueError):
        pass
    return None


def check_symlinks(scan: Scan) -> list[Finding]:
    out = []
    for rel, target in scan.symlinks_out:
        # deletes, versions or sidecars would land at its target: every such write is refused
        if rel in {layout.at(scan.root, d) for d in ENGINE_DIRS}:
            effect = "reads are not shared with the team" if rel == ".access" else "writes into it are refused"
            out.append(Finding("symlink_outside", f"the engine folder {rel}/ is a symlink (to {target}); {effect} "
                               "until it is a real folder", path=rel,
                               action=f"move the link (not its target) to .quarantine/ and make {rel}/ a real folder"))
        else:
            out.append(Finding("symlink_outside", f"symlink leads outside the root (to {target}); the tree walk "
                               "skips it and no entry is read or written through it", path=rel,
                               action="move the link (not its target) to .quarantine/"))
    return out


def check_bad_names(scan: Scan) -> list[Finding]:
    """Files and folders whose names no entry can have (not UTF-8, a newline): skipped, one by one."""
    return [Finding("bad_name", "a name that is not UTF-8 or holds a line break: never read as an entry "
                    "(every other file is); rename it to make it one", path=rel, fixable=False, action="none")
            for rel in sorted(scan.bad_names)]


def check_secrets(scan: Scan) -> list[Finding]:
    """A credential in a file the engine did not check (hand-made, adopted, pulled): named, never shown;
    the allow file first when it is unreadable (it allows nothing and `mem secrets allow` refuses it)."""
    from memstrata.storage.secret_allow import ALLOW_FILE, problem

    at, broken = layout.at(scan.root, ALLOW_FILE), problem(scan.root)
    out = [Finding("secrets_allow_file", f"{broken.removeprefix(at + ': ')}: it allows nothing, so every note it "
                   "allowed is flagged, and `mem secrets allow` refuses to write over it", path=at, fixable=False,
                   action="fix its JSON by hand, or move it away (to .quarantine/, say) and `mem secrets allow` "
                   "each note that is no secret again")] if broken else []
    return out + [Finding("secret", why, path=rel, fixable=False,
                          action="take the credential out of the file (or delete the entry), then `mem sync`; or, "
                          "if it is no secret, `mem secrets allow` the note")
                  for rel, why in sorted(scan.indexed[0].items())]


def check_unparseable(scan: Scan) -> list[Finding]:
    if layout.is_adopted(scan.root):  # a vault's note (an Obsidian template's `date: {{date}}`): the
        # user's file, never moved (a quarantine is git-ignored: team sync would push it as deleted)
        return [Finding("unparseable", f"{message}; not a memory until fixed: {unreadable_hint(message)} "
                        "(left as it is)",
                        path=rel, fixable=False, notice=True)
                for rel, message in sorted(scan.errors.items())]
    return [Finding("unparseable", message, path=rel, action="move to .quarantine/")
            for rel, message in sorted(scan.errors.items())]


def duplicate_plan(group: list[tuple[Entry, str, int]], order: list[Entry] | None = None,
                   vault: bool = False) -> tuple[Entry, list[tuple[Entry, str]]]:
    """Which file of a duplicated id keeps it, and what happens to each other file.

    group: (entry, content hash, mtime_ns). The keeper is the file `mem read ID` shows: the first
    of `order` (storage.holders.keeper_first: the file git added first, else the one the catalog
    saw first), else by storage.entry.holder_rank (highest version, latest `updated`, first path).
    A file with the same content as the keeper or as another file already kept is a copy
    and goes to quarantine ("quarantine:copy"); a file with other content gets a fresh id
    ("new_id") and stays an entry: nothing is deleted and no text disappears from the tree.
    In an adopted `vault` every file is the user's note (a fresh copy of a template too): each
    other file gets a fresh id and stays where it is.
    """
    rank = {id(e): n for n, e in enumerate(order or [])}
    ordered = sorted(group, key=lambda item: (rank.get(id(item[0]), len(rank)), holder_rank(item[0])))
    keeper, keeper_hash, _ = ordered[0]
    kept = {keeper_hash}
    plan = []
    for e, digest, _ in ordered[1:]:
        if digest in kept and not vault:
            plan.append((e, "quarantine:copy"))
        else:
            kept.add(digest)
            plan.append((e, "new_id"))
    return keeper, plan


def entry_hash(e: Entry) -> str:
    try:
        from memstrata.retrieval.chunking import content_hash

        return content_hash(e.title, e.body)
    except ImportError:  # pragma: no cover - retrieval is part of the package
        import hashlib

        return hashlib.sha256(f"{e.title}\n{e.body}".encode("utf-8")).hexdigest()


def check_duplicates(scan: Scan, first_seen=None) -> list[Finding]:
    """Files that share an id; `first_seen(id)`: the path the catalog saw hold it first."""
    vault = layout.is_adopted(scan.root)
    groups: dict[str, list] = {}
    for e in scan.entries:
        if e.id:
            groups.setdefault(e.id, []).append((e, entry_hash(e), scan.stats.get(e.path, (0, 0))[1]))
    out = []
    for entry_id, group in sorted(groups.items()):
        if len(group) < 2:
            continue
        order = keeper_first(scan.root, [e for e, _, _ in group], first_seen(entry_id) if first_seen else None)
        keeper, plan = duplicate_plan(group, order, vault)
        for e, what in plan:
            action = ("give this file a fresh id (both stay entries)" if what == "new_id" else
                      "move to .quarantine/ (a copy of text kept in the tree)")
            out.append(Finding("duplicate_id", f"id {entry_id} is also used by {keeper.path}", path=e.path,
                               id=entry_id, action=action))
    return out


def temp_pid(name: str) -> int | None:
    match = _TEMP_PID.match(name)
    return int(match.group(1)) if match else None


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def temp_is_stale(name: str, age_seconds: float, pid_alive=_pid_alive) -> bool:
    """A temp file is stale when its writer is gone (pid in the name) or it is older than a minute."""
    pid = temp_pid(name)
    if pid is not None and pid != os.getpid() and not pid_alive(pid):
        return True
    return age_seconds > TEMP_MIN_AGE_SECONDS


def check_temp_files(scan: Scan) -> list[Finding]:
    out = []
    for rel, age in scan.temp_files:
        if temp_is_stale(rel.rsplit("/", 1)[-1], age):  # young ones may belong to a live writer
            out.append(Finding("temp_file", f"temporary file of an interrupted write ({age:.0f}s old); never "
                               "read as an entry", path=rel, action="remove"))
    return out


def check_orphans(scan: Scan) -> list[Finding]:
    """Sidecars and version folders whose id has no entry in the tree nor in the trash."""
    known = scan.ids | scan.trash_ids
    out = []
    full_rel, versions_rel = layout.at(scan.root, FULL_DIR), layout.at(scan.root, VERSIONS_DIR)
    full = scan.root / full_rel
    if full.is_dir():
        for path in sorted(full.glob("*.md")):
            if path.stem not in known:
                out.append(Finding("orphan_sidecar", f"sidecar of id {path.stem}, which is neither in the tree "
                                   "nor in the trash", path=f"{full_rel}/{path.name}", id=path.stem,
                                   action="move to .quarantine/"))
    versions = scan.root / versions_rel
    if versions.is_dir():
        for path in sorted(versions.iterdir()):
            if path.is_dir() and not path.is_symlink() and path.name not in known:
                out.append(Finding("orphan_versions", f"old versions of id {path.name}, which is neither in the "
                                   "tree nor in the trash", path=f"{versions_rel}/{path.name}", id=path.name,
                                   action="move to .quarantine/"))
    return out


def check_missing_sidecars(scan: Scan) -> list[Finding]:
    out = []
    for e in scan.entries:
        ref = e.full_content_file
        if ref and e.layer != "L0" and not (scan.root / ref).is_file():
            out.append(Finding("missing_sidecar", f"compressed ({e.layer}) but its full text {ref} is missing; "
                               "the summary in the file is all that is left", path=e.path, id=e.id, fixable=False))
    return out
