"""Versions: the pre-write check (duplicate, near-duplicate, conflict), kept versions, history and revert."""
# The rules (documented in docs/versions.md):
#
# - Candidates are the non-expired entries of the *same category* (archived ones included).
#   Categories up to `grep_max_entries` entries are read in full; beyond that, entries with
#   the same title key or tag set plus the vector index's nearest neighbours in the category.
# - Similarity is the cosine of the embeddings of title + body (the text the vector index
#   embeds for chunk 0); vectors come from a per-process cache, then from the index rows
#   whose content hash still matches, then from the model. No model: similarity unknown, and
#   only exact duplicates and same-title versions are found.
# - scoring.conflicts.classify_write decides: duplicate (nothing written, existing id reported),
#   conflict (the same subject: by its title or an alias, or by its tags and a similar text; the
#   existing entry gets a new version holding the new content), near_duplicate (nothing written
#   unless --merge folds it in or --force writes it anyway), new.
# - Every content change of an existing entry keeps the replaced file in full under
#   `.versions/{id}/v{N}.md` and adds a line to the entry's version history (frontmatter `history:`).
from __future__ import annotations

import hashlib
import re
from pathlib import PurePosixPath

from memstrata.engine.entries import Entries
from memstrata.engine.save import SavePath
from memstrata.engine.state import TreeState
from memstrata.features.compression import is_note_line
from memstrata.errors import CorruptEntry, InvalidInput, MemstrataError, NotFound
from memstrata.results import WriteResult
from memstrata.storage import layout, vault_note, versions
from memstrata.storage.catalog import read_entry_file
from memstrata.storage.entry import Entry
from memstrata.storage.paths import is_archived_path
from memstrata.storage.safe_io import read_regular_text

NEIGHBOURS = 20                 # nearest index rows asked for in a large category
VECTOR_CACHE_MAX = 20000        # vectors kept per process (keyed by content hash)


class Versions:
    """The save path's write check and version step, plus history, version, revert."""

    def __init__(self, state: TreeState, entries: Entries, save: SavePath):
        self.state = state
        self.entries = entries
        self.save = save
        self.root = state.root
        self._vectors: dict = {}  # embeddings of title + body, keyed by content hash

    # ====================================================================== pre-write checks
    def check_new(self, entry: Entry, force: bool, merge: bool) -> WriteResult | None:
        """The write check: None (write it), or what happened instead (caller holds the lock)."""
        if force:
            return None
        from memstrata.scoring.conflicts import classify_write

        on_disk: dict = {}
        pool = self._precheck_candidates(entry, on_disk)
        if not pool:
            return None
        decision = classify_write(entry.title, entry.body, entry.tags, pool, self.state.settings)
        if decision.kind == "new":
            return None
        compared = next(c.entry for c in pool if c.entry.id == decision.target_id)  # with its full text
        target = on_disk[compared.id]  # as its file holds it: what a change starts from
        sim = decision.similarity
        if decision.kind == "duplicate":
            return WriteResult(id=target.id, path=target.path, action="duplicate", version=target.version,
                               message=f"duplicate of {target.id}: the same content is stored already, nothing written",
                               related_id=target.id, similarity=sim)
        if merge:  # folded into the full original (the update step then leaves it uncompressed)
            changed = self._folded(compared, entry)
            self.save.update(target, changed, note=f"merged: {versions.one_line(entry.body, entry.title)}")
            return WriteResult(id=changed.id, path=changed.path, action="merged", version=changed.version,
                               message=f"merged into {changed.id}: current v{changed.version}",
                               warnings=self.entries.category_warnings(changed.category), related_id=target.id,
                               similarity=sim, previous_version=target.version, rule=decision.rule)
        if decision.kind == "near_duplicate":
            return WriteResult(id=target.id, path=target.path, action="near_duplicate", version=target.version,
                               message=(f"near-duplicate of {target.id} (similarity {sim:.2f}): nothing written; "
                                        "--merge folds it in, --force writes it anyway"),
                               related_id=target.id, similarity=sim)
        # the same subject: the new content becomes the current version of the existing entry
        changed = self._superseded(target, entry)
        kind = "refined" if decision.refines else "conflict"
        self.save.update(target, changed,
                         note=f"{versions.one_line(entry.body, entry.title)} ({kind}, replaced v{target.version}{_by(entry)})")
        return WriteResult(id=changed.id, path=changed.path, action="conflict", version=changed.version,
                           message=_conflict_message(decision, target, changed),
                           warnings=self.entries.category_warnings(changed.category), related_id=target.id,
                           similarity=sim, previous_version=target.version, rule=decision.rule,
                           refines=decision.refines)

    def keep_version(self, current: Entry, changed: Entry, note: str | None, undo: list) -> None:
        """The update step: keep `current` as a version when anything the user sees changes (title,
        body, tags, importance, links, expiry, category); always with a note."""
        if note is None and _seen(changed) == _seen(current):
            return
        self._new_version(current, changed,
                          note or f"{versions.one_line(changed.body, changed.title)} (update{_by(changed)})", undo)

    def _superseded(self, target: Entry, new: Entry) -> Entry:
        """The existing entry after a write on its subject: the new body and tags, the same id, file and
        title (the subject's name: "editor theme" or another title with its tags does not rename it)."""
        now = self.state.now()
        changed = target.copy(body=new.body, updated=now,
                              tags=list(new.tags) or list(target.tags),
                              important=target.important or new.important,
                              related=list(dict.fromkeys(target.related + new.related)),
                              expires=new.expires or target.expires, agent=new.agent or target.agent)
        return self._reactivated(changed)

    def _folded(self, target: Entry, new: Entry) -> Entry:
        """The existing entry with the new text folded in (merge of a near-duplicate or conflict)."""
        head = target.body.rstrip()
        body = (head + "\n\n" if head else "") + new.body.strip() + "\n"
        changed = target.copy(body=body, updated=self.state.now(), tags=list(dict.fromkeys(target.tags + new.tags)),
                              important=target.important or new.important,
                              related=list(dict.fromkeys(target.related + new.related)))
        return self._reactivated(changed)

    def _reactivated(self, changed: Entry) -> Entry:
        """A changed archived entry becomes active again and leaves `archived/`."""
        if changed.status == "archived":
            from memstrata.storage import tree

            changed.status = "active"
            if changed.path and is_archived_path(changed.path):
                changed.path = tree.unique_entry_path(self.root, changed.category, PurePosixPath(changed.path).stem)
        return changed

    # -- keeping versions -------------------------------------------------------------------
    def _new_version(self, current: Entry, changed: Entry, summary: str, undo: list) -> None:
        """Keep `current`'s file in .versions and make `changed` the next version (caller saves it)."""
        kept = self._keep_snapshot(current, undo)
        history = versions.with_current_line(current.copy(version=kept))
        changed.version = kept + 1
        history.append(versions.history_item(changed.version, changed.updated or self.state.now(), summary))
        changed.history = history
        if layout.is_adopted(self.root):  # the note holds no `history:`: its lines go beside the kept text
            self._keep_lines(changed.id, [h for h in history if int(h["version"]) >= kept], undo)

    def _keep_lines(self, entry_id: str, lines: list[dict], undo: list) -> None:
        """An adopted vault's history lines (versions.save_line); a line kept already (a team merge's,
        which says more) stays; the new ones go again if the save fails."""
        saved = versions.saved_lines(self.root, entry_id)
        for line in lines:
            if int(line["version"]) in saved:
                continue
            path = versions.save_line(self.root, entry_id, line)
            undo.append(lambda path=path: path.unlink(missing_ok=True))

    def _keep_snapshot(self, current: Entry, undo: list) -> int:
        """Write the current file text as a kept version (removed again if the save fails); its number."""
        path = self.root / current.path
        text = read_regular_text(path)
        if current.is_compressed:
            # a version is kept whole: the compressed file's stub would point at a sidecar the
            # change is about to set aside, and a revert would bring back the stub
            from memstrata.storage import codec
            from memstrata.storage.sidecars import with_full_body

            full = with_full_body(self.root, current)
            if full.body != current.body:
                # what a person wrote into the stub after compression is in no sidecar: kept with the full text
                added = _written_into_stub(current.body, full.body, current.tags, current.layer)
                body = full.body.rstrip("\n") + "\n\n" + added + "\n" if added else full.body
                text = codec.render(full.copy(body=body, layer="L0", full_content_file=None, summary=None))
        n = current.version
        kept = versions.list_snapshots(self.root, current.id)
        if n in kept and read_regular_text(kept[n]) != text:
            n = max(max(kept), n) + 1  # edited by hand without a version bump: keep both
        if versions.save_snapshot(self.root, current.id, n, text):
            undo.append(lambda: versions.remove_snapshot(self.root, current.id, n))
        return n

    # -- candidates and similarity ---------------------------------------------------------------
    def _precheck_candidates(self, entry: Entry, on_disk: dict) -> list:
        """The entries of the category a new write may repeat or be about (scoring.conflicts.Candidate),
        each with its full text (a compressed entry is compared by what it said before compression,
        as recall finds it) and the cosine to the new text; `on_disk` gets each as its file holds it."""
        from memstrata.retrieval.chunking import entry_text
        from memstrata.scoring.conflicts import Candidate, normalise_tags, title_key
        from memstrata.storage.sidecars import with_full_body

        catalog = self.state.catalog
        catalog.refresh()
        metas = [e for e in catalog.entries(entry.category)
                 if e.category == entry.category and e.status != "expired" and e.id]
        if not metas:
            return []
        vector = self._text_vectors([entry_text(entry.title, entry.body)])
        new_vec = vector[0] if vector is not None else None
        tags = normalise_tags(entry.tags)
        if len(metas) > self.state.settings.grep_max_entries:
            key = title_key(entry.title)
            near = set(self._index_neighbours(new_vec, entry.category)) if new_vec is not None else set()
            metas = [m for m in metas if m.id in near or title_key(m.title) == key
                     or (tags and normalise_tags(m.tags) == tags)]
        full = []
        for meta in metas:
            try:
                stored = read_entry_file(self.root, meta.path)
                full.append(with_full_body(self.root, stored))
            except (CorruptEntry, OSError, MemstrataError):
                continue
            on_disk[stored.id] = stored
        if not full:
            return []
        from memstrata.retrieval.names import aliases

        vectors = self._entry_vectors(full) if new_vec is not None else {}  # no model: by the names alone
        return [Candidate(e, _cosine(new_vec, vectors[e.id]) if e.id in vectors else None, _is_record(e, entry),
                          tuple(aliases(e))) for e in full]

    def _vector_cache(self) -> dict:
        if len(self._vectors) > VECTOR_CACHE_MAX:
            self._vectors.clear()
        return self._vectors

    def _text_vectors(self, texts: list[str]):
        """Embeddings of texts (cached by content), or None when the model cannot load."""
        cache = self._vector_cache()
        keys = [hashlib.sha256(t.encode("utf-8")).hexdigest()[:32] for t in texts]
        missing = [(k, t) for k, t in zip(keys, texts) if k not in cache]
        if missing:
            try:
                vecs = self.state.embedder.embed([t for _, t in missing])
            except MemstrataError:  # model unavailable: checks without similarity
                return None
            for (k, _), v in zip(missing, vecs):
                cache[k] = v
        return [cache[k] for k in keys]

    def _entry_vectors(self, entries: list[Entry]) -> dict:
        """id -> embedding of title + body: cache, then current index rows, then the model."""
        from memstrata.retrieval.chunking import content_hash, entry_text

        cache = self._vector_cache()
        out, todo = {}, []
        for e in entries:
            # the cache key is the hash of the embedded text (the index's content hash is its prefix form)
            key = hashlib.sha256(entry_text(e.title, e.body).encode("utf-8")).hexdigest()[:32]
            if key in cache:
                out[e.id] = cache[key]
            else:
                todo.append((e, key))
        if todo:
            index = self._usable_index()
            if index is not None:
                try:
                    rows = index.fetch_rows([e.id for e, _ in todo])
                except Exception:  # noqa: BLE001 - the index is derived; fall back to the model
                    rows = {}
                rest = []
                for e, key in todo:
                    first = (rows.get(e.id) or [None])[0]
                    if first and first.get("chunk") == 0 and first.get("hash") == content_hash(e.title, e.body):
                        import numpy as np

                        cache[key] = out[e.id] = np.asarray(first["vector"], dtype="float32")
                    else:
                        rest.append((e, key))
                todo = rest
        if todo:
            vecs = self._text_vectors([entry_text(e.title, e.body) for e, _ in todo])
            if vecs is not None:
                for (e, _), v in zip(todo, vecs):
                    out[e.id] = v
        return out

    def _usable_index(self):
        """The tree's vector index when it exists and was built with this model, else None."""
        try:
            index = self.state.vector_index()
            if not index.exists() or not index.model_matches(self.state.embedder) or index.table() is None:
                return None
            index.refresh()
            return index
        except Exception:  # noqa: BLE001
            return None

    def _index_neighbours(self, vector, category: str) -> list[str]:
        index = self._usable_index()
        if index is None:
            return []
        from memstrata.retrieval.table import sql_str

        try:
            q = index.table().search(vector.tolist(), vector_column_name="vector")
            q = q.where(f"category = {sql_str(category)}", prefilter=True)
            rows = q.select(["id"]).limit(NEIGHBOURS * 4).to_arrow().to_pydict()
        except Exception:  # noqa: BLE001
            return []
        from memstrata.retrieval.units import entry_of  # a session's turns are rows of their own

        return list(dict.fromkeys(entry_of(i) for i in rows.get("id", [])))[:NEIGHBOURS]

    # ====================================================================== history and revert
    def history(self, ref: str) -> list[dict]:
        """Every version of an entry: version, date, summary, current, available (body kept)."""
        entry = self.entries.resolve(ref)
        kept = versions.list_snapshots(self.root, entry.id)
        lines = {int(h["version"]): h for h in versions.with_current_line(entry)}
        # an adopted vault's note holds no `history:`: its lines (a team merge's) are kept beside its versions
        lines.update(versions.saved_lines(self.root, entry.id))
        out = []
        for n in sorted(set(kept) | set(lines)):
            line = lines.get(n)
            if line is None:
                try:
                    old = versions.snapshot_entry(self.root, entry.id, n)
                    line = versions.history_item(n, old.updated or old.created, versions.one_line(old.body, old.title))
                except MemstrataError:
                    line = {"version": n, "date": "", "summary": "(unreadable)"}
            out.append({"version": n, "date": line.get("date", ""), "summary": line.get("summary", ""),
                        "current": n == entry.version, "available": n == entry.version or n in kept})
        return out

    def version(self, ref: str, n: int) -> Entry:
        """Version `n` of an entry as an Entry (the current one, or a kept one)."""
        entry = self.entries.resolve(ref)
        n = int(n)
        if n == entry.version:
            return entry
        if n > entry.version:
            raise NotFound(f"{entry.id} has no version {n}: it is at v{entry.version}")
        return versions.snapshot_entry(self.root, entry.id, n, entry.path)

    def _kept_note(self, current: Entry, n: int) -> str | None:
        """The exact text of version `n` of an adopted vault's note when it holds the note's own id
        (None otherwise: the entry is rebuilt from that version's title, body and tags)."""
        if not self.state.vault or n == current.version:
            return None
        try:
            text = versions.read_snapshot(self.root, current.id, n)
            same = vault_note.as_read(text, current.path, current).id == current.id
        except MemstrataError:
            return None
        return text if same else None

    def history_show(self, ref: str, n: int) -> str:
        """The full body of version `n`."""
        return self.version(ref, n).body

    def revert(self, ref: str, to: int) -> WriteResult:
        """Make version `to` current again, as a new version (nothing is lost)."""
        to = int(to)
        with self.state.lock():
            current = self.entries.resolve(ref)
            if to == current.version:
                raise InvalidInput(f"{current.id} is at v{to} already")
            old = self.version(current.id, to)
            changed = self._reactivated(current.copy(title=old.title, body=old.body, tags=list(old.tags),
                                                     updated=self.state.now()))
            kept = self._kept_note(current, to)  # a vault's note comes back byte for byte
            if kept is not None:
                changed = vault_note.as_read(kept, current.path, current.copy(updated=self.state.now()))
            warnings = self.save.check_entry(changed)
            self.save.update(current, changed, note=f"reverted to v{to}: {versions.one_line(old.body, old.title)}",
                             text=kept)
        return WriteResult(id=changed.id, path=changed.path, action="updated", version=changed.version,
                           message=f"reverted {changed.id} to v{to}: current v{changed.version}",
                           warnings=warnings, related_id=changed.id)


# ========================================================================== helpers
_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
_WHY = {"title": "same title", "alias": "its title is an alias of it", "tags": "same tags and subject",
        "departed": "it says what the entry said was left"}


def _seen(entry: Entry) -> tuple:
    """What an update may change that the user sees: a change of any of it keeps a version."""
    return (entry.title, entry.body, list(entry.tags), entry.importance, entry.important, list(entry.related),
            entry.expires, entry.category)


def _is_record(entry: Entry, new: Entry) -> bool:
    """An entry a write never becomes a version of: a daily note (daily/YYYY-MM-DD.md, appended to by
    `mem daily`), or another section of the agent memory file a section comes from (import-builtin:
    two "## Rules" sections of one CLAUDE.md are two entries)."""
    if entry.category.casefold() == "daily" and _DAY.fullmatch(entry.title or ""):
        return True
    source = new.extra.get("source")
    return bool(source) and entry.extra.get("source") == source and "source_section" in new.extra


def _conflict_message(decision, target: Entry, changed: Entry) -> str:
    """What the user is told when a write became the next version of an entry on the same subject."""
    why = _WHY.get(decision.rule, "same subject")
    if decision.left:  # the value the write leaves, which the entry states: the change itself
        why = f"{'same tags; ' if decision.rule == 'tags' else ''}it leaves {decision.left}, which v{target.version} said"
    head = (f'new version of "{target.title}" ({why}; it adds to v{target.version})' if decision.refines
            else f'conflict detected with "{target.title}" ({why})')
    return f"{head}: both versions kept, current is v{changed.version}"


def _by(entry: Entry) -> str:
    """", by <agent>" for a version history line when an agent wrote the change (the shared space)."""
    return f", by {entry.agent}" if entry.agent else ""


def _cosine(a, b) -> float:
    import numpy as np

    a = np.asarray(a, dtype="float32")
    b = np.asarray(b, dtype="float32")
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    if na == 0.0 or nb == 0.0:
        return 0.0
    return float(np.dot(a, b) / (na * nb))


def _written_into_stub(stub: str, full: str, tags: list[str], layer: str) -> str:
    """The lines of a compressed note's stub that neither its full text holds (words and list marks
    aside: a summary may join a label and the step it labels) nor compression wrote (its note on where
    the full text is, its "Tags: ..." line): what was written into the stub by hand since. An editor's
    saves appended to a stub were lost when the entry was then updated (tests/memstrata/test_editor_races.py);
    the compressor's tag line was kept as if written by hand (a new user's review)."""
    def flat(text: str) -> str:
        return " ".join(_LIST_MARK.sub("", text).split())

    # the "Tags: ..." line only the one-line layers write (features/compression.py)
    whole, tag_line = flat(full), f"Tags: {', '.join(tags)}" if layer in ("L2", "L3", "L4") else None
    added = []
    for line in (stub or "").splitlines():
        core = line.strip().lstrip("-*•").strip()
        if core and not is_note_line(line) and core != tag_line and flat(core) not in whole:
            added.append(line)
    return "\n".join(added)


_LIST_MARK = re.compile(r"(?m)^\s*(?:[-*•+]|\d+[.)])\s+")
