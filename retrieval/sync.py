"""Sync of the vector table with the Markdown tree: size/mtime first, then content hash."""
from __future__ import annotations

from dataclasses import dataclass, field

from memstrata.retrieval import chunking, held_back
from memstrata.retrieval.table import READ_META, VectorIndex, indexed_form, row_id
from memstrata.retrieval.units import INDEXED, entry_of, units
from memstrata.storage.catalog import (
    entry_file_stat,
    is_entry_path_in,
    iter_entry_files,
    read_entry_file,
)

from memstrata.storage.cancel import cancelled, stop_if_cancelled
from memstrata.storage.codec import READ_RULES
from memstrata.storage.errors import CorruptEntry, Interrupted


@dataclass
class SyncPlan:
    """What differs between the tree and the table."""

    embed: list = field(default_factory=list)      # entries whose text changed or that are new
    metadata: list = field(default_factory=list)   # entries whose file changed but not their text
    remove: list = field(default_factory=list)     # row ids whose files are gone
    errors: dict = field(default_factory=dict)     # unreadable files
    flagged: dict = field(default_factory=dict)    # files holding a credential: not indexed (storage.secrets)
    model_changed: bool = False
    missing: bool = False
    looked_at: set | None = None  # the files read (None: the whole tree was walked)
    rekeyed: int = 0  # entries of `remove` whose file is still there under a new id (a hand-made file got one)
    allowed: dict | None = None  # the allowance marks to record once applied; None: the recorded ones
    read_rules: int | None = None  # codec.READ_RULES to record once applied (every file was read again)

    @property
    def empty(self) -> bool:
        return not (self.embed or self.metadata or self.remove) and self.allowed is None and self.read_rules is None

    def summary(self) -> dict:
        removed = len({entry_of(i) for i in self.remove}) - self.rekeyed  # entries (a session's turns: one)
        out = {"embedded": len(self.embed), "updated": len(self.metadata), "removed": removed,
               "errors": dict(self.errors), "model_changed": self.model_changed}
        if self.flagged:  # said only when there is something to say
            out["flagged"] = dict(self.flagged)
        return out


def flag(entry, root, located=None) -> str | None:
    """Why a file the engine did not check (hand-made, adopted, pulled) must not enter the index: the
    credentials the guard finds in its whole record (never the text; `located`: what
    storage.secrets.located_in_entry found, when the caller ran it) that the user did not allow
    for this note (`mem secrets allow`, storage/secret_allow.py), or None."""
    from memstrata.storage.secret_allow import elsewhere, not_allowed, problem
    from memstrata.storage.secrets import located_in_entry

    located = located_in_entry(entry) if located is None else located
    found = not_allowed(root, entry.path, located) if located else []
    if not found:
        return None
    if entry.extra.get(INDEXED):  # lines as the note's own body counts them, not the indexed text's alias line
        from dataclasses import replace

        from memstrata.retrieval.names import file_line

        found = [replace(f, line=file_line(entry.body, f.line)) if f.field == "body" else f for f in found]
    # an allow file of the wrong shape allows nothing and `mem secrets allow` refuses it: name it first
    broken = problem(root)
    allow = (f"`mem secrets allow {entry.path}` once the allow list is fixed: {broken}" if broken
             else f"`mem secrets allow {entry.path}`")
    # said, not silent: a pulled allow file (or one from before the machine key) replaced this machine's
    foreign = (" (the allow file's allowance for it was not made on this machine: it allows nothing here)"
               if elsewhere(root, entry.path) else "")
    return ("possible credential (" + "; ".join(f.describe() for f in found[:3])
            + (f"; {len(found) - 3} more" if len(found) > 3 else "")
            + f"): not indexed or shown until it is taken out of the file (or, if it is no secret, {allow})"
            + foreign)


ALLOWED_META = "secrets_allowed"  # meta.json: the allowance marks (secret_allow.marks) the table was synced with


def _allow_changes(index: VectorIndex) -> tuple[dict | None, set[str]]:
    """(the allowance marks to record, None when they are the recorded ones; the notes whose
    allowance changed since): those are read again whatever their stamp, as their file did not
    change when `mem secrets revoke` ran elsewhere or the allow file was edited or deleted by hand."""
    from memstrata.storage.secret_allow import marks

    now, before = marks(index.root), index.meta().get(ALLOWED_META)
    before = before if isinstance(before, dict) else {}
    if now == before:
        return None, set()
    return now, {rel for rel in set(now) | set(before) if now.get(rel) != before.get(rel)}


def allowance_applied(index: VectorIndex, rel: str) -> None:
    """Note `rel`'s row was just made to follow its allowance (`mem secrets allow|revoke` index or
    unindex it at once): its mark is the current one, so a later change of it is seen. Caller holds
    the tree lock; only this note's mark (another's hand edit is still the next sync's)."""
    from memstrata.storage.secret_allow import marks

    if not index.exists():
        return
    recorded = index.meta().get(ALLOWED_META)
    recorded = dict(recorded) if isinstance(recorded, dict) else {}
    mark = marks(index.root).get(rel)
    if mark is None:
        recorded.pop(rel, None)
    else:
        recorded[rel] = mark
    index.set_meta(ALLOWED_META, recorded)


def plan(index: VectorIndex, model_name: str | None = None, model_dim: int | None = None,
         paths: set[str] | None = None) -> SyncPlan:
    """Compare files on disk with the indexed rows (reads only files whose size/mtime changed).

    `paths` (relative to the root): only these files changed since the index was last in step
    with the tree (a TreeWatcher names them), so only they are looked at; None walks the tree.
    """
    if paths is not None:
        return _plan_paths(index, model_name, model_dim, paths)
    out = SyncPlan()
    out.allowed, recheck = _allow_changes(index)
    frame = index.frame() if index.exists() else None
    meta = index.meta()
    if frame is None:
        out.missing = True
    elif model_name is not None and (meta.get("model") != model_name or meta.get("dim") != model_dim):
        out.model_changed = True
    if frame is not None and meta.get(READ_META, 1) != READ_RULES:
        out.read_rules = READ_RULES  # entries are read by other rules now (H1 titles): every file read again
    known = {} if frame is None or out.model_changed or out.read_rules else {
        p: (entry_of(frame.cols["id"][n]), frame.cols["size"][n], frame.cols["mtime_ns"][n])
        for n, p in enumerate(frame.cols["path"])}
    seen_ids: set[str] = set()
    for rel, st in sorted(iter_entry_files(index.root)):
        row = known.get(rel)
        if row is not None and (row[1], row[2]) == (st.st_size, st.st_mtime_ns) and rel not in recheck:
            seen_ids.add(row[0])
            continue
        stop_if_cancelled("sync")  # before each file read: nothing is written yet
        try:
            entry = indexed_form(index.root, read_entry_file(index.root, rel))
        except (CorruptEntry, OSError) as exc:
            out.errors[rel] = getattr(exc, "message", str(exc))
            continue
        if (why := flag(entry, index.root)) is not None:
            out.flagged[rel] = why
            continue
        rid = row_id(entry)
        if rid in seen_ids:
            out.errors[rel] = f"duplicate id {entry.id}: indexed once"
            continue
        seen_ids.add(rid)
        if not out.model_changed and _same_text(frame, entry):
            out.metadata.append(entry)
        else:
            out.embed.append(entry)
    if frame is not None:
        out.remove = sorted({i for i in frame.ids if entry_of(i) not in seen_ids})
        out.rekeyed = _rekeyed(frame, out)
    return out


def model_in_step(index: VectorIndex, model_name: str, model_dim: int) -> bool:
    """Whether the table was built by this model and these read rules (its meta.json, no LanceDB)."""
    meta = index.meta()
    return meta.get("model") == model_name and meta.get("dim") == model_dim and meta.get(READ_META, 1) == READ_RULES


def behind(index: VectorIndex) -> bool:
    """Whether the table misses something of the tree (an entry file added, changed or removed
    since it was indexed, or no table while the tree holds entries), found without the model:
    only files whose size/mtime differ from their rows are read. A tree and table unchanged since
    they were last found in step (retrieval/in_step.py) are told without opening the table."""
    from memstrata.retrieval import in_step

    tree, table = in_step.tree_part(index.root), in_step.table_part(index)
    if in_step.matches(index, tree, table):
        return False
    if not index.exists():
        late = any(True for _ in iter_entry_files(index.root))
    else:
        late = not plan(index).empty
    if not late:
        in_step.record(index, tree, table)  # unless the table changed meanwhile (no lock held here)
    return late


def _plan_paths(index: VectorIndex, model_name, model_dim, paths: set[str]) -> SyncPlan:
    """`plan` for a known set of changed files: the same decisions, O(changed)."""
    frame = index.frame() if index.exists() else None
    meta = index.meta()
    if frame is None or (model_name is not None and (meta.get("model") != model_name or meta.get("dim") != model_dim)) \
            or meta.get(READ_META, 1) != READ_RULES:
        return plan(index, model_name, model_dim)  # the whole tree is to embed, or to read again
    out = SyncPlan()
    out.allowed, recheck = _allow_changes(index)
    paths = set(paths) | recheck
    out.looked_at = paths
    at_path = frame.by_path
    found: dict[str, str] = {}  # row id -> path where it is now
    for rel in sorted(p for p in paths if is_entry_path_in(index.root, p)):
        st = entry_file_stat(index.root, rel)
        if st is None:
            continue
        n = at_path.get(rel)
        if n is not None and (frame.cols["size"][n], frame.cols["mtime_ns"][n]) == (st.st_size, st.st_mtime_ns) \
                and rel not in recheck:
            found[entry_of(frame.ids[n])] = rel
            continue
        stop_if_cancelled("sync")
        try:
            entry = indexed_form(index.root, read_entry_file(index.root, rel))
        except (CorruptEntry, OSError) as exc:
            out.errors[rel] = getattr(exc, "message", str(exc))
            continue
        if (why := flag(entry, index.root)) is not None:
            out.flagged[rel] = why
            continue
        rid = row_id(entry)
        first = frame.first_of(rid)
        indexed_at = frame.cols["path"][first] if first is not None else None
        if rid in found or (indexed_at is not None and indexed_at != rel and indexed_at not in paths
                            and entry_file_stat(index.root, indexed_at) is not None):
            out.errors[rel] = f"duplicate id {entry.id}: indexed once"  # another file holds this id
            continue
        found[rid] = rel
        if _same_text(frame, entry):
            out.metadata.append(entry)
        else:
            out.embed.append(entry)
    for rel in paths:
        n = at_path.get(rel)
        if n is not None and entry_of(frame.ids[n]) not in found and rel not in out.errors:
            # the file is gone, or now holds another id (a hand-made file got one)
            out.remove.extend(frame.rows_of(entry_of(frame.ids[n])))
    out.remove.sort()
    out.rekeyed = _rekeyed(frame, out)
    return out


def _rekeyed(frame, out: SyncPlan) -> int:
    """Entries to drop whose file is indexed again under another id (a hand-made file's `path:` row once
    the file has its id): re-keyed, not removed."""
    kept = {e.path for e in out.embed + out.metadata}
    return len({entry_of(i) for i in out.remove if i in frame.pos and frame.cols["path"][frame.pos[i]] in kept})


def _same_text(frame, entry) -> bool:
    """Whether the table holds `entry` (in its indexed form) with the same text: one row key per
    unit (a captured session: per turn, retrieval/units.py), each with its unit's content hash."""
    if frame is None:
        return False
    parts = units(entry)
    if len(frame.rows_of(row_id(entry))) != len(parts):
        return False
    for u in parts:
        n = frame.pos.get(row_id(u))
        if n is None or frame.cols["hash"][n] != chunking.content_hash(u.title, u.body):
            return False
    return True


UPSERT_BATCH = 2000  # entries per upsert: one sorted embedding run and one table write each


def entries_progress(progress, start: int, size: int, total: int):
    """The embedder's progress (texts of one upsert) as entries of the whole sync: `start` plus
    this upsert's share, so a run of several upserts shows one count and one end, not one per upsert."""
    if progress is None:
        return None
    return lambda done, texts: progress(min(start + size * done // max(texts, 1), total - 1), total)


def apply(index: VectorIndex, todo: SyncPlan, embedder, progress=None) -> dict:
    """Carry out a plan (caller holds the tree lock). A model change rebuilds the whole table.
    progress(done, total) counts entries (notes), the last call (total, total) once all are written."""
    entries = todo.embed + todo.metadata
    if todo.model_changed or todo.missing:
        if todo.model_changed or index.exists() or not entries:
            index.create(embedder)  # else the first upsert creates it once its rows are embedded
        todo.remove = []
    if todo.remove:
        index.delete(todo.remove, units=False)  # every row key to drop: a session's turns are listed
    for start in range(0, len(entries), UPSERT_BATCH):
        # the service's caller went away: what is indexed stays (a part being embedded is not
        # written: upsert writes its rows once all are embedded), a rerun goes on from there
        stopped = Interrupted(f"sync stopped after {start} of {len(entries)} entries; run it again to finish")
        if start and cancelled():
            raise stopped
        part = entries[start:start + UPSERT_BATCH]
        try:
            index.upsert(part, lambda: embedder, progress=entries_progress(progress, start, len(part), len(entries)))
        except Interrupted:
            raise stopped from None
    if progress is not None and entries:
        progress(len(entries), len(entries))
    index.maybe_optimize(force=bool(entries or todo.remove) and (todo.model_changed or todo.missing))
    if todo.allowed is not None and index.exists():
        index.set_meta(ALLOWED_META, todo.allowed)
    held_back.record(index, todo.flagged, todo.looked_at)
    if todo.read_rules is not None and index.exists():
        index.set_meta(READ_META, todo.read_rules)
    return todo.summary()
