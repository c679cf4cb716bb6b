"""An agent's captured replies as uses: a memory shown to the session that a reply repeats is read, and back hot."""
from __future__ import annotations

from memstrata.errors import MemstrataError
from memstrata.storage import journal
from memstrata.storage.turns import is_session

SHOWN_MAX = 200  # the memories of one session a reply is compared with (the latest injected)


def exchanges(turns) -> list[tuple[str, str]]:
    """(what the user asked, the agent's reply) for each assistant turn among `turns` (in order,
    with role and text): the user turns since the previous reply are what was asked."""
    out, asked = [], []
    for turn in turns:
        if turn.role == "user":
            asked.append(turn.text)
        elif turn.role == "assistant" and turn.text.strip():
            out.append(("\n".join(asked), turn.text))
            asked = []
    return out


class ReplyUses:
    """Finds in captured replies the memories the session was shown and the agent used (scoring.reply_use),
    counts each as a use, and brings a cold or archived one back hot with its full text (a promotion)."""

    def __init__(self, state, entries, promotion):
        self.state = state
        self.entries = entries
        self.promotion = promotion  # () -> features.promotion.Promotion, built only when a reply used a cold memory

    def apply(self, sessions: list[tuple[str, list]]) -> list[str]:
        """For each (session id, its new turns): the ids the replies used, counted and promoted."""
        from memstrata.features import hook_sessions
        from memstrata.retrieval.lexical import token_sequence
        from memstrata.scoring import reply_use

        root = self.state.root
        used: list[str] = []
        for session, turns in sessions:
            talk = exchanges(turns)
            shown_ids = [i for i in hook_sessions.injected(root, session) if not i.startswith("ses-")] if talk else []
            if not shown_ids:
                continue
            shown = self._texts(shown_ids[-SHOWN_MAX:])
            for asked, reply in talk:
                found = reply_use.used(token_sequence(reply), token_sequence(asked), shown)
                used += [i for i in found if i not in used]
        for entry_id in used:
            self._use(entry_id)
        return used

    def _texts(self, ids: list[str]) -> dict[str, list]:
        """{id: the tokens of the memory's title and full text} of the ids that still name an entry."""
        from memstrata.retrieval.lexical import token_sequence
        from memstrata.storage.sidecars import full_body

        out = {}
        for ref in ids:
            try:
                entry = self.entries.resolve(ref)
            except (MemstrataError, OSError):
                continue  # trashed or renamed since it was shown: nothing to count
            if entry.id and not is_session(entry) and entry.status != "expired":
                out[entry.id] = token_sequence(f"{entry.title}\n{full_body(self.state.root, entry)}")
        return out

    def _use(self, entry_id: str) -> None:
        """One use of the entry (the journal); a cold or archived one comes back hot, whole."""
        from memstrata.scoring.promotion import for_use

        now = self.state.now()
        try:
            entry = self.entries.seen(self.entries.resolve(entry_id))
            promoted = for_use(entry, now, self.state.settings)
            if promoted is not None:
                self.promotion().apply_promotion(promoted)
            journal.append(self.state.root, [(entry_id, now, None)])
        except (MemstrataError, OSError):
            pass  # a use that cannot be counted now costs the entry one read, never the capture
