"""Safety under real processes and real faults: a write storm and SIGKILL crashes, then a full check.

Usage:
  python bench/safety.py                      # the long version: prints a Markdown table
  python bench/safety.py --writers 4 --per-writer 250 --kills 100

The CI tests (tests/memstrata/test_concurrency.py, test_crashes.py) import this file and
run the same code at a smaller size.

Storm: several real processes write to one root at once: API writers (each writes N new
entries with ids it chooses, and updates and deletes entries of the others), CLI writers
(`python -m memstrata.cli.app write ... --json`, one process per write), MCP clients each
driving a real `mem mcp` server process over stdio, and a reader that
parses every entry file it sees while the writers run. Every operation prints an "intent"
line before it starts and an "ack" line after it returned, so the check afterwards knows
what was acknowledged and what may or may not have happened.

Crashes: writer processes (writes, updates, deletes, maintenance with compression,
promotion) are killed with SIGKILL at random moments, round after round; the next round's
writers must get the lock at once. Afterwards every acknowledged write must be there with
one of the bodies it was given, every acknowledged delete must be in the trash, no temporary
file may count as an entry, and `doctor(fix=True)` must bring every index back in line.

The worker processes are bench/safety_workers.py; the check afterwards is bench/safety_check.py.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from safety_check import Log, lock_is_free, verify  # noqa: E402, F401  (lock_is_free: the tests use it from here)
from safety_workers import worker_env  # noqa: E402

WORKERS = Path(__file__).resolve().parent / "safety_workers.py"

STORM_CATEGORY = "storm"
CRASH_CATEGORY = "crash"


def _spawn(*argv: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(WORKERS), *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=worker_env(), start_new_session=True)


def storm(root: Path, api_writers: int = 3, per_writer: int = 250, cli_writers: int = 1, cli_per_writer: int = 50,
          update_rate: float = 0.15, delete_rate: float = 0.08, seed: int = 1, embedder=None,
          timeout: float = 3600, mcp_writers: int = 0, mcp_per_writer: int = 50) -> dict:
    """Run the write storm on a fresh root and verify; returns counts (failures empty when safe)."""
    from memstrata import Memory

    root = Path(root)
    Memory(root).init()
    stop = ".storm-stop"
    started = time.monotonic()
    procs = []
    for n in range(api_writers):
        procs.append(_spawn("worker", "--root", str(root), "--name", f"a{n}", "--count", str(per_writer),
                            "--seed", str(seed * 100 + n), "--category", STORM_CATEGORY,
                            "--update-rate", str(update_rate), "--delete-rate", str(delete_rate)))
    for n in range(cli_writers):
        procs.append(_spawn("cli", "--root", str(root), "--name", f"c{n}", "--count", str(cli_per_writer),
                            "--seed", str(seed * 100 + 50 + n), "--category", STORM_CATEGORY))
    for n in range(mcp_writers):
        procs.append(_spawn("mcp", "--root", str(root), "--name", f"m{n}", "--count", str(mcp_per_writer),
                            "--seed", str(seed * 100 + 80 + n), "--category", STORM_CATEGORY))
    reader_proc = _spawn("reader", "--root", str(root), "--stop", stop)
    log = Log()
    errors = []
    for p in procs:
        out, err = p.communicate(timeout=timeout)
        log.add_output(out)
        if p.returncode != 0:
            errors.append(f"writer exited {p.returncode}: {err.strip()[-500:]}")
    (root / stop).touch()
    out, err = reader_proc.communicate(timeout=300)
    (root / stop).unlink()
    log.add_output(out)
    seconds = time.monotonic() - started
    reading = next((r for r in log.records if r.get("op") == "reader"), {"seen": 0, "torn": -1, "examples": [err]})
    result = verify(root, log, embedder=embedder)
    result["failures"] = errors + result["failures"]
    if reading["torn"]:
        result["failures"].append(f"reader saw {reading['torn']} half-written files: {reading['examples']}")
    cli_failed = [r for r in log.records if r.get("op") == "write" and r.get("phase") == "failed"]
    result["failures"] += [f"cli/mcp write failed: {r['error']}" for r in cli_failed]
    result.update({"processes": api_writers + cli_writers + 2 * mcp_writers + 1 + cli_writers * cli_per_writer,
                   "writes": log.count("write"), "updates": log.count("update"), "deletes": log.count("delete"),
                   "reads_during_storm": reading["seen"], "torn_reads": reading["torn"],
                   "seconds": round(seconds, 1)})
    return result


def crashes(root: Path, kills: int = 20, writers_per_round: int = 2, per_writer: int = 400,
            min_delay: float = 0.3, max_delay: float = 4.0, seed: int = 7, embedder=None,
            lock_wait_limit: float = 100.0) -> dict:
    """Rounds of writers killed with SIGKILL at random moments; then verify (doctor --fix first)."""
    from memstrata import Memory

    root = Path(root)
    Memory(root).init()
    rng = random.Random(seed)
    log = Log()
    killed = rounds = 0
    slow_locks = []
    first_writes: list[float] = []
    started = time.monotonic()
    while killed < kills:
        rounds += 1
        procs = []
        for n in range(writers_per_round):
            name = f"r{rounds}w{n}"
            procs.append(_spawn("worker", "--root", str(root), "--name", name, "--count", str(per_writer),
                                "--seed", str(seed * 1000 + rounds * 10 + n), "--category", CRASH_CATEGORY,
                                "--mode", "crash", "--update-rate", "0.2", "--delete-rate", "0.1",
                                "--maintain-rate", "0.05"))
        # The next writers must get going although the last ones died holding the lock:
        # time from "ready" (model loaded) to the first acknowledged write.
        first_ack = _first_ack_delay(procs[0], lock_wait_limit)
        if first_ack is None:
            slow_locks.append(rounds)
        else:
            first_writes.append(first_ack)
        time.sleep(rng.uniform(min_delay, max_delay))
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                killed += 1
        for p in procs:
            out, _ = p.communicate(timeout=60)
            log.add_output(getattr(p, "_early", "") + out)
    seconds = time.monotonic() - started
    # A writer after the last kill is not blocked by a lock its predecessor held when it died.
    from memstrata.storage.lock import TreeLock

    t0 = time.monotonic()
    with TreeLock(root, timeout=10):
        pass
    next_lock = time.monotonic() - t0
    result = verify(root, log, embedder=embedder, fix=True)
    if slow_locks:
        result["failures"].append(f"rounds {slow_locks[:5]} got no write done within {lock_wait_limit:.0f}s "
                                  "of loading the model")
    result.update({"kills": killed, "rounds": rounds, "writes": log.count("write"),
                   "updates": log.count("update"), "deletes": log.count("delete"),
                   "maintenance_runs": log.count("maintain"), "promotions": log.count("promote"),
                   "maintenance_started": log.count("maintain", "intent"),
                   "promotions_started": log.count("promote", "intent"),
                   "first_write_seconds_max": round(max(first_writes, default=0.0), 1),
                   "first_write_seconds_median": round(sorted(first_writes)[len(first_writes) // 2], 2)
                   if first_writes else None,
                   "writes_in_flight_at_kill": log.count("write", "intent") - log.count("write"),
                   "next_lock_seconds": round(next_lock, 3), "seconds": round(seconds, 1)})
    return result


def _first_ack_delay(proc: subprocess.Popen, limit: float) -> float | None:
    """Read the worker's output (raw fd: nothing stays in a buffer that communicate() would miss)
    until its first acknowledged write; keeps what was read in proc._early."""
    import selectors

    fd = proc.stdout.fileno()
    sel = selectors.DefaultSelector()
    sel.register(fd, selectors.EVENT_READ)
    data = b""
    ready_at = None
    deadline = time.monotonic() + limit
    delay = None
    while time.monotonic() < deadline and delay is None:
        if not sel.select(timeout=0.5):
            if proc.poll() is not None:
                break
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        data += chunk
        for line in data.decode("utf-8", "replace").splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if record.get("op") == "ready" and ready_at is None:
                ready_at = time.monotonic()
            elif record.get("op") == "write" and record.get("phase") == "ack" and ready_at is not None:
                delay = time.monotonic() - ready_at
                break
    sel.close()
    proc._early = data.decode("utf-8", "replace")  # type: ignore[attr-defined]
    return delay


def table(rows: list[tuple[str, dict]]) -> str:
    lines = ["| run | processes / kills | writes | updates | deletes | entries checked | entries lost | "
             "torn reads | doctor fixes | seconds |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name, r in rows:
        procs = r.get("processes", r.get("kills", ""))
        if "kills" in r:
            procs = f"{r['kills']} kills"
        lines.append(f"| {name} | {procs} | {r['writes']} | {r['updates']} | {r['deletes']} | "
                     f"{r['entries_checked']} | {r['entries_lost']} | {r.get('torn_reads', '-')} | "
                     f"{r['doctor_fixed']} ({', '.join(r['doctor_kinds']) or 'none'}) | {r['seconds']} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--writers", type=int, default=4, help="API writer processes in the storm")
    parser.add_argument("--per-writer", type=int, default=250)
    parser.add_argument("--cli-writers", type=int, default=1)
    parser.add_argument("--cli-per-writer", type=int, default=60)
    parser.add_argument("--mcp-writers", type=int, default=1)
    parser.add_argument("--mcp-per-writer", type=int, default=100)
    parser.add_argument("--kills", type=int, default=100)
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--only", choices=("storm", "crashes"), default=None, help="run one of the two")
    args = parser.parse_args(argv)
    import tempfile

    base = Path(args.workdir or tempfile.mkdtemp(prefix="memstrata-safety-"))
    rows = []
    failures = []
    if args.only in (None, "storm"):
        r = storm(base / "storm", api_writers=args.writers, per_writer=args.per_writer,
                  cli_writers=args.cli_writers, cli_per_writer=args.cli_per_writer,
                  mcp_writers=args.mcp_writers, mcp_per_writer=args.mcp_per_writer)
        rows.append(("storm", r))
        failures += r["failures"]
        print(json.dumps(r, indent=1), file=sys.stderr, flush=True)
    if args.only in (None, "crashes"):
        c = crashes(base / "crash", kills=args.kills)
        rows.append(("crashes", c))
        failures += c["failures"]
        print(json.dumps(c, indent=1), file=sys.stderr, flush=True)
    print(table(rows))
    for f in failures[:50]:
        print(f"FAIL: {f}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
