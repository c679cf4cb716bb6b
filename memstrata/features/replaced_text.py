"""The tree's replaced versions as term sets, read again only where a version changed: what injection must not repeat."""
from __future__ import annotations

from memstrata.retrieval import lexical
from memstrata.retrieval.stemming import stem
from memstrata.scoring.superseded import Replaced, repeated, replaced
from memstrata.storage import versions
from memstrata.storage.errors import CorruptEntry, NotFound


SNAPSHOT_MAX_BYTES = 16 * 1024  # a kept version larger than this is not read for its terms (no memory's is)
VERSIONS_READ = 5  # an entry's latest kept versions read (an entry rewritten 20,000 times costs 5)


def terms_of(text: str) -> frozenset:
    """A text's terms as the decision reads them: stemmed lower-case words that are not stop words,
    and the character bigrams of its CJK runs."""
    words = {stem(w.lower()) for w in lexical.words(text) if w.lower() not in lexical.QUERY_STOPWORDS}
    return frozenset(words | lexical.cjk_bigrams(text))


def grams_of(text: str) -> frozenset:
    """A text's 3-grams, each (key, the terms it holds): of its stemmed words (stop words kept: "is on
    call"), and of the characters of its CJK runs (holding their two bigrams)."""
    toks = [stem(w.lower()) for w in lexical.words(text)]
    out = {(" ".join(toks[i:i + 3]), tuple(toks[i:i + 3])) for i in range(len(toks) - 2)}
    for run in lexical.cjk_query(text).split():
        out.update((run[i:i + 3], (run[i:i + 2], run[i + 1:i + 3])) for i in range(len(run) - 2))
    return frozenset(out)


def spoken(text: str) -> str:
    """A captured turn's text without its headings (`### <timestamp> · user`): what was said."""
    return "\n".join(line for line in text.splitlines() if not line.startswith("### "))


class ReplacedVersions:
    """Every kept version of the tree's entries that said something their current text no longer
    says (scoring.superseded). An entry's versions are read again only when its `.versions/` folder
    (a content change keeps a version there) or its file (a hand edit keeps none) changed: a prompt
    costs one listing and two stats per versioned entry, not a read of every kept version."""

    def __init__(self, state, entries):
        self.state = state
        self.entries = entries
        self._by_id: dict[str, tuple[tuple, list[Replaced]]] = {}  # id -> (folder and file stamps, its records)
        self._by_term: dict[str, list[Replaced]] = {}  # a dropped term -> the records that dropped it

    def _refresh(self) -> None:
        known = set(self.state.catalog.ids())  # a folder for an id no entry has replaced nothing to judge
        stamps = {i: st for i, st in versions.folder_stamps(self.state.root).items() if i in known}
        changed = set(self._by_id) - set(stamps)
        for entry_id in changed:
            del self._by_id[entry_id]
        for entry_id, folder in stamps.items():
            stamp = (folder, self._current_stamp(entry_id))  # a hand edit of the note keeps no version
            if entry_id not in self._by_id or self._by_id[entry_id][0] != stamp:
                self._by_id[entry_id] = (stamp, self._read(entry_id))
                changed.add(entry_id)
        if changed:
            self._by_term = {}
            for _, records in self._by_id.values():
                for record in records:
                    for term in record.dropped:
                        self._by_term.setdefault(term, []).append(record)

    def _current_stamp(self, entry_id: str) -> tuple:
        """Size and mtime of the entry's file(s) now, from the catalog's paths."""
        out = []
        for rel in self.state.catalog.paths_of(entry_id):
            try:
                st = (self.state.root / rel).stat()
            except OSError:
                continue
            out.append((rel, st.st_size, st.st_mtime_ns))
        return tuple(out)

    def _read(self, entry_id: str) -> list[Replaced]:
        from memstrata.scoring.conflicts import refines
        from memstrata.storage.sidecars import with_full_body

        root, out = self.state.root, []
        try:
            current = self.entries.resolve(entry_id)
            now_body = with_full_body(root, current).body
            now_terms = terms_of(now_body)
            kept = versions.list_snapshots(root, entry_id)
        except (NotFound, CorruptEntry, OSError):
            return []  # deleted since (its versions wait in .versions/ for a restore) or unreadable
        older = [(n, path) for n, path in sorted(kept.items()) if n < (current.version or 0)]
        for number, path in older[-VERSIONS_READ:]:  # a snapshot of the current version, or ahead of it, replaced nothing
            try:
                if path.stat().st_size > SNAPSHOT_MAX_BYTES:
                    continue  # no memory's version is this long: not read at a prompt
                old = versions.snapshot_entry(root, entry_id, number)
            except (NotFound, CorruptEntry, OSError, ValueError):  # ValueError: not UTF-8
                continue
            record = replaced(entry_id, number, terms_of(old.body), now_terms, grams_of(old.body),
                              refinement=refines(old.body, now_body))
            if record is not None:
                out.append(record)
        return out

    def judge(self):
        """`repeated_in(text, own_id)` over the versions as they are now: the replaced version a text
        repeats (never one of its own entry's), or None. Call once per answer, then judge each hit."""
        self._refresh()
        by_term = self._by_term

        def repeated_in(text: str, own_id: str | None = None) -> Replaced | None:
            if not by_term:
                return None
            terms = terms_of(text)
            candidates = {id(r): r for term in terms for r in by_term.get(term, ())}  # those that dropped one of its terms
            return repeated(terms, candidates.values(), own_id, grams_of(text)) if candidates else None

        return repeated_in
