"""The SessionStart hook with the service stopped: a new `mem` process per run, on a tree of 20,000 entries.

Usage:
  python bench/session_start.py                       # builds /tmp/memstrata-start/tree (20,000 entries) once
  python bench/session_start.py --entries 20000 --runs 15 --work /tmp/memstrata-start

Each run is what Claude Code does at the start of a session after the service went idle: it runs
`mem autoload --hook` (the README's recipe, --promote, default budget 2,000) with a SessionStart
payload, and no service runs. The client answers from the catalog and the weights (no model) and
starts the service in the background; the benchmark stops that service after each run, so every
run is cold. Printed: wall time (process start to exit) median / min / max, the CPU the process
used, the block's size, and the load average: a figure taken at load > 3 is no published figure
(the target of issue 37 is <= 300 ms on a quiet machine).

The tree: bench/perf_tree.py's synthetic entries (20-80 words, 33 categories, written over eleven
months), files and INDEX.md only (the block needs no vectors).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import perf_cli  # noqa: E402
from perf_cli import env_for, mem_bin, stop_service  # noqa: E402
from perf_tree import build_tree  # noqa: E402

NOW = "2026-12-01T09:00:00Z"  # the synthetic entries were written from January to November 2026
PAYLOAD = {"session_id": "bench", "hook_event_name": "SessionStart", "source": "startup", "cwd": "/tmp"}


def cold_run(root: Path) -> tuple[float, float, str]:
    """(wall s, CPU s, stdout) of one SessionStart hook in a new process, no service running."""
    stop_service(root)
    env = {**env_for(root, "auto"), "MEMSTRATA_NOW": NOW}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(mem_bin() + ["autoload", "--hook", "--promote"], input=json.dumps(PAYLOAD),
                          capture_output=True, text=True, env=env, timeout=120)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0 or done.stderr:
        raise RuntimeError(f"the hook failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stdout


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--entries", type=int, default=20000)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--work", default="/tmp/memstrata-start")
    args = ap.parse_args(argv)
    work = Path(args.work)
    root = work / "tree"
    perf_cli.RUNTIME = work / "run"
    perf_cli.RUNTIME.mkdir(parents=True, mode=0o700, exist_ok=True)
    perf_cli.RUNTIME.chmod(0o700)
    marker = work / "tree.json"
    if not (marker.is_file() and json.loads(marker.read_text()).get("entries") == args.entries and root.is_dir()):
        t0 = time.perf_counter()
        build_tree(root, args.entries)
        marker.write_text(json.dumps({"entries": args.entries}))
        print(f"built {args.entries} entries in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    cold_run(root)  # the catalog made once (a tree's first call builds it), the page cache warm
    load0 = os.getloadavg()
    walls, cpus, out = [], [], ""
    try:
        for _ in range(args.runs):
            wall, cpu, out = cold_run(root)
            walls.append(wall)
            cpus.append(cpu)
    finally:
        stop_service(root)
    load1 = os.getloadavg()
    blocks = out.count("<memory id=")
    print("| measure | value |\n| --- | --- |")
    print(f"| entries | {args.entries:,} |")
    print(f"| SessionStart hook, service stopped: wall median (min-max), {args.runs} runs | "
          f"{statistics.median(walls) * 1000:.0f} ms ({min(walls) * 1000:.0f}-{max(walls) * 1000:.0f}) |")
    print(f"| CPU of the hook's process, median | {statistics.median(cpus) * 1000:.0f} ms |")
    print(f"| memories in the block / characters | {blocks} / {len(out):,} |")
    print(f"| load average (1 min) before / after | {load0[0]:.1f} / {load1[0]:.1f} |")
    if max(load0[0], load1[0]) > 3:
        print("\nThe machine was loaded (> 3): these times are not the figure; run again on a quiet machine.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
