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

Worker modes (internal): `python bench/safety.py worker|cli|reader ...`.
"""
from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa "
         "quebec romeo sierra tango uniform victor whiskey xray yankee zulu postgres deploy budget review "
         "server backup release cache index vector archive summary meeting decision friday").split()
STORM_CATEGORY = "storm"
CRASH_CATEGORY = "crash"


def _env() -> dict:
    env = dict(os.environ)
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    env["MEMSTRATA_SERVICE"] = "off"  # each process works on the tree itself
    env.setdefault("MEMSTRATA_THREADS", "1")
    return env


def digest(text: str) -> str:
    return hashlib.sha256(text.rstrip("\n").encode("utf-8")).hexdigest()[:16]


def _body(rng: random.Random, name: str, n: int) -> str:
    words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 40)))
    return f"{name} note {n} ({rng.getrandbits(48):x}): {words}.\n\nSecond paragraph {rng.getrandbits(32):x}."


def _emit(record: dict) -> None:
    sys.stdout.write(json.dumps(record) + "\n")
    sys.stdout.flush()


# ----------------------------------------------------------------------------- worker processes


def worker(args) -> None:
    """An API writer: writes its own entries, updates/deletes others', maintenance in crash mode."""
    from memstrata import Memory
    from memstrata.errors import MemstrataError

    rng = random.Random(args.seed)
    m = Memory(args.root)
    m.embedder  # load the model before the first write (outside the tree lock)
    category = f"{args.category}/{args.name}"
    _emit({"op": "ready", "pid": os.getpid()})
    old = (m.now() - timedelta(days=45)).isoformat()
    for n in range(args.count):
        entry_id = f"{args.name}-{n:04d}"
        body = _body(rng, args.name, n)
        created = old if args.mode == "crash" and rng.random() < 0.3 else None
        _emit({"op": "write", "phase": "intent", "id": entry_id, "body": digest(body)})
        m.write(body, title=f"{args.name} {n} {rng.choice(WORDS)}", category=category, id=entry_id,
                tags=[rng.choice(WORDS)], force=True, created=created)
        _emit({"op": "write", "phase": "ack", "id": entry_id})
        roll = rng.random()
        if roll < args.update_rate + args.delete_rate:
            peers = [e for e in m.list(category=args.category) if e.id and not e.id.startswith(args.name + "-")
                     and e.id.count("-") == 1]
            if not peers and args.mode == "crash":
                peers = [e for e in m.list(category=category)]
            if peers:
                target = rng.choice(peers)
                if roll < args.update_rate:
                    new_body = _body(rng, args.name, n) + " (updated)"
                    _emit({"op": "update", "phase": "intent", "id": target.id, "body": digest(new_body)})
                    try:
                        m.update(target.id, new_body)
                        _emit({"op": "update", "phase": "ack", "id": target.id})
                    except MemstrataError as exc:
                        _emit({"op": "update", "phase": "failed", "id": target.id, "error": exc.kind})
                else:
                    _emit({"op": "delete", "phase": "intent", "id": target.id})
                    try:
                        m.delete(target.id)
                        _emit({"op": "delete", "phase": "ack", "id": target.id})
                    except MemstrataError as exc:
                        _emit({"op": "delete", "phase": "failed", "id": target.id, "error": exc.kind})
        if args.mode == "crash" and rng.random() < args.maintain_rate:
            _emit({"op": "maintain", "phase": "intent"})
            m.maintain()
            _emit({"op": "maintain", "phase": "ack"})
            hits = m.list(category=category)
            if hits:
                probe = rng.choice(hits)
                _emit({"op": "promote", "phase": "intent"})
                m.promote(probe.title, threshold=0.2)
                _emit({"op": "promote", "phase": "ack"})
    _emit({"op": "done"})


def cli_worker(args) -> None:
    """A CLI writer: one `mem write` process per entry."""
    rng = random.Random(args.seed)
    _emit({"op": "ready", "pid": os.getpid()})
    for n in range(args.count):
        body = _body(rng, args.name, n)
        title = f"{args.name} {n} cli"
        _emit({"op": "write", "phase": "intent", "title": title, "body": digest(body)})
        proc = subprocess.run([sys.executable, "-m", "memstrata.cli.app", "write", "-", "--title", title,
                               "--category", f"{args.category}/{args.name}", "--force", "--json",
                               "--root", args.root], input=body, capture_output=True, text=True, env=_env())
        if proc.returncode != 0:
            _emit({"op": "write", "phase": "failed", "title": title, "error": proc.stderr.strip()[-300:]})
            continue
        result = json.loads(proc.stdout)
        _emit({"op": "write", "phase": "ack", "id": result["id"], "title": title, "body": digest(body)})
    _emit({"op": "done"})


def mcp_worker(args) -> None:
    """An MCP client: spawns `mem mcp` (a real server process over stdio) and writes through its tool."""
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    rng = random.Random(args.seed)
    params = StdioServerParameters(command=sys.executable, args=["-m", "memstrata.cli.app", "mcp", "--root", args.root],
                                   env=_env())

    async def run():
        with open(os.devnull, "w") as devnull:
            async with stdio_client(params, errlog=devnull) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    _emit({"op": "ready", "pid": os.getpid()})
                    for n in range(args.count):
                        body = _body(rng, args.name, n)
                        title = f"{args.name} {n} mcp"
                        _emit({"op": "write", "phase": "intent", "title": title, "body": digest(body)})
                        result = await session.call_tool("write", {
                            "body": body, "title": title, "category": f"{args.category}/{args.name}", "force": True})
                        if getattr(result, "is_error", None) or getattr(result, "isError", None):
                            _emit({"op": "write", "phase": "failed", "title": title,
                                   "error": result.content[0].text[-300:]})
                            continue
                        data = getattr(result, "structured_content", None) or getattr(result, "structuredContent", None)
                        if not data or "id" not in data:
                            data = json.loads(result.content[0].text)
                        _emit({"op": "write", "phase": "ack", "id": data["id"], "title": title, "body": digest(body)})

    anyio.run(run)
    _emit({"op": "done"})


def reader(args) -> None:
    """Parses every entry file it can see until the stop file appears; counts torn reads."""
    from memstrata.errors import CorruptEntry
    from memstrata.storage.catalog import iter_entry_files, read_entry_file
    from memstrata.storage.codec import split_frontmatter

    root = Path(args.root)
    seen = torn = indexes_read = 0
    examples = []
    _emit({"op": "ready", "pid": os.getpid()})
    while not (root / args.stop).exists():
        for rel, _ in list(iter_entry_files(root)):
            try:
                entry = read_entry_file(root, rel)
                seen += 1
                if not entry.id:
                    torn += 1
                    examples.append(f"{rel}: no id")
            except FileNotFoundError:
                continue
            except CorruptEntry as exc:
                torn += 1
                examples.append(f"{rel}: {exc.message}")
        for folder, dirs, files in os.walk(root):  # folders vanish under us (moves): os.walk skips them
            dirs[:] = [d for d in dirs if not d.startswith(".")]  # not .vectors/.trash/...: not ours to read
            if "INDEX.md" not in files:
                continue
            index = Path(folder) / "INDEX.md"
            try:
                split_frontmatter(index.read_text(encoding="utf-8"))
                indexes_read += 1
            except FileNotFoundError:
                continue
            except Exception as exc:  # noqa: BLE001
                torn += 1
                examples.append(f"{index}: {exc}")
        time.sleep(0.05)  # a busy reader, not a CPU hog that starves the writers on a small machine
    _emit({"op": "reader", "seen": seen, "torn": torn, "indexes": indexes_read, "examples": examples[:5]})


# ----------------------------------------------------------------------------- the parent side


@dataclass
class Log:
    """Everything the workers said, and what it implies for the final state."""

    records: list = field(default_factory=list)

    def add_output(self, text: str) -> None:
        for line in text.splitlines():
            try:
                self.records.append(json.loads(line))
            except ValueError:
                pass  # a line cut by SIGKILL

    def acked_writes(self) -> set[str]:
        return {r["id"] for r in self.records if r.get("op") == "write" and r.get("phase") == "ack"}

    def bodies(self) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {}
        titles = {r["title"]: r["body"] for r in self.records if r.get("op") == "write" and "title" in r
                  and r.get("phase") == "intent"}
        for r in self.records:
            if r.get("op") in ("write", "update") and r.get("phase") in ("intent", "ack") and "body" in r \
                    and r.get("id"):
                out.setdefault(r["id"], set()).add(r["body"])
            if r.get("op") == "write" and r.get("phase") == "ack" and "title" in r:
                out.setdefault(r["id"], set()).add(titles.get(r["title"], r.get("body")))
        return out

    def deletes(self) -> tuple[set[str], set[str]]:
        acked = {r["id"] for r in self.records if r.get("op") == "delete" and r.get("phase") == "ack"}
        tried = {r["id"] for r in self.records if r.get("op") == "delete" and r.get("phase") == "intent"}
        return acked, tried - acked

    def count(self, op: str, phase: str = "ack") -> int:
        return sum(1 for r in self.records if r.get("op") == op and r.get("phase") == phase)


def _spawn(*argv: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, __file__, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=_env(), start_new_session=True)


def lock_is_free(root: Path) -> bool:
    path = Path(root) / ".lock"
    if not path.exists():
        return True
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


def index_rows(root: Path) -> dict[str, set[str]]:
    """category -> ids listed in its INDEX.md."""
    out = {}
    for index in Path(root).rglob("INDEX.md"):
        rel = index.parent.relative_to(root).as_posix()
        if rel == "." or rel.startswith("."):
            continue
        out[rel] = {line.split(" | ")[1].strip() for line in index.read_text(encoding="utf-8").splitlines()
                    if line.startswith("| [")}
    return out


def verify(root: Path, log: Log, embedder=None, fix: bool = False) -> dict:
    """Check the final state against the log; returns counts and a list of failures (empty = safe)."""
    from memstrata import Memory
    from memstrata.storage import sidecars
    from memstrata.storage.catalog import iter_entry_files, read_entry_file

    root = Path(root)
    failures: list[str] = []
    m = Memory(root, embedder=embedder)
    doctor_before = m.doctor(fix=fix)
    doctor_after = m.doctor() if fix else doctor_before
    if not doctor_after.healthy:
        failures += [f"doctor: {f.kind} {f.path}: {f.detail}" for f in doctor_after.problems]

    on_disk: dict[str, list] = {}
    for rel, _ in iter_entry_files(root):
        entry = read_entry_file(root, rel)  # raises if anything unparseable is left
        on_disk.setdefault(entry.id, []).append(entry)
    trash_ids = {item.id for item in m.trash_list()}
    acked = log.acked_writes()
    bodies = log.bodies()
    deleted, maybe_deleted = log.deletes()
    checked = lost = 0
    for entry_id in sorted(acked):
        checked += 1
        here = on_disk.get(entry_id, [])
        if entry_id in deleted:
            if here:
                failures.append(f"{entry_id}: deleted (acknowledged) but still in the tree")
            if entry_id not in trash_ids:
                lost += 1
                failures.append(f"{entry_id}: deleted (acknowledged) but not in the trash")
            continue
        if not here:
            if entry_id in maybe_deleted and entry_id in trash_ids:
                continue
            lost += 1
            failures.append(f"{entry_id}: acknowledged write missing")
            continue
        if len(here) > 1:
            failures.append(f"{entry_id}: {len(here)} files")
        full = sidecars.full_body(root, here[0])
        if digest(full) not in bodies.get(entry_id, set()):
            lost += 1
            failures.append(f"{entry_id}: body is none of the bodies written to it")
    known = set(bodies) | acked
    phantoms = [i for i in on_disk if i not in known]
    if phantoms:
        failures.append(f"entries nobody wrote: {phantoms[:5]}")
    temp_entries = [e.path for es in on_disk.values() for e in es if Path(e.path).name.startswith(".")]
    if temp_entries:
        failures.append(f"temporary files taken for entries: {temp_entries[:5]}")

    listed = index_rows(root)
    by_category: dict[str, set[str]] = {}
    for entries in on_disk.values():
        for e in entries:
            by_category.setdefault(e.category, set()).add(e.id)
    for category, ids in by_category.items():
        if listed.get(category, set()) != ids:
            failures.append(f"{category}/INDEX.md lists {len(listed.get(category, ()))} ids, the folder holds "
                            f"{len(ids)}")
    vector_rows = _vector_counts(root, m)
    if vector_rows is not None:
        for entry_id in on_disk:
            if vector_rows.get(entry_id, 0) != 1:
                failures.append(f"{entry_id}: {vector_rows.get(entry_id, 0)} vector rows (chunk 0)")
        extra = set(vector_rows) - set(on_disk)
        if extra:
            failures.append(f"vector rows without entries: {sorted(extra)[:5]}")
    if not lock_is_free(root):
        failures.append("the tree lock is still held")
    return {"acknowledged_writes": len(acked), "entries_checked": checked, "entries_lost": lost,
            "entries_on_disk": sum(len(v) for v in on_disk.values()), "in_trash": len(trash_ids),
            "doctor_findings": len(doctor_before.findings),
            "doctor_fixed": sum(1 for f in doctor_before.findings if f.fixed),
            "doctor_kinds": sorted({f.kind for f in doctor_before.findings}),
            "failures": failures}


def _vector_counts(root: Path, m) -> dict[str, int] | None:
    try:
        from memstrata.retrieval.table import VectorIndex
    except ImportError:
        return None
    index = VectorIndex(root, m.settings)
    if not index.exists():
        return None
    frame = index.frame()
    counts: dict[str, int] = {}
    for i in frame.ids:
        counts[i] = counts.get(i, 0) + 1
    return counts


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
    sub = parser.add_subparsers(dest="command")
    for name in ("worker", "cli", "mcp", "reader"):
        p = sub.add_parser(name)
        p.add_argument("--root", required=True)
        p.add_argument("--name", default="w")
        p.add_argument("--count", type=int, default=10)
        p.add_argument("--seed", type=int, default=0)
        p.add_argument("--category", default=STORM_CATEGORY)
        p.add_argument("--mode", default="storm")
        p.add_argument("--update-rate", type=float, default=0.15)
        p.add_argument("--delete-rate", type=float, default=0.08)
        p.add_argument("--maintain-rate", type=float, default=0.0)
        p.add_argument("--stop", default=".storm-stop")
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
    if args.command == "worker":
        worker(args)
        return 0
    if args.command == "cli":
        cli_worker(args)
        return 0
    if args.command == "mcp":
        mcp_worker(args)
        return 0
    if args.command == "reader":
        reader(args)
        return 0
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
