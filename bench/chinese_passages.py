"""Chinese passage retrieval: memstrata against BM25 over character bigrams, on CMRC 2018 passages.

    python bench/chinese_passages.py --data cmrc2018_trial.json --dir /tmp/zh [--reuse]
    python bench/chinese_passages.py --data DRCD_dev.json --data DRCD_test.json --sample 850 \
        --questions 300 --seed 1 --dir /tmp/zh-s1       # a sample shaped like the held-out set

The data is the SQuAD-style file of CMRC 2018 (public repository ymcui/cmrc2018,
squad-style-data/; Chinese Wikipedia passages with questions written about them; CC BY-SA 4.0,
keep it out of this repository). Each passage is one entry (title: its article's title); each
question is asked of the whole tree and its own passage is the answer. Reports hit@1, hit@5 and
MRR@10 of the ranking (no cut-off), the share of questions whose answer clears the default
cut-off, and the same ranking figures for BM25 (k1 1.2, b 0.75) over the character bigrams of
the title and passage (Latin words and numbers as words).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import sys
from collections import Counter
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_LATIN = re.compile(r"[a-z0-9]+")


def load(paths: list[Path], limit: int | None, seed: int, sample: int = 0):
    """Passages and questions of the SQuAD-style files; with `sample`, that many passages drawn
    at random (seeded) and only their questions; questions shuffled (seeded), the first `limit` kept."""
    paras = [(article, para) for path in paths for article in json.loads(path.read_text())["data"]
             for para in article["paragraphs"]]
    if sample and sample < len(paras):
        keep = sorted(random.Random(seed).sample(range(len(paras)), sample))
        paras = [paras[i] for i in keep]
    passages, questions = [], []
    for article, para in paras:
        pid = f"p{len(passages):04d}"
        passages.append({"id": pid, "title": article.get("title") or para["context"][:12],
                         "body": para["context"]})
        for qa in para["qas"]:
            if qa["question"].strip():
                questions.append({"query": qa["question"], "answer": pid})
    random.Random(seed).shuffle(questions)
    return passages, questions[:limit] if limit else questions


def tokens(text: str) -> list[str]:
    out = []
    for run in _CJK.findall(text):
        out.extend([run] if len(run) == 1 else (run[i:i + 2] for i in range(len(run) - 1)))
    out.extend(_LATIN.findall(text.lower()))
    return out


def bm25_rankings(passages, questions, k1=1.2, b=0.75, k=10):
    docs = [Counter(tokens(p["title"] + "\n" + p["body"])) for p in passages]
    lengths = [sum(d.values()) for d in docs]
    avg = sum(lengths) / len(lengths)
    df = Counter(t for d in docs for t in d)
    n = len(docs)
    out = []
    for q in questions:
        scores = []
        terms = set(tokens(q["query"]))
        for i, d in enumerate(docs):
            s = 0.0
            for t in terms:
                f = d.get(t)
                if f:
                    idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
                    s += idf * f * (k1 + 1) / (f + k1 * (1 - b + b * lengths[i] / avg))
            if s > 0:
                scores.append((-s, i))
        out.append([passages[i]["id"] for _, i in sorted(scores)[:k]])
    return out


def ranks(rankings, questions, k=10) -> list[int | None]:
    return [next((r for r, i in enumerate(ids[:k], 1) if i == q["answer"]), None)
            for ids, q in zip(rankings, questions)]


def figures(rankings, questions, k=10):
    got = ranks(rankings, questions, k)
    n = max(len(got), 1)
    return (sum(r == 1 for r in got) / n, sum(r is not None and r <= 5 for r in got) / n,
            sum(1.0 / r for r in got if r) / n)


def paired_bootstrap(a: list[float], b: list[float], rounds: int = 2000, seed: int = 0):
    """The mean of a - b over questions and the 2.5 / 97.5 percentiles of that mean over
    `rounds` resamples of the questions (the noise of a difference on this many questions)."""
    rng = random.Random(seed)
    d = [x - y for x, y in zip(a, b)]
    n = len(d)
    if not n:
        return 0.0, 0.0, 0.0
    means = sorted(sum(d[rng.randrange(n)] for _ in range(n)) / n for _ in range(rounds))
    return sum(d) / n, means[int(0.025 * rounds)], means[int(0.975 * rounds) - 1]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, type=Path, action="append", help="SQuAD-style file (repeatable)")
    ap.add_argument("--dir", required=True, type=Path, help="where the tree is built")
    ap.add_argument("--reuse", action="store_true", help="use the tree already built in --dir")
    ap.add_argument("--questions", type=int, default=0, help="ask this many (0: all)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--sample", type=int, default=0, help="draw this many passages (0: all)")
    ap.add_argument("--ranks", type=Path, help="write each question's rank (ours, BM25) here, JSON lines")
    args = ap.parse_args(argv)
    from memstrata import Memory

    passages, questions = load(args.data, args.questions, args.seed, args.sample)
    args.dir.mkdir(parents=True, exist_ok=True)
    root = args.dir / "tree"
    m = Memory(root)
    if not (args.reuse and (root / ".vectors").exists()):
        m.init()
        m.config_set("secrets", "warn")
        src = args.dir / "passages.jsonl"
        src.write_text("\n".join(json.dumps({**p, "category": "zh"}, ensure_ascii=False) for p in passages))
        res = m.import_jsonl(src)
        if res["errors"]:
            sys.stderr.write(f"{len(res['errors'])} import errors, first: {res['errors'][0]}\n")
    ours, answered = [], 0
    for q in questions:
        hits = m.recall(q["query"], k=10, min_relevance=0).results
        ours.append([h.id for h in hits])
        cut = m.recall(q["query"], k=10).ids
        answered += q["answer"] in cut
    bm25 = bm25_rankings(passages, questions)
    rows = [("memstrata (ranking, no cut-off)", figures(ours, questions)),
            ("BM25, character bigrams", figures(bm25, questions))]
    names = ", ".join(p.name for p in args.data)
    sampled = f", sample of {args.sample} passages, seed {args.seed}" if args.sample else ""
    print(f"{len(passages)} passages, {len(questions)} questions ({names}{sampled})\n")
    print("| retriever | hit@1 | hit@5 | MRR@10 |\n| --- | --- | --- | --- |")
    for name, (h1, h5, mrr) in rows:
        print(f"| {name} | {h1:.3f} | {h5:.3f} | {mrr:.3f} |")
    print(f"\nanswer kept at the default cut-off: {answered / max(len(questions), 1):.3f}")
    ro, rb = ranks(ours, questions), ranks(bm25, questions)
    diff, lo, hi = paired_bootstrap([float(r == 1) for r in ro], [float(r == 1) for r in rb])
    print(f"hit@1 ours - BM25: {diff:+.3f} (paired bootstrap 95%: {lo:+.3f} .. {hi:+.3f}); "
          f"misses at 1: ours {sum(r != 1 for r in ro)}, BM25 {sum(r != 1 for r in rb)}, both {sum(a != 1 and b != 1 for a, b in zip(ro, rb))}")
    if args.ranks:
        args.ranks.write_text("".join(json.dumps({"query": q["query"], "answer": q["answer"], "ours": a, "bm25": b,
                                                  "ours_top": o[:3], "bm25_top": t[:3]}, ensure_ascii=False) + "\n"
                                      for q, a, b, o, t in zip(questions, ro, rb, ours, bm25)))


if __name__ == "__main__":
    main()
