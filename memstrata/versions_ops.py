"""Memory mixin for the pre-write checks and versions: dedup, near-duplicates, conflicts,
history/revert, category split/merge and the one-way import of an agent's own MEMORY.md.

The rules (documented in docs/versions.md):

- Candidates are the non-expired entries of the *same category* (archived ones included).
  Categories up to `grep_max_entries` entries are read in full; beyond that, entries with
  the same title or tag set plus the vector index's nearest neighbours in the category.
- Similarity is the cosine of the embeddings of title + body (the text the vector index
  embeds for chunk 0); vectors come from a per-process cache, then from the index rows
  whose content hash still matches, then from the model. No model: similarity 0, and only
  exact duplicates and same-title conflicts are caught.
- scoring.classify_write decides: duplicate (nothing written, existing id reported),
  conflict (the existing entry gets a new version holding the new content), near_duplicate
  (nothing written unless --merge folds it in or --force writes it anyway), new.
- Every content change of an existing entry keeps the replaced file in full under
  `.versions/{id}/v{N}.md` and adds a line to the entry's "Version history" section.
"""
from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path, PurePosixPath

from memstrata.errors import CorruptEntry, InvalidInput, MemstrataError, NotFound
from memstrata.results import WriteResult
from memstrata.storage import versions
from memstrata.storage.catalog import read_entry_file
from memstrata.storage.entry import Entry
from memstrata.storage.paths import entry_dir, is_archived_path, slugify, validate_category

SPLIT_MODES = ("status", "year", "month", "tag")
STATUS_SUBCATEGORY = {"active": "active", "archived": "archive", "expired": "expired"}
NEIGHBOURS = 20                 # nearest index rows asked for in a large category
VECTOR_CACHE_MAX = 20000        # vectors kept per process (keyed by content hash)
IMPORT_MAX_BYTES = 4 * 1024 * 1024


class VersionOps:
    """Pre-write checks (hooks of the core), history/revert, split/merge, import_builtin."""

    # ====================================================================== pre-write checks
    def _before_write(self, entry: Entry, force: bool, merge: bool) -> WriteResult | None:
        early = super()._before_write(entry, force, merge)
        if early is not None or force:
            return early
        from memstrata.scoring.conflicts import classify_write

        pool = self._precheck_candidates(entry)
        if not pool:
            return None
        decision = classify_write(entry.title, entry.body, entry.tags, pool, self.settings)
        while decision.kind == "near_duplicate" and _numbers(entry) != _numbers(
                next(e for e, _ in pool if e.id == decision.target_id)):
            # a text that differs in its numbers says something else ("at 5" vs "at 6"): not a rephrase
            pool = [(e, s) for e, s in pool if e.id != decision.target_id]
            decision = classify_write(entry.title, entry.body, entry.tags, pool, self.settings)
        if decision.kind == "new":
            return None
        target = next(e for e, _ in pool if e.id == decision.target_id)
        sim = decision.similarity
        if decision.kind == "duplicate":
            return WriteResult(id=target.id, path=target.path, action="duplicate", version=target.version,
                               message=f"duplicate of {target.id}: the same content is stored already, nothing written",
                               related_id=target.id, similarity=sim)
        if merge:
            changed = self._folded(target, entry)
            super()._before_update(target, changed)  # the other features' update hooks, not ours
            self._new_version(target, changed, f"merged: {versions.one_line(entry.body, entry.title)}")
            self._save(changed, previous=target)
            return WriteResult(id=changed.id, path=changed.path, action="merged", version=changed.version,
                               message=f"merged into {changed.id}: current v{changed.version}",
                               warnings=self._category_warnings(changed.category), related_id=target.id,
                               similarity=sim)
        if decision.kind == "near_duplicate":
            return WriteResult(id=target.id, path=target.path, action="near_duplicate", version=target.version,
                               message=(f"near-duplicate of {target.id} (similarity {sim:.2f}): nothing written; "
                                        "--merge folds it in, --force writes it anyway"),
                               related_id=target.id, similarity=sim)
        # conflict: the new content becomes the current version of the existing entry
        changed = self._superseded(target, entry)
        super()._before_update(target, changed)
        self._new_version(target, changed, f"{versions.one_line(entry.body, entry.title)} (conflict, now current)")
        self._save(changed, previous=target)
        return WriteResult(id=changed.id, path=changed.path, action="conflict", version=changed.version,
                           message=f"conflict with {changed.id}: kept both versions, current v{changed.version}",
                           warnings=self._category_warnings(changed.category), related_id=target.id,
                           similarity=sim)

    def _before_update(self, current: Entry, changed: Entry) -> None:
        super()._before_update(current, changed)
        if changed.body != current.body or changed.title != current.title:
            self._new_version(current, changed, f"{versions.one_line(changed.body, changed.title)} (update)")

    def _superseded(self, target: Entry, new: Entry) -> Entry:
        """The existing entry after a conflicting write: new title/body/tags, same id and file."""
        now = self.now()
        changed = target.copy(title=new.title, body=new.body, updated=now,
                              tags=list(new.tags) or list(target.tags),
                              important=target.important or new.important,
                              related=list(dict.fromkeys(target.related + new.related)),
                              expires=new.expires or target.expires)
        return self._reactivated(changed)

    def _folded(self, target: Entry, new: Entry) -> Entry:
        """The existing entry with the new text folded in (merge of a near-duplicate or conflict)."""
        head = target.body.rstrip()
        body = (head + "\n\n" if head else "") + new.body.strip() + "\n"
        changed = target.copy(body=body, updated=self.now(), tags=list(dict.fromkeys(target.tags + new.tags)),
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
    def _new_version(self, current: Entry, changed: Entry, summary: str) -> None:
        """Keep `current`'s file in .versions and make `changed` the next version (caller saves it)."""
        kept = self._keep_snapshot(current)
        history = versions.with_current_line(current.copy(version=kept))
        changed.version = kept + 1
        history.append(versions.history_item(changed.version, changed.updated or self.now(), summary))
        changed.history = history

    def _keep_snapshot(self, current: Entry) -> int:
        """Write the current file text as a kept version; returns its version number."""
        path = self.root / current.path
        text = path.read_text(encoding="utf-8")
        n = current.version
        kept = versions.list_snapshots(self.root, current.id)
        if n in kept and kept[n].read_text(encoding="utf-8") != text:
            n = max(max(kept), n) + 1  # edited by hand without a version bump: keep both
        if versions.save_snapshot(self.root, current.id, n, text):
            pending = self.__dict__.setdefault("_versions_pending", {})
            pending.setdefault(current.id, []).append(n)
        return n

    def _save_many(self, changes: list, reindex_text: bool = True) -> None:
        """The core's save; version snapshots made for these saves go away if the save fails."""
        store = self.__dict__.get("_versions_pending", {})
        pending = {entry.id: store.pop(entry.id, []) for entry, _ in changes}
        try:
            super()._save_many(changes, reindex_text)
        except BaseException:
            for entry_id, numbers in pending.items():
                for n in numbers:
                    versions.remove_snapshot(self.root, entry_id, n)
            raise

    # -- candidates and similarity ---------------------------------------------------------------
    def _precheck_candidates(self, entry: Entry) -> list[tuple[Entry, float]]:
        from memstrata.retrieval.chunking import entry_text
        from memstrata.scoring.conflicts import normalise_tags, normalise_text

        self.catalog.refresh()
        metas = [e for e in self.catalog.entries(entry.category)
                 if e.category == entry.category and e.status != "expired" and e.id]
        if not metas:
            return []
        vector = self._text_vectors([entry_text(entry.title, entry.body)])
        new_vec = vector[0] if vector is not None else None
        if len(metas) > self.settings.grep_max_entries:
            title, tags = normalise_text(entry.title), normalise_tags(entry.tags)
            near = set(self._index_neighbours(new_vec, entry.category)) if new_vec is not None else set()
            metas = [m for m in metas if m.id in near or normalise_text(m.title) == title
                     or (tags and normalise_tags(m.tags) == tags)]
        full = []
        for meta in metas:
            try:
                full.append(read_entry_file(self.root, meta.path))
            except (CorruptEntry, OSError):
                continue
        if not full:
            return []
        if new_vec is None:
            return [(e, 0.0) for e in full]
        vectors = self._entry_vectors(full)
        out = []
        for e in full:
            v = vectors.get(e.id)
            out.append((e, _cosine(new_vec, v) if v is not None else 0.0))
        return out

    def _vector_cache(self) -> dict:
        cache = self.__dict__.setdefault("_precheck_vectors", {})
        if len(cache) > VECTOR_CACHE_MAX:
            cache.clear()
        return cache

    def _text_vectors(self, texts: list[str]):
        """Embeddings of texts (cached by content), or None when the model cannot load."""
        cache = self._vector_cache()
        keys = [hashlib.sha256(t.encode("utf-8")).hexdigest()[:32] for t in texts]
        missing = [(k, t) for k, t in zip(keys, texts) if k not in cache]
        if missing:
            try:
                vecs = self.embedder.embed([t for _, t in missing])
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
        finder = getattr(self, "_vindex", None)
        if finder is None:
            return None
        try:
            index = finder()
            if not index.exists() or not index.model_matches(self.embedder) or index.table() is None:
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
        return list(dict.fromkeys(rows.get("id", [])))[:NEIGHBOURS]

    # ====================================================================== history and revert
    def history(self, ref: str) -> list[dict]:
        """Every version of an entry: version, date, summary, current, available (body kept)."""
        entry = self.resolve(ref)
        kept = versions.list_snapshots(self.root, entry.id)
        lines = {int(h["version"]): h for h in versions.with_current_line(entry)}
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
        entry = self.resolve(ref)
        n = int(n)
        if n == entry.version:
            return entry
        return versions.snapshot_entry(self.root, entry.id, n, entry.path)

    def history_show(self, ref: str, n: int) -> str:
        """The full body of version `n`."""
        return self.version(ref, n).body

    def revert(self, ref: str, to: int) -> WriteResult:
        """Make version `to` current again, as a new version (nothing is lost)."""
        to = int(to)
        with self.lock():
            current = self.resolve(ref)
            if to == current.version:
                raise InvalidInput(f"{current.id} is at v{to} already")
            old = self.version(current.id, to)
            warnings = self._check_secrets({"title": old.title, "body": old.body,
                                            **{f"tag {t}": t for t in old.tags}})
            changed = self._reactivated(current.copy(title=old.title, body=old.body, tags=list(old.tags),
                                                     updated=self.now()))
            super()._before_update(current, changed)
            self._new_version(current, changed, f"reverted to v{to}: {versions.one_line(old.body, old.title)}")
            self._save(changed, previous=current)
        return WriteResult(id=changed.id, path=changed.path, action="updated", version=changed.version,
                           message=f"reverted {changed.id} to v{to}: current v{changed.version}",
                           warnings=warnings, related_id=changed.id)

    # ====================================================================== split and merge
    def split(self, category: str, by: str = "year", dry_run: bool = False) -> dict:
        """Move a category's own entries into subcategories by status, year, month or (first) tag."""
        from memstrata import clock

        category = validate_category(category)
        if by not in SPLIT_MODES:
            raise InvalidInput(f"--by must be one of {', '.join(SPLIT_MODES)}, not {by!r}")
        with self.lock():
            self.catalog.refresh()
            own = [e for e in self.catalog.entries(category) if e.category == category]
            if not own and not (self.root / category).is_dir():
                raise NotFound(f"no category {category}")
            existing = {p.name for p in (self.root / category).iterdir() if p.is_dir()} \
                if (self.root / category).is_dir() else set()
            taken: set[str] = set()
            moves = []
            for e in sorted(own, key=lambda x: x.path):
                sub = _split_key(e, by, category)
                target = _free_path(self.root, entry_dir(f"{category}/{sub}", is_archived_path(e.path)),
                                    PurePosixPath(e.path).name, taken)
                moves.append({"id": e.id, "title": e.title, "from": e.path, "to": target, "subcategory": sub})
            counts: dict[str, int] = {}
            for m in moves:
                counts[m["subcategory"]] = counts.get(m["subcategory"], 0) + 1
            result = {"category": category, "by": by, "dry_run": dry_run, "moved": len(moves),
                      "subcategories": dict(sorted(counts.items())), "moves": moves}
            if dry_run or not moves:
                return result
            record = versions.read_split_record(self.root, category) or {"splits": []}
            record["splits"].append({"by": by, "at": clock.format_datetime(self.now()),
                                     "created": sorted(s for s in counts if s not in existing),
                                     "moves": [{"id": m["id"], "from": m["from"], "to": m["to"]} for m in moves]})
            self._apply_moves(moves)
            versions.write_split_record(self.root, category, record)
            self._write_indexes([category] + [f"{category}/{s}" for s in counts])
        return result

    def merge(self, category: str, dry_run: bool = False) -> dict:
        """Undo a split: move the entries of the split's subcategories (every subcategory when
        there is no split record) back into the category, with their former file names."""
        category = validate_category(category)
        with self.lock():
            self.catalog.refresh()
            if not (self.root / category).is_dir():
                raise NotFound(f"no category {category}")
            record = versions.read_split_record(self.root, category)
            origin: dict[str, str] = {}
            if record:
                subs = sorted({s for sp in record.get("splits", []) for s in sp.get("created", [])})
                recorded = {}
                for sp in record.get("splits", []):
                    for m in sp.get("moves", []):
                        origin.setdefault(m["id"], m["from"])
                        recorded[m["id"]] = m["to"]
            else:
                subs = sorted(p.name for p in (self.root / category).iterdir()
                              if p.is_dir() and not p.name.startswith(".") and p.name != "archived")
                recorded = {}
            scopes = [f"{category}/{s}" for s in subs]
            candidates = [e for e in self.catalog.entries(category) if e.category != category]
            picked = [e for e in candidates
                      if any(e.category == s or e.category.startswith(s + "/") for s in scopes)
                      or (e.id in recorded and e.path == recorded[e.id])]
            taken: set[str] = set()
            moves = []
            for e in sorted(picked, key=lambda x: (x.id not in origin, x.path)):
                name = PurePosixPath(origin.get(e.id) or e.path).name
                target = _free_path(self.root, entry_dir(category, is_archived_path(e.path)), name, taken)
                moves.append({"id": e.id, "title": e.title, "from": e.path, "to": target})
            result = {"category": category, "dry_run": dry_run, "moved": len(moves),
                      "subcategories": [f"{category}/{s}" for s in subs], "moves": moves}
            if dry_run:
                return result
            self._apply_moves(moves)
            versions.remove_split_record(self.root, category)
            removed = []
            for scope in sorted(scopes, key=lambda s: -s.count("/")):
                removed += _remove_if_empty(self.root, scope)
            result["removed"] = removed
            self._write_indexes([category])
        return result

    def _apply_moves(self, moves: list[dict]) -> None:
        """Move entry files as one save (all or nothing): catalog, vector index and INDEX.md follow."""
        from memstrata.storage.paths import category_of

        changes = []
        for m in moves:
            entry = read_entry_file(self.root, m["from"])
            changes.append((entry.copy(path=m["to"], category=category_of(m["to"])), entry))
        if changes:
            self._save_many(changes, reindex_text=False)

    def stats(self) -> dict:
        data = super().stats()
        limit = self.settings.split_threshold
        warnings = list(data.get("warnings", []))
        for category, row in data.get("categories", {}).items():
            if row.get("entries", 0) > limit:
                warnings.append(f"category {category} holds {row['entries']} entries (> {limit}); "
                                f"consider `mem split {category} --by year`")
        data["warnings"] = warnings
        return data

    # ====================================================================== import-builtin
    def import_builtin(self, path, category: str | None = None, dry_run: bool = False) -> dict:
        """Read an agent's own MEMORY.md / CLAUDE.md into entries, one per section, one way.

        The source is opened read-only and never written. Each section gets a stable id (from
        the source path, its title and occurrence), so a second run adds nothing; a section
        whose text changed in the source becomes a new version of its entry.
        """
        from memstrata.scoring.conflicts import normalise_text

        source = Path(os.path.realpath(os.path.expanduser(str(path))))
        if not source.is_file():
            raise NotFound(f"no file at {path}")
        root_real = Path(os.path.realpath(self.root))
        if source == root_real or root_real in source.parents:
            raise InvalidInput(f"{path} is inside the memory root; import-builtin reads an agent's own "
                               "memory file from outside the tree")
        with open(source, "rb") as handle:  # read-only, never written
            raw = handle.read(IMPORT_MAX_BYTES + 1)
        if len(raw) > IMPORT_MAX_BYTES:
            raise InvalidInput(f"{path} is larger than {IMPORT_MAX_BYTES // (1024 * 1024)} MB")
        try:
            text = raw.decode("utf-8-sig").replace("\r\n", "\n")
        except UnicodeDecodeError:
            raise InvalidInput(f"{path} is not UTF-8 text") from None
        category = validate_category(category or f"imported/{slugify(source.stem)}")  # e.g. imported/claude
        sections = markdown_sections(text, fallback_title=source.stem)
        # credentials: refuse the whole import before anything is written
        warnings = self._check_secrets({f"section {n + 1} ({t})": f"{t}\n{b}" for n, (t, b) in enumerate(sections)})
        seen: dict[str, int] = {}
        result = {"source": str(source), "category": category, "sections": len(sections), "dry_run": dry_run,
                  "created": [], "updated": [], "unchanged": [], "skipped": [], "warnings": warnings}
        self._ensure_tree()
        with self.lock():
            for title, body in sections:
                key = normalise_text(title)
                seen[key] = seen.get(key, 0) + 1
                digest = hashlib.sha256(f"{source}\n{key}\n{seen[key]}".encode("utf-8")).hexdigest()
                entry_id = "bi" + digest[:10]
                body_hash = hashlib.sha256(f"{title}\n{body}".encode("utf-8")).hexdigest()[:16]
                marker = {"source": str(source), "source_section": title, "source_hash": body_hash}
                try:
                    current = self.resolve(entry_id)
                except NotFound:
                    current = None
                if current is not None:
                    if current.extra.get("source_hash") == body_hash:
                        result["unchanged"].append(entry_id)
                        continue
                    if not dry_run:
                        changed = current.copy(title=title, body=body, updated=self.now(),
                                               extra={**current.extra, **marker})
                        self._before_update(current, changed)
                        self._save(changed, previous=current)
                    result["updated"].append(entry_id)
                    continue
                if dry_run:
                    result["created"].append(entry_id)
                    continue
                res = self.write(body, title=title, category=category, id=entry_id, extra=marker)
                if res.action == "created":
                    result["created"].append(entry_id)
                elif res.action in ("conflict", "merged"):
                    result["updated"].append(res.id)
                else:  # duplicate / near_duplicate of an entry already in the category
                    result["skipped"].append({"title": title, "reason": res.message, "id": res.id})
        return result


# ========================================================================== helpers
_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")


def _numbers(entry: Entry) -> tuple[list[str], list[str]]:
    """The numbers an entry states, in order (title, body): near-duplicates must agree on them."""
    return _NUMBER.findall(entry.title), _NUMBER.findall(entry.body)


def _cosine(a, b) -> float:
    import numpy as np

    a = np.asarray(a, dtype="float32")
    b = np.asarray(b, dtype="float32")
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    if na == 0.0 or nb == 0.0:
        return 0.0
    return float(np.dot(a, b) / (na * nb))


def _split_key(entry: Entry, by: str, category: str) -> str:
    if by == "status":
        sub = STATUS_SUBCATEGORY.get(entry.status, entry.status)
    elif by in ("year", "month"):
        stamp = entry.created or entry.updated
        sub = "undated" if stamp is None else (f"{stamp.year:04d}" if by == "year" else f"{stamp.year:04d}-{stamp.month:02d}")
    else:
        sub = slugify(entry.tags[0]) if entry.tags else "untagged"
    try:
        validate_category(f"{category}/{sub}")
    except InvalidInput:
        sub = f"{by}-{sub}"
    return sub


def _free_path(root: Path, folder: str, name: str, taken: set[str]) -> str:
    stem, suffix = (name[:-3], ".md") if name.endswith(".md") else (name, "")
    candidate = f"{folder}/{name}"
    n = 2
    while candidate in taken or (Path(root) / candidate).exists():
        candidate = f"{folder}/{stem}-{n}{suffix}"
        n += 1
    taken.add(candidate)
    return candidate


def _remove_if_empty(root: Path, category: str) -> list[str]:
    """Remove a category folder left with nothing but its INDEX.md (and empty subfolders)."""
    from memstrata.storage.indexes import INDEX_FILE

    folder = Path(root) / category
    if not folder.is_dir():
        return []
    for dirpath, dirnames, filenames in os.walk(folder):
        if any(f != INDEX_FILE for f in filenames):
            return []
    for dirpath, dirnames, filenames in sorted(os.walk(folder), key=lambda t: -len(t[0])):
        for f in filenames:
            os.unlink(os.path.join(dirpath, f))
        os.rmdir(dirpath)
    return [category]


def markdown_sections(text: str, fallback_title: str = "notes") -> list[tuple[str, str]]:
    """(title, body) per section of a Markdown file, split at the shallowest heading level that
    occurs at least twice (else the shallowest there is); fenced code is never split. Text
    before the first such heading becomes a section named after the heading above it (or
    `fallback_title`); sections with an empty body are left out."""
    lines = text.split("\n")
    headings = []  # (line number, level, title)
    fence = None
    for n, line in enumerate(lines):
        stripped = line.lstrip()
        if stripped.startswith(("```", "~~~")):
            mark = stripped[:3]
            fence = None if fence == mark else (fence or mark)
            continue
        if fence or len(line) - len(stripped) > 3 or not stripped.startswith("#"):
            continue
        level = len(stripped) - len(stripped.lstrip("#"))
        rest = stripped[level:]
        if 1 <= level <= 6 and (rest == "" or rest[0] in " \t"):
            title = rest.strip().rstrip("#").strip()
            if title:
                headings.append((n, level, title))
    if not headings:
        body = text.strip()
        return [(fallback_title, body + "\n")] if body else []
    levels = sorted({h[1] for h in headings})
    split_level = next((lv for lv in levels if sum(1 for h in headings if h[1] == lv) >= 2), levels[0])
    cuts = [h for h in headings if h[1] == split_level]
    out = []
    pre = lines[:cuts[0][0]]
    above = [h for h in headings if h[0] < cuts[0][0]]
    pre_title = above[0][2] if above else fallback_title
    pre_body = "\n".join(l for i, l in enumerate(pre) if not any(h[0] == i for h in above)).strip()
    if pre_body:
        out.append((pre_title, pre_body + "\n"))
    for k, (n, _, title) in enumerate(cuts):
        end = cuts[k + 1][0] if k + 1 < len(cuts) else len(lines)
        body = "\n".join(lines[n + 1:end]).strip()
        if body:
            out.append((title, body + "\n"))
    return out
