"""An agent's life: a developer's 130 days through the real hook commands, one session a working day.

    python bench/life.py                 # the whole life (about 10-20 minutes), one table
    python bench/life.py --days 45       # the first 45 days
    python bench/life.py --keep DIR      # keep the tree (and a JSON log of every call) in DIR

Each working day: the service is stopped (most sessions start after the warm service went idle), the
SessionStart hook runs with the day's project as its `cwd`, the user waits for the service to warm,
then two or three prompts go through the UserPromptSubmit hook (`--promote`, budget 1500), as the
README's Claude Code recipe installs them. The day's memories are written with `mem write` under
their title and category, as an agent does; a change of mind is written the same way, reworded (the
agent does not know the old entry's id). A `mem maintain` runs every Sunday. The scenario (all text
written for this benchmark) is bench/life_scenario.py.

Reported: stale facts injected (text of a superseded version, found by its marker), the share of the
session-start block written in the last 14 days, precision and recall of what is injected against
what the day's project and prompts need, promotions that should have fired and did, empty starts,
and entries lost (a version's text in no file of the tree: must be 0).
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
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import perf_cli  # noqa: E402  (the benchmark's own runtime folder and `mem` runner)
from life_scenario import (CHANGES, DAYS, MEMORIES, PROJECTS, START, plan, when)  # noqa: E402

BLOCK = re.compile(r'<memory id="([^"]+)">(.*?)</memory>', re.S)
FRESH_DAYS = 14


def run(args, root, now, stdin=None, check=True):
    os.environ["MEMSTRATA_NOW"] = now
    t0 = time.perf_counter()
    try:
        took, p = perf_cli.timed(args, root, stdin=stdin)
    except RuntimeError:
        if check:
            raise
        return time.perf_counter() - t0, None
    return took, p


def injected(stdout: str) -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in BLOCK.finditer(stdout or "")]


def wait_warm(root, now, seconds=60.0) -> bool:
    os.environ["MEMSTRATA_NOW"] = now
    end = time.time() + seconds
    while time.time() < end:
        status = perf_cli.service_status(root)
        if status and status.get("warm"):
            return True
        time.sleep(0.5)
    return False


class Life:
    def __init__(self, root: Path, cold_starts: bool):
        self.root, self.cold_starts = root, cold_starts
        self.key_of: dict[str, str] = {}        # entry id -> memory key
        self.written: dict[str, int] = {}       # key -> day its current text was written
        self.texts: dict[str, list[str]] = {}   # key -> every text it had, oldest first
        self.stale: dict[str, str] = {}         # marker -> key, once superseded
        self.log: list[dict] = []
        self.starts: list[dict] = []
        self.prompts: list[dict] = []
        self.promotions: list[dict] = []

    def write(self, key, category, title, body, day, tags=()):
        args = ["write", body, "--title", title, "-c", category, "--json"] + [x for t in tags for x in ("-t", t)]
        _, p = run(args, self.root, when(day, 9, 30))
        out = json.loads(p.stdout)
        self.key_of[out["id"]] = key
        self.written[key] = day
        self.texts.setdefault(key, []).append(body)
        self.log.append({"day": day, "write": key, "answer": out})

    def relevant_at_start(self, project: str, day: int) -> set[str]:
        return {m.key for m in MEMORIES if m.day < day and m.project in (None, project)
                and not m.category.startswith("runbooks")}

    def judge(self, blocks, day) -> tuple[list[str], int]:
        keys, stale = [], 0
        for entry_id, text in blocks:
            keys.append(self.key_of.get(entry_id, "?"))
            stale += sum(1 for marker in self.stale if marker in text)
        return keys, stale

    def session(self, d):
        project, cwd, sid = d.project, PROJECTS[d.project], f"life-{d.day:03d}"
        if self.cold_starts:
            run(["serve", "--stop"], self.root, when(d.day, 8, 59), check=False)
        payload = json.dumps({"hook_event_name": "SessionStart", "session_id": sid, "cwd": cwd, "source": "startup",
                              "transcript_path": f"/home/dev/.claude/projects/{project}/{sid}.jsonl"})
        took, p = run(["autoload", "--hook", "--promote"], self.root, when(d.day, 9, 0), stdin=payload)
        keys, stale = self.judge(injected(p.stdout), d.day)
        relevant = self.relevant_at_start(project, d.day)
        fresh = [k for k in keys if d.day - self.written.get(k, -999) <= FRESH_DAYS]
        self.starts.append({"day": d.day, "project": project, "ms": 1000 * took, "keys": keys, "stale": stale,
                            "fresh": len(fresh), "relevant": len(set(keys) & relevant), "wanted": len(relevant)})
        self.log.append({"day": d.day, "start": keys, "stale": stale, "ms": round(1000 * took)})
        if self.cold_starts:
            wait_warm(self.root, when(d.day, 9, 1))
        for m in MEMORIES:
            if m.day == d.day:
                self.write(m.key, m.category, m.title, m.body, d.day, m.tags)
        self.change(d.day)
        seen = set(keys)
        for i, prompt in enumerate(d.prompts):
            now = when(d.day, 10 + i, 0)
            before = self.tier(prompt.needs[0], now) if prompt.recall_task else None
            payload = json.dumps({"hook_event_name": "UserPromptSubmit", "session_id": sid, "cwd": cwd,
                                  "prompt": prompt.text})
            _, p = run(["autoload", "--hook", "--promote", "--budget", "1500"], self.root, now, stdin=payload)
            got, stale = self.judge(injected(p.stdout), d.day)
            seen |= set(got)
            needed = set(prompt.needs)
            self.prompts.append({"day": d.day, "prompt": prompt.text, "keys": got, "stale": stale,
                                 "hits": len(set(got) & needed), "found": len(seen & needed), "needed": len(needed)})
            self.log.append({"day": d.day, "prompt": prompt.text, "injected": got, "stale": stale,
                             **({"tier_before": before} if prompt.recall_task else {})})
            if prompt.recall_task and before in ("cold", "archive"):
                after = self.tier(prompt.needs[0], when(d.day, 10 + i, 1))
                self.promotions.append({"day": d.day, "key": prompt.needs[0], "before": before, "after": after,
                                        "injected": prompt.needs[0] in got})

    def change(self, day):
        for c in CHANGES:
            if c.day == day:
                m = next(m for m in MEMORIES if m.key == c.key)
                self.write(c.key, m.category, m.title, c.body, day, m.tags)
                self.stale[c.marker] = c.key

    def tier(self, key, now) -> str | None:
        ids = [i for i, k in self.key_of.items() if k == key]
        if not ids:
            return None
        _, p = run(["read", ids[-1], "--no-touch", "--json"], self.root, now, check=False)
        if p is None:
            return None
        entry = json.loads(p.stdout)
        return "archive" if entry.get("status") == "archived" else entry.get("tier")

    def lost(self) -> tuple[int, int]:
        """(versions whose text is in no file of the tree, latest texts found only in the trash)."""
        files = [p for p in self.root.rglob("*") if p.is_file() and ".vectors" not in p.parts]
        live = "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in files if ".trash" not in p.parts)
        trash = "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in files if ".trash" in p.parts)
        flat = lambda s: " ".join(s.split())  # noqa: E731 - a summary or a folded line may rewrap the text
        live, trash = flat(live), flat(trash)
        lost = sum(1 for texts in self.texts.values() for t in texts if flat(t) not in live and flat(t) not in trash)
        trashed = sum(1 for texts in self.texts.values() if flat(texts[-1]) not in live and flat(texts[-1]) in trash)
        return lost, trashed


def check_markers():
    for c in CHANGES:
        holders = [m.key for m in MEMORIES if c.marker in m.body] + [x.key for x in CHANGES if c.marker in x.body]
        assert holders == [c.key], f"marker {c.marker!r} is in {holders}: it must be in the superseded text only"


def table(life: Life, days: int) -> str:
    s, p, pr = life.starts, life.prompts, life.promotions
    after_first = [x for x in s if x["day"] > 2]
    lost, trashed = life.lost()
    share = lambda a, b: f"{a / b:.2f}" if b else "n/a"  # noqa: E731
    items = sum(len(x["keys"]) for x in s)
    rows = [
        ("working-day sessions", f"{len(s)} over {days} days"),
        ("stale facts injected (session start / prompts)", f"{sum(x['stale'] for x in s)} / {sum(x['stale'] for x in p)}"),
        ("empty session starts (after day 2)", f"{sum(1 for x in after_first if not x['keys'])} of {len(after_first)}"),
        ("session start: share written in the last 14 days", share(sum(x["fresh"] for x in s), items)),
        ("session start: precision (the day's project and the team)", share(sum(x["relevant"] for x in s), items)),
        ("session start: recall of those", share(sum(x["relevant"] for x in s), sum(x["wanted"] for x in s))),
        ("prompts: precision of injected memories", share(sum(x["hits"] for x in p), sum(len(x["keys"]) for x in p))),
        ("prompts: recall (needed memory in the session's context)", share(sum(x["found"] for x in p), sum(x["needed"] for x in p))),
        ("promotion fired when a cold/archived memory was needed", f"{sum(1 for x in pr if x['after'] == 'hot')} of {len(pr)}"),
        ("  ... and the memory was injected", f"{sum(1 for x in pr if x['injected'])} of {len(pr)}"),
        ("session start, service stopped: p50 / max ms", f"{statistics.median([x['ms'] for x in s]):.0f} / {max(x['ms'] for x in s):.0f}" if s else "n/a"),
        ("entries lost (a version's text in no file)", str(lost)),
        ("latest text only in the trash", str(trashed)),
    ]
    return "| measure | value |\n| --- | --- |\n" + "\n".join(f"| {a} | {b} |" for a, b in rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--days", type=int, default=DAYS, help=f"days to live (default {DAYS})")
    ap.add_argument("--keep", help="keep the tree and log.json in this folder (must not exist)")
    ap.add_argument("--warm", action="store_true", help="never stop the service before a session start")
    ap.add_argument("--json", action="store_true", help="print the raw records as JSON instead of the table")
    args = ap.parse_args(argv)
    check_markers()
    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="memstrata-life-"))
    base.mkdir(parents=True, exist_ok=bool(not args.keep))
    root = base / "memory"
    perf_cli.RUNTIME = Path(tempfile.mkdtemp(prefix="memstrata-life-run-"))
    life = Life(root, cold_starts=not args.warm)
    run(["init", "--root", str(root)], root, when(0, 8, 0))
    sessions = {d.day: d for d in plan()}
    try:
        for day in range(args.days):
            if day in sessions:
                life.session(sessions[day])
            else:
                for m in MEMORIES:
                    if m.day == day:
                        life.write(m.key, m.category, m.title, m.body, day, m.tags)
                life.change(day)
            if (START + timedelta(days=day)).weekday() == 6:
                run(["maintain"], root, when(day, 20, 0))
            print(f"\rday {day + 1}/{args.days}", end="", file=sys.stderr, flush=True)
        print(file=sys.stderr)
    finally:
        run(["serve", "--stop"], root, when(0), check=False)
    if args.keep:
        (base / "log.json").write_text(json.dumps(life.log, indent=1, ensure_ascii=False), encoding="utf-8")
    if args.json:
        print(json.dumps({"starts": life.starts, "prompts": life.prompts, "promotions": life.promotions},
                         ensure_ascii=False, indent=1))
    else:
        print(table(life, args.days))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
