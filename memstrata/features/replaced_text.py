"""The tree's replaced versions as term sets, kept per catalog state: what injection must not repeat."""
from __future__ import annotations

from memstrata.retrieval import lexical
from memstrata.retrieval.stemming import stem
from memstrata.scoring.superseded import Replaced, repeated, replaced
from memstrata.storage import versions
from memstrata.storage.errors import CorruptEntry, NotFound


def terms_of(text: str) -> frozenset:
    """A text's terms as the decision reads them: stemmed lower-case words that are not stop words,
    and the character bigrams of its CJK runs."""
    words = {stem(w.lower()) for w in lexical.words(text) if w.lower() not in lexical.QUERY_STOPWORDS}
    return frozenset(words | lexical.cjk_bigrams(text))


class ReplacedVersions:
    """Every kept version of the tree's entries that said something their current text no longer
    says (scoring.superseded), read from `.versions/` once per catalog state."""

    def __init__(self, state, entries):
        self.state = state
        self.entries = entries
        self._cache: tuple | None = None  # (key, [Replaced])

    def all(self) -> list[Replaced]:
        ids = versions.ids_with_snapshots(self.state.root)
        key = (self.state.catalog.version(), frozenset(ids))
        if self._cache is None or self._cache[0] != key:
            self._cache = (key, self._read(ids))
        return self._cache[1]

    def _read(self, ids) -> list[Replaced]:
        from memstrata.storage.sidecars import with_full_body

        root, out = self.state.root, []
        for entry_id in sorted(ids):
            try:
                current = self.entries.resolve(entry_id)
                now_terms = terms_of(with_full_body(root, current).body)
                kept = versions.list_snapshots(root, entry_id)
            except (NotFound, CorruptEntry, OSError):
                continue  # deleted since (its versions wait in .versions/ for a restore) or unreadable
            for number in sorted(kept):
                if number >= (current.version or 0):
                    continue  # a snapshot of the current version (or ahead of it after a revert) replaced nothing
                try:
                    old = versions.snapshot_entry(root, entry_id, number)
                except (NotFound, CorruptEntry, OSError):
                    continue
                record = replaced(entry_id, number, terms_of(old.body), now_terms)
                if record is not None:
                    out.append(record)
        return out

    def repeated_in(self, text: str, own_id: str | None = None) -> Replaced | None:
        """The replaced version `text` repeats (never one of its own entry's), or None."""
        known = self.all()
        return repeated(terms_of(text), known, own_id) if known else None

