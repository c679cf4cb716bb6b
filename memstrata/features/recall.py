"""Recall: vector + full-text search with grep and INDEX.md fallbacks, and sync / reindex of the index."""
from __future__ import annotations

from memstrata import clock
from memstrata.engine.entries import Entries
from memstrata.engine.inputs import check_tier_status, clean_tags, require_encodable
from memstrata.engine.state import TreeState
from memstrata.features.turns import annotate
from memstrata.errors import IndexUnavailable, InvalidInput, Locked, MemstrataError
from memstrata.retrieval.hits import RecallHit, RecallResult, no_text, place_empty
from memstrata.retrieval.names import without_names
from memstrata.storage import journal
from memstrata.storage.entry import Entry

GREP_WITHOUT_INDEX = 5000  # entries a recall greps when no index exists yet (beyond: INDEX.md navigation)


def _model_unavailable():
    from memstrata.models.embedder import ModelUnavailable

    return ModelUnavailable


class Recall:
    """recall / recall_batch / sync / reindex over the tree's LanceDB index."""

    def __init__(self, state: TreeState, entries: Entries):
        self.state = state
        self.entries = entries
        self.root = state.root

    def warm_up(self) -> list[str]:
        """Load the model and answer one query from the index as it is (no sync); the problems met."""
        problems = []
        try:
            self.state.model().embed_query("warm up")
        except Exception as exc:  # noqa: BLE001 - the model may be missing: calls fall back
            problems.append(f"model not loaded: {getattr(exc, 'message', exc)}")
        try:
            self.recall("warm up", k=1, _sync=False)
        except Exception as exc:  # noqa: BLE001
            problems.append(f"warm recall failed: {type(exc).__name__}: {exc}")
        return problems

    def reindex_entries(self, ids: list[str]) -> int:
        """Index these entries again now (what they are indexed with changed beside their files:
        kept versions that came in with a pull). Returns how many were indexed."""
        from memstrata.retrieval.sync import flag
        from memstrata.retrieval.table import indexed_form

        entries = []
        for entry_id in ids:
            try:
                entry = self.entries.resolve(entry_id)
            except (MemstrataError, OSError):
                continue  # gone, or not an id: the next sync sees the tree as it is
            if flag(indexed_form(self.root, entry), self.root) is None:  # a pulled version may hold a credential
                entries.append(entry)
        if entries:
            with self.state.lock():
                self.state.vector_index().upsert(entries, self.state.model)
        return len(entries)

    # -- sync and reindex ---------------------------------------------------------------
    def sync(self, progress=None, announce=None) -> dict:
        """Bring the index in line with the tree: changed files re-embedded, removed ones dropped.
        A change of embedding model rebuilds the whole table (result["model_changed"]).
        Raises ModelUnavailable when something must be embedded and the model cannot load."""
        from memstrata.retrieval import ann, held_back, in_step, sync
        from memstrata.storage import secret_allow

        name, dim = self.state.model_identity()  # the model is loaded only when something is to embed
        embedder, left = self.state.loaded_embedder, []
        self.entries.give_ids(left)  # files added by hand get their id here (never on a read)
        with self.state.lock():
            index = self.state.vector_index()
            index.refresh()
            previous = index.meta().get("model")
            generation, changed = self._changes_since_in_step(name)
            tree = in_step.tree_part(self.root) if changed is None else None  # before the walk reads a file
            # in step since (the stamp of both, same model): no frame to load, unreadable notes still said
            in_step_now = tree is not None and in_step.matches(index, tree) and sync.model_in_step(index, name, dim)
            embedder = self.state.model() if embedder is None and not in_step_now else embedder  # plan, then apply at once
            todo = sync.SyncPlan(errors=self.state.catalog.errors()) if in_step_now else \
                sync.plan(index, name, dim, changed)
            if announce is not None and todo.model_changed:
                announce(f"embedding model changed from {previous} to {embedder.name}: "
                         f"re-embedding {len(todo.embed)} entries")
            elif announce is not None and todo.embed:
                announce(f"embedding {len(todo.embed)} new or changed entries")
            result = todo.summary() if in_step_now else sync.apply(index, todo, embedder, progress)
            if held := held_back.recorded(index):  # every note held back, not only those read this time
                result["flagged"] = held
            self.state.index_in_step = (generation, name) if generation is not None and not result["errors"] else None
            if not (in_step_now and in_step.upkept(index, tree)):  # the table as its last upkeep left it
                upkeep = ann.maintain(index)  # scalar indexes, the ANN index past ann_min_rows, compaction
                if tree is not None:  # upkept once a round finds nothing to do (a build puts off its optimize)
                    in_step.record(index, tree, upkept=not upkeep.get("actions") and not upkeep.get("errors"))
            self._write_indexes()  # hand edits (new, renamed, deleted notes) reach INDEX.md too
        result["model"] = name
        if (said := secret_allow.warning(self.root)) is not None:  # its notes stay flagged: the file is what to fix
            result["allow_file"] = said
        if todo.model_changed:
            result["message"] = f"embedding model changed from {previous} to {embedder.name}: re-embedded everything"
        elif todo.missing:
            result["message"] = "built the index from the tree"
        if left:  # an editor saved them while they were given their id: the next sync does it
            result["left_for_next_sync"] = left
            result["message"] = "; ".join(filter(None, [result.get("message"), f"{len(left)} note(s) changed while "
                                                        f"being given an id, left as they are for the next sync: "
                                                        f"{', '.join(left[:5])}"]))
        return result

    def _write_indexes(self) -> None:
        """Every INDEX.md from the tree, unless nothing they are made of changed since sync last wrote
        them: the watcher saw no file change (a warm service), or the listing signature is the one
        saved then (a fresh process). Rendering 10k entries' listings for nothing: 0.5 CPU s a sync."""
        from memstrata.storage import indexes

        watcher, settings = self.state.watcher(), self.state.settings
        last = self.state.indexes_in_step
        if watcher is not None and last is not None and last[1] == settings:
            if watcher.changes_since(last[0])[1] == set():
                return
        self.state.indexes_in_step = None
        catalog = self.state.catalog
        catalog.refresh()
        signature = indexes.listing_signature(self.root, catalog)
        if signature != indexes.saved_signature(self.root):  # a fresh process: unchanged since the last sync?
            indexes.write_indexes(self.root, catalog, self.state.now(), None)
            indexes.save_signature(self.root, indexes.listing_signature(self.root, catalog))
        generation = watcher.generation() if watcher is not None else None  # our own writes included
        self.state.indexes_in_step = (generation, settings) if generation is not None else None

    def reindex(self, progress=None) -> dict:
        """Rebuild the index from the tree (every entry re-embedded); a stopped rebuild leaves the
        index as it was (retrieval/rebuild.py)."""
        from memstrata.retrieval import ann, rebuild

        embedder = self.state.model()
        with self.state.lock():
            index = self.state.vector_index()
            index.refresh()
            entries, errors, flagged = rebuild.indexable_entries(self.root)
            rebuild.rebuild(index, entries, embedder, progress, flagged=flagged)
            ann.maintain(index)
        return {"embedded": len(entries), "errors": errors, "model": embedder.name, **({"flagged": flagged} if flagged else {})}

    def _cheap_sync(self, index, embedder, notes: list[str], pending: list) -> str:
        """Before answering: apply small changes to the index. 'ok', 'missing', 'stale' or 'model'.

        The inotify watcher names the files changed since the index was last in step with the
        tree: only those are looked at (no walk), and nothing at all when none changed."""
        if not index.exists():
            # an import or adopt killed before its first batch was indexed: index a few entries now
            # (the same bound as below); more, or a busy tree, is answered from the files' text
            tried: list[str] = []
            if embedder is not None and self._sync_before_recall(index, embedder, tried, None, []) == "in step" \
                    and index.exists():
                return "ok"
            notes.extend([n for n in tried if n[:1].isdigit()] or ["no vector index yet (run `mem sync`)"])
            return "missing"
        model = embedder.name if embedder is not None else None
        generation, changed = self._changes_since_in_step(model)
        if changed is not None and not changed:
            return "ok"
        result = self._sync_before_recall(index, embedder, notes, changed, pending)
        self.state.index_in_step = (generation, model) if result == "in step" and generation is not None else None
        return "ok" if result == "in step" else result

    def _changes_since_in_step(self, model: str | None) -> tuple:
        """(watcher generation, files changed since the index was last in step with the tree for
        `model`); the files are None when only a walk can tell (no watcher, never in step)."""
        watcher = self.state.watcher()
        if watcher is None:
            return None, None
        in_step = self.state.index_in_step
        return watcher.changes_since(in_step[0] if in_step is not None and in_step[1] == model else None)

    def _sync_before_recall(self, index, embedder, notes: list[str], paths: set[str] | None,
                            pending: list) -> str:
        """The small sync of `_cheap_sync` over `paths` (None: walk the tree): 'in step', 'ok'
        (answered from the index as it is, plus the text of the entries put in `pending`: not
        indexed yet and too many to embed now, or the tree busy), 'stale' or 'model'."""
        from memstrata.retrieval import sync
        from memstrata.storage.lock import TreeLock

        name, dim = (embedder.name, embedder.dim) if embedder is not None else (None, None)
        todo = sync.plan(index, name, dim, paths)
        if todo.empty and not todo.model_changed:
            return "in step"
        settings = self.state.settings
        if todo.model_changed and len(todo.embed) > settings.recall_sync_max:
            notes.append(f"the index was built with another model; run `mem sync` to re-embed ({len(todo.embed)} entries)")
            return "model"
        if todo.embed and embedder is None:  # a text-only recall: the model is loaded for the changed entries only
            try:
                embedder = self.state.model()
            except _model_unavailable():
                notes.append(f"{len(todo.embed)} entries changed since the index was built and the model cannot load")
                return "stale"
            name, dim = embedder.name, embedder.dim
        if len(todo.embed) > settings.recall_sync_max:
            # too many to embed before answering (a killed import): their text is searched as well
            pending.extend(todo.embed)
            notes.append(f"{len(todo.embed)} entries are not indexed yet: their text was searched too "
                         f"(`mem sync` indexes them)")
            return "ok"
        try:
            with TreeLock(self.root, timeout=5.0):
                index.refresh()
                todo = sync.plan(index, name, dim, paths)
                sync.apply(index, todo, embedder)
        except Locked:
            pending.extend(todo.embed)
            notes.append("the tree is busy; answered from the index as it is"
                         + (f" and the text of the {len(todo.embed)} entries not indexed yet" if todo.embed else ""))
            return "ok"
        return "in step"

    # -- recall -------------------------------------------------------------------------
    def recall(self, query: str, k: int = 10, category: str | None = None, tier: str | None = None,
               status: str | None = None, tags=None, since=None, until=None, strategy: str = "auto",
               explain: bool = False, min_relevance: float | None = None, count_access: bool = False,
               sessions: bool = True, _sync: bool = True):
        """Find the entries that answer `query`, best first (a RecallResult; `.strategy` says how).

        The cut-off is decided on the first scoring.relevance.CUT_DEPTH hits (k when larger) and
        the hits kept are then cut to k: a smaller k gives the same list, shorter.

        strategy: auto (hybrid when the index is usable, else grep/index), hybrid, vector,
        text (LanceDB full-text only), grep (read the files) or index (INDEX.md navigation).
        When the best hit's relevance (a calibrated probability) is below `min_relevance`
        (default: the recall_min_relevance setting; 0 keeps everything) nothing is returned,
        else the hits that reach recall_relative_relevance x the best (relevance.keep) and, when
        `min_relevance` is given, `min_relevance` itself; the result keeps the best relevance seen.
        With `count_access`, the hits the prompt hook would inject (scoring.relevance.used) count as
        accesses in the access journal (a session once, however many of its turns). `sessions` False:
        the notes only.
        """
        cut = self.state.settings.recall_min_relevance if min_relevance is None else float(min_relevance)
        if not 0.0 <= cut <= 1.0:
            raise InvalidInput("min_relevance must be between 0 and 1")
        from memstrata.scoring.relevance import CUT_DEPTH, used

        if int(k) < 1:
            raise InvalidInput("k must be at least 1")
        check_tier_status(tier, status)  # here too: a vault's tier filter is applied below, not in _recall
        found = self._recall(query, max(int(k), CUT_DEPTH), category, None if self.state.vault else tier, status,
                             tags, since, until, strategy, explain, _sync, sessions)  # a vault's tiers: below
        found.results = self.entries.tiers_now(found.results, tier) if self.state.vault else found.results
        # a cut-off asked for by name also drops each hit below it (the default judges the query)
        result = apply_cut(found, cut, self.state.settings.recall_relative_relevance, int(k),
                           floor=cut if min_relevance is not None else 0.0)
        annotate(self.root, result.results)  # a hit on a captured turn: what its session file says of it
        if not sessions and not result.results:
            result.notes.append("captured sessions were left out (--no-sessions)")
        if count_access and result.results:
            settings = self.state.settings
            counted = used([h.relevance for h in result.results], max(cut, settings.recall_min_relevance),
                           settings.autoload_min_relevance)
            ids = dict.fromkeys(h.id for h, use in zip(result.results, counted) if use and h.shared_root is None)
            journal.append(self.root, [(i, self.state.now(), None) for i in ids])
        return result

    def _recall(self, query, k, category, tier, status, tags, since, until, strategy, explain, _sync, sessions=True):
        """recall's answer before the cut-off: grep/index when asked or when the index cannot answer."""
        from memstrata.retrieval.query_limits import checked_query
        from memstrata.retrieval.search import STRATEGIES

        query = checked_query(query)
        require_encodable(query, "query")  # as a write refuses them: a broken decoder's bytes (caf\xe9)
        query = " ".join(query.split())
        if not query:
            raise InvalidInput("give a query")
        if strategy not in STRATEGIES:
            raise InvalidInput(f"strategy must be one of {', '.join(STRATEGIES)}")
        if int(k) < 1:
            raise InvalidInput("k must be at least 1")
        check_tier_status(tier, status)
        filters = self._filters(category, tier, status, tags, since, until, sessions)
        notes: list[str] = []
        if strategy in ("grep", "index"):
            return self._fallback(query, k, filters, strategy, notes)
        from memstrata.engine.index import INDEX_FAILURES

        try:
            return self._indexed(query, k, filters, strategy, explain, _sync, notes)
        except INDEX_FAILURES as exc:  # a damaged table: the index is derived, the files still answer
            self.state.forget_vector_index()
            problem = f"the vector index cannot be read ({type(exc).__name__}); `mem doctor --fix` rebuilds it"
            if strategy != "auto":
                raise IndexUnavailable(f"{problem}; --strategy grep works without it") from None
            notes.append(f"{problem}; answered by grep")
            return self._fallback(query, k, filters, None, notes)

    def _indexed(self, query, k, filters, strategy, explain, _sync, notes):
        """recall's answer from the vector index (syncing small changes first)."""
        from memstrata.retrieval import fusion
        from memstrata.retrieval.search import search

        index = self.state.vector_index()
        index.refresh()
        embedder = None
        if strategy != "text":
            try:
                embedder = self.state.model()
            except _model_unavailable() as exc:
                notes.append(f"embedding model unavailable: {exc.message}")
        pending: list[Entry] = []  # entries the index does not hold yet (see _sync_before_recall)
        state = self._cheap_sync(index, embedder, notes, pending) if _sync else ("ok" if index.exists() else "missing")
        if state == "model":
            embedder = None
        elif state == "missing":
            # no index at all: every entry's text is read (grep), not guessed from titles
            return self._fallback(query, k, filters, "grep" if len(self._scope(filters)) <= GREP_WITHOUT_INDEX
                                  else None, notes)
        elif state != "ok":
            return self._fallback(query, k, filters, None, notes)
        if embedder is None and strategy in ("auto", "hybrid", "vector"):
            if strategy == "vector" or index.table() is None:
                return self._fallback(query, k, filters, None, notes)
            notes.append("answered by full-text search only")
        mode = "text" if embedder is None else ("hybrid" if strategy == "auto" else strategy)
        settings = self.state.settings
        result = search(index, embedder, query, int(k), filters, mode, fusion.FusionWeights.from_settings(settings),
                        settings, explain)
        if pending:
            self._merge_pending(result, query, int(k), filters, pending, explain)
        if filters.category:
            self._merge_grep(result, query, int(k), filters, explain)
        result.notes = notes + result.notes
        return result

    def recall_batch(self, queries, k: int = 10, **options) -> list[dict]:
        """Answer many queries ({"qid", "query"} dicts) with one sync: [{"qid", "strategy", "results"}].

        A bad item does not stop the batch: its row is {"qid", "error"}."""
        out = []
        synced = False
        for n, item in enumerate(queries):
            qid = item.get("qid", n) if isinstance(item, dict) else n
            try:
                if not isinstance(item, dict) or "query" not in item:
                    raise InvalidInput(item.get("error") if isinstance(item, dict) and item.get("error")
                                       else f"query line {n + 1} needs a \"query\" field")
                res = self.recall(item["query"], k=k, _sync=not synced, **options)
            except InvalidInput as exc:
                out.append({"qid": qid, "error": exc.message})
                continue
            synced = True
            out.append({"qid": qid, "strategy": res.strategy, "results": [h.to_dict() for h in res.results]})
        return out

    def _filters(self, category, tier, status, tags, since, until, sessions=True):
        from memstrata.retrieval.search import Filters
        from memstrata.storage.paths import validate_category

        scope = validate_category(category, top=self.state.vault) if category else None
        return Filters(category=scope or None, tier=tier or None, status=status or None, tags=clean_tags(tags) or None,
                       since=clock.parse_datetime(since) if since else None,
                       until=clock.parse_until(until) if until else None, sessions=sessions)

    def _scope(self, filters) -> list[Entry]:
        entries = self.entries.list(filters.category, filters.tier, filters.status, filters.tags)
        return [e for e in entries if filters.admits_entry(e)]

    def _fallback(self, query, k, filters, strategy, notes):
        from memstrata.retrieval import fallback

        entries = self._scope(filters)
        limit = self.state.settings.grep_max_entries
        if strategy is None:
            strategy = "grep" if len(entries) < limit else "index"
        if strategy == "grep":
            found = fallback.grep(self.root, query, entries, int(k))
        else:
            found = fallback.navigate(self.root, query, entries, int(k), limit)
        result = RecallResult(query=query, strategy=strategy, notes=notes)
        terms = fallback.grep_terms(query)
        for e, score, snippet, matched, exact in found:
            result.results.append(RecallHit.from_entry(e, score, snippet, {"matched_terms": matched, "exact": exact},
                                                       relevance=word_relevance(matched, terms)))
        if strategy == "grep":  # grep read each file (navigation lists titles unread): an empty note goes below
            result.results = place_empty(result.results, [no_text(without_names(f"{e.title}\n{e.body}"), e.title)
                                                          for e, *_ in found])
        return result

    def _merge_pending(self, result, query, k, filters, pending, explain) -> None:
        """Merge grep hits among entries not indexed yet into the index's hits, by relevance (each
        list keeps its own order); their stale rows, if any, give way to the text of the file."""
        from memstrata.retrieval import fallback

        scope = [e for e in pending if filters.admits_entry(e)]
        terms = fallback.grep_terms(query)
        found = [RecallHit.from_entry(e, score, snippet, {"grep": True, "matched_terms": matched} if explain else None,
                                      relevance=word_relevance(matched, terms))
                 for e, score, snippet, matched, _ in fallback.grep(self.root, query, scope, k)]
        fresh = {h.id for h in found}
        indexed = [h for h in result.results if h.id not in fresh]
        merged = []
        while indexed or found:
            take = found if not indexed or (found and (found[0].relevance or 0) > (indexed[0].relevance or 0)) \
                else indexed
            merged.append(take.pop(0))
        result.results = merged[:k]

    def _merge_grep(self, result, query, k, filters, explain) -> None:
        """In a small category scope, exact grep matches the index missed (not a hit's copies) are merged in."""
        from memstrata.retrieval import fallback
        entries = self._scope(filters)
        if not entries or len(entries) >= self.state.settings.grep_max_entries:
            return
        have, found = set(result.ids), fallback.grep(self.root, query, entries, k)
        shown = {(r[0].title, r[0].body.strip()) for r in found if r[0].id in have}
        extra = [r for r in found if r[4] and r[0].id not in have and (r[0].title, r[0].body.strip()) not in shown]
        if not extra:
            return
        mid = result.results[min(len(result.results), k) // 2].score if result.results else 1.0
        for e, score, snippet, matched, _ in extra:
            result.results.append(RecallHit.from_entry(e, mid, snippet,
                                                       {"grep": True, "matched_terms": matched} if explain else None,
                                                       relevance=word_relevance(matched, fallback.grep_terms(query))))
        result.results.sort(key=lambda h: (h.no_text, -h.score))
        del result.results[k:]
        result.notes.append(f"merged {len(extra)} exact grep match(es) from the {len(entries)}-entry scope")


def word_relevance(matched: list[str], terms: list[str]) -> float:
    """Relevance of a hit found by words alone (grep, index): the text-only model on the share
    of the query's words it holds."""
    from memstrata.scoring import relevance

    share = len(set(matched) & set(terms)) / len(terms) if terms else 0.0
    return relevance.words_only(share)


def apply_cut(result: RecallResult, min_relevance: float, relative: float = 0.0, k: int | None = None,
              floor: float = 0.0) -> RecallResult:
    """Keep the hits relevance.keep keeps (none when the best is below `min_relevance`), then the
    first `k`; the result records the cut-off and the best relevance seen."""
    from memstrata.scoring import relevance

    seen = [h.relevance for h in result.results if h.relevance is not None]
    result.best_relevance = max(seen) if seen else None
    result.min_relevance = min_relevance
    kept = relevance.keep([1.0 if h.relevance is None else h.relevance for h in result.results], min_relevance,
                          relative, k, floor)
    result.results = [result.results[i] for i in kept]
    return result
