"""Fit the relevance model and the cut-off (scoring/relevance.py, recall_min_relevance) leave-one-corpus-out.

    python bench/cutoff_data.py --out DATA ...     # the hits' signals of every query (see there)
    python bench/fit_relevance.py DATA [--apply]
    python bench/fit_relevance.py DATA --sweep      # the default model at a range of cut-offs

Corpora: LoCoMo (five conversations, one corpus), the notes corpora til, rustbook and vuezh
(bench/notes_corpora.py), Chinese passages (CMRC trial set) and tiny trees (five entries). For
each corpus held out: a logistic regression over scoring.relevance.FEATURES is fitted on the
others (label 1: an answer among a question's first CUT_DEPTH hits; 0: the other hits, every hit
of an everyday prompt of bench/everyday.FIT and of an off-topic question; each corpus weighs the
same), the cut-off (min relevance, share of the best) is chosen on the others (the highest
min relevance that keeps an answer for >= TARGET of the answerable questions on every one of
them, then the most silence on their FIT prompts and off-topic questions), and both are measured
on the held-out corpus: answerable questions that keep an answer, everyday prompts silenced
(the FIT half and the HELD_OUT half, which nothing is fitted or chosen on; a prompt is silent
when retrieval.prompts.is_everyday says it is everyday talk, as the hook asks, or no hit clears
the cut-off), off-topic
questions silenced. The model and cut-off fitted on all corpora are printed last.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

TARGET = 0.98
# The cut-off is chosen to keep an answer for this share on every training corpus: a margin over
# TARGET, since a corpus not seen differs from the ones the cut-off was chosen on.
CHOOSE_AT = 0.99
CUTS = [0.0, 0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2]
RELATIVE = [0.0, 0.02, 0.05, 0.1, 0.2]


def load(folder: Path) -> dict[str, list[dict]]:
    """{corpus: records}; an everyday prompt's kind is read from bench/everyday.py (FIT or HELD_OUT)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import everyday

    from memstrata import Memory
    from memstrata.retrieval.prompts import is_everyday

    embedder = Memory(folder).state.model()  # the bundled model, as the hook's has it

    corpora: dict[str, list[dict]] = {}
    for f in sorted(folder.glob("*.json")):
        for r in json.loads(f.read_text()):
            if r["kind"].startswith("everyday"):
                if r["query"] in everyday.FIT and not f.name.endswith(".held.json"):
                    r["kind"] = "everyday-fit"
                elif r["query"] in everyday.HELD_OUT:
                    r["kind"] = "everyday-held"
                else:
                    continue
            r["topic"] = not is_everyday(r["query"], embedder)
            name = "locomo" if r["corpus"].startswith("locomo") else r["corpus"]
            corpora.setdefault(name, []).append(r)
    return corpora


# The previous release's models and cut-off (LoCoMo only), measured side by side.
PREVIOUS = {"hybrid": {"bias": -4.14, "cosine": 0.584, "text": -7.155, "coverage": 8.936, "names": 0.879,
                       "no_names": -1.285, "agree": 0.668, "score": 0.108, "whole": 2.52, "unknown": -3.478,
                       "known": -1.681, "nameless": -4.638, "nameless_whole": 12.741},
            "text": {"bias": -3.266, "text": -5.331, "coverage": 9.186, "names": 0.602, "no_names": -1.539,
                     "score": -0.232, "unknown": -4.0, "known": -1.236, "nameless": -1.744}}
PREVIOUS_CUT = (0.02, 0.1)

VECTOR_ONLY = ("cosine", "agree", "whole", "nameless_whole")  # unknown when only words are compared


def mode_of(record) -> str:
    """The model search.py uses for a query: TEXT for a mostly CJK one (the bundled model is English)."""
    from memstrata.retrieval import lexical

    return "text" if lexical.cjk_share(record["query"]) >= 0.5 else "hybrid"


def features(hits, mode) -> np.ndarray:
    """The model's inputs of these hits: the signals (the vector ones 0 for TEXT) and the derived ones."""
    x = np.array([h[1:-1] for h in hits], dtype=float).reshape(-1, len(FEATURES))
    if mode == "text":
        x[:, [FEATURES.index(f) for f in VECTOR_ONLY]] = 0.0
    return np.hstack([x, np.array([[d(dict(zip(FEATURES, r))) for d in DERIVED.values()] for r in x]).reshape(len(x), -1)])


def rows(records, mode, kinds=("answer", "everyday-fit", "offtopic")):
    """TEXT learns from every query with its vector signals hidden (it also serves the text strategy);
    HYBRID from the queries it serves."""
    x, y = [], []
    for r in records:
        if r["kind"] in kinds and r["hits"] and (mode == "text" or mode_of(r) == "hybrid"):
            x.append(features(r["hits"], mode))
            y += [h[0] if r["kind"] == "answer" else 0 for h in r["hits"]]
    width = len(FEATURES) + len(DERIVED)
    return (np.vstack(x) if x else np.zeros((0, width))), np.array(y, dtype=float)


def fit(x, y, sw, l2=1e-2, iters=40):
    """Weighted logistic regression by Newton's method (bias first)."""
    x1 = np.hstack([np.ones((len(x), 1)), x])
    w = np.zeros(x1.shape[1])
    for _ in range(iters):
        p = 1 / (1 + np.exp(-np.clip(x1 @ w, -60, 60)))
        grad = x1.T @ (sw * (p - y)) + l2 * np.r_[0, w[1:]]
        hess = (x1 * (sw * p * (1 - p))[:, None]).T @ x1 + l2 * np.eye(len(w))
        w -= np.linalg.solve(hess, grad)
    return w


def fit_on(corpora: dict, names) -> dict:
    """{mode: weights}, each corpus weighing the same."""
    out = {}
    for mode in ("hybrid", "text"):
        xs, ys, ws = [], [], []
        for n in names:
            x, y = rows(corpora[n], mode)
            if len(y):
                xs.append(x), ys.append(y), ws.append(np.full(len(y), 1000.0 / len(y)))
        x, y, sw = np.vstack(xs), np.concatenate(ys), np.concatenate(ws)
        if mode == "text":  # the vector signals are never seen (all 0): their weights stay 0
            w = fit(x, y, sw)
            for f in VECTOR_ONLY:
                w[1 + FEATURES.index(f)] = 0.0
        else:  # CJK coverage is TEXT's business (HYBRID serves queries mostly not CJK)
            w = np.r_[fit(x[:, :len(FEATURES)], y, sw), np.zeros(len(DERIVED))]
        out[mode] = w
    return out


def relevances(w, record) -> list[float]:
    if not record["hits"]:
        return []
    mode = mode_of(record)
    x = features(record["hits"], mode)
    ww = w[mode]
    return (1 / (1 + np.exp(-np.clip(ww[0] + x @ ww[1:], -60, 60)))).tolist()


def model_dict(w) -> dict:
    names = list(FEATURES) + list(DERIVED)
    return {"bias": round(float(w[0]), 3), **{f: round(float(v), 3) for f, v in zip(names, w[1:])}}


def measure(w, records, cut, relative) -> dict:
    def kept(r):
        rel = relevances(w, r) if w is not None else [h[-1] for h in r["hits"]]
        return [r["hits"][i] for i in keep(rel, cut, relative)]

    had = [r for r in records if r["kind"] == "answer" and any(h[0] for h in r["hits"])]
    out = {"answerable": len(had), "answered": np.mean([any(h[0] for h in kept(r)) for r in had]) if had else 1.0}
    for kind in ("everyday-fit", "everyday-held", "offtopic"):
        rs = [r for r in records if r["kind"] == kind]
        out[kind] = np.mean([not r["topic"] or not kept(r) for r in rs]) if rs else 1.0
    return out


def choose(w, corpora, names, mode=None) -> tuple[float, float]:
    """The cut-off (min relevance, share of the best) for the queries of one model (`mode`)."""
    best, best_key = (CUTS[0], RELATIVE[0]), None
    parts = [[r for r in corpora[n] if mode is None or mode_of(r) == mode] for n in names]
    parts = [p for p in parts if any(r["kind"] == "answer" for r in p)]
    for cut in CUTS[1:]:
        for relative in RELATIVE:
            m = [measure(w, p, cut, relative) for p in parts]
            worst = min(x["answered"] for x in m)
            silence = np.mean([x["everyday-fit"] for x in m]) + np.mean([x["offtopic"] for x in m])
            key = (worst >= CHOOSE_AT, silence if worst >= CHOOSE_AT else worst, cut, relative)
            if best_key is None or key > best_key:
                best, best_key = (cut, relative), key
    return best


def fit_and_choose(corpora, names) -> tuple[dict, float, float]:
    """Both models fitted on `names`, and one cut-off: each model's is chosen on its own queries,
    and TEXT's bias is shifted so that its chosen cut-off falls on HYBRID's (one setting serves both)."""
    w = fit_on(corpora, names)
    cut, relative = choose(w, corpora, names, "hybrid")
    cut_text, _ = choose(w, corpora, names, "text")
    w["text"][0] += np.log(cut / (1 - cut)) - np.log(cut_text / (1 - cut_text))
    return w, cut, relative


def row(name, m, cut, relative) -> str:
    return (f"| {name} | {m['answerable']} | {m['answered']:.3f} | {m['everyday-fit']:.3f} | "
            f"{m['everyday-held']:.3f} | {m['offtopic']:.3f} | {cut:g} / {relative:g} |")


HEADER = ("| held-out corpus | answerable questions | answer kept | everyday (fit half) silenced | "
          "everyday (held-out half) silenced | off-topic silenced | cut-off / share of best |\n"
          "| --- | --- | --- | --- | --- | --- | --- |")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in ("-h", "--help"):
        print(__doc__)
        return
    corpora = load(Path(argv[0]))
    if "--sweep" in argv[1:]:
        return sweep(corpora)
    names = list(corpora)
    from memstrata.scoring import relevance as rel
    from memstrata.storage.config import Settings

    def as_weights(models):
        return {m: np.array([d.get("bias", 0.0)] + [d.get(f, 0.0) for f in list(FEATURES) + list(DERIVED)])
                for m, d in models.items()}

    s = Settings()
    today = as_weights({"hybrid": rel.HYBRID, "text": rel.TEXT})
    drift = max((abs(a - h[-1]) for c in corpora.values() for r in c for a, h in zip(relevances(today, r), r["hits"])),
                default=0.0)
    print(f"(scoring.relevance's models on the stored signals: largest difference from the stored relevance "
          f"{drift:.4f}; 0 when the data was collected with them)\n")
    for title, w, (cut, relative) in (("The previous release's model and cut-off", as_weights(PREVIOUS), PREVIOUS_CUT),
                                      ("scoring.relevance's model and the default cut-off", today,
                                       (s.recall_min_relevance, s.recall_relative_relevance))):
        print(f"### {title} (everyday prompts: is_everyday as the hook asks)\n\n" + HEADER)
        for n in names:
            print(row(n, measure(w, corpora[n], cut, relative), cut, relative))
        print()
    print("### Leave one corpus out (model and cut-off fitted on the others)\n\n" + HEADER)
    for held in names:
        rest = [n for n in names if n != held]
        w, cut, relative = fit_and_choose(corpora, rest)
        print(row(held, measure(w, corpora[held], cut, relative), cut, relative))
    w, cut, relative = fit_and_choose(corpora, names)
    print("\n### Fitted on all corpora\n\n" + HEADER)
    for n in names:
        print(row(n, measure(w, corpora[n], cut, relative), cut, relative))
    print(f"\nHYBRID = {model_dict(w['hybrid'])}\nTEXT = {model_dict(w['text'])}\n"
          f"recall_min_relevance = {cut}, recall_relative_relevance = {relative}")


def sweep(corpora) -> None:
    """scoring.relevance's models at a range of cut-offs: answer kept / off-topic / everyday held-out silenced."""
    from memstrata.scoring import relevance as rel

    w = {m: np.array([d.get("bias", 0.0)] + [d.get(f, 0.0) for f in list(FEATURES) + list(DERIVED)])
         for m, d in {"hybrid": rel.HYBRID, "text": rel.TEXT}.items()}
    print("| min / share of best | " + " | ".join(corpora) + " |\n|" + " --- |" * (len(corpora) + 1))
    for cut, share in ((0.003, 0.02), (0.005, 0.02), (0.0075, 0.02), (0.0075, 0.05), (0.0075, 0.1), (0.01, 0.02),
                       (0.02, 0.02)):
        cells = [measure(w, records, cut, share) for records in corpora.values()]
        print(f"| {cut:g} / {share:g} | " + " | ".join(
            f"{m['answered']:.3f} / {m['offtopic']:.2f} / {m['everyday-held']:.2f}" for m in cells) + " |")


from memstrata.scoring.relevance import DERIVED, FEATURES, keep  # noqa: E402

if __name__ == "__main__":
    main()
