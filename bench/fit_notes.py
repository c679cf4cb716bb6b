"""Fit the learned ranker (scoring/ranker.py) on notes and conversations together, leave-one-corpus-out.

    python bench/fit_notes.py --notes /tmp/notes-trees --locomo /tmp/locomo-trees --data /work/shared/bench/locomo \
        --cache /tmp/fit-features [--without head] [--only conv26]

The trees: those bench/notes.py --reuse and bench/locomo.py --reuse built. Groups: each English
notes corpus (a Chinese query keeps the fused ranking: the ranker is not fitted on it) and each
LoCoMo conversation. For every held-out group the ranker is fitted on all the others (a notes
corpus: on the other notes corpora and all of LoCoMo; a conversation: on the notes and the four
other conversations) and measured on it: notes by hit@1, hit@3, MRR@10; conversations by
recall@10. The objective of the coordinate ascent gives each corpus (LoCoMo as one) the same
weight: MRR@10 on notes, recall@10 on the conversations. Beside each figure: the current
weights (WEIGHTS for a conversation, fitted on LoCoMo: in-sample there; NOTES_WEIGHTS for notes,
fitted here on all corpora: in-sample there), the fused ranking, the ranker fitted on
the other corpora of the same kind only (notes or conversations), and the held-out gain of the fit over the current weights with its
paired standard error over the questions (the noise a feature's help or harm is judged against;
`--without F` fits and measures with feature F left out). The weights fitted on everything are
printed last: scoring.ranker.NOTES_WEIGHTS (with `--without link`), the weights of a query whose
candidates are notes; a conversation keeps WEIGHTS (bench/fit_ranking.py). `--cache DIR` keeps
each group's features (one npz a group; `--only` extracts some).
"""
from __future__ import annotations

import argparse
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

ENGLISH_NOTES = ("til", "rustbook", "vault", "zettel")


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


def _rr(first):
    return np.where(first > 0, 1.0 / np.maximum(first, 1), 0.0)


def _paired(a, b) -> str:
    """The mean of a - b over the questions, with its standard error (the fit's noise on this corpus)."""
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    return f"{d.mean():+.3f} ({d.std(ddof=1) / np.sqrt(max(len(d), 1)):.3f})"



def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--notes", required=True)
    ap.add_argument("--locomo", required=True)
    ap.add_argument("--data", default=str(locomo.DATA))
    ap.add_argument("--cache", help="a folder: each corpus's features are kept there (npz) and read from it next time")
    ap.add_argument("--only", action="append", help="extract (and cache) the features of these groups only, no fit")
    ap.add_argument("--notes-corpus", action="append", metavar="NAME",
                    help="fit on these notes corpora only (default: every one of ENGLISH_NOTES), e.g. the previous fit's")
    ap.add_argument("--without", action="append", default=[], metavar="FEATURE",
                    help="fit and measure with this feature left out (its column 0): what it adds, per corpus")
    ap.add_argument("--choose", metavar="FEATURE", help="only choose FEATURE's weight in NOTES_WEIGHTS leave-one-"
                    "corpus-out on the notes corpora (a grid; the others' best for each held out) and print it")
    args = ap.parse_args(argv)
    from memstrata.scoring.ranker import NOTES_WEIGHTS, WEIGHTS

    names = list(fr._features())
    cache = Path(args.cache) if args.cache else None
    sources = {name: ("note", lambda name=name: note_examples(Path(args.notes) / name, notes.load_questions(name)))
               for name in (args.notes_corpus or ENGLISH_NOTES)}
    for f in sorted(Path(args.data).glob("*.json")):
        sources[f"conv{f.stem}"] = ("conv", lambda f=f: fr.examples(Path(args.locomo) / f"conv{f.stem}", locomo.load(f)[1]))
    groups: dict[str, tuple[str, list]] = {}
    for name, (kind, extract) in sources.items():
        if args.only and name not in args.only:
            continue
        groups[name] = (kind, fr.cached_rows(cache, name, len(names), extract))
        sys.stderr.write(f"features of {name}: {len(groups[name][1])} questions\n")
    if args.only:
        return
    if args.choose:
        return choose(groups, names, args.choose, np.array([NOTES_WEIGHTS.get(n, 0.0) for n in names]))
    for f in args.without:  # a feature left out: its column 0 everywhere (no weight can act)
        for _, rows in groups.values():
            for x, _, _ in rows:
                x[:, names.index(f)] = 0.0
    current_of = {kind: np.array([ws.get(n, 0.0) for n in names]) for kind, ws in (("conv", WEIGHTS),
                                                                                   ("note", NOTES_WEIGHTS))}
    fused = np.eye(len(names))[names.index("score")]

    def parts_of(keys):
        notes_parts = [(groups[k][0], groups[k][1]) for k in keys if groups[k][0] == "note"]
        conv = [r for k in keys if groups[k][0] == "conv" for r in groups[k][1]]
        return notes_parts + ([("conv", conv)] if conv else [])

    print("| held out | questions | measure | fused | current weights | fitted on the others of its kind "
          "| fitted on all the others | fit on all - current (s.e.) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    conv_held = {"fused": [], "current": [], "kind": [], "fit": []}
    for held in groups:
        kind, rows = groups[held]
        w = fit(parts_of([k for k in groups if k != held]))
        own = fit(parts_of([k for k in groups if k != held and groups[k][0] == kind]))
        batch = fr.stack(rows)
        res = {label: metrics(batch, v) for label, v in (("fused", fused), ("current", current_of[kind]),
                                                         ("kind", own), ("fit", w))}
        if kind == "conv":
            for label in res:
                conv_held[label] += list(res[label][1])
            print(f"| {held} | {len(rows)} | recall@10 | " + " | ".join(f"{res[k][1].mean():.3f}" for k in res)
                  + f" | {_paired(res['fit'][1], res['current'][1])} |")
        else:
            for measure, fn in (("hit@1", lambda f: (f == 1).mean()), ("hit@3", lambda f: ((f > 0) & (f <= 3)).mean()),
                                ("hit@10", lambda f: (f > 0).mean()),
                                ("MRR@10", lambda f: np.where(f > 0, 1.0 / np.maximum(f, 1), 0).mean())):
                gain = _paired(_rr(res["fit"][0]), _rr(res["current"][0])) if measure == "MRR@10" else ""
                print(f"| {held} | {len(rows)} | {measure} | " + " | ".join(f"{fn(res[k][0]):.3f}" for k in res)
                      + f" | {gain} |")
    print(f"| LoCoMo, LOCO | {len(conv_held['fit'])} | recall@10 | "
          + " | ".join(f"{np.mean(conv_held[k]):.3f}" for k in ("fused", "current", "kind", "fit"))
          + f" | {_paired(np.array(conv_held['fit']), np.array(conv_held['current']))} |")
    w = fit(parts_of(list(groups)))
    w = w / max(float(np.abs(w).max()), 1e-9)
    print("\nNOTES_WEIGHTS = {" + ", ".join(f'"{f}": {v:.4g}' for f, v in zip(names, w) if round(v, 4)) + "}")


GRID = (0.0, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


def choose(groups: dict, names: list, feature: str, base) -> None:
    """`feature`'s weight beside `base` (NOTES_WEIGHTS without it), chosen for each notes corpus held
    out on the other notes corpora (mean MRR@10, GRID), and what it gives there (paired s.e.)."""
    j = names.index(feature)
    base = base.copy()
    base[j] = 0.0
    notes_groups = {k: fr.stack(rows) for k, (kind, rows) in groups.items() if kind == "note"}

    def mrr_of(batch, w):
        return _rr(metrics(batch, w)[0])

    print(f"| held out | {feature} chosen on the others | MRR@10 without | with | difference (s.e.) |\n| --- | --- | --- | --- | --- |")
    for held, batch in notes_groups.items():
        best = max(GRID, key=lambda v: (np.mean([mrr_of(b, base + v * np.eye(len(names))[j]).mean()
                                                 for k, b in notes_groups.items() if k != held]), -v))
        without, with_it = mrr_of(batch, base), mrr_of(batch, base + best * np.eye(len(names))[j])
        print(f"| {held} | {best} | {without.mean():.3f} | {with_it.mean():.3f} | {_paired(with_it, without)} |")
    print("| in sample, each weight | " + ", ".join(
        f"{v}: " + "/".join(f"{mrr_of(b, base + v * np.eye(len(names))[j]).mean():.3f}" for b in notes_groups.values())
        for v in GRID) + " | | | |")


if __name__ == "__main__":
    main()
