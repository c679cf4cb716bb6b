"""The worker processes of bench/safety.py: API, CLI and MCP writers and a reader, each printing what it does.

Every operation prints an "intent" JSON line before it starts and an "ack" line after it
returned (bench/safety_check.py reads them to know what must be in the tree).

Usage (started by bench/safety.py): python bench/safety_workers.py worker|cli|mcp|reader --root R ...
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa "
         "quebec romeo sierra tango uniform victor whiskey xray yankee zulu postgres deploy budget review "
         "server backup release cache index vector archive summary meeting decision friday").split()


def worker_env() -> dict:
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
                               "--root", args.root], input=body, capture_output=True, text=True, env=worker_env())
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
                                   env=worker_env())

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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("role", choices=("worker", "cli", "mcp", "reader"))
    parser.add_argument("--root", required=True)
    parser.add_argument("--name", default="w")
    parser.add_argument("--count", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--category", default="storm")
    parser.add_argument("--mode", default="storm", help="storm or crash (the API worker)")
    parser.add_argument("--update-rate", type=float, default=0.15)
    parser.add_argument("--delete-rate", type=float, default=0.08)
    parser.add_argument("--maintain-rate", type=float, default=0.0)
    parser.add_argument("--stop", default=".storm-stop")
    args = parser.parse_args(argv)
    {"worker": worker, "cli": cli_worker, "mcp": mcp_worker, "reader": reader}[args.role](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
