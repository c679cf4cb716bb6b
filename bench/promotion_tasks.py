"""Promotion on realistic tasks: does a prompt bring its cold or archived memory back, and nothing else?

    python bench/promotion_tasks.py                      # builds /tmp/memstrata-tasks/tree, prints the tables
    python bench/promotion_tasks.py --reuse --json out.json

The tree (bench/tasks/memories.jsonl, text written for this benchmark): 60 memories of a developer's
work written 35 to 600 days ago (runbooks, incidents, decisions, processes, people, preferences,
three in Chinese), in a tree used daily for the last 100 days, so that `mem maintain` has archived
(those older than 100 days) or cooled every one of them, and 8 notes of the last days. The tasks
(bench/tasks/prompts.jsonl): 56 prompts that should bring a memory back (short, long, questions,
"what did we do last time", two in Chinese) and 18 that should bring nothing (coding chores,
general questions, small talk).

Each prompt goes where the hook sends it (`autoload(prompt, promote=True)`): the everyday gate, then
recall. For every cold or archived entry the benchmark records its best chunk cosine (what
`mem promote` compared with promote_threshold until now) and, for recall's first 10 hits, the
calibrated relevance (scoring/relevance.py). A rule is scored per threshold: a positive prompt
"fires" when one of the memories it wants is promoted; a false promotion is any other entry
promoted. Thresholds are chosen on part A (tasks about odd-numbered memories, every other negative;
the most fired less the false promotions per prompt) and checked on part B. Last, `promote` itself
runs (default settings, a dry run) on every prompt: it must give the table's figures.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
HERE = Path(__file__).resolve().parent / "tasks"
NOW = datetime(2026, 6, 1, 9, 0, tzinfo=timezone.utc)


def load(name: str) -> list[dict]:
    return [json.loads(line) for line in (HERE / name).read_text(encoding="utf-8").splitlines() if line.strip()]


def part(prompt: dict, n: int) -> str:
    """A or B: a positive by its first memory's number (a memory's paraphrases stay together), a negative by its place."""
    if prompt["want"]:
        return "A" if int(prompt["want"][0][1:]) % 2 else "B"
    return "A" if n % 2 else "B"


def build(root: Path, embedder) -> dict:
    """The tree at NOW: every memory written `days_ago` before, the tree used daily, then maintained."""
    import shutil

    from memstrata import Memory
    from memstrata.storage import usage

    if root.exists():
        shutil.rmtree(root)
    m = Memory(root, embedder=embedder)
    m.init()
    ids = {}
    for note in sorted(load("memories.jsonl"), key=lambda n: -n["days_ago"]):
        written = (NOW - timedelta(days=note["days_ago"])).strftime("%Y-%m-%dT%H:%M:%SZ")
        os.environ["MEMSTRATA_NOW"] = written
        ids[note["id"]] = m.write(note["body"], title=note["title"], category=note["category"], created=written,
                                  force=True).id
    # in use daily for the last 100 days: the old ones archived, none forgotten
    usage.record(root, {(NOW - timedelta(days=d)).date() for d in range(1, 101)})
    os.environ["MEMSTRATA_NOW"] = NOW.strftime("%Y-%m-%dT%H:%M:%SZ")
    m.maintain()
    (root / "bench-ids.json").write_text(json.dumps(ids))
    return ids


def measure(m, prompts: list[dict], ids: dict) -> list[dict]:
    """Per prompt: the everyday gate, each cold/archived candidate's cosine, recall's relevance of its hits."""
    from memstrata.retrieval.prompts import has_topic, is_everyday

    back = {v: k for k, v in ids.items()}
    rows = []
    for n, p in enumerate(prompts):
        text = p["prompt"]
        topic = has_topic(text) and not is_everyday(text, m.embedder)
        cosine, relevance, tiers = {}, {}, {}
        if topic:
            dry = m.promote(text, threshold=0.0, max_count=10_000, dry_run=True)
            cosine = {back.get(r["id"], r["id"]): r["similarity"] for r in dry["promoted"]}
            tiers = {back.get(r["id"], r["id"]): r["from_tier"] for r in dry["promoted"]}
            hits = m.recall(text, k=10, min_relevance=0.0, count_access=False).results
            relevance = {back.get(h.id, h.id): h.relevance for h in hits if h.relevance is not None}
        rows.append({"prompt": text, "kind": p["kind"], "want": p["want"], "part": part(p, n), "topic": topic,
                     "cosine": cosine, "relevance": relevance, "tiers": tiers})
    return rows


def promoted(row: dict, rule: tuple) -> set[str]:
    """What a rule promotes for one prompt, among the cold/archived entries (those with a cosine).

    ("cosine", t): every entry at least t similar (the rule until now, t = promote_threshold).
    ("calibrated", b, r): every entry at least 0.65 similar, the most similar one from b, and the one
    recall finds likeliest to answer from relevance r (scoring/promotion.select)."""
    if not row["topic"]:
        return set()
    cosine = row["cosine"]
    if rule[0] == "cosine":
        return {k for k, v in cosine.items() if v >= rule[1]}
    out = {k for k, v in cosine.items() if v >= 0.65}
    if cosine:
        top = max(cosine, key=lambda k: (cosine[k], k))
        if cosine[top] >= rule[1]:
            out.add(top)
    judged = {k: v for k, v in row["relevance"].items() if k in cosine}
    if judged:
        likeliest = max(judged, key=lambda k: (judged[k], k))
        if judged[likeliest] >= rule[2]:
            out.add(likeliest)
    return out


def score(rows: list[dict], rule: tuple) -> dict:
    pos = [r for r in rows if r["want"]]
    neg = [r for r in rows if not r["want"]]
    fired = sum(1 for r in pos if promoted(r, rule) & set(r["want"]))
    right = sum(len(promoted(r, rule) & set(r["want"])) for r in pos)
    false = sum(len(promoted(r, rule) - set(r["want"])) for r in rows)
    total = sum(len(promoted(r, rule)) for r in rows)
    return {"fired": fired / len(pos) if pos else 0.0, "n_pos": len(pos), "false_per_prompt": false / len(rows),
            "precision": right / total if total else 1.0, "neg_any": sum(1 for r in neg if promoted(r, rule)),
            "n_neg": len(neg)}


RULES = ([("cosine", t) for t in (0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7)]
         + [("calibrated", b, r) for b in (0.4, 0.45, 0.5, 0.55, 0.6) for r in (0.03, 0.05, 0.1, 0.2, 0.3, 1.01)])


def choose(rows: list[dict], family: str) -> tuple:
    """The rule of `family` with the most positives fired less false promotions per prompt on `rows`
    (a missed promotion and a wrong one cost the same); ties: the stricter rule."""
    def utility(rule):
        s = score(rows, rule)
        return s["fired"] - s["false_per_prompt"], rule[1:]
    return max((r for r in RULES if r[0] == family), key=utility)


def line(rule: tuple, rows: list[dict]) -> str:
    cells = []
    for name in ("A", "B", "all"):
        s = score([r for r in rows if name == "all" or r["part"] == name], rule)
        cells.append(f"{s['fired']:.2f} / {s['false_per_prompt']:.2f} / {s['neg_any']}")
    name = f"cosine >= {rule[1]}" if rule[0] == "cosine" else f"best >= {rule[1]}, relevance >= {rule[2]}"
    return f"| {name} | " + " | ".join(cells) + " |"


def table(rows: list[dict]) -> str:
    head = ["| rule | part A: fired / false per prompt / negatives | part B | all |", "| --- | --- | --- | --- |"]
    return "\n".join(head + [line(rule, rows) for rule in RULES])


def kinds(rows: list[dict], rule: tuple) -> str:
    out = ["| kind | prompts | fired | false promotions |", "| --- | --- | --- | --- |"]
    for kind in sorted({r["kind"] for r in rows}):
        sel = [r for r in rows if r["kind"] == kind]
        s = score(sel, rule)
        fired = f"{s['fired']:.2f}" if s["n_pos"] else "-"
        out.append(f"| {kind} | {len(sel)} | {fired} | {s['false_per_prompt'] * len(sel):.0f} |")
    return "\n".join(out)


def engine(m, prompts: list[dict], ids: dict) -> dict:
    """What `promote` itself (default settings, a dry run) brings back for each prompt: the check that
    the engine applies the rule the tables measure."""
    from memstrata.retrieval.prompts import has_topic, is_everyday

    back = {v: k for k, v in ids.items()}
    fired = false = n_pos = 0
    for p in prompts:
        if not (has_topic(p["prompt"]) and not is_everyday(p["prompt"], m.embedder)):
            continue
        got = {back.get(r["id"], r["id"]) for r in m.promote(p["prompt"], dry_run=True)["promoted"]}
        n_pos += bool(p["want"])
        fired += bool(got & set(p["want"]))
        false += len(got - set(p["want"]))
    return {"fired": fired / max(1, sum(1 for p in prompts if p["want"])), "false_per_prompt": false / len(prompts)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", default="/tmp/memstrata-tasks")
    ap.add_argument("--reuse", action="store_true", help="use the tree an earlier run built")
    ap.add_argument("--json", help="write the per-prompt figures here")
    args = ap.parse_args(argv)
    from memstrata import Memory
    from memstrata.models.embedder import get_embedder

    embedder = get_embedder("bundled")
    root = Path(args.work) / "tree"
    ids = (json.loads((root / "bench-ids.json").read_text()) if args.reuse and (root / "bench-ids.json").is_file()
           else build(root, embedder))
    os.environ["MEMSTRATA_NOW"] = NOW.strftime("%Y-%m-%dT%H:%M:%SZ")
    m = Memory(root, embedder=embedder)
    prompts = load("prompts.jsonl")
    rows = measure(m, prompts, ids)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1, ensure_ascii=False))
    print(table(rows))
    print()
    for family in ("cosine", "calibrated"):
        rule = choose([r for r in rows if r["part"] == "A"], family)
        held = score([r for r in rows if r["part"] == "B"], rule)
        print(f"{family}: chosen on part A {rule[1:]}; on part B it fires for {held['fired']:.2f} of {held['n_pos']} "
              f"positives, {held['false_per_prompt']:.2f} false promotions per prompt, {held['neg_any']} of "
              f"{held['n_neg']} negatives promote anything")
    settings = m.settings
    rule = ("calibrated", settings.promote_best_cosine, settings.promote_min_relevance)
    print("\nper kind of prompt, the default settings' rule:\n")
    print(kinds(rows, rule))
    done = engine(m, prompts, ids)
    print(f"\n`promote` with the default settings (dry run): fires for {done['fired']:.2f} of the positives, "
          f"{done['false_per_prompt']:.2f} false promotions per prompt")
    return 0


if __name__ == "__main__":
    sys.exit(main())
