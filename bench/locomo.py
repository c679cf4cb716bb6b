"""LoCoMo recall benchmark: one memory tree per conversation, built and queried through the public API.

    python bench/locomo.py            # all five conversations, prints a Markdown table
    python bench/locomo.py --only 26 --reuse DIR   # keep/reuse trees in DIR (skip re-embedding)
    python bench/locomo.py --reuse DIR --set chunk_sentence_min_words=25   # trees built with a setting

Data: ../shared/bench/locomo relative to the repository (see its README; research data,
cite Maharana et al., ACL 2024). Each turn becomes one entry ("speaker: text" plus the
photo caption), created at its session's date and time plus 10 seconds per turn. Each
question of categories 1-4 is a query; its evidence turns are the relevant entries.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parent.parent
# ../shared/bench/locomo beside the repository, or beside a folder above it (a git worktree in wt/)
DATA = next((d / "shared/bench/locomo" for d in REPO.parents if (d / "shared/bench/locomo").is_dir()),
            (REPO / "../shared/bench/locomo").resolve())
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
_EVIDENCE = re.compile(r"D\d+:\d+")


def turn_id(conv: str, dia_id: str) -> str:
    return f"c{conv}-{dia_id.replace(':', '-')}"


def load(conv_file: Path):
    data = json.loads(conv_file.read_text())
    conv = conv_file.stem
    lines, known = [], set()
    n = 1
    while f"session_{n}" in data:
        stamp = datetime.strptime(data[f"session_{n}_date_time"], "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc)
        for i, turn in enumerate(data[f"session_{n}"]):
            body = f"{turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                body += f"\n[shared a photo: {turn['blip_caption']}]"
            known.add(turn["dia_id"])
            lines.append({"id": turn_id(conv, turn["dia_id"]), "body": body, "category": "conversation",
                          "created": (stamp + timedelta(seconds=10 * i)).isoformat()})
        n += 1
    questions = []
    for qa in data["qa"]:
        cat = qa.get("category")
        if cat not in CATEGORIES:
            continue
        evidence = {e for e in _EVIDENCE.findall(" ".join(map(str, qa.get("evidence", [])))) if e in known}
        if evidence:
            questions.append({"query": qa["question"], "category": cat,
                              "evidence": {turn_id(conv, e) for e in evidence}})
    return lines, questions


def questions_of_built_trees(description: str, argv=None) -> tuple[Path, dict]:
    """For the benchmarks that read trees `--reuse DIR` built: (that folder, {conversation: questions})."""
    ap = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(DATA))
    ap.add_argument("--reuse", required=True, help="the folder `bench/locomo.py --reuse` built the trees in")
    args = ap.parse_args(argv)
    return Path(args.reuse), {f.stem: load(f)[1] for f in sorted(Path(args.data).glob("*.json"))}


def build(root: Path, lines: list[dict], reuse: bool, settings: dict | None = None):
    from memstrata import Memory

    m = Memory(root)
    if reuse and (root / ".vectors").exists():
        _warn_pinned(root)
        return m, 0.0
    m.init()
    m.config_set("secrets", "warn")
    for key, value in (settings or {}).items():
        m.config_set(key, value)
    src = root.parent / f"{root.name}.jsonl"
    src.write_text("\n".join(json.dumps(x) for x in lines))
    t = time.perf_counter()
    res = m.import_jsonl(src, progress=_bar(f"embedding {root.name}"))
    sys.stderr.write("\n")
    if res["errors"]:
        sys.stderr.write(f"{len(res['errors'])} import errors, first: {res['errors'][0]}\n")
    return m, time.perf_counter() - t


def _warn_pinned(root: Path) -> None:
    """A reused tree whose config.md sets recall_*/chunk_* values (trees written before config.md
    kept only changed settings pinned all of them) is measured with those, not the defaults."""
    cfg = root / "config.md"
    text = cfg.read_text() if cfg.exists() else ""
    pinned = re.findall(r"^((?:recall|chunk)_\w+):", text, re.M)
    if pinned:
        sys.stderr.write(f"note: {root.name}/config.md sets {', '.join(pinned)}; "
                         "these override the defaults in this run\n")


def _bar(label):
    step = {"next": 0.0}

    def progress(done, total):
        if not sys.stderr.isatty() and done < total and done / max(total, 1) < step["next"]:
            return
        step["next"] = done / max(total, 1) + 0.1
        width = 30
        filled = int(width * done / max(total, 1))
        sys.stderr.write(f"\r{label} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
        sys.stderr.flush()
    return progress


def evaluate(m, questions, k=10):
    rows, times = [], []
    m.recall("warm up", k=k)  # loads the model, opens the table, first cheap sync
    for q in questions:
        t = time.perf_counter()
        ids = m.recall(q["query"], k=k, min_relevance=0, count_access=False).ids  # ranking alone: no cut-off
        times.append(time.perf_counter() - t)
        ev = q["evidence"]
        first = next((r for r, i in enumerate(ids, 1) if i in ev), None)
        rows.append({"category": q["category"], "r5": len(ev & set(ids[:5])) / len(ev),
                     "r10": len(ev & set(ids[:10])) / len(ev), "hit10": 1.0 if first else 0.0,
                     "mrr10": 1.0 / first if first else 0.0})
    return rows, times


def table(rows, times, build_seconds):
    def line(name, sel):
        n = len(sel)
        avg = lambda key: sum(r[key] for r in sel) / n  # noqa: E731
        return f"| {name} | {n} | {avg('r5'):.3f} | {avg('r10'):.3f} | {avg('hit10'):.3f} | {avg('mrr10'):.3f} |"

    out = ["| questions | n | recall@5 | recall@10 | hit@10 | MRR@10 |", "| --- | --- | --- | --- | --- | --- |",
           line("all", rows)]
    for cat, name in CATEGORIES.items():
        sel = [r for r in rows if r["category"] == cat]
        if sel:
            out.append(line(f"{cat} {name}", sel))
    ms = sorted(t * 1000 for t in times)
    p95 = ms[min(len(ms) - 1, int(0.95 * len(ms)))]
    out.append("")
    out.append(f"Query latency (in-process, warm, cheap sync included): median {statistics.median(ms):.1f} ms, "
               f"p95 {p95:.1f} ms over {len(ms)} queries; ingest + embedding {build_seconds:.0f} s in total.")
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(DATA))
    ap.add_argument("--only", action="append", help="conversation id (repeatable)")
    ap.add_argument("--reuse", help="folder to keep the trees in and reuse them across runs")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a setting (config.md) of the trees built (repeatable)")
    args = ap.parse_args(argv)
    settings = dict(s.split("=", 1) for s in args.set)
    files = sorted(Path(args.data).glob("*.json"))
    if args.only:
        files = [f for f in files if f.stem in args.only]
    if not files:
        raise SystemExit(f"no conversations in {args.data}")
    base = Path(args.reuse) if args.reuse else Path(tempfile.mkdtemp(prefix="locomo-"))
    base.mkdir(parents=True, exist_ok=True)
    all_rows, all_times, build_s = [], [], 0.0
    for f in files:
        lines, questions = load(f)
        m, secs = build(base / f"conv{f.stem}", lines, reuse=bool(args.reuse), settings=settings)
        build_s += secs
        rows, times = evaluate(m, questions)
        all_rows += rows
        all_times += times
        r10 = sum(r["r10"] for r in rows) / len(rows)
        sys.stderr.write(f"conversation {f.stem}: {len(lines)} turns, {len(questions)} questions, R@10 {r10:.3f}\n")
    print(table(all_rows, all_times, build_s))


if __name__ == "__main__":
    main()
