"""Calibrate the promotion threshold on LoCoMo: precision, recall and F1 of promotion per threshold.

A question is the context; its evidence turns are the entries that should come back.

    python bench/promotion.py            # all five conversations in ../shared/bench/locomo

Similarity is what `mem promote` uses: the best cosine between the context and any chunk
of the entry (whole entry and its sentences), with the bundled model.
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from locomo import DATA, load  # noqa: E402  (one reader of the LoCoMo files, shared with bench/locomo.py)

THRESHOLDS = [round(x, 2) for x in np.arange(0.30, 0.81, 0.05)]
MAX_PROMOTIONS = 50


def entry_similarities(embedder, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Chunk vectors of every entry and, for each chunk, the index of its entry."""
    from memstrata.retrieval.chunking import chunk_entry

    chunk_texts, owners = [], []
    for i, text in enumerate(texts):
        for chunk in chunk_entry("", text, embedder.count_tokens, embedder.max_tokens, 32, 12):
            chunk_texts.append(chunk.text)
            owners.append(i)
    return embedder.embed(chunk_texts, batch_size=64), np.array(owners)


def main(argv=None) -> int:
    import argparse

    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args(argv)
    from memstrata.models.embedder import get_embedder

    embedder = get_embedder("bundled")
    files = sorted(DATA.glob("*.json"))
    if not files:
        print("no LoCoMo data in ../shared/bench/locomo", file=sys.stderr)
        return 1
    totals = {t: [0, 0, 0] for t in THRESHOLDS}  # true positives, promoted, relevant
    per_question_recall = {t: [] for t in THRESHOLDS}
    started = time.time()
    n_questions = 0
    for path in files:
        turns, questions = load(path)
        vectors, owners = entry_similarities(embedder, [t["body"] for t in turns])
        ids = [t["id"] for t in turns]
        queries = embedder.embed([q["query"] for q in questions], batch_size=64)
        sims = queries @ vectors.T
        for qi, question in enumerate(questions):
            best = np.full(len(turns), -1.0)
            np.maximum.at(best, owners, sims[qi])
            order = np.argsort(-best)
            relevant = set(question["evidence"])
            n_questions += 1
            for t in THRESHOLDS:
                promoted = [ids[j] for j in order[:MAX_PROMOTIONS] if best[j] >= t]
                hits = len(relevant.intersection(promoted))
                totals[t][0] += hits
                totals[t][1] += len(promoted)
                totals[t][2] += len(relevant)
                per_question_recall[t].append(hits / len(relevant))
    print(f"{n_questions} questions, {len(files)} conversations, {time.time() - started:.0f} s\n")
    print("| threshold | promoted per question | precision | recall | F1 | questions with any evidence promoted |")
    print("| --- | --- | --- | --- | --- | --- |")
    for t in THRESHOLDS:
        tp, promoted, relevant = totals[t]
        precision = tp / promoted if promoted else 0.0
        recall = tp / relevant if relevant else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        any_hit = sum(1 for r in per_question_recall[t] if r > 0) / len(per_question_recall[t])
        print(f"| {t:.2f} | {promoted / n_questions:.1f} | {precision:.3f} | {recall:.3f} | {f1:.3f} | {any_hit:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
