"""An agent's captured replies as uses: a memory shown to the session that a reply repeats is read, and back hot."""
from __future__ import annotations

from memstrata.errors import MemstrataError
from memstrata.storage import journal
from memstrata.storage.turns import is_session


class ReplyUses:
    """Finds in captured replies the memories the session was shown and the agent used (scoring.reply_use),
    counts each once a session as a use, and brings a compressed, cold or archived one back hot and whole
    (a promotion)."""

    def __init__(self, state, entries, promotion):
        self.state = state
        self.entries = entries
        self.promotion = promotion  # () -> features.promotion.Promotion, built only when a promotion is due

    def apply(self, sessions: list[tuple[str, list[tuple[str, str]]]]) -> list[dict]:
        """For each (session id, its turns as ("user" | "reply", text, time): capture.plan.replies_of): the
        memories the replies used, each {"id", "title", "promoted_from"} (the tier it came back from,
        or None), counted and promoted."""
        from memstrata.capture.sessions import moment
        from memstrata.features import hook_sessions
        from memstrata.retrieval.phrases import token_sequence
        from memstrata.scoring import reply_use

        root = self.state.root
        out: list[dict] = []
        for session, turns in sessions:
            done = hook_sessions.counted_uses(root, session)
            shown_ids = [i for i in sorted(hook_sessions.injected(root, session))
                         if not i.startswith("ses-")][:hook_sessions.MAX_IDS]
            if not set(shown_ids) - done or not turns:
                continue
            try:
                memories = self._memories(shown_ids)
                since = {i: m for i, t in hook_sessions.shown_at(root, session).items() if (m := moment(t))}
                asked, found = reply_use.Asked(), []
                for role, text, at in turns:
                    if role == "user":
                        asked.add(token_sequence(text))  # each user turn read once, however many replies follow
                        continue
                    # every memory shown by then is compared (one counted already still holds its phrases,
                    # which then count for no other), and only those not counted yet are counted
                    seen = reply_use.shown_by(memories, since, moment(at))
                    found += [i for i in reply_use.used(token_sequence(text), asked, seen)
                              if i not in found and i not in done]
            except Exception:  # noqa: BLE001 - a record or a note this step cannot read costs uses, never the capture
                continue
            counted = [row for row in map(self._use, found) if row is not None]
            hook_sessions.note_uses(root, session, [row["id"] for row in counted])
            out += counted
        return out

    def _memories(self, ids: list[str]) -> dict:
        """{id: the memory's parts as a reply is compared with them} of the ids that still name an entry."""
        from memstrata.retrieval.phrases import unit_sequences
        from memstrata.scoring.reply_use import shown
        from memstrata.storage.sidecars import full_body

        out = {}
        for ref in ids:
            try:
                entry = self.entries.resolve(ref)
            except (MemstrataError, OSError, ValueError):
                continue  # trashed or renamed since it was shown, or no name of an entry: nothing to count
            if entry.id and not is_session(entry) and entry.status != "expired":
                out[entry.id] = shown(unit_sequences(entry.title, full_body(self.state.root, entry)))
        return out

    def _use(self, entry_id: str) -> dict | None:
        """One use of the entry (the journal); a compressed, cold or archived one comes back hot, whole.
        None when it cannot be counted now (gone meanwhile, a disk error): the capture goes on."""
        from memstrata.scoring.promotion import for_use
        from memstrata.storage.secrets import redact

        now = self.state.now()
        try:
            entry = self.entries.seen(self.entries.resolve(entry_id))
            journal.append(self.state.root, [(entry_id, now, None)])
        except (MemstrataError, OSError):
            return None
        # a vault's note is never moved nor rewritten by aging (docs/vault.md): the use alone makes it hot
        promoted = None if self.state.vault else for_use(entry, now, self.state.settings)
        try:
            if promoted is not None:
                self.promotion().apply_promotion(promoted)
        except (MemstrataError, OSError):
            promoted = None  # counted, not brought back: a use in a later session, or `mem promote`, tries again
        return {"id": entry_id, "title": redact(entry.title), "promoted_from": promoted.from_tier if promoted else None}
