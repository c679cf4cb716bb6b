"""Fit the CJK ranker (scoring/cjk_ranker.py) leave-one-corpus-out on the Chinese corpora.

    python bench/fit_chinese.py --notes NOTES_TREES --zh ZH_DIR --zh-data cmrc2018_trial.json --cache DIR

NOTES_TREES: the trees bench/notes.py --reuse built (vuezh, weekly, advjava: their questions with
CJK text; an English question goes to the English ranker); ZH_DIR: the folder bench/chinese_passages.py
--dir built (CMRC 2018 trial passages; its first --zh-questions questions, seed 7). For every
question the real pipeline gives the features of the fused ranking's top 100 candidates once; for
each corpus held out, the ranker is fitted on the others (pairwise logistic over (answer, other
candidate) pairs, weights kept >= 0: every feature is "more of the query held") and measured on it. Beside it:
the fused order, `joint` alone (BM25 over the query's bigrams and words with idf: what a
character-bigram BM25 does, on the engine's candidates) and the shipped WEIGHTS; the paired
standard error of held out - joint. The weights fitted on every corpus are printed last
(scoring.cjk_ranker.WEIGHTS). `--without F` leaves a feature out.
"""
from __future__ import annotations

import argparse
import json
import os
import re
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
import notes  # noqa: E402

CHINESE_NOTES = ("vuezh", "weekly", "advjava")


def _names():
    from memstrata.scoring.cjk_ranker import FEATURES

    return FEATURES


def examples(root: Path, questions: list[tuple[str, list]], key: str = "path"):
    """[(features, labels, 1)] of each question with CJK text (answers: paths or ids)."""
    from memstrata.retrieval import lexical
    from memstrata.retrieval.search import Filters, search

    index, embedder, settings, weights, frame = fr.open_pipeline(root)
    width = len(_names())
    out = []
    for query, answers in questions:
        if not lexical.has_cjk(query):
            continue
        sig: dict = {}
        search(index, embedder, query, 10, Filters(), "hybrid", weights, settings, _signals_out=sig)
        lookup = frame.by_path if key == "path" else frame.pos
        want = [lookup[a] for a in answers if a in lookup]
        x, y = np.zeros((100, width)), np.zeros(100)
        if "cjk_features" in sig:
            c = len(sig["cjk_candidates"])
            x[:c] = sig["cjk_features"]
            y[:c] = np.isin(sig["cjk_candidates"], want)
            x[c:] = -1.0  # no candidate: below every real one
        out.append((x, y, 1))
    return out


_LATIN = re.compile(r"[A-Za-z][A-Za-z0-9_.+#'-]*")


def mixed(question: str) -> bool:
    """A question of CJK text and Latin words (iPhone, Redis, v-if)."""
    from memstrata.retrieval import lexical

    return lexical.has_cjk(question) and bool(_LATIN.search(question))


def alone(question: str) -> str:
    """A mixed question's Chinese words alone (its Latin words left out)."""
    return " ".join(_LATIN.sub(" ", question).split())


def first_ranks(batch, w):
    x, y, _ = batch
    top = np.argsort(-(x @ w), axis=1, kind="stable")[:, :10]
    got = np.take_along_axis(y, top, 1)
    return np.where(got.any(1), got.argmax(1) + 1, 0)


def mrr(first):
    return np.where(first > 0, 1.0 / np.maximum(first, 1), 0.0)


def fit(groups: list):
    """Weights >= 0 fitted on `groups` (batches) by pairwise logistic regression. Coordinate ascent on
    mean MRR@10 after it (as bench/fit_notes.py does) gave the same held-out figures within 0.003
    on every corpus, and moved weights more from fold to fold: left out."""
    return np.maximum(fr.fit_pairwise(fr.stack([r for g in groups for r in g])), 0.0)



def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--notes", required=True, type=Path)
    ap.add_argument("--zh", type=Path, help="the folder bench/chinese_passages.py --dir built")
    ap.add_argument("--zh-data", type=Path)
    ap.add_argument("--zh-questions", type=int, default=300)
    ap.add_argument("--cache", type=Path)
    ap.add_argument("--only", action="append", help="extract (and cache) these groups only, no fit")
    ap.add_argument("--without", action="append", default=[], metavar="FEATURE")
    ap.add_argument("--dump", type=Path, help="bench/notes.py --dump of the same trees: every question of each "
                    "Chinese notes corpus, its English ones as the engine ranked them (the English ranker)")
    args = ap.parse_args(argv)
    from memstrata.retrieval import lexical
    from memstrata.scoring.cjk_ranker import WEIGHTS

    names = list(_names())
    present = [name for name in CHINESE_NOTES if (args.notes / name).is_dir()]
    sources = {name: (lambda name=name: examples(args.notes / name, [(q["question"], q["notes"])
                                                                      for q in notes.load_questions(name)]))
               for name in present}
    # each mixed question again with its Latin words left out: does the English word decide, or the Chinese?
    sources.update({f"{name}~alone": (lambda name=name: examples(args.notes / name, [
        (alone(q["question"]), q["notes"]) for q in notes.load_questions(name) if mixed(q["question"])]))
        for name in present})
    if args.zh and args.zh_data:
        import chinese_passages as zh

        _, qs = zh.load([args.zh_data], args.zh_questions, 7)
        sources["cmrc"] = lambda: examples(args.zh / "tree", [(q["query"], [q["answer"]]) for q in qs], key="id")
    groups = {}
    for name, extract in sources.items():
        if args.only and name not in args.only:
            continue
        groups[name] = fr.cached_rows(args.cache, name, len(_names()), extract)
        sys.stderr.write(f"features of {name}: {len(groups[name])} questions\n")
    if args.only:
        return
    for f in args.without:
        for rows in groups.values():
            for x, _, _ in rows:
                x[:, names.index(f)] = np.where(x[:, 0] >= 0, 0.0, x[:, names.index(f)])
    aside = {k: groups.pop(k) for k in [k for k in groups if "~" in k]}  # measured, never fitted on
    shipped = np.array([WEIGHTS.get(n, 0.0) for n in names])
    joint = np.eye(len(names))[names.index("joint")]
    print("| held out | questions | measure | joint (bigram BM25 with idf) | shipped | **fitted on the others** "
          "| held out - joint (s.e.) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    held_out = {}
    for held, rows in groups.items():
        w = fit([g for k, g in groups.items() if k != held])
        batch = fr.stack(rows)
        res = {k: first_ranks(batch, v) for k, v in (("joint", joint), ("shipped", shipped), ("fit", w))}
        d = mrr(res["fit"]) - mrr(res["joint"])
        for measure, fn in (("hit@1", lambda f: (f == 1).mean()), ("hit@3", lambda f: ((f > 0) & (f <= 3)).mean()),
                            ("hit@10", lambda f: (f > 0).mean()), ("MRR@10", lambda f: mrr(f).mean())):
            gain = f"{d.mean():+.3f} ({d.std(ddof=1) / np.sqrt(len(d)):.3f})" if measure == "MRR@10" else ""
            print(f"| {held} | {len(rows)} | {measure} | " + " | ".join(f"{fn(res[k]):.3f}" for k in res)
                  + f" | {gain} |")
        print(f"<!-- {held}: " + ", ".join(f"{n} {v:.3g}" for n, v in zip(names, w / max(np.abs(w).max(), 1e-9)))
              + " -->")
        held_out[held] = (w, res["fit"])
    for held in CHINESE_NOTES:
        if held in held_out and f"{held}~alone" in aside:
            w, ranks = held_out[held]
            qs = [q["question"] for q in notes.load_questions(held) if lexical.has_cjk(q["question"])]
            with_latin = ranks[[n for n, q in enumerate(qs) if mixed(q)]]
            chinese = first_ranks(fr.stack(aside[f"{held}~alone"]), w)
            print(f"\n{held}: the {len(with_latin)} mixed questions, held out: first {int((with_latin == 1).sum())}, "
                  f"MRR@10 {mrr(with_latin).mean():.3f}; their Chinese words alone: first {int((chinese == 1).sum())}, "
                  f"MRR@10 {mrr(chinese).mean():.3f}; the answer lower with its Latin words than without: "
                  f"{int(((with_latin == 0) & (chinese > 0) | (with_latin > chinese) & (chinese > 0)).sum())}")
    if args.dump:
        whole_corpus(args.dump, held_out)
    w = fit(list(groups.values()))
    w = w / max(float(np.abs(w).max()), 1e-9)
    print("\nWEIGHTS = {" + ", ".join(f'"{f}": {v:.4g}' for f, v in zip(names, w)) + "}")


def whole_corpus(dump: Path, held_out: dict) -> None:
    """Every question of each Chinese notes corpus, held out: a question with CJK text ranked by the CJK
    ranker fitted on the other corpora, an English one as the engine ranked it (`dump`: the English
    ranker, never fitted on these corpora)."""
    from memstrata.retrieval import lexical

    ranked = json.loads(dump.read_text())
    print("\n| corpus, every question held out | questions | hit@1 | hit@3 | hit@10 | MRR@10 |\n| --- | --- | --- | --- | --- | --- |")
    for name in CHINESE_NOTES:
        if name not in held_out or name not in ranked:
            continue
        qs = notes.load_questions(name)
        cjk = iter(held_out[name][1])
        firsts = []
        for q, paths in zip(qs, ranked[name]):
            if lexical.has_cjk(q["question"]):
                firsts.append(int(next(cjk)))
            else:
                firsts.append(next((r for r, p in enumerate(paths[:10], 1) if p in q["notes"]), 0))
        f = np.array(firsts)
        print(f"| {name} | {len(f)} | {(f == 1).mean():.3f} | {((f > 0) & (f <= 3)).mean():.3f} | {(f > 0).mean():.3f} "
              f"| {mrr(f).mean():.3f} |")


if __name__ == "__main__":
    main()
