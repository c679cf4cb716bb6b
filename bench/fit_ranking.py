"""Choose the fusion weights by leave-one-conversation-out on the LoCoMo dev trees (prints per-fold recall@10).

    python bench/fit_ranking.py --reuse DIR    # DIR: the trees bench/locomo.py --reuse DIR built

For every question the signals of every entry (cosine, text share, names, dates, structure)
are taken once from the real recall pipeline; each weight combination of the grid is then
ranked offline with the pure `retrieval.fusion.ranking`. For each conversation the weights
are chosen on the other four and measured on it; the weights chosen on all five are printed
last (they are the defaults in storage/config.py).
"""
from __future__ import annotations

import argparse
import dataclasses
import itertools
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

import locomo  # noqa: E402

GRID = {"dense": [1.5, 2.0, 2.5, 3.0, 4.0], "entity": [0.2, 0.35, 0.5], "neighbour": [0.15, 0.25, 0.35],
        "session": [0.15, 0.25, 0.35], "date": [0.25, 0.5]}


def signals(root: Path, questions):
    """[(signals, evidence positions)] of each question, from the real pipeline."""
    from memstrata import Memory
    from memstrata.retrieval import fusion
    from memstrata.retrieval.search import Filters, search

    m = Memory(root)
    m.recall("warm up")
    state = m._recall.state
    index, embedder, settings = state.vector_index(), state.model(), state.settings
    weights = fusion.FusionWeights.from_settings(settings)
    frame = index.frame()
    out = []
    for q in questions:
        sig: dict = {}
        search(index, embedder, q["query"], 10, Filters(), "hybrid", weights, settings, _signals_out=sig)
        out.append((sig, [frame.pos[i] for i in q["evidence"] if i in frame.pos]))
    return out, weights


def recall_at_10(data, w) -> list[float]:
    from memstrata.retrieval import fusion

    out = []
    for sig, evidence in data:
        zero = np.zeros(sig["n"])
        score, _, _ = fusion.ranking(w, sig["cosine"], sig["text"], zero, sig["cjk"], sig["cjk_share"],
                                     sig["structure"], sig["entity_share"], sig["date_near"], sig["inactive"],
                                     sig["mask"])
        top = set(np.argsort(-score, kind="stable")[:10].tolist())
        out.append(len(top & set(evidence)) / len(evidence) if evidence else 0.0)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(locomo.DATA))
    ap.add_argument("--reuse", required=True, help="folder of the trees bench/locomo.py --reuse built")
    args = ap.parse_args(argv)
    folds, base = {}, None
    for f in sorted(Path(args.data).glob("*.json")):
        lines, questions = locomo.load(f)
        m, _ = locomo.build(Path(args.reuse) / f"conv{f.stem}", lines, reuse=True)
        folds[f.stem], base = signals(Path(args.reuse) / f"conv{f.stem}", questions)
        sys.stderr.write(f"signals of conversation {f.stem}: {len(questions)} questions\n")
    combos = [dict(zip(GRID, values)) for values in itertools.product(*GRID.values())]
    results = {}  # combo index -> {fold: [per-question recall@10]}
    for n, combo in enumerate(combos):
        w = dataclasses.replace(base, **combo)
        results[n] = {name: recall_at_10(data, w) for name, data in folds.items()}
    print("| held-out conversation | questions | weights chosen on the other four | recall@10 |")
    print("| --- | --- | --- | --- |")
    held_all = []
    for name in folds:
        def train(n):
            vals = [v for other, per in results[n].items() if other != name for v in per]
            return sum(vals) / len(vals)
        best = max(results, key=train)
        held = results[best][name]
        held_all += held
        print(f"| {name} | {len(held)} | {combos[best]} | {sum(held) / len(held):.3f} |")
    print(f"| LOCO, all | {len(held_all)} | | **{sum(held_all) / len(held_all):.3f}** |")
    mean = lambda n: np.mean([v for per in results[n].values() for v in per])  # noqa: E731
    best = max(results, key=mean)
    print(f"\nChosen on all five: {combos[best]} (five-conversation recall@10 {mean(best):.3f})")


if __name__ == "__main__":
    main()
