"""The vectors of one batch of chunk texts: each distinct text embedded once; a pooled chunk the mean of its entry's."""
from __future__ import annotations

from memstrata.storage.cancel import between_runs


def embed_distinct(embedder, texts: list[str], progress=None):
    """Vectors of `texts`, each distinct text embedded once (a sentence that is also another
    entry's text, two entries with the same text): rows in the order of `texts`. A cancelled call
    (storage/cancel.py) stops between model runs with Interrupted."""
    if not texts:
        return []
    progress = between_runs(progress)
    first: dict[str, int] = {}
    where = [first.setdefault(t, len(first)) for t in texts]
    if len(first) == len(texts):
        return embedder.embed(texts, progress=progress)
    return embedder.embed(list(first), progress=progress)[where]


def pooled_vector(own, chunks):
    """The vector of a pooled chunk: the unit mean of its entry's sentence vectors (`own`: the
    embedded chunks' vectors, in chunk order without the pooled ones)."""
    import numpy as np

    embedded = [c for c in chunks if not c.pooled]
    picked = [v for v, c in zip(own, embedded) if c.kind == "sentence"]
    mean = np.mean(picked, axis=0) if picked else np.mean(own, axis=0)
    return (mean / max(float(np.linalg.norm(mean)), 1e-9)).astype(np.float32)
