"""Fit the calibrated relevance model (scoring/relevance.py) on the LoCoMo dev trees; prints LOCO figures.

    python bench/fit_relevance.py --reuse DIR    # DIR: the trees bench/locomo.py --reuse DIR built

Examples: the top 10 hits of every question asked of its own conversation's tree (label 1
for an annotated evidence turn, else 0), of the next conversation's tree and of the everyday
queries below asked of every tree (all 0: those turns cannot answer them). The everyday
queries here are not those bench/abstention.py measures with (that slice stays held out).
Every fold's training set also holds bench/paraphrases.py: notes asked for in other words and
with no name (LoCoMo questions always share words and a name with their evidence), so a
plain paraphrase is not taken for an off-topic query. A logistic regression over the absolute signals of
scoring.relevance.FEATURES; for each conversation it is fitted on the other four and its
calibration measured on it (log loss, Brier score, mean predicted vs observed rate).
The coefficients fitted on all five are printed last, for HYBRID and TEXT.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

import locomo  # noqa: E402


TRAIN_EVERYDAY = """How do I renew my passport?
What's a good name for a golden retriever puppy?
How many cups are in a litre?
Which train goes to the airport?
What does a mortgage broker do?
How do I back up my phone?
What's the healthiest breakfast cereal?
Why is the sky blue?
How do I get rid of fruit flies in the kitchen?
When does daylight saving time end?
What is the longest river in South America?
How do I write a cover letter?
Is it safe to eat raw cookie dough?
How do you play sudoku?
What's the best way to learn the guitar as an adult?
How do vaccines work?
Where is the nearest pharmacy open late?
What's the plot of Hamlet?
How do I defrost a freezer quickly?
What is inflation?
Suggest a board game for six people
How much should I tip a taxi driver in the US?
What's the difference between baking soda and baking powder?
How do I set up a VPN on my laptop?
What is the chemical symbol for gold?
How long can cooked rice stay in the fridge?
Who invented the telephone?
What are some easy houseplants for low light?
How do I get a stain out of a white shirt?
What's a good workout for beginners at the gym?
How do solar panels produce electricity?
Which vitamins are in spinach?
What is the time difference between Sydney and Berlin?
How do I sharpen a kitchen knife?
What's the best podcast app for Android?
How do I jump start a car battery?
What does GDPR stand for?
How do I make cold brew coffee at home?
What are the planets in order from the sun?
How can I improve my credit score?
good night
yes please
cool, thanks
What's on TV tonight?
How do I knit a scarf?
Which airlines fly direct to Singapore?
How do I calm down before a job interview?
What is the square root of 144?
How do I descale a kettle?
Tell me a joke
What is a black hole?
How do I register to vote?
Best hiking trails near Denver
How do I cancel a gym membership?
What is the difference between weather and climate?
How do I make homemade pizza dough?
What's the minimum wage in California?
How do bees make honey?
How do I format a USB drive?
What should I pack for a beach holiday?""".splitlines()


def examples(m, questions, own: bool, strategy: str = "auto"):
    from memstrata.scoring.relevance import FEATURES

    rows, labels = [], []
    for q in questions:
        res = m.recall(q["query"], k=10, explain=True, min_relevance=0, strategy=strategy, count_access=False)
        for hit in res.results:
            sig = hit.signals["relevance_signals"]
            rows.append([float(sig.get(f) or 0.0) for f in FEATURES])
            labels.append(1.0 if own and hit.id in q["evidence"] else 0.0)
    return np.array(rows), np.array(labels)


def fit(x, y, l2=1e-2, iters=50):
    """Logistic regression by Newton's method (bias first)."""
    x1 = np.hstack([np.ones((len(x), 1)), x])
    w = np.zeros(x1.shape[1])
    for _ in range(iters):
        p = 1 / (1 + np.exp(-x1 @ w))
        grad = x1.T @ (p - y) + l2 * np.r_[0, w[1:]]
        hess = (x1 * (p * (1 - p))[:, None]).T @ x1 + l2 * np.eye(len(w))
        w -= np.linalg.solve(hess, grad)
    return w


def predict(w, x):
    return 1 / (1 + np.exp(-(w[0] + x @ w[1:])))


def paraphrase_examples(folder: Path) -> dict:
    """{mode: (rows, labels)} of bench/paraphrases.py asked of a tree of its notes."""
    from memstrata import Memory
    from paraphrases import PAIRS

    m = Memory(folder / "paraphrases")
    m.init()
    ids = [m.write(note, title=note.split(";")[0].split(",")[0][:60], category="notes") for note, _ in PAIRS]
    ids = [getattr(i, "id", i) for i in ids]
    questions = [{"query": q, "evidence": {i}} for (_, q), i in zip(PAIRS, ids)]
    return {mode: examples(m, questions, True, strategy) for mode, strategy in (("hybrid", "auto"), ("text", "text"))}


def main(argv=None):
    import tempfile

    from memstrata import Memory
    from memstrata.scoring.relevance import FEATURES
    from paraphrases import PAIRS

    reuse, convs = locomo.questions_of_built_trees(__doc__, argv)
    names = list(convs)
    data = {"hybrid": {}, "text": {}}
    with tempfile.TemporaryDirectory(prefix="paraphrases-") as tmp:
        extra = paraphrase_examples(Path(tmp))
    sys.stderr.write(f"paraphrases: the asked-for note is in the top 10 of {int(extra['hybrid'][1].sum())} "
                     f"of {len(PAIRS)} queries\n")
    for i, name in enumerate(names):
        m = Memory(reuse / f"conv{name}")
        other = convs[names[(i + 1) % len(names)]] + [{"query": q, "evidence": set()} for q in TRAIN_EVERYDAY]
        for mode, strategy in (("hybrid", "auto"), ("text", "text")):
            xo, yo = examples(m, convs[name], True, strategy)
            xf, yf = examples(m, other, False, strategy)
            data[mode][name] = (np.vstack([xo, xf]), np.r_[yo, yf])
        sys.stderr.write(f"examples of conversation {name}\n")
    for mode, folds in data.items():
        vector_only = ("cosine", "agree", "whole", "nameless_whole")  # unknown when only words are compared
        cols = [FEATURES.index(f) for f in FEATURES if mode == "hybrid" or f not in vector_only]
        print(f"\n### {mode}: leave one conversation out\n")
        print("| held-out | hits | relevant share | mean predicted | log loss | Brier |")
        print("| --- | --- | --- | --- | --- | --- |")
        for name in folds:
            x = np.vstack([folds[o][0] for o in folds if o != name] + [extra[mode][0]])[:, cols]
            y = np.concatenate([folds[o][1] for o in folds if o != name] + [extra[mode][1]])
            w = fit(x, y)
            xt, yt = folds[name][0][:, cols], folds[name][1]
            p = np.clip(predict(w, xt), 1e-6, 1 - 1e-6)
            ll = -np.mean(yt * np.log(p) + (1 - yt) * np.log(1 - p))
            brier = np.mean((p - yt) ** 2)
            print(f"| {name} | {len(yt)} | {yt.mean():.3f} | {p.mean():.3f} | {ll:.3f} | {brier:.3f} |")
        x = np.vstack([f[0] for f in folds.values()] + [extra[mode][0]])[:, cols]
        y = np.concatenate([f[1] for f in folds.values()] + [extra[mode][1]])
        w = fit(x, y)
        coef = {"bias": round(float(w[0]), 3)}
        coef.update({f: 0.0 for f in FEATURES})
        coef.update({FEATURES[c]: round(float(v), 3) for c, v in zip(cols, w[1:])})
        print(f"\n{mode.upper()} = {coef}")


if __name__ == "__main__":
    main()
