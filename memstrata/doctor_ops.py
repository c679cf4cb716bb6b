"""`mem doctor`: check a memory tree for damage and, with fix=True, repair what can be repaired.

The Markdown files are the source of truth; everything else (catalog, INDEX.md files, the
LanceDB table) is derived and can be rebuilt. The doctor never deletes content: a file it
cannot parse, a leftover copy of an entry, an orphan sidecar or version folder and a
symlink that leads outside the root are moved to `.quarantine/` with a line in
`.quarantine/INDEX.md`. Only the doctor's own derived files (catalog, INDEX.md, vectors)
and stale temporary files (`.*.tmp`, left by a writer that died) are rewritten or removed.

Each check is a small function from a `_Scan` of the tree to a list of findings; the
repairs run afterwards under the tree lock, and every check runs again to verify them, so
`fixed` in the report means "was wrong and is right now".
"""
from __future__ import annotations

import os
import re
import sqlite3
import stat
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from memstrata.clock import format_datetime
from memstrata.errors import CorruptEntry, MemstrataError
from memstrata.storage import indexes
from memstrata.storage.atomic import atomic_write_text, ensure_dir, is_temp_file
from memstrata.storage.catalog import CACHE_DIR, CATALOG_FILE, iter_entry_files, read_entry_file
from memstrata.storage.entry import Entry, new_id
from memstrata.storage.lock import LOCK_FILE, TreeLock

QUARANTINE_DIR = ".quarantine"
QUARANTINE_INDEX = "INDEX.md"
TEMP_MIN_AGE_SECONDS = 60.0  # a temp file younger than this may belong to a live writer
FULL_DIR = ".full"
VERSIONS_DIR = ".versions"
TRASH_DIR = ".trash"
VECTORS_DIR = ".vectors"
DERIVED_DIRS = (VECTORS_DIR, CACHE_DIR)
_TEMP_PID = re.compile(r"^\..+\.(\d+)\.[0-9a-f]+\.tmp$")
_QUARANTINE_HEADER = (
    "# Quarantine\n\nFiles `mem doctor --fix` moved out of the tree instead of deleting them. "
    "Fix one and move it back into a category folder to make it an entry again.\n\n"
    "| when | kind | from | kept as | reason |\n| --- | --- | --- | --- | --- |\n"
)

# Finding kinds, in the order they are reported.
KINDS = (
    "lock_held", "symlink_outside", "unparseable", "duplicate_id", "temp_file", "orphan_sidecar",
    "orphan_versions", "missing_sidecar", "catalog", "index_md", "vectors_missing", "vectors_unreadable",
    "model_mismatch", "vectors_rows", "permissions",
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

    def key(self) -> tuple:
        return (self.kind, self.path, self.id)

    def to_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v is not None}


@dataclass
class DoctorReport:
    root: str
    fix: bool
    findings: list[Finding] = field(default_factory=list)
    checked: dict = field(default_factory=dict)

    @property
    def problems(self) -> list[Finding]:
        """Findings still wrong (not fixed)."""
        return [f for f in self.findings if not f.fixed]

    @property
    def healthy(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict:
        return {"root": self.root, "fix": self.fix, "healthy": self.healthy,
                "problems": len(self.problems), "fixed": sum(1 for f in self.findings if f.fixed),
                "checked": self.checked, "findings": [f.to_dict() for f in self.findings]}


# ----------------------------------------------------------------------------- the scan


@dataclass
class _Scan:
    """What is on disk, read once: entries (with bodies), parse errors, temp files, symlinks."""

    root: Path
    entries: list[Entry] = field(default_factory=list)
    stats: dict = field(default_factory=dict)            # rel -> (size, mtime_ns)
    errors: dict = field(default_factory=dict)           # rel -> message
    temp_files: list = field(default_factory=list)       # (rel, age seconds)
    symlinks_out: list = field(default_factory=list)     # (rel, target)
    trash_ids: set = field(default_factory=set)

    @property
    def ids(self) -> set[str]:
        return {e.id for e in self.entries if e.id}


def _scan(root: Path) -> _Scan:
    scan = _Scan(root=root)
    for rel, st in sorted(iter_entry_files(root)):
        scan.stats[rel] = (st.st_size, st.st_mtime_ns)
        try:
            scan.entries.append(read_entry_file(root, rel))
        except CorruptEntry as exc:
            scan.errors[rel] = exc.message
        except OSError as exc:
            scan.errors[rel] = exc.strerror or str(exc)
    real_root = os.path.realpath(root)
    now = time.time()
    for folder, dirs, files in os.walk(root, followlinks=False):
        rel_folder = os.path.relpath(folder, root)
        top = rel_folder.split(os.sep)[0]
        if top in (VECTORS_DIR, CACHE_DIR, QUARANTINE_DIR):  # derived stores; what is already set aside
            dirs[:] = []
            continue
        for name in list(dirs) + files:
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, root).replace(os.sep, "/")
            if os.path.islink(path):
                target = os.path.realpath(path)
                if target != real_root and not target.startswith(real_root + os.sep):
                    scan.symlinks_out.append((rel, os.readlink(path)))
                continue
            if name in files and is_temp_file(name):
                try:
                    scan.temp_files.append((rel, now - os.lstat(path).st_mtime))
                except FileNotFoundError:
                    pass
    trash = root / TRASH_DIR
    if trash.is_dir():
        for path in trash.glob("*.md"):
            if path.name != "INDEX.md":
                scan.trash_ids.add(path.name.split("--")[0])
    return scan


# ----------------------------------------------------------------------------- checks (pure-ish)


def check_lock(root: Path) -> list[Finding]:
    """The tree lock is an flock: it dies with its holder, so a held lock means a live writer."""
    import fcntl

    path = root / LOCK_FILE
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
                            "when that process ends)", path=LOCK_FILE, fixable=False)]
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


def check_symlinks(scan: _Scan) -> list[Finding]:
    return [Finding("symlink_outside", f"symlink leads outside the root (to {target}); the engine never "
                    "follows it", path=rel, action="move the link (not its target) to .quarantine/")
            for rel, target in scan.symlinks_out]


def check_unparseable(scan: _Scan) -> list[Finding]:
    return [Finding("unparseable", message, path=rel, action="move to .quarantine/")
            for rel, message in sorted(scan.errors.items())]


def duplicate_plan(group: list[tuple[Entry, str, int]]) -> tuple[Entry, list[tuple[Entry, str]]]:
    """Which file of a duplicated id keeps it, and what happens to each other file.

    group: (entry, content hash, mtime_ns). The keeper is the latest edit by the engine
    (highest version, then latest `updated`; among equals the oldest file: the original).
    A file with the same content as the keeper or as another file already kept is a copy
    and goes to quarantine ("quarantine:copy"); a file with other content gets a fresh id
    ("new_id") and stays an entry: nothing is deleted and no text disappears from the tree.
    """
    def rank(item):
        e, _, mtime = item
        stamp = e.updated.timestamp() if e.updated else float("-inf")
        return (-e.version, -stamp, mtime, e.path or "")

    ordered = sorted(group, key=rank)
    keeper, keeper_hash, _ = ordered[0]
    kept = {keeper_hash}
    plan = []
    for e, digest, _ in ordered[1:]:
        if digest in kept:
            plan.append((e, "quarantine:copy"))
        else:
            kept.add(digest)
            plan.append((e, "new_id"))
    return keeper, plan


def _content_hash(e: Entry) -> str:
    try:
        from memstrata.retrieval.chunking import content_hash

        return content_hash(e.title, e.body)
    except ImportError:  # pragma: no cover - retrieval is part of the package
        import hashlib

        return hashlib.sha256(f"{e.title}\n{e.body}".encode("utf-8")).hexdigest()


def check_duplicates(scan: _Scan) -> list[Finding]:
    groups: dict[str, list] = {}
    for e in scan.entries:
        if e.id:
            groups.setdefault(e.id, []).append((e, _content_hash(e), scan.stats.get(e.path, (0, 0))[1]))
    out = []
    for entry_id, group in sorted(groups.items()):
        if len(group) < 2:
            continue
        keeper, plan = duplicate_plan(group)
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


def check_temp_files(scan: _Scan) -> list[Finding]:
    out = []
    for rel, age in scan.temp_files:
        if temp_is_stale(rel.rsplit("/", 1)[-1], age):  # young ones may belong to a live writer
            out.append(Finding("temp_file", f"temporary file of an interrupted write ({age:.0f}s old); never "
                               "read as an entry", path=rel, action="remove"))
    return out


def check_orphans(scan: _Scan) -> list[Finding]:
    """Sidecars and version folders whose id has no entry in the tree nor in the trash."""
    known = scan.ids | scan.trash_ids
    out = []
    full = scan.root / FULL_DIR
    if full.is_dir():
        for path in sorted(full.glob("*.md")):
            if path.stem not in known:
                out.append(Finding("orphan_sidecar", f"sidecar of id {path.stem}, which is neither in the tree "
                                   "nor in the trash", path=f"{FULL_DIR}/{path.name}", id=path.stem,
                                   action="move to .quarantine/"))
    versions = scan.root / VERSIONS_DIR
    if versions.is_dir():
        for path in sorted(versions.iterdir()):
            if path.is_dir() and not path.is_symlink() and path.name not in known:
                out.append(Finding("orphan_versions", f"old versions of id {path.name}, which is neither in the "
                                   "tree nor in the trash", path=f"{VERSIONS_DIR}/{path.name}", id=path.name,
                                   action="move to .quarantine/"))
    return out


def check_missing_sidecars(scan: _Scan) -> list[Finding]:
    out = []
    for e in scan.entries:
        ref = e.full_content_file
        if ref and e.layer != "L0" and not (scan.root / ref).is_file():
            out.append(Finding("missing_sidecar", f"compressed ({e.layer}) but its full text {ref} is missing; "
                               "the summary in the file is all that is left", path=e.path, id=e.id, fixable=False))
    return out


def _catalog_rows(root: Path) -> dict[str, tuple]:
    """path -> (id, size, mtime_ns) from the catalog (DatabaseError if it is damaged)."""
    db = root / CACHE_DIR / CATALOG_FILE
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        ok = conn.execute("PRAGMA quick_check").fetchone()
        if not ok or ok[0] != "ok":
            raise sqlite3.DatabaseError(f"quick_check: {ok[0] if ok else 'no answer'}")
        return {r[0]: (r[1], r[2], r[3]) for r in conn.execute("SELECT path, id, size, mtime_ns FROM entries")}
    finally:
        conn.close()


def check_catalog(scan: _Scan) -> list[Finding]:
    db = scan.root / CACHE_DIR / CATALOG_FILE
    if not db.exists():
        return []  # built on first use
    try:
        rows = _catalog_rows(scan.root)
    except sqlite3.Error as exc:
        return [Finding("catalog", f"the catalog cannot be read ({exc}); it is derived and can be rebuilt",
                        path=f"{CACHE_DIR}/{CATALOG_FILE}", action="rebuild from the files")]
    parsed = {e.path: e.id for e in scan.entries}
    wrong = []
    for rel, (size, mtime) in scan.stats.items():
        row = rows.get(rel)
        if row is not None and (row[1], row[2]) == (size, mtime) and rel in parsed and row[0] != parsed[rel]:
            wrong.append(rel)  # same size and mtime, other id: a refresh would not see it
    if wrong:
        return [Finding("catalog", f"{len(wrong)} catalog rows disagree with their files (e.g. {wrong[0]})",
                        path=f"{CACHE_DIR}/{CATALOG_FILE}", action="rebuild from the files")]
    return []


def _index_ids(text: str) -> list[str]:
    out = []
    for line in text.splitlines():
        if line.startswith("| [") and " | " in line:
            cells = line.split(" | ")
            if len(cells) > 1:
                out.append(cells[1].strip())
    return out


def expected_indexes(root: Path, entries: list[Entry], now) -> dict[str, str]:
    """rel path of every INDEX.md -> the text write_indexes would give it (root without its stamp)."""
    return indexes.render_all(root, entries, now)


def check_indexes(scan: _Scan, now) -> list[Finding]:
    out = []
    for rel, want in expected_indexes(scan.root, scan.entries, now).items():
        path = scan.root / rel
        try:
            have = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            out.append(Finding("index_md", "missing", path=rel, action="regenerate from the files"))
            continue
        except (OSError, UnicodeDecodeError) as exc:
            out.append(Finding("index_md", f"unreadable ({exc})", path=rel, action="regenerate from the files"))
            continue
        if rel == indexes.INDEX_FILE:
            same = indexes.without_stamp(have) == indexes.without_stamp(want)
        else:
            same = have == want
        if same:
            continue
        listed, real = _index_ids(have), _index_ids(want)
        if sorted(listed) != sorted(real):
            lost, extra = set(real) - set(listed), set(listed) - set(real)
            detail = f"lists {len(listed)} entries, the folder holds {len(real)}"
            if lost:
                detail += f"; not listed: {', '.join(sorted(lost)[:3])}"
            if extra:
                detail += f"; listed but gone: {', '.join(sorted(extra)[:3])}"
        else:
            detail = "out of date (titles, counts, tiers or dates differ from the files)"
        out.append(Finding("index_md", detail, path=rel, action="regenerate from the files"))
    return out


def configured_model(settings) -> str:
    try:
        from memstrata.models.embedder import _canonical

        return _canonical(settings.embedding_model)
    except ImportError:  # pragma: no cover
        return settings.embedding_model


def vector_state(root: Path, settings):
    """(index, frame or None, error message or None) of the tree's vector table."""
    from memstrata.retrieval.table import VectorIndex

    index = VectorIndex(root, settings)
    if not index.exists():
        return index, None, None
    try:
        frame = index.frame()
        counts = index.table().count_rows()  # reads every fragment's metadata
        del counts
        return index, frame, None
    except Exception as exc:  # noqa: BLE001 - any lance/arrow failure means unreadable
        return index, None, f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"


def compare_rows(entries: list[Entry], frame_ids: list, frame_hashes: list, frame_paths: list) -> dict:
    """Pure: what differs between the entries and the chunk-0 rows (missing/extra/stale/moved/duplicated)."""
    from memstrata.retrieval.table import row_id

    want: dict[str, Entry] = {}
    for e in entries:
        want.setdefault(row_id(e), e)
    seen: dict[str, int] = {}
    for i in frame_ids:
        seen[i] = seen.get(i, 0) + 1
    out = {"missing": sorted(set(want) - set(seen)), "extra": sorted(set(seen) - set(want)),
           "duplicated": sorted(i for i, n in seen.items() if n > 1), "stale": [], "moved": []}
    for i, digest, path in zip(frame_ids, frame_hashes, frame_paths):
        e = want.get(i)
        if e is None:
            continue
        if digest != _content_hash(e):
            out["stale"].append(i)
        elif path != e.path:
            out["moved"].append(i)
    out["stale"] = sorted(set(out["stale"]))
    out["moved"] = sorted(set(out["moved"]))
    return out


def check_vectors(scan: _Scan, settings) -> list[Finding]:
    try:
        index, frame, error = vector_state(scan.root, settings)
    except ImportError:
        return []
    rel = VECTORS_DIR
    if error:
        return [Finding("vectors_unreadable", f"the vector table cannot be read ({error}); it is derived",
                        path=rel, action="rebuild from the files (re-embeds everything)")]
    if not index.exists():
        if scan.entries:
            return [Finding("vectors_missing", f"no vector index for {len(scan.entries)} entries; recall falls "
                            "back to grep and INDEX.md", path=rel, action="build it (mem sync)")]
        return []
    out = []
    meta = index.meta()
    want_model = configured_model(settings)
    if meta.get("model") and meta.get("model") != want_model:
        out.append(Finding("model_mismatch", f"the table was embedded with {meta.get('model')}, config.md names "
                           f"{want_model}", path=f"{rel}/meta.json", action="re-embed everything"))
        return out
    cols = frame.cols if frame is not None else {"id": [], "hash": [], "path": []}
    diff = compare_rows(scan.entries, list(cols["id"]), list(cols["hash"]), list(cols["path"]))
    parts = [f"{len(v)} {k} ({', '.join(v[:3])}{'...' if len(v) > 3 else ''})" for k, v in diff.items() if v]
    if parts:
        out.append(Finding("vectors_rows", "index rows differ from the files: " + "; ".join(parts), path=rel,
                           action="re-sync (mem sync)" if not diff["duplicated"] else "rebuild (mem reindex)"))
    return out


def _loose_mode(mode: int) -> bool:
    return bool(stat.S_IMODE(mode) & 0o077)


def check_permissions(root: Path) -> list[Finding]:
    out = []
    try:
        if _loose_mode(os.stat(root).st_mode):
            out.append(Finding("permissions", f"the root is {oct(stat.S_IMODE(os.stat(root).st_mode))}, not 0700: "
                               "other users can read your memories", path=".", action="chmod 0700"))
    except OSError:
        return out
    loose = []
    for folder, dirs, files in os.walk(root, followlinks=False):
        if folder == str(root):
            # Derived stores (LanceDB writes with the process umask, sqlite's -wal/-shm files):
            # protected by the root's 0700, not checked file by file.
            dirs[:] = [d for d in dirs if d not in DERIVED_DIRS]
        for name in dirs + files:
            path = os.path.join(folder, name)
            try:
                st = os.lstat(path)
            except FileNotFoundError:
                continue
            if not stat.S_ISLNK(st.st_mode) and _loose_mode(st.st_mode):
                loose.append(os.path.relpath(path, root))
    if loose:
        out.append(Finding("permissions", f"{len(loose)} files or folders are readable by others "
                           f"(e.g. {', '.join(sorted(loose)[:3])}); the root must be 0700 and its files 0600",
                           action="chmod files 0600, folders 0700"))
    return out


# ----------------------------------------------------------------------------- repairs (IO)


def quarantine(root: Path, rel: str, kind: str, reason: str, now) -> str:
    """Move a file, folder or symlink into .quarantine/ (never delete) and note it; returns its new path."""
    folder = root / QUARANTINE_DIR
    ensure_dir(folder)
    os.chmod(folder, 0o700)
    stamp = (format_datetime(now) or "now").replace(":", "").replace("-", "")
    base = rel.strip("/").replace("/", "__")
    target_rel = f"{QUARANTINE_DIR}/{stamp}--{base}"
    n = 2
    while os.path.lexists(root / target_rel):
        target_rel = f"{QUARANTINE_DIR}/{stamp}-{n}--{base}"
        n += 1
    os.replace(root / rel, root / target_rel)
    index = folder / QUARANTINE_INDEX
    current = index.read_text(encoding="utf-8") if index.exists() else _QUARANTINE_HEADER

    def cell(text):
        return str(text or "").replace("|", "\\|").replace("\n", " ")

    atomic_write_text(index, current + f"| {format_datetime(now)} | {kind} | {cell(rel)} | {cell(target_rel)} | "
                                       f"{cell(reason)} |\n")
    return target_rel


class DoctorOps:
    """Memory mixin: `doctor(fix=False)` checks (and repairs) a tree."""

    def doctor(self, fix: bool = False, lock_timeout: float = 60.0) -> DoctorReport:
        """Check tree <-> catalog <-> INDEX.md <-> LanceDB, parse errors, duplicate ids, temp files,
        orphan sidecars/versions, symlinks leading out, a model mismatch and permissions.

        With fix=True repair what can be repaired (nothing is deleted: see the module doc).
        The checks run under the tree lock so that they see one consistent state.
        """
        from memstrata.storage import tree

        tree.require_initialised(self.root)
        report = DoctorReport(root=str(self.root), fix=fix)
        report.findings.extend(check_lock(self.root))
        with TreeLock(self.root, timeout=lock_timeout):
            report.findings = [f for f in report.findings if f.kind != "lock_held"]  # we got it: it was free
            first = self._doctor_checks(report)
            report.findings.extend(first)
            if fix and any(not f.fixed and f.fixable for f in first):
                self._doctor_fix(first)
                again = {f.key(): f for f in self._doctor_checks(None)}
                for finding in first:
                    if finding.key() not in again and finding.fixable:
                        finding.fixed = True
                        again.pop(finding.key(), None)
                    elif finding.key() in again:
                        again.pop(finding.key())
                report.findings.extend(again.values())  # new trouble the repairs uncovered
        return report

    # -- the checks, in order --------------------------------------------------------
    def _doctor_checks(self, report: DoctorReport | None) -> list[Finding]:
        scan = _scan(self.root)
        if report is not None:
            report.checked = {"entry_files": len(scan.stats), "entries": len(scan.entries),
                              "temp_files": len(scan.temp_files)}
        now = self.now()
        findings: list[Finding] = []
        findings += check_symlinks(scan)
        findings += check_unparseable(scan)
        findings += check_duplicates(scan)
        findings += check_temp_files(scan)
        findings += check_orphans(scan)
        findings += check_missing_sidecars(scan)
        findings += check_catalog(scan)
        findings += check_indexes(scan, now)
        findings += check_vectors(scan, self.settings)
        findings += check_permissions(self.root)
        return findings

    # -- the repairs ------------------------------------------------------------------
    def _doctor_fix(self, findings: list[Finding]) -> None:
        now = self.now()
        kinds = {f.kind for f in findings if f.fixable and not f.fixed}
        for f in findings:
            if not f.fixable or f.fixed:
                continue
            try:
                if f.kind in ("symlink_outside", "unparseable", "orphan_sidecar", "orphan_versions"):
                    if os.path.lexists(self.root / f.path):
                        where = quarantine(self.root, f.path, f.kind, f.detail, now)
                        f.action = f"moved to {where}"
                elif f.kind == "temp_file":
                    (self.root / f.path).unlink(missing_ok=True)
                    f.action = "removed"
                elif f.kind == "duplicate_id":
                    self._doctor_fix_duplicate(f, now)
            except (OSError, MemstrataError) as exc:
                f.action = f"could not fix: {getattr(exc, 'message', None) or exc}"
        if kinds & {"catalog", "unparseable", "duplicate_id", "symlink_outside", "index_md"}:
            self._doctor_fix_catalog()
        if kinds & {"index_md", "unparseable", "duplicate_id", "catalog"}:
            self._write_indexes(None)
        if kinds & {"vectors_missing", "vectors_unreadable", "model_mismatch", "vectors_rows", "duplicate_id",
                    "unparseable"}:
            self._doctor_fix_vectors(findings)
        if "permissions" in kinds:
            _tighten(self.root)

    def _doctor_fix_duplicate(self, f: Finding, now) -> None:
        if "fresh id" in (f.action or ""):
            entry = read_entry_file(self.root, f.path)
            fresh = entry.copy(id=new_id())
            self._save(fresh, previous=entry, reindex_text=True)
            f.action = f"now id {fresh.id}"
        else:
            where = quarantine(self.root, f.path, "duplicate_id", f"{f.detail}; {f.action}", now)
            f.action = f"moved to {where}"

    def _doctor_fix_catalog(self) -> None:
        from memstrata.storage.catalog import Catalog

        current = self.__dict__.pop("catalog", None)
        if current is not None:
            current.close()
        db = self.root / CACHE_DIR / CATALOG_FILE
        try:
            _catalog_rows(self.root) if db.exists() else None
        except sqlite3.Error:
            for suffix in ("", "-wal", "-shm", "-journal"):
                Path(f"{db}{suffix}").unlink(missing_ok=True)  # derived data: rebuilt just below
        catalog = Catalog(self.root)
        catalog.rebuild()
        self.__dict__["catalog"] = catalog

    def _doctor_fix_vectors(self, findings: list[Finding]) -> None:
        if not hasattr(self, "sync"):
            return
        scan = _scan(self.root)
        state = check_vectors(scan, self.settings)
        if not state:
            return
        rebuild = any(f.kind in ("vectors_unreadable", "model_mismatch") or "duplicated" in f.detail for f in state)
        if rebuild:
            if any(f.kind == "vectors_unreadable" for f in state):
                import shutil

                shutil.rmtree(self.root / VECTORS_DIR, ignore_errors=True)  # derived: rebuilt from the files
                if hasattr(self, "_vector_index"):
                    self._vector_index = None
            self.reindex()
            return
        self.sync()
        if check_vectors(_scan(self.root), self.settings):
            self.reindex()


def _tighten(root: Path) -> None:
    os.chmod(root, 0o700)
    for folder, dirs, files in os.walk(root, followlinks=False):
        for name in dirs + files:
            path = os.path.join(folder, name)
            try:
                st = os.lstat(path)
            except FileNotFoundError:
                continue
            if stat.S_ISLNK(st.st_mode) or not _loose_mode(st.st_mode):
                continue
            wanted = 0o700 if stat.S_ISDIR(st.st_mode) else (stat.S_IMODE(st.st_mode) & 0o700) | 0o600
            os.chmod(path, wanted)


def report_lines(report: DoctorReport) -> list[str]:
    """One line per finding, for people."""
    lines = []
    for f in report.findings:
        state = "fixed" if f.fixed else ("problem" if f.fixable else "needs you")
        where = f.path or f.id or ""
        action = f" -> {f.action}" if f.action else ""
        lines.append(f"[{state}] {f.kind} {where}: {f.detail}{action}")
    return lines


__all__ = ["DoctorOps", "DoctorReport", "Finding", "quarantine", "report_lines", "duplicate_plan",
           "temp_is_stale", "compare_rows", "expected_indexes"]
