"""Chinese passage retrieval: memstrata against BM25 over character bigrams, on CMRC 2018 passages.

    python bench/chinese_passages.py --data cmrc2018_trial.json --dir /tmp/zh [--reuse]

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


def load(path: Path, limit: int | None, seed: int):
    data = json.loads(path.read_text())["data"]
    passages, questions = [], []
    for article in data:
        for para in article["paragraphs"]:
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


def figures(rankings, questions, k=10):
    h1 = h5 = mrr = 0.0
    for ids, q in zip(rankings, questions):
        rank = next((r for r, i in enumerate(ids[:k], 1) if i == q["answer"]), None)
        h1 += rank == 1
        h5 += rank is not None and rank <= 5
        mrr += 1.0 / rank if rank else 0.0
    n = max(len(questions), 1)
    return h1 / n, h5 / n, mrr / n


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, type=Path)
    ap.add_argument("--dir", required=True, type=Path, help="where the tree is built")
    ap.add_argument("--reuse", action="store_true", help="use the tree already built in --dir")
    ap.add_argument("--questions", type=int, default=0, help="ask this many (0: all)")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args(argv)
    from memstrata import Memory

    passages, questions = load(args.data, args.questions, args.seed)
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
    rows = [("memstrata (ranking, no cut-off)", figures(ours, questions)),
            ("BM25, character bigrams", figures(bm25_rankings(passages, questions), questions))]
    print(f"{len(passages)} passages, {len(questions)} questions ({args.data.name})\n")
    print("| retriever | hit@1 | hit@5 | MRR@10 |\n| --- | --- | --- | --- |")
    for name, (h1, h5, mrr) in rows:
        print(f"| {name} | {h1:.3f} | {h5:.3f} | {mrr:.3f} |")
    print(f"\nanswer kept at the default cut-off: {answered / max(len(questions), 1):.3f}")


if __name__ == "__main__":
    main()
