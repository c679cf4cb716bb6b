"""The trash: deleted and forgotten entries, restorable, with an audit INDEX.md."""
from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path, PurePosixPath

from memstrata.storage.clock import format_datetime, parse_datetime
from memstrata.storage.errors import CorruptEntry, InvalidInput, NotFound
from memstrata.storage import codec, frontmatter_edit, layout, modes, vault_note
from memstrata.storage.atomic import atomic_move, atomic_write_text, ensure_dir
from memstrata.storage.entry import Entry, require_id, valid_id
from memstrata.storage.paths import slugify
from memstrata.storage.safe_io import check_write_target, is_regular_file, read_regular_text

TRASH_DIR = ".trash"
AUDIT_FILE = "INDEX.md"
_AUDIT_HEADER = (
    "# Trash audit\n\nEvery deletion, forgetting, restore and purge, oldest first.\n\n"
    "| when | action | id | title | from | reason |\n| --- | --- | --- | --- | --- | --- |\n"
)


@dataclass
class TrashItem:
    id: str
    title: str
    trashed_at: datetime | None
    trashed_from: str
    reason: str
    path: str  # relative to the root
    reported_at: datetime | None = None  # first shown to the user (maintain, trash list); purged only after

    def to_dict(self) -> dict:
        return {"id": self.id, "title": self.title, "trashed_at": format_datetime(self.trashed_at),
                "trashed_from": self.trashed_from, "reason": self.reason, "path": self.path,
                "reported_at": format_datetime(self.reported_at)}


def _cell(text) -> str:
    return str(text or "").replace("|", "\\|").replace("\n", " ")


def audit(root: Path, when: datetime, action: str, entry_id: str, title: str, origin: str, reason: str) -> None:
    """Append one row to .trash/INDEX.md (rewritten atomically; callers hold the tree lock)."""
    path = check_write_target(root, layout.path(root, TRASH_DIR) / AUDIT_FILE)
    ensure_dir(path.parent)
    current = read_regular_text(path) if path.exists() else _AUDIT_HEADER
    row = (f"| {format_datetime(when)} | {action} | {_cell(entry_id)} | {_cell(title)} | {_cell(origin)} "
           f"| {_cell(reason)} |\n")
    atomic_write_text(path, current + row, root=root)


# A vault note's permissions when it was trashed, as `ls -l` shows them (`rw-r--r--`: an octal
# 0644 would read back as a YAML number), given back by `mem restore`
MODE_KEY = "trashed_mode"
BOOKKEEPING = ("trashed_at", "trashed_from", "trash_reason", "reported_at", MODE_KEY)
# Before the mode was recorded, `mem` trashed under its umask 077: every trash file was this
LEGACY_TRASH_MODE = 0o600


def move_to_trash(root: Path, entry: Entry, reason: str, now: datetime, reported: bool = False) -> str:
    """Move an entry's file into the trash; returns its path there (relative to the root).

    `reported`: the caller shows the user this move now (`mem maintain` listing what it
    forgets), so the item counts as reported from this moment."""
    root = Path(root)
    target_rel = _free_trash_name(root, entry)
    trashed = entry.copy(path=target_rel)
    trashed.extra.update({"trashed_at": format_datetime(now), "trashed_from": entry.path, "trash_reason": reason})
    if reported:
        trashed.extra["reported_at"] = format_datetime(now)
    mode = modes.mode_of(root / entry.path) if layout.is_adopted(root) else None
    if mode is not None:
        trashed.extra[MODE_KEY] = stat.filemode(mode)[1:]
    try:  # a hand-made note keeps its own lines in the trash too (and when it comes back)
        original = read_regular_text(root / entry.path)
    except (OSError, UnicodeDecodeError):
        original = None
    text = _trash_text(root, original, entry.path, trashed, entry.path)  # refuses (InvalidInput) before anything moves
    audit(root, now, "trash", entry.id, entry.title, entry.path, reason)
    atomic_move(root / entry.path, root / target_rel, root=root)
    # a vault's note keeps its owner's permissions in the trash too (the trash folder itself stays
    # private); the engine's own tree keeps its files 0600
    atomic_write_text(root / target_rel, text, root=root, mode=mode)
    return target_rel


def _trash_text(root: Path, text: str | None, rel: str, entry: Entry, home: str) -> str:
    """The text of a trash file holding `entry`: a vault's note as it is, plus the trash's own keys
    (its title still from its file name at `home`, where it came from); else the smallest edit."""
    if layout.is_adopted(root):
        return vault_note.note_text(text, entry.path, entry, home=home)
    return frontmatter_edit.edited_text(text, rel, entry)


def _free_trash_name(root: Path, entry: Entry) -> str:
    """`.trash/{id}--{slug}.md` (an entry without an id: `--{slug}.md`), then -2, -3 ... if taken.

    The id must pass entry.require_id: a file name is never built from an invalid one.
    """
    prefix = require_id(entry.id) if entry.id else ""
    base = f"{layout.at(root, TRASH_DIR)}/{prefix}--{slugify(entry.title)}"
    candidate, n = f"{base}.md", 2
    while os.path.lexists(root / candidate):
        candidate, n = f"{base}-{n}.md", n + 1
    return candidate


def list_trash(root: Path) -> list[TrashItem]:
    folder = layout.path(root, TRASH_DIR)
    items = []
    if not folder.is_dir() or folder.is_symlink():
        return items
    for path in sorted(folder.glob("*.md")):
        if path.name == AUDIT_FILE or "--" not in path.name or not is_regular_file(path):
            continue  # only names the engine gives ({id}--{slug}.md): a note an editor put there is not ours
        rel = f"{layout.at(root, TRASH_DIR)}/{path.name}"
        try:
            entry = codec.parse(read_regular_text(path), path=rel, id_key=layout.id_key(root))
        except (CorruptEntry, UnicodeDecodeError, InvalidInput, ValueError, OSError):
            continue  # an unreadable trash file does not hide the others (mem doctor reports it)
        items.append(TrashItem(
            id=entry.id or _id_from_name(path.name),
            title=entry.title or PurePosixPath(str(entry.extra.get("trashed_from") or "")).stem,
            trashed_at=_date(entry.extra.get("trashed_at")),
            trashed_from=str(entry.extra.get("trashed_from") or _origin_from_audit(root, entry.id)),
            reason=str(entry.extra.get("trash_reason") or ""), path=rel,
            reported_at=_date(entry.extra.get("reported_at"))))
    return sorted(items, key=lambda i: (i.trashed_at is None, i.trashed_at or datetime.min), reverse=False)


def _date(value) -> datetime | None:
    """A bookkeeping date, None when absent or unreadable (a hand edit never breaks the listing)."""
    if not value:
        return None
    try:
        return parse_datetime(value)
    except (InvalidInput, ValueError, TypeError, OverflowError):
        return None


def mark_reported(root: Path, items: list[TrashItem], now: datetime) -> list[TrashItem]:
    """Record `reported_at: now` in each item not reported before (caller holds the tree lock).

    Returns the items as they are now (those reported just now carry `now`). An item that
    cannot be rewritten stays unreported (so it is not purged) and is returned as it was."""
    out = []
    for item in items:
        if item.reported_at is None:
            try:
                path = check_write_target(root, Path(root) / item.path)
                text = read_regular_text(path)
                entry = codec.parse(text, path=item.path, id_key=layout.id_key(root))
                entry.extra["reported_at"] = format_datetime(now)
                atomic_write_text(path, _trash_text(root, text, item.path, entry, item.trashed_from), root=root,
                                  mode=modes.mode_of(path) if layout.is_adopted(root) else None)
                item = TrashItem(**{**item.__dict__, "reported_at": now})
            except (CorruptEntry, UnicodeDecodeError, InvalidInput, ValueError, OSError):
                pass
        out.append(item)
    return out


def _id_from_name(name: str) -> str:
    """The id in a trash file name ({id}--{slug}.md), "" when it is not a valid id."""
    prefix = name.split("--")[0]
    return prefix if valid_id(prefix) else ""


def _origin_from_audit(root: Path, entry_id: str) -> str:
    path = layout.path(root, TRASH_DIR) / AUDIT_FILE
    if not is_regular_file(path):
        return ""
    origin = ""
    for line in read_regular_text(path).splitlines():
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        if len(cells) >= 5 and cells[1] == "trash" and cells[2] == entry_id:
            origin = cells[4]
    return origin


def find(root: Path, ref: str) -> TrashItem:
    """The trash item of an id or a unique id prefix (the latest trashed), of a trash file path
    (`.trash/NAME.md`) or of the path it was trashed from."""
    ref = str(ref or "").strip()
    items = list_trash(root)
    matches = [i for i in items if i.id == ref] if ref else []
    if not matches and ref:
        matches = [i for i in items if ref in (i.path, i.path[len(layout.at(root, TRASH_DIR)) + 1:], i.trashed_from)]
    if not matches and len(ref) >= 4:  # a unique id prefix, as every other command takes
        ids = {i.id for i in items if i.id and i.id.startswith(ref)}
        if len(ids) > 1:
            raise InvalidInput(f"{ref} is the start of several trashed ids ({', '.join(sorted(ids))}); give more of it")
        matches = [i for i in items if i.id in ids]
    if not matches:
        raise NotFound(f"no entry {ref!r} in the trash (give its id, or its path as `mem trash list` shows)")
    return matches[-1]


def _read_item(root: Path, item: TrashItem) -> Entry:
    text = read_regular_text(Path(root) / item.path)
    home = PurePosixPath(item.trashed_from).stem if item.trashed_from else ""  # a note titled by its name
    return codec.parse(text, path=item.path, fallback_title=home, id_key=layout.id_key(root))


def take_out(root: Path, item: TrashItem) -> Entry:
    """Read a trashed entry back without its trash bookkeeping fields (the file stays put)."""
    entry = _read_item(root, item)
    for key in BOOKKEEPING:
        entry.extra.pop(key, None)
    return entry


def parse_mode(text) -> int | None:
    """The permission bits of an `ls -l` string (`rw-r-----`: 0o640); None when it is not one."""
    text = str(text or "")
    if len(text) != 9:
        return None
    mode = 0
    for n, (char, allowed) in enumerate(zip(text, "rwx" * 3)):
        if char not in ("-", allowed):
            return None
        mode |= (char != "-") << (8 - n)
    return mode


def restored_mode(root: Path, item: TrashItem) -> int | None:
    """The mode a vault's note comes back with: the one recorded when it was trashed; else its
    trash file's own, unless that is the 0600 every trash file got before the mode was kept (the
    engine trashed under umask 077, whatever the note's mode was): then the umask's, as a new file
    of the user's. None outside a vault (the engine's files stay private)."""
    root = Path(root)
    if not layout.is_adopted(root):
        return None
    try:
        recorded = parse_mode(_read_item(root, item).extra.get(MODE_KEY))
    except (CorruptEntry, InvalidInput, ValueError, OSError, UnicodeDecodeError):
        recorded = None
    if recorded is not None:
        return recorded
    found = modes.mode_of(root / item.path)
    return modes.new_file_mode() if found in (None, LEGACY_TRASH_MODE) else found


def give_back_mode(root: Path, item: TrashItem) -> None:
    """Before a restore moves it back: the trash file of a vault's note gets the mode the note had
    (restored_mode), which the move and the engine's rewrite keep. The trash folder is private, and
    only a plain file of ours with one link is changed."""
    mode = restored_mode(root, item)
    path = check_write_target(root, Path(root) / item.path)
    try:
        st = os.lstat(path)
        if mode is not None and stat.S_ISREG(st.st_mode) and st.st_nlink == 1 and st.st_uid == os.getuid():
            os.chmod(path, mode)
    except OSError:
        pass  # the save that follows reports a file it cannot move


def purge(root: Path, now: datetime, retention_days, everything: bool = False,
          live_ids=frozenset(), only_ids=None) -> list[TrashItem]:
    """Delete for good the trash entries due for purging (or all of them).

    Due: scoring.lifecycle.trash_purge_due (reported to the user and in the trash longer than
    trash_retention_days since; an item never reported or without a trash date is never
    purged unless `everything`). `retention_days` is
    the number of days or a Settings object. Everything of a purged entry goes with it: its
    `.full/` sidecar (and superseded copies) and its kept versions in `.versions/{id}/`, unless
    an entry with that id is still in the tree (`live_ids`) or in the trash. `only_ids`: only the
    items of these ids (`mem capture --forget --purge`).
    """
    from memstrata.scoring.lifecycle import trash_purge_due
    from memstrata.storage import sidecars, versions
    from memstrata.storage.config import Settings

    settings = retention_days if isinstance(retention_days, Settings) else Settings(
        trash_retention_days=int(retention_days))
    purged = []
    for item in list_trash(root):
        if only_ids is not None and item.id not in only_ids:
            continue
        if everything or trash_purge_due(item.trashed_at, now, settings, item.reported_at):
            age_days = (now - item.trashed_at).total_seconds() / 86400 if item.trashed_at else float("inf")
            audit(root, now, "purge", item.id, item.title, item.trashed_from, f"in trash {age_days:.0f} days")
            sidecar = _sidecar_of(root, item)
            check_write_target(root, Path(root) / item.path).unlink(missing_ok=True)
            purged.append(item)
            if item.id and item.id not in live_ids and not any(i.id == item.id for i in list_trash(root)):
                if sidecar and _own_sidecar(sidecar, item.id, root):  # never another entry's original
                    sidecars.remove(root, sidecar)
                sidecars.remove_superseded(root, item.id)
                versions.remove_all(root, item.id)
    return purged


def _own_sidecar(sidecar: str, entry_id: str, root) -> bool:
    """A sidecar the engine made for this entry (`.full/{id}.md`); an imported or copied entry
    may name another entry's sidecar, which a purge must leave alone."""
    from memstrata.storage import sidecars

    try:
        return sidecar == sidecars.relative_path(entry_id, root)
    except InvalidInput:
        return False


def _sidecar_of(root: Path, item: TrashItem) -> str | None:
    """The `full_content_file` of a trashed entry, if it has one (None when unreadable)."""
    try:
        return take_out(root, item).full_content_file
    except (CorruptEntry, OSError, UnicodeDecodeError):
        return None
