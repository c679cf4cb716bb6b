"""Fit the learned ranker (scoring/ranker.py) on notes and conversations together, leave-one-corpus-out.

    python bench/fit_notes.py --notes /tmp/notes-trees --locomo /tmp/locomo-trees [--data .../locomo]

The trees: those bench/notes.py --reuse and bench/locomo.py --reuse built. Groups: each English
notes corpus (a Chinese query keeps the fused ranking: the ranker is not fitted on it) and each
LoCoMo conversation. For every held-out group the ranker is fitted on all the others (a notes
corpus: on the other notes corpora and all of LoCoMo; a conversation: on the notes and the four
other conversations) and measured on it: notes by hit@1, hit@3, MRR@10; conversations by
recall@10. The objective of the coordinate ascent gives each corpus (LoCoMo as one) the same
weight: MRR@10 on notes, recall@10 on the conversations. Beside each figure: the current
WEIGHTS and the fused ranking. The weights fitted on everything are printed last.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("MEMSTRATA_SERVICE", "off")
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

import fit_ranking as fr  # noqa: E402
import locomo  # noqa: E402
import notes  # noqa: E402

ENGLISH_NOTES = ("til", "rustbook")


def note_examples(root: Path, questions):
    """[(features, labels, answer count)] of each question of a notes tree."""
    from memstrata.retrieval.search import Filters, search

    index, embedder, settings, weights, frame = fr.open_pipeline(root)
    width = len(fr._features())
    out = []
    for q in questions:
        sig: dict = {}
        search(index, embedder, q["question"], 10, Filters(), "hybrid", weights, settings, _signals_out=sig)
        want = [frame.by_path[p] for p in q["notes"] if p in frame.by_path]
        x, y = np.zeros((100, width)), np.zeros(100)
        if "features" in sig:
            c = len(sig["candidates"])
            x[:c] = sig["features"]
            y[:c] = np.isin(sig["candidates"], want)
        out.append((x, y, 1))
    return out


def metrics(batch, w):
    """Per question: (first relevant rank within 10 or 0, recall@10)."""
    x, y, n = batch
    top = np.argsort(-(x @ w), axis=1, kind="stable")[:, :10]
    got = np.take_along_axis(y, top, 1)
    first = np.where(got.any(1), got.argmax(1) + 1, 0)
    return first, got.sum(1) / n


def objective(parts):
    """Mean over corpora: MRR@10 of notes, recall@10 of the conversations (LoCoMo as one corpus)."""
    def score(w):
        vals = []
        for kind, batch in parts:
            first, rec = metrics(batch, w)
            vals.append(rec.mean() if kind == "conv" else np.where(first > 0, 1.0 / np.maximum(first, 1), 0).mean())
        return float(np.mean(vals))
    return score


def fit(parts):
    names = fr._features()
    allx = fr.stack([r for _, b in parts for r in b])
    w = fr.project(fr.fit_pairwise(allx))
    goal = objective([(k, fr.stack(b)) for k, b in parts])
    best = goal(w)
    for _ in range(3):
        for j in range(len(names)):
            for f in fr.STEPS:
                v = w.copy()
                v[j] = w[j] * f if w[j] else f * 0.1 * np.abs(w).mean()
                if not fr.monotone(v):
                    continue
                r = goal(v)
                if r > best + 1e-9:
                    best, w = r, v
    return w


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--notes", required=True)
    ap.add_argument("--locomo", required=True)
    ap.add_argument("--data", default=str(locomo.DATA))
    ap.add_argument("--cache", help="keep the features here (npz) and read them from it next time")
    args = ap.parse_args(argv)
    from memstrata.scoring.ranker import WEIGHTS

    names = list(fr._features())
    groups: dict[str, tuple[str, list]] = {}
    cache = Path(args.cache) if args.cache else None
    if cache is not None and cache.exists():
        data = np.load(cache, allow_pickle=True)
        groups = data["groups"].item()
    else:
        for name in ENGLISH_NOTES:
            groups[name] = ("note", note_examples(Path(args.notes) / name, notes.load_questions(name)))
            sys.stderr.write(f"features of {name}\n")
        for f in sorted(Path(args.data).glob("*.json")):
            groups[f"conv{f.stem}"] = ("conv", fr.examples(Path(args.locomo) / f"conv{f.stem}", locomo.load(f)[1]))
            sys.stderr.write(f"features of conversation {f.stem}\n")
        if cache is not None:
            np.savez(cache, groups=np.array(groups, dtype=object))
    current = np.array([WEIGHTS.get(n, 0.0) for n in names])
    fused = np.eye(len(names))[names.index("score")]

    def parts_of(keys):
        notes_parts = [(groups[k][0], groups[k][1]) for k in keys if groups[k][0] == "note"]
        conv = [r for k in keys if groups[k][0] == "conv" for r in groups[k][1]]
        return notes_parts + ([("conv", conv)] if conv else [])

    print("| held out | questions | measure | fused | current weights | fitted on the others |")
    print("| --- | --- | --- | --- | --- | --- |")
    conv_held = {"fused": [], "current": [], "fit": []}
    for held in groups:
        kind, rows = groups[held]
        w = fit(parts_of([k for k in groups if k != held]))
        batch = fr.stack(rows)
        res = {label: metrics(batch, v) for label, v in (("fused", fused), ("current", current), ("fit", w))}
        if kind == "conv":
            for label in res:
                conv_held[label] += list(res[label][1])
            print(f"| {held} | {len(rows)} | recall@10 | " + " | ".join(f"{res[k][1].mean():.3f}" for k in res) + " |")
        else:
            for measure, fn in (("hit@1", lambda f: (f == 1).mean()), ("hit@3", lambda f: ((f > 0) & (f <= 3)).mean()),
                                ("MRR@10", lambda f: np.where(f > 0, 1.0 / np.maximum(f, 1), 0).mean())):
                print(f"| {held} | {len(rows)} | {measure} | " + " | ".join(f"{fn(res[k][0]):.3f}" for k in res) + " |")
    print(f"| LoCoMo, LOCO | {len(conv_held['fit'])} | recall@10 | "
          + " | ".join(f"{np.mean(conv_held[k]):.3f}" for k in ("fused", "current", "fit")) + " |")
    w = fit(parts_of(list(groups)))
    w = w / max(float(np.abs(w).max()), 1e-9)
    print("\nWEIGHTS = {" + ", ".join(f'"{f}": {v:.4g}' for f, v in zip(names, w)) + "}")


if __name__ == "__main__":
    main()
