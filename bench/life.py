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
import shutil
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import capture_transcripts as ct  # noqa: E402
import life_capture as lc  # noqa: E402
import perf_cli  # noqa: E402  (the benchmark's own runtime folder and `mem` runner)
from life_scenario import (CHANGES, DAYS, MEMORIES, PROJECTS, START, plan, when)  # noqa: E402

BLOCK = re.compile(r'<memory id="([^"]+)">(.*?)</memory>', re.S)
BROUGHT = "## Brought back for this project's last session"  # the prompt block's section (autoload_block.SECTIONS)
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


def split_brought(stdout: str) -> tuple[str, str]:
    """(the prompt's own part of a block, the part the session start brought back)."""
    text = stdout or ""
    if BROUGHT not in text:
        return text, ""
    head, rest = text.split(BROUGHT, 1)
    cut = rest.find("\n## ")
    return (head + rest[cut:], rest[:cut]) if cut >= 0 else (head, rest)


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
    def __init__(self, root: Path, cold_starts: bool, capture: bool = True):
        self.root, self.cold_starts, self.capture = root, cold_starts, capture
        self.hooks = lc.installed_hooks()
        self.brought: list[dict] = []           # what the session start brought back, per session
        self.captured = (0, 0)                  # (sessions, turns) at the end
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
        project, cwd = d.project, PROJECTS[d.project]
        talk = lc.Transcript(self.root.parent, project, cwd, d.day)
        sid = talk.sid
        tasks = {p.needs[0]: self.tier(p.needs[0], when(d.day, 8, 58)) for p in d.prompts if p.recall_task}
        if self.cold_starts:
            run(["serve", "--stop"], self.root, when(d.day, 8, 59), check=False)
        took, p = lc.fire(self.hooks["SessionStart"], talk.payload("SessionStart", source="startup"), self.root,
                          when(d.day, 9, 0))
        keys, stale = self.judge(injected(p.stdout), d.day)
        relevant = self.relevant_at_start(project, d.day)
        fresh = [k for k in keys if d.day - self.written.get(k, -999) <= FRESH_DAYS]
        sessions = sum(1 for entry_id, _ in injected(p.stdout) if entry_id.startswith("ses-"))
        self.starts.append({"day": d.day, "project": project, "ms": 1000 * took, "keys": keys, "stale": stale,
                            "fresh": len(fresh), "relevant": len(set(keys) & relevant), "wanted": len(relevant),
                            "sessions": sessions})
        self.log.append({"day": d.day, "start": keys, "stale": stale, "ms": round(1000 * took)})
        if self.cold_starts:
            wait_warm(self.root, when(d.day, 9, 1))
        waited = lc.wait_followup(self.root, sid)
        for m in MEMORIES:
            if m.day == d.day:
                self.write(m.key, m.category, m.title, m.body, d.day, m.tags)
        self.change(d.day)
        seen = set(keys)
        for i, prompt in enumerate(d.prompts):
            now = when(d.day, 10 + i, 0)
            before = self.tier(prompt.needs[0], now) if prompt.recall_task else None
            talk.add("user", prompt.text, now)
            payload = {"hook_event_name": "UserPromptSubmit", "session_id": sid, "cwd": cwd, "prompt": prompt.text,
                       "transcript_path": str(talk.path)}
            _, p = lc.fire(self.hooks["UserPromptSubmit"], payload, self.root, now)
            own, later = split_brought(p.stdout)
            turns = [b for b in injected(own) if b[0].startswith("ses-")]  # captured sessions' turns, apart
            got, stale = self.judge([b for b in injected(own) if not b[0].startswith("ses-")], d.day)
            turn_stale = self.judge(turns, d.day)[1]
            back, back_stale = self.judge(injected(later), d.day)
            if later:
                self.brought.append({"day": d.day, "project": project, "keys": back, "stale": back_stale,
                                     "relevant": len(set(back) & relevant), "waited": round(waited, 1)})
            seen |= set(got) | set(back)
            needed = set(prompt.needs)
            self.prompts.append({"day": d.day, "prompt": prompt.text, "keys": got, "stale": stale + back_stale,
                                 "hits": len(set(got) & needed), "found": len(seen & needed), "needed": len(needed),
                                 "sessions": len(turns), "turn_stale": turn_stale})
            self.log.append({"day": d.day, "prompt": prompt.text, "injected": got, "brought": back, "stale": stale,
                             "turns": [b[0] for b in turns], "turn_stale": turn_stale,
                             **({"tier_before": before} if prompt.recall_task else {})})
            if prompt.recall_task and tasks.get(prompt.needs[0]) in ("cold", "archive"):
                after = self.tier(prompt.needs[0], when(d.day, 10 + i, 1))
                self.promotions.append({"day": d.day, "key": prompt.needs[0], "before": tasks[prompt.needs[0]],
                                        "at_prompt": before, "after": after,
                                        "injected": prompt.needs[0] in set(got) | set(back),
                                        "in_context": prompt.needs[0] in seen})
            if self.capture:
                key = prompt.needs[0]
                talk.add("assistant", prompt.reply or lc.reply(self.texts[key][-1], d.day + i), when(d.day, 10 + i, 0, 20))
                lc.fire(self.hooks["Stop"], talk.payload("Stop", stop_hook_active=False), self.root,
                        when(d.day, 10 + i, 0, 21))
                if prompt.recall_task and tasks.get(key) in ("cold", "archive"):
                    ct.wait_drained(self.root)  # the turn captured: a reply that used the memory counts
                    self.promotions[-1]["after_turn"] = self.tier(key, when(d.day, 10 + i, 0, 40))
        if self.capture:
            lc.fire(self.hooks["SessionEnd"], talk.payload("SessionEnd", reason="logout"), self.root,
                    when(d.day, 17, 0))
            ct.wait_drained(self.root)

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
    s, p, pr, b = life.starts, life.prompts, life.promotions, life.brought
    after_first = [x for x in s if x["day"] > 2]
    lost, trashed = life.lost()
    share = lambda a, b: f"{a / b:.2f}" if b else "n/a"  # noqa: E731
    items = sum(len(x["keys"]) for x in s)
    rows = [
        ("working-day sessions", f"{len(s)} over {days} days"),
        ("stale facts injected (session start / prompts; memories, captured turns apart)", f"{sum(x['stale'] for x in s)} / {sum(x['stale'] for x in p)}"),
        ("empty session starts (after day 2)", f"{sum(1 for x in after_first if not x['keys'])} of {len(after_first)}"),
        ("session start: share written in the last 14 days", share(sum(x["fresh"] for x in s), items)),
        ("session start: precision (the day's project and the team)", share(sum(x["relevant"] for x in s), items)),
        ("session start: recall of those", share(sum(x["relevant"] for x in s), sum(x["wanted"] for x in s))),
        ("prompts: precision of injected memories", share(sum(x["hits"] for x in p), sum(len(x["keys"]) for x in p))),
        ("prompts: recall (needed memory in the session's context)", share(sum(x["found"] for x in p), sum(x["needed"] for x in p))),
        ("promotion fired when a cold/archived memory was needed: at the prompt", f"{sum(1 for x in pr if x['after'] == 'hot')} of {len(pr)}"),
        ("  ... by the end of the agent's turn (its reply used the memory)",
         f"{sum(1 for x in pr if x.get('after_turn', x['after']) == 'hot')} of {len(pr)}" if life.capture else "off"),
        ("  ... of those, brought back by the session start", f"{sum(1 for x in pr if x.get('at_prompt') == 'hot')}"),
        ("  ... and the memory was injected (by that prompt)", f"{sum(1 for x in pr if x['injected'])} of {len(pr)}"),
        ("  ... and the memory was in the session's context (start block or a prompt)",
         f"{sum(1 for x in pr if x.get('in_context'))} of {len(pr)}"),
        ("session start brought back (last session): sessions / memories",
         f"{len(b)} / {sum(len(x['keys']) for x in b)}"),
        ("  ... precision (the day's project and the team)", share(sum(x["relevant"] for x in b),
                                                                    sum(len(x["keys"]) for x in b))),
        ("captured sessions listed in the session-start block", str(sum(x.get("sessions", 0) for x in s))),
        ("prompts: captured turns injected / with a superseded fact's text",
         f"{sum(x.get('sessions', 0) for x in p)} / {sum(x.get('turn_stale', 0) for x in p)}"),
        ("captured: sessions / turns", "{} / {}".format(*life.captured) if life.capture else "off"),
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
    ap.add_argument("--no-capture", action="store_true", help="fire no capture hook (no session is captured)")
    args = ap.parse_args(argv)
    check_markers()
    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="memstrata-life-"))
    base.mkdir(parents=True, exist_ok=bool(not args.keep))
    root = base / "memory"
    perf_cli.RUNTIME = Path(tempfile.mkdtemp(prefix="memstrata-life-run-"))
    life = Life(root, cold_starts=not args.warm, capture=not args.no_capture)
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
        shutil.rmtree(perf_cli.RUNTIME, ignore_errors=True)
    life.captured = lc.captured(root)
    if args.keep:
        (base / "log.json").write_text(json.dumps(life.log, indent=1, ensure_ascii=False), encoding="utf-8")
    if args.json:
        print(json.dumps({"starts": life.starts, "prompts": life.prompts, "promotions": life.promotions,
                          "brought": life.brought, "captured": life.captured}, ensure_ascii=False, indent=1))
    else:
        print(table(life, args.days))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
