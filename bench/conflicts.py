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

With --crowd each pair is written among the category's other entries (the first entries of the
file's other pairs of that category and language): the second write must find its entry among
them, and a version of any other entry is wrong. A pair whose first write is itself taken for one
of those (another pair on its subject) is not counted, and listed.

    python bench/conflicts.py                 # the table (Markdown), one line per group and language
    python bench/conflicts.py --misses        # ... and every pair decided wrongly
    python bench/conflicts.py --crowd         # each pair among the category's other entries
    python bench/conflicts.py --json out.json # every pair's outcome
    python bench/conflicts.py --pairs bench/conflicts/negatives.jsonl   # held-out other subjects
    python bench/conflicts.py --pairs bench/conflicts/fit_pairs.jsonl --sweep [--crowd]

Files: pairs.jsonl (95 pairs, the reported set; nothing is chosen on it), fit_pairs.jsonl (116
pairs, 48 same subject and 68 other subjects: the settings are chosen on it), negatives.jsonl (64
held-out other-subject pairs that share words or a value, written before the settings were
chosen: how often a write on another subject is merged where that risk is), review_pairs.jsonl (41
pairs six reviews wrote to break the rule, after the settings were chosen). The two settings the
decision depends on, `conflict_similarity` (another title, the same tag set) and
`conflict_departed_similarity` (another title, no tag set, a value the write says was left), were
chosen on fit_pairs.jsonl: `--sweep` prints, per threshold, the same-subject pairs made versions
and the other-subject pairs merged; the lowest threshold merging none, plus 0.05, was taken.
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


def crowd(pair: dict, pairs: list[dict]) -> list[dict]:
    """The entries a pair meets in a populated category (--crowd): the first entries of the file's other
    pairs in the same category and language, without those that share a title or a text with the pair
    or that a pair line marks as its `subject` too (an entry the second write is rightly about)."""
    from memstrata.scoring.conflicts import normalise_text, title_key

    own = (pair["first"], pair["second"])
    keys = {title_key(e["title"]) for e in own}
    texts = {normalise_text(e["body"]) for e in own}
    out, seen = [], set()
    for other in pairs:
        e = other["first"]
        if other is pair or other["lang"] != pair["lang"] or e["category"] != pair["first"]["category"]:
            continue
        if pair.get("subject") and other.get("subject") == pair["subject"]:
            continue  # the same subject as this pair's second write: not a bystander
        if title_key(e["title"]) in keys | seen or normalise_text(e["body"]) in texts:
            continue
        seen.add(title_key(e["title"]))
        out.append(e)
    return out


def run_pair(pair: dict, embedder, base: Path, background: list[dict] = ()) -> dict:
    """Both writes of a pair in a fresh tree (after the background entries, if any); what the second did."""
    from memstrata import Memory

    root = Path(tempfile.mkdtemp(dir=base))
    m = Memory(root, embedder=embedder)
    m.init()

    def write(e: dict):
        return m.write(e["body"], title=e["title"], category=e["category"], tags=e["tags"] or None)

    for e in background:
        write(e)
    first = write(pair["first"])
    second = write(pair["second"])
    entries = m.list()
    if first.action != "created":
        outcome = "skipped"  # among the others, the first text was itself taken for one of them (--crowd)
    elif second.action in ("conflict", "merged") and second.id == first.id:
        outcome = "version"
    elif second.action in ("conflict", "merged"):
        outcome = "other_entry"  # the version of a background entry: wrong whatever was expected
    elif second.action in ("duplicate", "near_duplicate"):
        outcome = second.action
    else:
        outcome = "separate"
    return {"id": pair["id"], "group": pair["group"], "lang": pair["lang"], "expect": pair["expect"],
            "outcome": outcome, "action": second.action, "version": second.version, "entries": len(entries),
            "similarity": second.similarity, "rule": second.rule, "message": second.message}


def score(rows: list[dict]) -> dict:
    """Precision and recall of "same subject -> version" over the version/separate pairs."""
    judged = [r for r in rows if r["expect"] in ("version", "separate") and r["outcome"] != "skipped"]
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
                part = [r for r in part if r["outcome"] != "skipped"]
                ok = sum(1 for r in part if r["outcome"] == r["expect"])
                lines.append(f"| {group} | {lang} | {part[0]['expect'] if part else '-'} | {len(part)} | {ok} |")
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
    apart = [r for r in rows if r["expect"] == "separate" and r["outcome"] != "skipped"]
    if apart:
        kept = sum(1 for r in apart if r["outcome"] == "separate")
        lines.append("")
        lines.append(f"Other-subject pairs kept apart: {kept} of {len(apart)}, {_rate(kept / len(apart), len(apart))}.")
    lines.append("")
    lines.append("[a, b]: the 95% Wilson interval of the rate over that many pairs (its noise).")
    skipped = [r["id"] for r in rows if r["outcome"] == "skipped"]
    if skipped:
        lines.append("")
        lines.append(f"Not counted ({len(skipped)}): among the category's other entries the first write was itself "
                     f"taken for one of them (another pair on its subject): {', '.join(skipped)}.")
    dup = [r for r in rows if r["expect"] == "duplicate" and r["outcome"] != "skipped"]
    if dup:
        lines.append("")
        lines.append(f"Exact duplicates: {sum(1 for r in dup if r['outcome'] == 'duplicate')} of {len(dup)} wrote nothing.")
    return "\n".join(lines)


SWEPT = {"conflict_similarity": "another title, the same tag set", "conflict_departed_similarity":
         "another title, no tag set: the value the write leaves"}


def sweep(pairs: list[dict], embedder, crowded: bool) -> str:
    """Per setting and threshold, the decision of every pair (scoring.conflicts.classify_write, pure:
    the similarities measured once), alone and, with --crowd, among the category's other entries:
    the same-subject pairs made versions, and the other-subject pairs merged (into the first entry
    or into another). Only pairs with another title in the same category are counted (the rest do
    not depend on these settings)."""
    import dataclasses

    import numpy as np

    from memstrata.retrieval.chunking import entry_text
    from memstrata.scoring.conflicts import Candidate, classify_write, title_key
    from memstrata.storage.config import Settings
    from memstrata.storage.entry import Entry

    judged = [p for p in pairs if p["expect"] != "duplicate" and p["first"]["category"] == p["second"]["category"]
              and title_key(p["first"]["title"]) != title_key(p["second"]["title"])]
    cache: dict[str, np.ndarray] = {}

    def vec(e: dict) -> np.ndarray:
        text = entry_text(e["title"], e["body"])
        if text not in cache:
            v = np.asarray(embedder.embed([text])[0], dtype="float32")
            cache[text] = v / (np.linalg.norm(v) or 1.0)
        return cache[text]

    cases = []  # (pair, candidates with similarities), the first entry's id is "first"
    for p in judged:
        new = vec(p["second"])
        others = crowd(p, pairs) if crowded else []
        first = p["first"]
        if others and classify_write(first["title"], first["body"], first["tags"], [
                Candidate(Entry(id=f"o{i}", title=e["title"], body=e["body"], tags=list(e["tags"])),
                          float(vec(e) @ vec(first))) for i, e in enumerate(others)], Settings()).kind != "new":
            continue  # the first text is itself taken for another entry there: not counted (as in run_pair)
        cands = []
        for i, e in enumerate([p["first"], *others]):
            entry = Entry(id="first" if i == 0 else f"other{i:03d}", title=e["title"], body=e["body"], tags=list(e["tags"]))
            cands.append(Candidate(entry, float(vec(e) @ new)))
        cases.append((p, cands))
    same = sum(1 for p, _ in cases if p["expect"] == "version")
    out = []
    for name, what in SWEPT.items():
        out += [f"{name} ({what}){', in a populated category' if crowded else ''}", "",
                f"| {name} | same subject made a version (of {same}) | other subject merged (of {len(cases) - same}) |",
                "| ---: | ---: | ---: |"]
        for t in [x / 100 for x in range(30, 80, 5)]:
            settings = dataclasses.replace(Settings(), **{name: t})
            caught = merged = 0
            for p, cands in cases:
                second = p["second"]
                d = classify_write(second["title"], second["body"], second["tags"], cands, settings)
                if d.kind in ("conflict", "near_duplicate", "duplicate"):
                    caught += p["expect"] == "version" and d.target_id == "first" and d.kind == "conflict"
                    merged += p["expect"] != "version"
            out.append(f"| {t:.2f} | {caught} | {merged} |")
        out.append("")
    return "\n".join(out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=Path, default=PAIRS)
    parser.add_argument("--misses", action="store_true", help="also list every pair decided wrongly")
    parser.add_argument("--json", type=Path, help="write every pair's outcome here")
    parser.add_argument("--sweep", action="store_true",
                        help="only the sweeps of the similarity settings (pure decision, no tree)")
    parser.add_argument("--crowd", action="store_true",
                        help="write each pair among the first entries of the file's other pairs of its category")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ["MEMSTRATA_SERVICE"] = "off"
    os.environ.setdefault("MEMSTRATA_RUNTIME_DIR", tempfile.mkdtemp(prefix="conflicts-run-"))
    from memstrata.models.embedder import get_embedder

    embedder = get_embedder("bundled")
    pairs = load(args.pairs)
    if args.sweep:
        print(sweep(pairs, embedder, args.crowd))
        return 0
    with tempfile.TemporaryDirectory(prefix="conflicts-") as base:
        rows = [run_pair(p, embedder, Path(base), crowd(p, pairs) if args.crowd else ()) for p in pairs]
    print(table(rows))
    if args.misses:
        print()
        for r in rows:
            if r["outcome"] not in (r["expect"], "skipped"):
                print(f"- {r['id']}: expected {r['expect']}, got {r['outcome']} ({r['message']})")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
