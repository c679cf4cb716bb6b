"""Fit the relevance model and the cut-off (scoring/relevance.py, recall_min_relevance) leave-one-corpus-out.

    python bench/cutoff_data.py --out DATA ...     # the hits' signals of every query (see there)
    python bench/fit_relevance.py DATA
    python bench/fit_relevance.py DATA --sweep      # the default model at a range of cut-offs

Corpora: LoCoMo (five conversations, one corpus), the notes corpora til, rustbook, vuezh (and
vault and zettel when collected; bench/notes_corpora.py), Chinese passages (CMRC trial set) and tiny trees
(five entries). For each corpus held out, on the others: two logistic regressions (HYBRID, TEXT;
what each reads: USES) over scoring.relevance's signals (label 1: an answer among a question's
first CUT_DEPTH hits; 0: the other hits, every hit of an everyday prompt of bench/everyday.FIT and
of an off-topic question; each corpus weighs the same), each calibrated on the questions' hits
alone (list_features), and one cut-off (min relevance for the best hit, share of the best for the
others: scoring.relevance.keep; the most silence on FIT
prompts and off-topic questions while every one of them keeps an answer for CHOOSE_AT of its
answerable questions); then measured on the held-out corpus: answerable questions that keep an
answer, everyday prompts silenced (FIT and HELD_OUT; a prompt is silent when
retrieval.prompts.is_everyday says it is everyday talk, as the hook asks, or no hit clears the
cut-off), off-topic questions silenced, and the reliability of the relevance (predicted against
observed share, pooled over the held-out corpora). The models and cut-off fitted on all corpora
are printed last, in scoring.relevance's form.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from memstrata.scoring.relevance import DERIVED, FEATURES, keep

TARGET = 0.98
# The cut-off is chosen to keep an answer for this share on every training corpus: a margin over
# TARGET, since a corpus not seen differs from the ones the cut-off was chosen on.
CHOOSE_AT = 0.99
CUTS = [0.0, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.04, 0.05, 0.06, 0.075, 0.1, 0.125, 0.15, 0.2, 0.25, 0.3]
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
# What each model reads (issue 24, held out): `whole` (the cosine to the mean of a note's chunk
# vectors) shrinks on long notes, so a docs vault's answers looked weak to a model fitted on short
# entries: HYBRID reads the best chunk's cosine instead (nameless_cosine). TEXT leaves out `known`
# and `cjk_cover`: a Chinese query with English words (Vue docs: "prop", "key") is fully `known`,
# and it looked like an English query judged on words alone.
COLUMNS = list(FEATURES) + list(DERIVED)
CJK_ONLY = ("cjk_joint", "cjk_local", "cjk_phrase", "cjk_title", "cjk_mass", "cjk_cos", "cjk_qmass", "cjk_tmass",
            "cjk_jmass")
# CJK (issue 40): queries with CJK text, judged on what reads Chinese (retrieval.cjk_rank) beside TEXT's signals
USES = {"hybrid": [f for f in FEATURES if f not in ("whole", "nameless_whole") + CJK_ONLY] + ["nameless_cosine"],
        "text": [f for f in FEATURES if f not in VECTOR_ONLY + ("known", "nameless") + CJK_ONLY],
        "cjk": [f for f in COLUMNS if f not in VECTOR_ONLY + ("known", "nameless", "cjk_cover", "nameless_cosine")]}
MODES = ("hybrid", "text", "cjk")


def mode_of(record) -> str:
    """The model search.py uses for a query: CJK for one with CJK text (the bundled model is English)."""
    from memstrata.retrieval import lexical

    return "cjk" if lexical.has_cjk(record["query"]) else "hybrid"


def features(hits, mode) -> np.ndarray:
    """The model's inputs of these hits (COLUMNS): the signals and the derived ones, 0 where `mode` reads none."""
    x = np.array([h[1:-1] for h in hits], dtype=float).reshape(-1, len(FEATURES))
    x = np.hstack([x, np.array([[d(dict(zip(FEATURES, r))) for d in DERIVED.values()] for r in x]).reshape(len(x), -1)])
    x[:, [i for i, c in enumerate(COLUMNS) if c not in USES[mode]]] = 0.0
    return x


def rows(records, mode, kinds=("answer", "everyday-fit", "offtopic")):
    """TEXT learns from every query with its vector signals hidden (it also serves the text strategy);
    HYBRID and CJK from the queries they serve."""
    x, y = [], []
    for r in records:
        if r["kind"] in kinds and r["hits"] and (mode == "text" or mode_of(r) == mode):
            x.append(features(r["hits"], mode))
            y += [h[0] if r["kind"] == "answer" else 0 for h in r["hits"]]
    return (np.vstack(x) if x else np.zeros((0, len(COLUMNS)))), np.array(y, dtype=float)


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


def stacked(corpora, names, mode, kinds):
    xs, ys, ws = [], [], []
    for n in names:
        x, y = rows(corpora[n], mode, kinds)
        if len(y):
            xs.append(x), ys.append(y), ws.append(np.full(len(y), 1000.0 / len(y)))
    return np.vstack(xs), np.concatenate(ys), np.concatenate(ws)


def list_features(z) -> np.ndarray:
    """The calibration's inputs for one query's hits in rank order, from their logits `z`
    (scoring.relevance.relevances): the logit, and for the top hit its margin over the second.
    Also tried: a mark on the top hit and each hit's lead over the best; they calibrate top hits
    better but lift every top hit alike, an off-topic question's too (held out, LoCoMo's off-topic
    questions silenced 0.20 instead of 0.79 at the cut-off that keeps 98% of answers)."""
    z = np.asarray(z, dtype=float)
    gap = z[0] - z[1] if len(z) > 1 else 0.0
    return np.column_stack([z, (np.arange(len(z)) == 0) * gap])


def fit_on(corpora: dict, names) -> dict:
    """{mode: (logit weights, calibration weights)}, each corpus weighing the same. The logit
    separates answers from every hit of everyday and off-topic prompts; the calibration, fitted on
    the questions' hits alone (answerable and off-topic), turns it into the share of such hits that
    answer, reading the hit's place in its list too (a top hit far ahead of the second answers far
    more often than a fifth hit with the same signals)."""
    out = {}
    for mode in MODES:
        x, y, sw = stacked(corpora, names, mode, ("answer", "everyday-fit", "offtopic"))
        used = [i for i, c in enumerate(COLUMNS) if c in USES[mode]]
        w = np.zeros(len(COLUMNS) + 1)
        ww = fit(x[:, used], y, sw)
        w[0], w[1 + np.array(used)] = ww[0], ww[1:]
        xs, ys, ws = [], [], []
        for n in names:
            f, lab = [], []
            for r in corpora[n]:
                if r["kind"] in ("answer", "offtopic") and r["hits"] and (mode == "text" or mode_of(r) == mode):
                    f.append(list_features(w[0] + features(r["hits"], mode) @ w[1:]))
                    lab += [h[0] if r["kind"] == "answer" else 0 for h in r["hits"]]
            if lab:
                xs.append(np.vstack(f)), ys.append(np.array(lab, float)), ws.append(np.full(len(lab), 1000.0 / len(lab)))
        out[mode] = (w, fit(np.vstack(xs), np.concatenate(ys), np.concatenate(ws), l2=1e-4))
    return out


def relevances(w, record) -> list[float]:
    """What scoring.relevance gives this record's hits under the models `w` ({mode: (logit, calibration)};
    a bare array: a model of the old form, its logistic probability)."""
    if not record["hits"]:
        return []
    x = np.array([h[1:-1] for h in record["hits"]], dtype=float).reshape(-1, len(FEATURES))
    x = np.hstack([x, np.array([[d(dict(zip(FEATURES, r))) for d in DERIVED.values()] for r in x]).reshape(len(x), -1)])
    ww = w.get(mode_of(record), w["text"])  # a model of the old form has no CJK: TEXT served those
    if isinstance(ww, tuple):
        z = ww[0][0] + x @ ww[0][1:]
        z = ww[1][0] + list_features(z) @ ww[1][1:]
    else:
        z = ww[0] + x @ ww[1:]
    return (1 / (1 + np.exp(-np.clip(z, -60, 60)))).tolist()


def calib_dict(c) -> dict:
    return dict(zip(("bias", "logit", "gap"), (round(float(v), 3) for v in c)))


def model_dict(w) -> dict:
    return {"bias": round(float(w[0]), 3), **{f: round(float(v), 3) for f, v in zip(COLUMNS, w[1:]) if v}}


def scored(w, records) -> list[tuple[dict, list[float]]]:
    """The records with their hits' relevance (w None: the relevance stored with the data)."""
    return [(r, relevances(w, r) if w is not None else [h[-1] for h in r["hits"]]) for r in records]


def measure(w, records, cut, relative, pairs=None) -> dict:
    """Answerable questions that keep an answer; everyday prompts and off-topic questions silenced."""
    pairs = scored(w, records) if pairs is None else pairs

    def kept(r, rel):
        return [r["hits"][i] for i in keep(rel, cut, relative)]

    had = [(r, rel) for r, rel in pairs if r["kind"] == "answer" and any(h[0] for h in r["hits"])]
    out = {"answerable": len(had),
           "answered": np.mean([any(h[0] for h in kept(r, rel)) for r, rel in had]) if had else 1.0}
    for kind in ("everyday-fit", "everyday-held", "offtopic", "offtopic-held"):
        rs = [(r, rel) for r, rel in pairs if r["kind"] == kind]
        out[kind] = np.mean([not r["topic"] or not kept(r, rel) for r, rel in rs]) if rs else 1.0
    return out


def choose(w, corpora, names) -> tuple[float, float]:
    """The cut-off (min relevance, share of the best): the most silence on everyday (FIT) and
    off-topic prompts while every corpus of `names` keeps an answer for CHOOSE_AT of its questions."""
    best, best_key = (CUTS[0], RELATIVE[0]), None
    parts = [scored(w, corpora[n]) for n in names]
    for cut in CUTS[1:]:
        for relative in RELATIVE:
            m = [measure(w, None, cut, relative, p) for p in parts]
            worst = min(x["answered"] for x in m)
            silence = np.mean([x["everyday-fit"] for x in m]) + np.mean([x["offtopic"] for x in m])
            key = (worst >= CHOOSE_AT, silence if worst >= CHOOSE_AT else worst, cut, relative)
            if best_key is None or key > best_key:
                best, best_key = (cut, relative), key
    return best


def fit_and_choose(corpora, names) -> tuple[dict, float, float]:
    """Both models fitted and calibrated on `names`, and one cut-off for both (their relevance is
    on one scale: the share of hits that answer)."""
    w = fit_on(corpora, names)
    cut, relative = choose(w, corpora, names)
    return w, cut, relative


BINS = (0.0, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9, 1.0001)


def reliability(pairs) -> str:
    """Predicted relevance in bins against the observed share of hits that answer (questions' hits:
    answerable and off-topic), and the same for each question's top hit."""
    out = ["| relevance shown | hits | mean shown | share that answer | top hits | mean shown | share that answer |",
           "| --- | --- | --- | --- | --- | --- | --- |"]
    all_, top = [], []
    for r, rel in pairs:
        if r["kind"] in ("answer", "offtopic") and r["hits"] and (r["kind"] == "offtopic" or any(h[0] for h in r["hits"])):
            labels = [h[0] if r["kind"] == "answer" else 0 for h in r["hits"]]
            all_ += list(zip(rel, labels))
            top.append((rel[0], labels[0]))
    for lo, hi in zip(BINS, BINS[1:]):
        cells = []
        for data in (all_, top):
            b = [(p, y) for p, y in data if lo <= p < hi]
            cells.append(f"{len(b)} | {np.mean([p for p, _ in b]):.3f} | {np.mean([y for _, y in b]):.3f}" if b else "0 | - | -")
        out.append(f"| {lo:g}-{min(hi, 1):g} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def row(name, m, cut, relative) -> str:
    return (f"| {name} | {m['answerable']} | {m['answered']:.3f} | {m['everyday-fit']:.3f} | "
            f"{m['everyday-held']:.3f} | {m['offtopic']:.3f} | {m['offtopic-held']:.3f} | {cut:g} / {relative:g} |")


HEADER = ("| held-out corpus | answerable questions | answer kept | everyday (fit half) silenced | "
          "everyday (held-out half) silenced | off-topic silenced | off-topic (never fitted) silenced | "
          "cut-off / share of best |\n| --- | --- | --- | --- | --- | --- | --- | --- |")


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

    s = Settings()
    today = as_weights({"hybrid": rel.HYBRID, "text": rel.TEXT, "cjk": rel.CJK})
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
    pooled = []
    for held in names:
        rest = [n for n in names if n != held]
        w, cut, relative = fit_and_choose(corpora, rest)
        pooled += scored(w, corpora[held])
        print(row(held, measure(w, corpora[held], cut, relative), cut, relative), flush=True)
    print("\n### Reliability held out (each corpus scored by the models fitted and calibrated on the others)\n\n"
          + reliability(pooled))
    w, cut, relative = fit_and_choose(corpora, names)
    print("\n### Fitted on all corpora\n\n" + HEADER)
    for n in names:
        print(row(n, measure(w, corpora[n], cut, relative), cut, relative))
    print("\n### Reliability in sample\n\n" + reliability([p for n in names for p in scored(w, corpora[n])]))
    for mode in MODES:
        print(f"\n{mode.upper()} = {model_dict(w[mode][0])}, calibration {calib_dict(w[mode][1])}")
    print(f"recall_min_relevance = {cut}, recall_relative_relevance = {relative}")


def as_weights(models) -> dict:
    """scoring.relevance's model dicts as arrays: (logit, calibration) when calibrated."""
    out = {}
    for m, d in models.items():
        w = np.array([d.get("bias", 0.0)] + [d.get(f, 0.0) for f in COLUMNS])
        c = d.get("calibration")
        out[m] = (w, np.array([c["bias"], c["logit"], c["gap"]])) if c else w
    return out


SWEEP = ((0.003, 0.02), (0.005, 0.02), (0.005, 0.05), (0.0075, 0.02), (0.01, 0.02), (0.02, 0.02), (0.05, 0.05),
         (0.1, 0.1))


def sweep(corpora) -> None:
    """scoring.relevance's models at a range of cut-offs: answer kept / off-topic / everyday held-out silenced."""
    from memstrata.scoring import relevance as rel

    w = as_weights({"hybrid": rel.HYBRID, "text": rel.TEXT, "cjk": rel.CJK})
    print("| min / share of best | " + " | ".join(corpora) + " |\n|" + " --- |" * (len(corpora) + 1))
    for cut, share in SWEEP:
        cells = [measure(w, records, cut, share) for records in corpora.values()]
        print(f"| {cut:g} / {share:g} | " + " | ".join(
            f"{m['answered']:.3f} / {m['offtopic']:.2f} / {m['everyday-held']:.2f}" for m in cells) + " |")


if __name__ == "__main__":
    main()
