"""The synthetic trees bench/perf.py measures: entries from a fixed vocabulary, word-mean vectors, the index built through the engine."""
from __future__ import annotations

import random
import shutil
import time
from pathlib import Path

WORDS = ("memory agent project deploy billing postgres review weekly notes meeting decision cache index vector "
         "archive summary tier weight friday budget server backup release alpha beta gamma customer invoice "
         "kubernetes latency outage migration schema frontend backend design hiring roadmap quarter sprint "
         "bug ticket security audit vendor contract pricing launch metrics dashboard onboarding").split()
CATEGORIES = [f"projects/p{i}" for i in range(20)] + ["meetings", "long-term", "daily"] + [f"people/t{i}" for i in range(10)]
SHORT = (8, 20)  # words of a "short entry" (the import target): one sentence, as a chat turn or a note

def entries(n: int, seed: int = 7, words_per_entry: tuple[int, int] = (20, 80)):
    rng = random.Random(seed)
    for i in range(n):
        words = [rng.choice(WORDS) for _ in range(rng.randint(*words_per_entry))]
        yield {"id": f"b{seed}x{i:06d}", "title": f"{rng.choice(WORDS)} {rng.choice(WORDS)} {i}",
               "body": " ".join(words) + ".", "category": rng.choice(CATEGORIES), "tags": rng.sample(WORDS, 2),
               "created": f"2026-{rng.randint(1, 11):02d}-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:00:00Z"}


class WordMeanEmbedder:
    """The real model's tokenizer and window; vectors = normalised mean of real word vectors."""

    def __init__(self, real):
        import numpy as np

        self.real = real
        self.name, self.dim, self.max_tokens, self.backend = real.name, real.dim, real.max_tokens, real.backend
        vocab = sorted(set(WORDS))
        vecs = real.embed(vocab)
        self.table = dict(zip(vocab, vecs))
        self.np = np

    def count_tokens(self, text):
        return self.real.count_tokens(text)

    def truncate_to_tokens(self, text, n):
        return self.real.truncate_to_tokens(text, n)

    def embed(self, texts, batch_size=32, progress=None):
        np = self.np
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            ws = [self.table[w] for w in t.lower().replace(".", " ").split() if w in self.table]
            v = np.mean(ws, axis=0) if ws else self.real.embed([t])[0]
            out[i] = v / (np.linalg.norm(v) or 1.0)
        if progress:
            progress(len(texts), len(texts))
        return out

    def embed_query(self, text):
        return self.embed([text])[0]


def build_tree(root: Path, n: int, seed: int = 7) -> list[str]:
    """The synthetic tree's files and INDEX.md files (no vectors): the paths of its n entries."""
    from memstrata import Memory, clock
    from memstrata.storage import codec
    from memstrata.storage.entry import Entry
    from memstrata.storage.tree import unique_entry_path

    if root.exists():
        shutil.rmtree(root)
    m = Memory(root)
    m.init()
    rels = []
    for item in entries(n, seed):
        e = Entry(id=item["id"], title=item["title"], body=item["body"] + "\n", category=item["category"],
                  created=clock.parse_datetime(item["created"]), updated=clock.parse_datetime(item["created"]),
                  tags=item["tags"])
        e.path = unique_entry_path(root, e.category, e.title)
        (root / e.path).parent.mkdir(parents=True, exist_ok=True)
        (root / e.path).write_text(codec.render(e), encoding="utf-8")
        rels.append(e.path)
    m.rebuild_indexes()
    return rels


def build_tree_index(root: Path, n: int) -> dict:
    from memstrata import Memory
    from memstrata.models.embedder import get_embedder
    from memstrata.retrieval.table import VectorIndex
    from memstrata.storage.catalog import read_entry_file

    t0 = time.perf_counter()
    rels = build_tree(root, n)
    m = Memory(root)
    t_idx = time.perf_counter() - t0
    fake = WordMeanEmbedder(get_embedder(m.settings.embedding_model))
    index = VectorIndex(root, m.settings)
    batch = []
    for rel in rels:
        batch.append(read_entry_file(root, rel))
        if len(batch) == 5000:
            index.upsert(batch, lambda: fake)
            batch = []
    if batch:
        index.upsert(batch, lambda: fake)
    index.maybe_optimize(force=True)
    try:
        from memstrata.retrieval import ann

        upkeep = ann.maintain(index)
    except ImportError:
        upkeep = {}
    t_all = time.perf_counter() - t0
    return {"entries": n, "files_and_indexes_s": round(t_idx, 1),
            "vectors_s": round(t_all - t_idx, 1), "rows": index.table().count_rows(), "ann": upkeep.get("actions")}
