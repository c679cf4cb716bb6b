"""The conflict set: does a second write on the same subject become a new version of the first?

Each line of bench/conflicts/pairs.jsonl is a pair of writes (`first`, `second`: category,
title, body, tags), our own text, English and Chinese, with what should happen:

- `version`: the same subject (a reworded change of mind, a refinement, the same title written
  differently, another title with matching tags and content, another title without tags);
- `separate`: another subject (an unrelated note of the category, a neighbouring subject with the
  same tags, the same title in another category): two entries;
- `duplicate`: the same text again: nothing written (counted apart).

Every pair goes through the real write path (`Memory.write`, the bundled model, LanceDB) in a
fresh tree. A pair's outcome is `version` when the second write made a new version of the first
entry (action conflict, same id, v2), `separate` when it wrote a second entry, and `duplicate` /
`near_duplicate` when it wrote nothing. Precision and recall are those of the decision "same
subject -> version" over the `version` and `separate` pairs (a `near_duplicate` on a `separate`
pair lost a fact: it counts as wrong, as a false merge does).

    python bench/conflicts.py                 # the table (Markdown), one line per group and language
    python bench/conflicts.py --misses        # ... and every pair decided wrongly
    python bench/conflicts.py --json out.json # every pair's outcome
    python bench/conflicts.py --pairs bench/conflicts/fit_pairs.jsonl --sweep

The one setting the set depends on, `conflict_similarity` (another title, the same tags: how similar
the two texts must be), was chosen on bench/conflicts/fit_pairs.jsonl (24 pairs of other subjects,
never in pairs.jsonl): `--sweep` prints, per threshold, the same-subject pairs of a file it
catches and the other-subject pairs it merges (the lowest threshold merging none was taken).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
PAIRS = HERE / "conflicts" / "pairs.jsonl"
GROUPS = ("change", "refine", "title_form", "subject", "subject_untagged", "unrelated", "neighbour",
          "other_category", "duplicate")


def load(path: Path = PAIRS) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def run_pair(pair: dict, embedder, base: Path) -> dict:
    """Both writes of a pair in a fresh tree; what the second one did."""
    from memstrata import Memory

    root = Path(tempfile.mkdtemp(dir=base))
    m = Memory(root, embedder=embedder)
    m.init()
    first = m.write(pair["first"]["body"], title=pair["first"]["title"], category=pair["first"]["category"],
                    tags=pair["first"]["tags"] or None)
    second = m.write(pair["second"]["body"], title=pair["second"]["title"], category=pair["second"]["category"],
                     tags=pair["second"]["tags"] or None)
    entries = m.list()
    if second.action in ("conflict", "merged") and second.id == first.id:
        outcome = "version"
    elif second.action in ("duplicate", "near_duplicate"):
        outcome = second.action
    else:
        outcome = "separate"
    return {"id": pair["id"], "group": pair["group"], "lang": pair["lang"], "expect": pair["expect"],
            "outcome": outcome, "action": second.action, "version": second.version, "entries": len(entries),
            "similarity": second.similarity, "message": second.message}


def score(rows: list[dict]) -> dict:
    """Precision and recall of "same subject -> version" over the version/separate pairs."""
    judged = [r for r in rows if r["expect"] in ("version", "separate")]
    tp = sum(1 for r in judged if r["expect"] == "version" and r["outcome"] == "version")
    fp = sum(1 for r in judged if r["expect"] == "separate" and r["outcome"] != "separate")
    fn = sum(1 for r in judged if r["expect"] == "version" and r["outcome"] != "version")
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    return {"pairs": len(judged), "tp": tp, "fp": fp, "fn": fn, "precision": precision, "recall": recall}


def _rate(rate: float, n: int) -> str:
    """A rate with its 95% Wilson interval over n trials."""
    import math

    if not n:
        return "-"
    z = 1.96
    centre = (rate + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(rate * (1 - rate) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return f"{rate:.3f} [{max(0.0, centre - half):.2f}, {min(1.0, centre + half):.2f}]"


def table(rows: list[dict]) -> str:
    by = defaultdict(list)
    for r in rows:
        by[(r["group"], r["lang"])].append(r)
    lines = ["| group | lang | expected | pairs | as expected |", "| --- | --- | --- | ---: | ---: |"]
    for group in GROUPS:
        for lang in ("en", "zh"):
            part = by.get((group, lang))
            if part:
                ok = sum(1 for r in part if r["outcome"] == r["expect"])
                lines.append(f"| {group} | {lang} | {part[0]['expect']} | {len(part)} | {ok} |")
    lines.append("")
    lines.append("| set | pairs | precision | recall | false merges | missed versions |")
    lines.append("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, part in (("all", rows), ("English", [r for r in rows if r["lang"] == "en"]),
                       ("Chinese", [r for r in rows if r["lang"] == "zh"]),
                       ("same title, same category", [r for r in rows if r["group"] in ("change", "refine", "title_form")]),
                       ("the documents' rule (all but another title without tags)",
                        [r for r in rows if r["group"] != "subject_untagged"]),
                       ("another title", [r for r in rows if r["group"] in ("subject", "subject_untagged", "unrelated", "neighbour")])):
        s = score(part)
        lines.append(f"| {name} | {s['pairs']} | {_rate(s['precision'], s['tp'] + s['fp'])} | "
                     f"{_rate(s['recall'], s['tp'] + s['fn'])} | {s['fp']} | {s['fn']} |")
    lines.append("")
    lines.append("[a, b]: the 95% Wilson interval of the rate over that many pairs (its noise).")
    dup = [r for r in rows if r["expect"] == "duplicate"]
    if dup:
        lines.append("")
        lines.append(f"Exact duplicates: {sum(1 for r in dup if r['outcome'] == 'duplicate')} of {len(dup)} wrote nothing.")
    return "\n".join(lines)


def sweep(pairs: list[dict], embedder) -> str:
    """Per threshold: the pairs of one category with the same tag set (and another title) that the
    pure decision (scoring.conflicts.classify_write, its tag rule) makes versions, split by what
    they should be."""
    import dataclasses

    import numpy as np

    from memstrata.retrieval.chunking import entry_text
    from memstrata.scoring.conflicts import Candidate, classify_write
    from memstrata.storage.config import Settings
    from memstrata.storage.entry import Entry

    tagged = [p for p in pairs if p["first"]["tags"] and sorted(p["first"]["tags"]) == sorted(p["second"]["tags"])
              and p["first"]["category"] == p["second"]["category"] and p["expect"] != "duplicate"]
    a = embedder.embed([entry_text(p["first"]["title"], p["first"]["body"]) for p in tagged])
    b = embedder.embed([entry_text(p["second"]["title"], p["second"]["body"]) for p in tagged])
    sims = [float(np.dot(x, y) / (np.linalg.norm(x) * np.linalg.norm(y))) for x, y in zip(a, b)]
    same = sum(1 for p in tagged if p["expect"] == "version")
    lines = [f"| conflict_similarity | same subject caught (of {same}) | other subject merged (of {len(tagged) - same}) |",
             "| ---: | ---: | ---: |"]
    for t in [x / 100 for x in range(30, 80, 5)]:
        settings = dataclasses.replace(Settings(), conflict_similarity=t)
        caught = merged = 0
        for p, sim in zip(tagged, sims):
            first, second = p["first"], p["second"]
            old = Entry(id="first", title=first["title"], body=first["body"], tags=list(first["tags"]))
            d = classify_write(second["title"], second["body"], second["tags"], [Candidate(old, sim)], settings)
            if d.kind == "conflict":
                caught += p["expect"] == "version"
                merged += p["expect"] != "version"
        lines.append(f"| {t:.2f} | {caught} | {merged} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=Path, default=PAIRS)
    parser.add_argument("--misses", action="store_true", help="also list every pair decided wrongly")
    parser.add_argument("--json", type=Path, help="write every pair's outcome here")
    parser.add_argument("--sweep", action="store_true",
                        help="only the tag rule's threshold sweep over the pairs with one tag set")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ["MEMSTRATA_SERVICE"] = "off"
    os.environ.setdefault("MEMSTRATA_RUNTIME_DIR", tempfile.mkdtemp(prefix="conflicts-run-"))
    from memstrata.models.embedder import get_embedder

    embedder = get_embedder("bundled")
    pairs = load(args.pairs)
    if args.sweep:
        print(sweep(pairs, embedder))
        return 0
    with tempfile.TemporaryDirectory(prefix="conflicts-") as base:
        rows = [run_pair(p, embedder, Path(base)) for p in pairs]
    print(table(rows))
    if args.misses:
        print()
        for r in rows:
            if r["outcome"] != r["expect"]:
                print(f"- {r['id']}: expected {r['expect']}, got {r['outcome']} ({r['message']})")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
