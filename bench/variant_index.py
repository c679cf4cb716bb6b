"""What a variant's tree embeds: the texts of its LanceDB table hashed, the tokens the model ran, a vector memo shared by the variants of one run.

Every variant of bench/import_variants.py embeds a subset of the texts today's settings embed
(fewer sentence chunks, no context chunk), so in one process the vectors of a text already
embedded are reused (`memo_embeddings`): the same model, the same text, the same vector (up to
the float rounding of another batch's padding, ~1e-7). A variant's trees then cost their
chunking, writes and questions, not the model again. The cost a fresh process would pay is
counted apart (`EmbedCounter`: the tokens of every text asked for, memo hit or not), and
`fingerprint` says whether two variants built the same index (the same multiset of texts of
each kind): then their recall cannot differ, and the table says "identical index".
"""
from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path


class EmbedCounter:
    """The texts and tokens the engine asked the model for (the cost of a fresh process)."""

    def __init__(self):
        self.texts = 0
        self.tokens = 0

    def reset(self) -> None:
        self.texts = self.tokens = 0


def memo_embeddings(embedder=None) -> EmbedCounter:
    """Make the process's bundled embedder remember every vector it made (keyed by text) and count
    what it is asked; returns the counter. Idempotent."""
    import numpy as np

    if embedder is None:
        from memstrata.models.embedder import get_embedder

        embedder = get_embedder("bundled")
    if "_variant_counter" in embedder.__dict__:
        return embedder.__dict__["_variant_counter"]
    counter = EmbedCounter()
    memo: dict[str, np.ndarray] = {}
    inner = embedder.embed  # the bound method of the real model

    def embed(texts, batch_size: int = 32, progress=None):
        texts = list(texts)
        counter.texts += len(texts)
        counter.tokens += sum(min(embedder.count_tokens(t), embedder.max_tokens) for t in texts)
        missing = list(dict.fromkeys(t for t in texts if t not in memo))
        if missing:
            for t, v in zip(missing, inner(missing, batch_size=batch_size)):
                memo[t] = v
        if progress is not None:
            progress(len(texts), len(texts))
        out = np.zeros((len(texts), embedder.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            out[i] = memo[t]
        return out

    embedder.embed = embed
    embedder.__dict__["_variant_counter"] = counter
    embedder.__dict__["_variant_memo"] = memo
    return counter


def seed(root: Path, embedder=None) -> int:
    """Put the vectors of a tree's table in the memo (`memo_embeddings` first), except chunk 0 of
    an entry whose vector may be the mean of its sentences' (`pooled`, long CJK entries): their
    text is not what the model saw. Returns how many texts were new."""
    if embedder is None:
        from memstrata.models.embedder import get_embedder

        embedder = get_embedder("bundled")
    from memstrata import Memory

    memo = embedder.__dict__["_variant_memo"]
    import numpy as np

    table = Memory(root).state.vector_index().table().to_arrow()
    vectors = np.asarray(table.column("vector").combine_chunks().flatten(), dtype=np.float32).reshape(-1, embedder.dim)
    new = 0
    for kind, text, vector in zip(table.column("kind").to_pylist(), table.column("text").to_pylist(), vectors):
        if kind == "entry" and embedder.count_tokens(text) > embedder.max_tokens - 8:
            continue  # maybe pooled
        if text not in memo:
            memo[text] = vector
            new += 1
    return new


def table_texts(root: Path) -> list[tuple[str, str]]:
    """(kind, text) of every row of the tree's vector table."""
    from memstrata import Memory

    table = Memory(root).state.vector_index().table().to_arrow()
    return list(zip(table.column("kind").to_pylist(), table.column("text").to_pylist()))


def fingerprint(rows: list[tuple[str, str]], entries: int, counter: EmbedCounter | None = None) -> dict:
    """The index of one benchmark's trees in a few numbers: a hash of the sorted (kind, text) rows
    (equal hashes: the same texts embedded, the same index), rows per kind, entries, and the texts
    and tokens the model was asked for while it was built (when counted)."""
    h = hashlib.sha256()
    for kind, text in sorted(rows):
        h.update(kind.encode() + b"\0" + (text or "").encode("utf-8") + b"\0")
    out = {"hash": h.hexdigest()[:16], "entries": entries, "rows": dict(Counter(k for k, _ in rows))}
    if counter is not None:
        out.update(embedded_texts=counter.texts, tokens=counter.tokens)
    return out


def tree_fingerprint(roots: list[Path], counter: EmbedCounter | None = None) -> dict:
    """`fingerprint` of the union of some trees' tables (LoCoMo: one tree per conversation)."""
    rows, entries = [], 0
    for root in roots:
        mine = table_texts(root)
        rows += mine
        entries += sum(1 for kind, _ in mine if kind == "entry")
    return fingerprint(rows, entries, counter)
