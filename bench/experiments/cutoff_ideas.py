"""Ideas for the relevance cut-off tried on the Obsidian vault's misses (issue 24; docs/recall.md: the tail rule kept).

    python bench/cutoff_data.py --out DATA ...            # every corpus's hits, the vault included
    python bench/experiments/cutoff_ideas.py DATA loo      # leave one corpus out: before, now, now + cos_lead
    python bench/experiments/cutoff_ideas.py DATA tail     # scoring.relevance's model, the tail floor

`loo`: bench/fit_relevance.py's procedure (models, calibration and cut-off fitted on the other
corpora), each corpus held out: with the cut-off on every hit (before: TAIL 1), on the best hit
(now: scoring.relevance.keep), and now with `cos_lead` added to HYBRID: the hit's cosine over the
mean cosine of the query's first CUT_DEPTH hits (a per-query normalisation of a tree's cosine
scale; not kept). `tail`: scoring.relevance's models at the cut-off 0.0075 / 0.02: a query is
answered when its best hit clears the cut-off (so silence does not move), and its hits are kept
down to max(TAIL x the cut-off, 0.02 x the best); TAIL 1 is the rule before, 0 the rule now.
Each cell: answers kept / wrong hits kept per answered question (what the extra answers cost).
The first load embeds every query (fit_relevance.load's is_everyday); DATA/ideas.pkl keeps it.
"""
from __future__ import annotations

import pickle
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import fit_relevance as fr  # noqa: E402

from memstrata.scoring import relevance as rel  # noqa: E402

TAILS = (1.0, 0.75, 0.6, 0.5, 0.45, 0.4, 0.3, 0.2, 0.0)


def corpora_of(data: Path) -> dict:
    cache = data / "ideas.pkl"
    if cache.exists() and cache.stat().st_mtime > max(f.stat().st_mtime for f in data.glob("*.json")):
        return pickle.loads(cache.read_bytes())
    corpora = fr.load(data)
    cache.write_bytes(pickle.dumps(corpora))
    return corpora


def with_cos_lead():
    """fit_relevance's inputs with cos_lead as one more column HYBRID reads."""
    cols = fr.COLUMNS + ["cos_lead"]
    ci = fr.FEATURES.index("cosine")

    def matrix(hits):
        x = np.array([h[1:-1] for h in hits], dtype=float).reshape(-1, len(fr.FEATURES))
        x = np.hstack([x, np.array([[d(dict(zip(fr.FEATURES, r))) for d in fr.DERIVED.values()] for r in x])
                       .reshape(len(x), -1)])
        return np.hstack([x, (x[:, ci] - x[:rel.CUT_DEPTH, ci].mean())[:, None]])

    def features(hits, mode):
        x = matrix(hits)
        x[:, [i for i, c in enumerate(cols) if c not in fr.USES[mode]]] = 0.0
        return x

    def relevances(w, record):
        if not record["hits"]:
            return []
        (lw, cw) = w[fr.mode_of(record)]
        z = cw[0] + fr.list_features(lw[0] + matrix(record["hits"]) @ lw[1:]) @ cw[1:]
        return (1 / (1 + np.exp(-np.clip(z, -60, 60)))).tolist()

    fr.COLUMNS, fr.features, fr.relevances = cols, features, relevances
    fr.USES["hybrid"] = fr.USES["hybrid"] + ["cos_lead"]


def tail_keep(tail: float):
    """relevance.keep with a hysteresis: nothing unless the best clears the cut-off, then down to tail x it."""
    def keep(relevances, min_relevance, relative=0.0, k=None):
        best = max(relevances[:rel.CUT_DEPTH], default=0.0)
        if min_relevance > 0 and best < min_relevance:
            return []
        floor = max(tail * min_relevance, relative * best)
        return [i for i, r in enumerate(relevances) if r >= floor][:k]
    return keep


def wrong_per_answered(pairs, cut, relative) -> float:
    """Wrong hits kept per answerable question that keeps any hit."""
    kept = [[r["hits"][i][0] for i in fr.keep(p, cut, relative)] for r, p in pairs if r["kind"] == "answer"]
    kept = [k for k in kept if k]
    return sum(len(k) - sum(k) for k in kept) / max(len(kept), 1)


def loo(corpora) -> None:
    names = list(corpora)
    for title, keep, lead in (("cut-off on every hit (before)", tail_keep(1.0), False),
                              ("cut-off on the best hit (now)", rel.keep, False),
                              ("now, HYBRID + cos_lead", rel.keep, True)):
        fr.keep = keep
        if lead:
            with_cos_lead()
        print(f"\n{title}, held out: answerable / answers kept / off-topic silenced / everyday silenced / "
              "wrong hits per answered question / cut-off chosen on the others")
        for held in names:
            w, cut, relative = fr.fit_and_choose(corpora, [n for n in names if n != held])
            m = fr.measure(w, corpora[held], cut, relative)
            print(f"| {held} | {m['answerable']} | {m['answered']:.3f} | {m['offtopic']:.2f} | "
                  f"{min(m['everyday-fit'], m['everyday-held']):.2f} | "
                  f"{wrong_per_answered(fr.scored(w, corpora[held]), cut, relative):.2f} | {cut:g} / {relative:g} |",
                  flush=True)
    fr.keep = rel.keep


def tail(corpora) -> None:
    w = fr.as_weights({"hybrid": rel.HYBRID, "text": rel.TEXT})
    pairs = {n: fr.scored(w, c) for n, c in corpora.items()}
    print("| tail x cut-off | " + " | ".join(corpora) + " |\n|" + " --- |" * (len(corpora) + 1))
    for t in TAILS:
        fr.keep = tail_keep(t)
        cells = [f"{fr.measure(w, None, 0.0075, 0.02, p)['answered']:.3f} / {wrong_per_answered(p, 0.0075, 0.02):.2f}"
                 for p in pairs.values()]
        print(f"| {t:g} | " + " | ".join(cells) + " |", flush=True)
    fr.keep = rel.keep


if __name__ == "__main__":
    corpora = corpora_of(Path(sys.argv[1]))
    for idea in sys.argv[2:]:
        {"loo": loo, "tail": tail}[idea](corpora)
