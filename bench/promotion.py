"""Calibrate the promotion threshold on LoCoMo: precision, recall and F1 of promotion per threshold.

A question is the context; its evidence turns are the entries that should come back.

    python bench/promotion.py            # all five conversations in ../shared/bench/locomo
    python bench/promotion.py --trees DIR   # also the default rule, with recall's relevance on the
                                            # trees `bench/locomo.py --reuse DIR` built

Similarity is what `mem promote` uses: the best cosine between the context and any chunk
of the entry (whole entry and its sentences), with the bundled model. The default rule
(scoring/promotion.select, calibrated on realistic tasks by bench/promotion_tasks.py) adds the
most similar turn from promote_best_cosine and recall's likeliest answer from promote_min_relevance
to every turn at least promote_threshold similar.
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

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trees", help="the folder `bench/locomo.py --reuse` built the trees in (for the default rule)")
    args = ap.parse_args(argv)
    from memstrata.models.embedder import get_embedder
    from memstrata.storage.config import Settings

    settings = Settings()
    rule = {"tp": 0, "promoted": 0, "relevant": 0, "any": 0}  # the default rule, with --trees

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
        tree = _tree(args.trees, path, embedder)
        for qi, question in enumerate(questions):
            best = np.full(len(turns), -1.0)
            np.maximum.at(best, owners, sims[qi])
            order = np.argsort(-best)
            relevant = set(question["evidence"])
            n_questions += 1
            if tree is not None:
                chosen = default_rule(tree, question["query"], ids, best, order, settings)
                rule["tp"] += len(relevant & chosen)
                rule["promoted"] += len(chosen)
                rule["relevant"] += len(relevant)
                rule["any"] += bool(relevant & chosen)
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
    if args.trees:
        tp, promoted, relevant = rule["tp"], rule["promoted"], rule["relevant"]
        precision, recall = tp / max(1, promoted), tp / max(1, relevant)
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        print(f"| default rule (>= {settings.promote_threshold}, best >= {settings.promote_best_cosine}, relevance >= "
              f"{settings.promote_min_relevance}) | {promoted / n_questions:.1f} | {precision:.3f} | {recall:.3f} | "
              f"{f1:.3f} | {rule['any'] / n_questions:.3f} |")
    return 0


def _tree(trees: str | None, conv_file: Path, embedder):
    """The Memory of the tree bench/locomo.py built for this conversation, or None."""
    if not trees:
        return None
    from memstrata import Memory

    root = Path(trees) / f"conv{conv_file.stem}"
    if not (root / ".vectors").exists():
        raise SystemExit(f"no tree at {root}: run `python bench/locomo.py --reuse {trees}` first")
    return Memory(root, embedder=embedder)


def default_rule(m, query: str, ids: list[str], best: np.ndarray, order: np.ndarray, settings) -> set[str]:
    """What scoring.promotion.select's default rule promotes among the turns (every one a candidate):
    each at least promote_threshold similar, the most similar from promote_best_cosine, and recall's
    likeliest answer (its relevance on the tree) from promote_min_relevance."""
    chosen = {ids[j] for j in order[:MAX_PROMOTIONS] if best[j] >= settings.promote_threshold}
    if best[order[0]] >= settings.promote_best_cosine:
        chosen.add(ids[order[0]])
    hits = [h for h in m.recall(query, k=10, min_relevance=0.0, count_access=False).results if h.relevance is not None]
    if hits:
        likeliest = max(hits, key=lambda h: h.relevance)
        if likeliest.relevance >= settings.promote_min_relevance:
            chosen.add(likeliest.id)
    return chosen


if __name__ == "__main__":
    sys.exit(main())
