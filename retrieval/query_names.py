"""Names in a query (capitalised words, acronyms): which ones the tree knows, which leave the dense query, which rows mention them."""
from __future__ import annotations

from memstrata.retrieval import lexical
from memstrata.retrieval.table import VectorIndex


MENTIONS_KEPT = 256  # names whose rows a frame keeps (a session asks about the same people again and again)


def mentioning(frame, texts: list[str], name: str) -> list[int]:
    """Positions whose text mentions `name` as a word, kept per frame: the scan reads every text
    (15 ms per name at 30,000 captured turns), the same names come back query after query."""
    found = frame._mentions.get(name)
    if found is None:
        found = [i for i, text in enumerate(texts) if name in text and lexical.mentions(text, name)]
        if len(frame._mentions) >= MENTIONS_KEPT:
            frame._mentions.clear()
        frame._mentions[name] = found
    return found


def known(index: VectorIndex, frame, entities: list[str]) -> list[str]:
    """The names in the query that the tree can know: every word of the name occurs in some entry.
    A capitalised word or acronym no entry holds ("PM", "VS Code") says nothing about which entry
    answers, so it neither boosts nor counts as a name the hits fail to mention."""
    if not entities:
        return []
    df = index.doc_freq(frame)
    return [e for e in entities if all(df.get(lexical._stem(w), 0) > 0 for w in e.lower().split())]


def common(index: VectorIndex, frame, entities: list[str], settings) -> list[str]:
    """The names in the query that at least `recall_dense_name_share` of the entries mention:
    the people (or projects) a memory is by or about. They carry no topic for the embedding
    model and are handled by the entity boost, so they leave the dense query; rarer names (a
    book, a place, a group) stay in it. Share 0: every name leaves."""
    share = settings.recall_dense_name_share
    if not entities or share <= 0:
        return entities
    df = index.doc_freq(frame)
    n = max(len(frame.ids), 1)
    return [e for e in entities if df.get(lexical._stem(e.lower()), 0) >= share * n]
