"""Promotion (old memories back to hot when the task needs them) and autoload (what a session starts with)."""
from __future__ import annotations

from itertools import chain

from memstrata.engine.entries import Entries
from memstrata.engine.inputs import require_encodable
from memstrata.engine.save import SavePath
from memstrata.engine.state import TreeState
from memstrata.errors import IndexUnavailable, InvalidInput
from memstrata.features.aging import Aging
from memstrata.features.autoload_block import FORMS, AutoloadResult, Costs
from memstrata.features.autoload_fill import fill
from memstrata.features.replaced_text import ReplacedVersions, spoken
from memstrata.features.recall import Recall
from memstrata.features.shared import SharedSpace
from memstrata.features.start_work import brought_entry, brought_items
from memstrata.features.turns import turns_around
from memstrata.retrieval.units import entry_of
from memstrata.storage import journal
from memstrata.storage.entry import TIERS, Entry
from memstrata.storage.secrets import redact

HOOK_EVENTS_WITH_PROMPT = ("UserPromptSubmit",)


class Promotion:
    """promote / autoload; similarity comes from the vector index, rules from scoring.promotion."""

    def __init__(self, state: TreeState, entries: Entries, save: SavePath, aging: Aging, recall: Recall,
                 shared: SharedSpace):
        self.state = state
        self.entries = entries
        self.save = save
        self.aging = aging
        self.recall = recall
        self.shared = shared
        self.root = state.root
        self._replaced = ReplacedVersions(state, entries)  # what a prompt's injection must not repeat

    # -- promotion ----------------------------------------------------------------------
    def promote(self, context: str, threshold: float | None = None, layers=None, max_count: int | None = None,
                dry_run: bool = False, relevance: dict[str, float] | None = None, allow=None) -> dict:
        """Bring cold/archive entries the task in `context` needs back to hot (full text restored, out
        of archived/): scoring.promotion.select's rule over each entry's best chunk cosine and recall's
        calibrated relevance of its first hits (`relevance`, by id, when the caller ran that recall
        already: autoload). With `threshold`, every entry at least that similar and nothing else.
        `allow(entry)`, when given, keeps only the candidates it accepts (the session start's project:
        the rule then judges the most similar and likeliest among them).
        Each promotion is its own atomic step under the tree lock.
        """
        from memstrata.scoring import promotion

        from memstrata.retrieval.query_limits import cut_prompt

        context = " ".join(str(cut_prompt(context)[0] or "").split())  # a pasted log: its two ends
        if not context:
            raise InvalidInput("give a context: the task or prompt the memories should serve")
        require_encodable(context, "context")
        wanted = self._layers(layers)
        if threshold is not None and not 0.0 <= float(threshold) <= 1.0:
            raise InvalidInput("threshold must be between 0 and 1")
        if max_count is not None and int(max_count) < 0:
            raise InvalidInput("max must be 0 or more")
        settings, now = self.state.settings, self.state.now()
        threshold_used = settings.promote_threshold if threshold is None else float(threshold)
        floor = threshold_used if threshold is not None else min(threshold_used, settings.promote_best_cosine)
        candidates = self._promotion_candidates(context, wanted, floor, now)
        if threshold is None:
            relevance = self._relevance(context) if relevance is None else relevance
            candidates += self._judged(context, relevance, {e.id for e, _ in candidates}, wanted, now)
        if allow is not None:
            candidates = [(e, sim) for e, sim in candidates if allow(e)]
        chosen = promotion.select(candidates, now, settings, threshold=threshold, layers=wanted, max_count=max_count,
                                  relevance=relevance)
        by_id = {e.id: e for e, _ in candidates}
        rows = [{"id": p.entry_id, "title": redact(by_id[p.entry_id].title), "similarity": round(p.similarity, 4),
                 "from_tier": p.from_tier, "context_correlation": round(p.new_correlation, 4),
                 "weight": round(p.new_weight, 4), "path": by_id[p.entry_id].path} for p in chosen]
        if not dry_run:
            for p, row in zip(chosen, rows):
                row["path"] = self.apply_promotion(p)
        rule = (f"similarity >= {threshold_used:.2f}" if threshold is not None else
                f"similarity >= {threshold_used:.2f}, the most similar from {settings.promote_best_cosine:.2f}, "
                f"recall's likeliest answer from relevance {settings.promote_min_relevance:.2f}")
        return {"dry_run": dry_run, "threshold": threshold_used, "rule": rule, "layers": sorted(wanted),
                "candidates": len(candidates), "promoted": rows}

    def _relevance(self, context: str) -> dict[str, float]:
        """Recall's calibrated relevance of its first hits in this tree, by id (nothing without an index)."""
        try:
            hits = self.recall.recall(context, k=10, min_relevance=0.0).results
        except IndexUnavailable:
            return {}
        return {h.id: float(h.relevance) for h in hits if h.relevance is not None and h.shared_root is None}

    def _judged(self, context: str, relevance: dict[str, float], known: set, wanted: set, now) -> list[tuple]:
        """(entry, similarity) of the entries recall judged that are in the `wanted` tiers but not in
        `known` (below the similarity floor): the rule may bring back recall's likeliest answer."""
        from memstrata.scoring import promotion

        entries = []
        for entry_id in relevance:
            if entry_id in known or entry_id.startswith("path:"):
                continue
            try:
                entry = self.entries.resolve(entry_id)
            except Exception:  # noqa: BLE001 - a hit whose file is gone: the next sync drops it
                continue
            entry = self.entries.seen(entry) if self.state.vault else entry
            if entry.status != "expired" and promotion.current_tier(entry, now, self.state.settings) in wanted:
                entries.append(entry)
        similarities = self._similarities(context, entries)
        return [(e, similarities[e.id]) for e in entries if e.id in similarities]

    def _layers(self, layers) -> set[str]:
        if layers is None or layers == "":
            return {"cold", "archive"}
        parts = layers.split(",") if isinstance(layers, str) else list(layers)
        wanted = {str(p).strip().lower() for p in parts if str(p).strip()}
        unknown = wanted - set(TIERS)
        if unknown or not wanted:
            raise InvalidInput(f"layers must be among {', '.join(TIERS)}, not {', '.join(sorted(unknown)) or 'nothing'}")
        return wanted

    def _promotion_candidates(self, context: str, wanted: set[str], threshold: float, now) -> list[tuple]:
        """(entry, best similarity) of the entries now in the `wanted` tiers whose similarity to
        `context` reaches `threshold`. One vector search finds them when it is complete (its
        last row is below the threshold); else every entry of those tiers is compared."""
        from memstrata.scoring import promotion

        def in_layers(e):
            e = self.entries.seen(e) if self.state.vault else e  # a vault's reads live in the journal only
            return e.status != "expired" and promotion.current_tier(e, now, self.state.settings) in wanted

        found = self._similar_in_index(context, threshold)
        if found is None:
            entries = [e for e in self.entries.list() if in_layers(e)]
            similarities = self._similarities(context, entries)
        else:
            similarities, unindexed = found
            entries = []
            for entry_id in list(similarities) + unindexed:
                try:
                    entries.append(self.entries.resolve(entry_id))
                except Exception:  # noqa: BLE001 - a row whose file is gone: the next sync drops it
                    continue
            entries = [e for e in entries if in_layers(e)]
            missing = set(unindexed)
            similarities.update(self._similarities(context, [e for e in entries if e.id in missing]))
        return [(e, similarities[e.id]) for e in entries
                if similarities.get(e.id) is not None and similarities[e.id] >= threshold]

    def _similar_in_index(self, context: str, threshold: float):
        """({entry id: best chunk similarity >= threshold}, [ids of entries the index lacks]) from one
        vector search, or None when that search cannot be complete (no usable index, or more rows
        at or above the threshold than it returns)."""
        from memstrata.retrieval import ann

        index = self.state.vector_index()
        embedder = self.state.embedder
        if not index.exists() or not index.model_matches(embedder):
            return None
        index.refresh()
        table, frame = index.table(), index.frame()
        if table is None or frame is None:
            return None
        limit = 2 * self.state.settings.recall_candidates
        query = embedder.embed_query(context)
        rows = ann.nearest_rows(table, index, query, limit, len(frame.ids), None, ["id", "_distance"])
        sims = [1.0 - float(d) / 2.0 for d in rows["_distance"]]  # unit vectors: L2 distance to cosine
        if len(sims) >= limit and min(sims) >= threshold:
            return None
        best: dict[str, float] = {}
        for rid, sim in zip(rows["id"], sims):
            rid = entry_of(rid)  # a turn of a captured session counts for its session
            if sim >= threshold and sim > best.get(rid, -2.0):
                best[rid] = sim
        catalog = self.state.catalog
        catalog.refresh()
        unindexed = [i for i in catalog.ids() if frame.first_of(i) is None]
        return best, unindexed

    def _similarities(self, context: str, entries: list[Entry]) -> dict[str, float]:
        """Best cosine of the context against each entry's chunk vectors (embedding what the index lacks)."""
        import numpy as np

        if not entries:
            return {}
        embedder = self.state.embedder
        query = embedder.embed_query(context)
        index = self.state.vector_index()
        index.refresh()
        found = (index.fetch_rows([e.id for e in entries], units=True)
                 if index.exists() and index.model_matches(embedder) else {})
        rows: dict[str, list] = {}
        for rid, part in found.items():
            rows.setdefault(entry_of(rid), []).extend(part)  # a session's turns: its rows
        out: dict[str, float] = {}
        missing: list[Entry] = []
        for e in entries:
            vectors = [r["vector"] for r in rows.get(e.id, []) if r.get("vector") is not None]
            if vectors:
                out[e.id] = float(np.max(np.asarray(vectors, dtype=np.float32) @ query))
            else:
                missing.append(e)
        if missing:
            from memstrata.retrieval.chunking import chunk_entry, entry_text
            from memstrata.retrieval.table import indexed_form

            texts, owners = [], []
            for e in missing:
                full = indexed_form(self.root, self.entries.resolve(e.path))
                body = full.body
                settings = self.state.settings
                for chunk in chunk_entry(full.title, body, embedder.count_tokens, embedder.max_tokens,
                                         settings.chunk_overlap_tokens, settings.chunk_max_sentences,
                                         settings.chunk_sentence_min_words):
                    texts.append(chunk.embedded or entry_text(full.title, body))
                    owners.append(e.id)
            if texts:
                sims = embedder.embed(texts) @ query
                for owner, sim in zip(owners, sims):
                    out[owner] = max(out.get(owner, -1.0), float(sim))
        return out

    def apply_promotion(self, p) -> str:
        """One promotion, atomically: full text back (if compressed), out of archived/, hot, counted."""
        from memstrata.scoring.promotion import promotion_changes
        from memstrata.storage import tree

        with self.state.lock():
            current = self.entries.resolve(p.entry_id)
            changes = promotion_changes(p, current, self.state.now())
            archived = self._archived_by_engine(current)
            if self.state.vault and not current.is_compressed and not archived:
                # a vault's note holds none of the engine's keys: the promotion is an access in the
                # journal (reads then show it hot, with its new correlation); the note is not written
                journal.append(self.root, [(current.id, changes["last_access"], changes["context_correlation"])])
                return current.path
            if current.is_compressed:
                self.aging.decompress(current.id, restore=True, use=False)
                current = self.entries.resolve(current.id)
                archived = self._archived_by_engine(current)
            new = current.copy(**changes)
            if archived:
                new.path = tree.unique_entry_path(self.root, current.category, current.title)
            self.save.save(new, previous=current)
        return new.path

    def _archived_by_engine(self, entry) -> bool:
        """Whether the entry is in an archived/ folder because maintain put it there: archived, and not
        a vault's note (maintain never archives one, whatever `archive_moves_files` says: a vault's own
        archived/ folder, or a `status: archived` property, is the user's: docs/vault.md)."""
        from memstrata.storage.paths import is_archived_path

        return entry.status == "archived" and is_archived_path(entry.path or "") and not self.state.vault

    # -- autoload -----------------------------------------------------------------------
    def autoload(self, context: str | None = None, promote: bool = False, budget: int | None = None,
                 include_shared: bool = True, hot: bool | None = None, session_id: str | None = None,
                 form: str = "markdown", cwd: str | None = None) -> AutoloadResult:
        """The memories an agent should start with: relevant ones first (hits that clear the
        recall_min_relevance cut-off), then, with `hot` (by default: only when there is no context, a
        session start), the session-start list (features/start_block.py: active memories by weight
        with a bonus for a recent write, no model needed), within `budget` tokens (the model's
        tokenizer; the whole block: preamble, headings and fences included). A context that names no
        topic ("hello", "thanks!", "take care": retrieval.prompts.is_everyday) loads nothing at all,
        the recent list included: only a start with no context lists them (the prompt hook
        and MCP follow one rule). Each memory brings at most HIT_TOKENS of its body: a relevant hit the
        part of its note the context asks about, a listed entry its opening. With a `session_id`, a
        relevant hit already loaded in that session is not loaded again. Nothing loaded counts as a
        use of the entry (an injection is no read: docs/aging.md). `form` "json" makes the budget
        bound the whole JSON answer (`to_dict`, as MCP sends it) rather than the Markdown block.
        `cwd`: the folder the session runs in (the hook's): a session start lists its project first (features/start_block.py)."""
        from memstrata.features import hook_sessions
        from memstrata.retrieval.prompts import has_topic, is_everyday

        settings = self.state.settings
        budget = settings.autoload_budget if budget is None else int(budget)
        if budget < 1:
            raise InvalidInput("budget must be a positive number of tokens")
        if form not in FORMS:
            raise InvalidInput(f"form must be one of {', '.join(FORMS)}")
        from memstrata.retrieval.query_limits import cut_prompt

        context, cut_note = cut_prompt(context)
        if context is not None:
            require_encodable(str(context), "context")
        context = " ".join(str(context or "").split()) or None
        if hot is None:  # a task given: what it asks about, not 2,000 tokens of unrelated recent notes
            hot = context is None
        if context is None and hot:  # a session start: from the catalog and the weights, never the model
            result = self._start(budget, include_shared, form, cwd)
            hook_sessions.record(self.root, session_id, [i.entry.ref for i in result.items])
            return result
        result = AutoloadResult(context=context, budget=budget, form=form)
        if cut_note:
            result.notes.append(cut_note)
        topic = context is not None and has_topic(context) and not is_everyday(context, self._model_or_none())
        # what the session start brought back for the project's last session: given at the next prompt,
        # whatever it says ("continue" goes on with that work), after what the prompt asks about
        brought = brought_items(self.entries, hook_sessions.brought(self.root, session_id))
        if context and not topic:
            # a greeting passed as the task is no session start: it must not pull the hot notes
            # (every note of a freshly adopted vault is hot) where the prompt hook injects nothing
            result.notes.append("the context names no topic: nothing loaded (without a context, the recent "
                                "and weighty memories are listed)" if not brought else
                                "the context names no topic: only what the session start brought back is loaded")
            if brought:
                fill(result, iter(brought), Costs(self.state.token_counter, result.form), self._resolver(None, None))
                hook_sessions.record(self.root, session_id, [i.entry.ref for i in result.items])
            return result
        already = hook_sessions.injected(self.root, session_id)
        shared = self.shared.for_autoload(result.notes) if include_shared else None
        ranked: list[tuple] = []
        if topic:
            answer = (self.shared.recall(context, k=10) if shared is not None
                      else self.recall.recall(context, k=10))
            result.strategy = answer.strategy
            result.notes += list(answer.notes)
            if promote:  # on recall's judgement of this very context, then the similarity of each old entry
                self._promote_for(result, context, answer.results)
            # an empty note (a vault's tag page: a title, no text) has nothing to hand an agent, and
            # its title alone matched "which database did we pick?" at 0.95, setting the floor above the answer
            hits = [h for h in answer.results if self._has_text(h, shared)]
            # a captured turn that repeats what an entry said before its current version is no current
            # fact (the decision changed since): left out, and the query judged again without it
            try:
                repeated_in = self._replaced.judge()
            except Exception:  # noqa: BLE001 - a broken .versions/ folder must not cost the prompt its memories
                repeated_in = _judges_nothing
            kept = [h for h in hits if not self._repeats_replaced(h, repeated_in)]
            if len(kept) < len(hits) and all(h.relevance is not None for h in hits) and \
                    max((h.relevance for h in kept), default=0.0) < settings.recall_min_relevance:
                kept = []  # what is left is no answer (recall_min_relevance, as recall judges a query)
            hits = kept
            best = max((_strength(h) for h in hits), default=0.0)
            floor = best * settings.autoload_min_relevance
            promoted = {p["id"] for p in result.promoted}
            # a promoted memory is injected first, whole when it fits: the task needs it (recall ran
            # before the promotion, when an archived entry still ranked below its active peers)
            ranked += [(self.entries.resolve(i), "relevant", 1.0, False) for i in promoted
                       if i not in already and not any(h.id == i and h.shared_root is None for h in hits)]
            for hit in sorted(hits, key=lambda h: not (h.id in promoted and h.shared_root is None)):
                if hit.status == "expired" or hit.id in already or (
                        _strength(hit) < floor and not (hit.id in promoted and hit.shared_root is None)):
                    continue
                ranked.append((hit, "relevant", float(hit.score), shared is not None and hit.shared_root is not None))
        from memstrata.features import start_block

        now = self.state.now()
        sources = self._sources(shared) if hot else []  # the session-start list after the relevant hits
        listed = start_block.merged(sources, now, "active")
        fill(result, chain(ranked, brought, listed), Costs(self.state.token_counter, result.form),
             self._resolver(shared, start_block.resolver(sources, now)), whole={p["id"] for p in result.promoted},
             turn_text=lambda entry, turn: turns_around(self.root, entry, turn))
        hook_sessions.record(self.root, session_id, [i.entry.ref for i in result.items])
        return result

    def _promote_for(self, result: AutoloadResult, context: str, hits) -> None:
        relevance = {h.id: float(h.relevance) for h in hits if h.relevance is not None and h.shared_root is None}
        try:
            result.promoted = self.promote(context, relevance=relevance)["promoted"]
        except IndexUnavailable as exc:
            result.notes.append(f"no promotion: {exc.message}")

    def _sources(self, shared) -> list:
        """The session start's sources: this tree and the shared root, their catalogs up to date."""
        from memstrata.features.start_block import Source

        sources = []
        for memory, is_shared in ((self, False), (shared, True)):
            if memory is None:
                continue
            state = memory.state
            state.catalog.refresh()
            sources.append(Source(state.root, state.catalog, state.settings, state.accesses(), shared=is_shared,
                                  only_mine=is_shared and not self.shared.others_allowed()))
        return sources

    def _start(self, budget: int, include_shared: bool, form: str, cwd: str | None) -> AutoloadResult:
        """A session start's block (features/start_block.py): no recall, no model."""
        from memstrata.features.start_block import start_block

        notes: list[str] = []
        shared = self.shared.for_autoload(notes) if include_shared else None
        result = start_block(self._sources(shared), budget, self.state.now(), self.state.token_counter, form, cwd=cwd)
        result.notes += notes
        return result

    def _resolver(self, shared, listed):
        """What `fill` shows for a ranked item: a relevant hit's entry, or a listed one's (`listed`)."""
        def resolve(item, section: str, from_shared: bool):
            if section == "brought":
                return brought_entry(self.entries, item, self.state.now(), self.state.settings)
            if section != "relevant":
                return listed(item, section, from_shared)
            return (shared if from_shared else self.entries).resolve(item.id)

        return resolve

    def _model_or_none(self):
        """The embedder, or None when it cannot load (the words alone then decide small talk)."""
        try:
            return self.state.model()
        except Exception:  # noqa: BLE001 - ModelUnavailable or a broken install: recall says why
            return None

    def _repeats_replaced(self, hit, repeated_in) -> bool:
        """Whether a captured turn's hit (the turn and the turns beside it, as injected) repeats a
        replaced version of an entry (features/replaced_text.py). Notes are the user's own text and
        are not judged (a note that mentions an old fact in passing holds others); nor is a shared root."""
        if hit.shared_root is not None or hit.turn is None:
            return False
        try:
            text = spoken(turns_around(self.root, self.entries.resolve(hit.id), hit.turn))
        except Exception:  # noqa: BLE001 - a file that vanished or broke since it was listed: fill skips it
            return False
        return repeated_in(text, hit.id) is not None

    def _has_text(self, hit, shared) -> bool:
        """A hit with text to hand an agent (in the shared root: a note this user wrote, unless asked)."""
        source = shared if shared is not None and hit.shared_root is not None else self.entries
        try:
            entry = source.resolve(hit.id)
            if source is shared and not self.shared.mine(shared, entry.path):
                return False
            return bool(entry.body.strip())
        except Exception:  # a file that vanished or broke since it was listed
            return False


def _judges_nothing(text: str, own_id: str | None = None):
    return None


def _strength(hit) -> float:
    """How strongly a recall hit belongs in autoload: its calibrated relevance (a probability; the
    ranker's scores have no fixed sign or scale), or for grep and index answers, which have none,
    their score."""
    return float(hit.relevance) if hit.relevance is not None else max(0.0, float(hit.score))
