"""Promotion (old memories back to hot when the task needs them) and autoload (what a session starts with)."""
from __future__ import annotations

from memstrata.engine.entries import Entries
from memstrata.engine.inputs import require_encodable
from memstrata.engine.save import SavePath
from memstrata.engine.state import TreeState
from memstrata.errors import IndexUnavailable, InvalidInput
from memstrata.features.aging import Aging
from memstrata.features.autoload_block import (CHARS_PER_TOKEN, HIT_TOKENS, SECTIONS, TITLE_CHARS, FORMS,
                                               AutoloadItem, AutoloadResult, Costs, cut_chars, promoted_line)
from memstrata.features.compression import without_note
from memstrata.features.recall import Recall
from memstrata.features.shared import SharedSpace
from memstrata.storage import journal
from memstrata.storage.entry import TIERS, Entry
from memstrata.storage.secrets import redact

HOOK_EVENTS_WITH_PROMPT = ("UserPromptSubmit",)
_MIN_BODY_TOKENS = 12  # below this a truncated body says nothing; skip the entry instead
_MAX_MISSES = 25  # once this many items in a row did not fit, the budget is taken as full


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

    # -- promotion ----------------------------------------------------------------------
    def promote(self, context: str, threshold: float | None = None, layers=None, max_count: int | None = None,
                dry_run: bool = False) -> dict:
        """Bring cold/archive entries similar to `context` back to hot (full text restored, out of archived/).

        Similarity is the best cosine between the context and any chunk of the entry.
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
        candidates = self._promotion_candidates(context, wanted, threshold_used, now)
        chosen = promotion.select(candidates, now, settings, threshold=threshold, layers=wanted, max_count=max_count)
        by_id = {e.id: e for e, _ in candidates}
        rows = [{"id": p.entry_id, "title": redact(by_id[p.entry_id].title), "similarity": round(p.similarity, 4),
                 "from_tier": p.from_tier, "context_correlation": round(p.new_correlation, 4),
                 "weight": round(p.new_weight, 4), "path": by_id[p.entry_id].path} for p in chosen]
        if not dry_run:
            for p, row in zip(chosen, rows):
                row["path"] = self._apply_promotion(p)
        return {"dry_run": dry_run, "threshold": threshold_used, "layers": sorted(wanted),
                "candidates": len(candidates), "promoted": rows}

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
        rows = ann.tune_query(table.search(query.tolist(), vector_column_name="vector"), index, limit)
        rows = rows.select(["id", "_distance"]).to_arrow().to_pydict()
        sims = [1.0 - float(d) / 2.0 for d in rows["_distance"]]  # unit vectors: L2 distance to cosine
        if len(sims) >= limit and min(sims) >= threshold:
            return None
        best: dict[str, float] = {}
        for rid, sim in zip(rows["id"], sims):
            if sim >= threshold and sim > best.get(rid, -2.0):
                best[rid] = sim
        catalog = self.state.catalog
        catalog.refresh()
        unindexed = [i for i in catalog.ids() if i not in frame.pos]
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
        rows = index.fetch_rows([e.id for e in entries]) if index.exists() and index.model_matches(embedder) else {}
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

    def _apply_promotion(self, p) -> str:
        """One promotion, atomically: full text back (if compressed), out of archived/, hot, counted."""
        from memstrata.scoring.promotion import promotion_changes
        from memstrata.storage import tree
        from memstrata.storage.paths import is_archived_path

        with self.state.lock():
            current = self.entries.resolve(p.entry_id)
            changes = promotion_changes(p, current, self.state.now())
            if self.state.vault and not current.is_compressed and not is_archived_path(current.path or ""):
                # a vault's note holds none of the engine's keys: the promotion is an access in the
                # journal (reads then show it hot, with its new correlation); the note is not written
                journal.append(self.root, [(current.id, changes["last_access"], changes["context_correlation"])])
                return current.path
            if current.is_compressed:
                self.aging.decompress(current.id, restore=True)
                current = self.entries.resolve(current.id)
            new = current.copy(**changes)
            if is_archived_path(current.path or ""):
                new.path = tree.unique_entry_path(self.root, current.category, current.title)
            self.save.save(new, previous=current)
        return new.path

    # -- autoload -----------------------------------------------------------------------
    def autoload(self, context: str | None = None, promote: bool = False, budget: int | None = None,
                 include_shared: bool = True, hot: bool | None = None, session_id: str | None = None,
                 form: str = "markdown") -> AutoloadResult:
        """The memories an agent should start with: relevant ones first (hits that clear the
        recall_min_relevance cut-off), then, with `hot` (by default: only when there is no context, a
        session start), hot ones by weight, within `budget` tokens
        (the model's tokenizer; the whole block: preamble, headings and fences included). A context
        that names no topic ("hello", "thanks!", "take care": retrieval.prompts.is_everyday) loads
        nothing at all, hot list included: only a start with no context lists the hot memories (the
        prompt hook and MCP follow one rule). Each memory brings at most HIT_TOKENS of its body: a
        relevant hit the part of its note the context asks about, a hot entry its opening. With a
        `session_id`, an entry already loaded in that session is not loaded again. Loading a hot
        entry counts as an access (correlation 1.0); a relevant hit does not (an injection
        answering a prompt is no read that should make the entry hot). `form` "json" makes the budget
        bound the whole JSON answer (`to_dict`, as MCP sends it) rather than the Markdown block."""
        from memstrata.features import hook_sessions
        from memstrata.retrieval.prompts import has_topic, is_everyday
        from memstrata.scoring.weight import compute_weight

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
        result = AutoloadResult(context=context, budget=budget, form=form)
        if cut_note:
            result.notes.append(cut_note)
        topic = context is not None and has_topic(context) and not is_everyday(context, self._model_or_none())
        if context and not topic:
            # a greeting passed as the task is no session start: it must not pull the hot notes
            # (every note of a freshly adopted vault is hot) where the prompt hook injects nothing
            result.notes.append("the context names no topic: nothing loaded (without a context, the recent "
                                "and weighty memories are listed)")
            return result
        already = hook_sessions.injected(self.root, session_id)
        now = self.state.now()
        if promote and topic:
            try:
                result.promoted = self.promote(context)["promoted"]
            except IndexUnavailable as exc:
                result.notes.append(f"no promotion: {exc.message}")
        shared = self.shared.for_autoload(result.notes) if include_shared else None
        ranked: list[tuple[Entry, str, float]] = []
        if topic:
            answer = (self.shared.recall(context, k=10) if shared is not None
                      else self.recall.recall(context, k=10))
            result.strategy = answer.strategy
            result.notes += list(answer.notes)
            # an empty note (a vault's tag page: a title, no text) has nothing to hand an agent, and
            # its title alone matched "which database did we pick?" at 0.95, setting the floor above the answer
            hits = [h for h in answer.results if self._has_text(h, shared)]
            best = max((_strength(h) for h in hits), default=0.0)
            floor = best * settings.autoload_min_relevance
            for hit in hits:
                if hit.status == "expired" or _strength(hit) < floor or hit.id in already:
                    continue
                ranked.append((hit, "relevant", float(hit.score)))
        for source in (self.entries, shared) if hot else ():
            if source is None:
                continue
            # in the hot tier now (touched lately), whatever tier maintain last wrote into the file
            hot = [e.copy(tier="hot") for e in source.hot_entries(now)
                   if e.status == "active" and (source is not shared or self.shared.mine(shared, e.path))]
            for e in sorted(hot, key=lambda e: -compute_weight(e, now)):
                if source is shared:
                    e.extra["_from_shared"] = True
                if e.ref not in already:
                    ranked.append((e, "hot", compute_weight(e, now)))
        self._fill(result, ranked, shared)
        hook_sessions.record(self.root, session_id, [i.entry.ref for i in result.items])
        self._count_loads([i.entry for i in result.items if not i.shared and i.section == "hot"])
        return result

    def _model_or_none(self):
        """The embedder, or None when it cannot load (the words alone then decide small talk)."""
        try:
            return self.state.model()
        except Exception:  # noqa: BLE001 - ModelUnavailable or a broken install: recall says why
            return None

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

    def _fill(self, result: AutoloadResult, ranked, shared) -> None:
        """Put the ranked memories into `result` while the whole block fits its budget: the preamble,
        each section's heading and the promoted line are counted with the fenced memories."""
        from memstrata.retrieval.prompts import relevant_part

        costs = Costs(self.state.embedder, result.form)
        frame = costs.head() + (costs.of(promoted_line(result.promoted)) if result.promoted else 0)
        frame += costs.frame(result)  # a JSON answer's own fields (MCP): 0 for the Markdown block
        headings = dict((section, costs.of(heading)) for section, heading in SECTIONS)
        used, seen, missed = frame, set(), 0  # missed: items in a row that did not fit
        for item, section, score in ranked:
            ref = item.id if section == "relevant" else item.ref  # a hit's id is `path:...` already
            if ref in seen:
                continue
            seen.add(ref)
            opening = 0 if any(i.section == section for i in result.items) else headings[section]
            if result.budget - used - opening < _MIN_BODY_TOKENS:  # as listed: no need to read it
                missed += 1
                if used >= result.budget or missed >= _MAX_MISSES:
                    break  # (nearly) full: the rest of a long hot list is not tried one by one
                continue
            from_shared = shared is not None and (item.shared_root is not None if section == "relevant"
                                                  else bool(item.extra.get("_from_shared")))
            try:
                entry = (shared if from_shared else self.entries).resolve(ref)
            except Exception:  # a file that vanished or broke since it was listed: skip it
                continue
            if not entry.body.strip():  # an empty hot note: nothing to hand an agent (hits: _has_text)
                continue
            # what autoload hands out is shown text, redacted as recall's snippets are (retrieval.hits):
            # a file the guard flagged (adopted, hand-made, pulled) reaches here through the hot list
            title, cut = cut_chars(redact(entry.title), TITLE_CHARS)
            entry = entry.copy(title=title + (" …" if cut else ""))
            relevance = getattr(item, "relevance", None) if section == "relevant" else None
            extra = costs.row(entry, section, relevance, from_shared, result.budget)  # its entry in a JSON answer
            header = costs.header(entry, from_shared) + extra
            room = min(result.budget - used - opening, header + HIT_TOKENS)
            if room - header < _MIN_BODY_TOKENS:
                missed += 1
                continue
            # before any cut, so a credential is never shortened past its rule into a visible prefix
            body = redact(without_note(entry.body).strip() or (entry.summary or ""))
            part = section == "relevant" and costs.of(body[:(HIT_TOKENS + 1) * CHARS_PER_TOKEN]) > HIT_TOKENS
            if part:  # the part asked about; the note goes on (" …", and `mem read` has it all)
                body = relevant_part(body, result.context or "", getattr(item, "snippet", None))
            fitted = costs.fit(entry, body, from_shared, room, cut=part, extra=extra)
            if fitted is None:
                missed += 1
                continue
            missed = 0
            body, truncated, cost = fitted
            result.items.append(AutoloadItem(entry, section, score, body, cost, truncated, from_shared, relevance))
            used += cost + opening
        result.frame_tokens = frame + sum(headings[s] for s in {i.section for i in result.items})

    def _count_loads(self, entries: list[Entry]) -> None:
        """Routine loading is an access with context_correlation 1.0, in the access journal
        (entry files are not rewritten: reading never churns a tree kept in git)."""
        now = self.state.now()
        journal.append(self.root, [(e.id, now, 1.0) for e in entries if e.id])


def _strength(hit) -> float:
    """How strongly a recall hit belongs in autoload: its calibrated relevance (a probability; the
    ranker's scores have no fixed sign or scale), or for grep and index answers, which have none,
    their score."""
    return float(hit.relevance) if hit.relevance is not None else max(0.0, float(hit.score))
