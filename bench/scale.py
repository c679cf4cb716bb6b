"""A year of sessions on a laptop: memstrata at 10k, 100k and 300k captured turns plus a vault, one table.

Usage:
  python bench/scale.py --reuse /tmp/scale-work                          # 10,000 turns (trees built when missing)
  python bench/scale.py --reuse DIR --sizes 10000,100000,300000 --out bench/results/scale.md
  python bench/scale.py --reuse DIR --sizes 300000 --only quality        # one kind of measure
  python bench/scale.py --reuse DIR --rate --adopt-notes 20000           # capture and adopt against the model

Needs the notes corpora in /tmp/notes-corpora (`python bench/notes_corpora.py`), the five LoCoMo
conversations of ../shared/bench/locomo and, for the filler conversations, the public
snap-research/locomo repository's mirror (/work/.mirror/snap-research+locomo; the error says so).

Each tree (DIR/tree-N) holds N captured turns and a vault of N/10 notes (`--vault-share`): the five
LoCoMo conversations captured once, filler conversations captured again and again with new session
ids and dates, the notes corpora copied; bench/scale_tree.py says how it is built (through the
engine's own adopt and capture paths, each distinct text embedded once: the shortcut is said in
the table). Measures, each through a fresh `mem` process as a user or a hook runs it (the
benchmark's own service folder; timings are wall seconds, medians of --runs with min-max):
  - `mem recall` end to end with the service warm (p50, p95), and `Memory.recall` in process (p50,
    p95, and its CPU per query: process CPU seconds, the figure a loaded machine moves least), and
    the first `Memory.recall` after a write (three notes written to `bench-scratch/`, left in the tree);
  - `mem write` through the service (WRITES notes to `bench-scratch/`, left in the tree: the table's
    own upkeep runs on the way) and `mem recall` end to end after them;
  - SessionStart (`mem autoload --hook`, a SessionStart payload) with no service running;
  - `mem sync` with nothing to do, service warm and no service; `mem maintain`; `mem doctor`;
  - the service's resident size (now / peak) after all of the above;
  - disk: the tree's parts (Markdown, LanceDB, caches) per 1,000 captured turns, and the index
    against the text it indexes;
  - quality: recall@10 of the five conversations' questions in this tree against each
    conversation captured alone (the same capture, the same vectors);
  - with --rate: `mem capture` of a LoCoMo conversation and `mem init --adopt` of a vault of
    distinct notes (--adopt-notes), each against the bundled model alone on the same text
    (texts embedded for real, no memo), CPU seconds and wall.
Wall times mean something only on a quiet machine: the table gives the load average at each
size; run it with `uptime` below 3 (2 cores).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import perf_cli  # noqa: E402
from perf_cli import PY, pct, service_status, start_service, stop_service, timed  # noqa: E402

TARGETS = {
    "recall_warm": ("p50 <= 100 ms", lambda v: v <= 0.100),
    "rss": ("<= 600 MB", lambda v: v <= 600),
    "session_start": ("<= 300 ms", lambda v: v <= 0.300),
    "sync": ("<= 2 s", lambda v: v <= 2.0),
    "maintain": ("<= 60 s", lambda v: v <= 60.0),
    "doctor": ("<= 60 s", lambda v: v <= 60.0),
    "disk_ratio": ("index <= 3x its text", lambda v: v <= 3.0),
    "quality": ("within 0.05 of alone", lambda v: v >= -0.05),
    "adopt_ratio": ("<= 1.3x the model", lambda v: v <= 1.3),
}
KINDS = ("recall", "hooks", "walks", "writes", "disk", "quality")
WRITES = 45  # `mem write`s through the service: two of the table's own upkeeps (index_optimize_every 20)


def questions():
    """The five conversations' questions (categories 1-4) with their evidence, per conversation."""
    import locomo

    out = {}
    for f in sorted(Path(locomo.DATA).glob("*.json")):
        out[f.stem] = locomo.load(f)[1]
    return out


def query_texts(limit: int = 40) -> list[str]:
    qs = [q["query"] for conv in questions().values() for q in conv]
    step = max(1, len(qs) // limit)
    return qs[::step][:limit]


# --------------------------------------------------------------------------- measures
def inproc_worker(root: str, runs: int) -> dict:
    """In a fresh process: Memory.recall warm; wall and CPU per query."""
    from memstrata import Memory

    m = Memory(root)
    qs = query_texts()
    m.recall(qs[0], k=10, count_access=False)
    wall, cpu = [], []
    for r in range(runs):
        for q in qs:
            t0, c0 = time.perf_counter(), time.process_time()
            m.recall(q, k=10, count_access=False)
            wall.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
    after_write = []
    for r in range(3):  # a capture or a note between two prompts: the next recall sees a new table version
        m.write(f"Scratch note of the scale benchmark, run {time.time_ns()}: the build cache warms on Mondays.",
                title=f"Scale benchmark scratch {time.time_ns()}", category="bench-scratch")
        t0 = time.perf_counter()
        m.recall(qs[r], k=10, count_access=False)
        after_write.append(time.perf_counter() - t0)
    import resource

    return {"p50": pct(wall, 0.5), "p95": pct(wall, 0.95), "cpu_p50": pct(cpu, 0.5), "cpu_p95": pct(cpu, 0.95),
            "after_write": statistics.median(after_write), "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def quality_worker(root: str, alone_dir: str, work: str) -> dict:
    """recall@10 of each conversation's questions in the big tree and in its tree alone."""
    import capture as cap
    import scale_tree

    from memstrata import Memory

    big, where = Memory(root), scale_tree.where_map(Path(root))
    out = {}
    for conv, qs in questions().items():
        alone_root = Path(alone_dir) / f"conv{conv}"
        alone_where = scale_tree.build_alone(alone_root, conv, Path(work))
        # The conversation's own turns only, as in the tree alone (the same session ids): the five
        # conversations share turn ids ("D5:1"), and another's turn counted as this one's answer
        # (until 2026-12-06: every figure of this row before then was too high).
        if any(where.get(k) != v for k, v in alone_where.items()):
            raise SystemExit(f"conversation {conv}'s turns in {root} are not those of its tree alone: rebuild both")
        rows_big = cap.evaluate(big, qs, alone_where, conv)
        rows_alone = cap.evaluate(Memory(alone_root), qs, alone_where, conv)
        out[conv] = {"n": len(qs), "big": cap.mean(rows_big, "r10"), "alone": cap.mean(rows_alone, "r10")}
    return out


def child(args: list[str], root: Path, work: Path, timeout: int = 7200) -> dict:
    """Run this script's hidden subcommand `args` in a fresh process (no service); its last JSON line."""
    p = subprocess.run([PY, __file__, "--reuse", str(work), *args], capture_output=True, text=True, timeout=timeout,
                       env={**perf_cli.env_for(root, "off"), "MEMSTRATA_SERVICE": "off"})
    if p.returncode != 0:
        raise RuntimeError(p.stderr[-3000:])
    return json.loads(p.stdout.strip().splitlines()[-1])


def session_start(root: Path, runs: int) -> list[float]:
    hook = json.dumps({"hook_event_name": "SessionStart", "session_id": "scale-bench", "cwd": str(root),
                       "source": "startup"})
    out = []
    for _ in range(runs):
        stop_service(root)
        out.append(timed(["autoload", "--hook"], root, "auto", stdin=hook)[0])
    stop_service(root)
    return out


def disk_use(root: Path, turns: int) -> dict:
    """Bytes of the tree's parts: captured sessions' Markdown, the vault's, LanceDB, caches."""
    def size(path: Path) -> int:
        if path.is_file():
            return path.stat().st_size
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())

    from memstrata.storage import layout

    vectors = layout.path(root, ".vectors")
    parts = {"sessions": size(root / "notes" / "sessions") if (root / "notes" / "sessions").exists()
             else size(root / "sessions"),
             "lance": size(vectors / "chunks.lance"), "term statistics cache": size(vectors / "termstats.bin") if (vectors / "termstats.bin").exists() else 0,
             "catalog and caches": size(layout.path(root, ".cache"))}
    parts["vault notes"] = size(root) - sum(size(p) for p in [vectors, layout.path(root, ".cache")]) - parts["sessions"]
    # the text indexed: the Markdown of the captured sessions and of the vault's notes
    return {"parts": parts, "turns": turns, "indexed_text": parts["sessions"] + parts["vault notes"]}


def fmt(values, unit="ms") -> str:
    if not values:
        return ""
    k = 1000 if unit == "ms" else 1
    med = statistics.median(values)
    return f"{med * k:.0f} ({min(values) * k:.0f}-{max(values) * k:.0f}) {unit}" if unit == "ms" else \
        f"{med:.2f} ({min(values):.2f}-{max(values):.2f}) s"


def measure(root: Path, n: int, runs: int, kinds: set, work: Path, add) -> None:
    turns = json.loads((root.parent / f"{root.name}.built.json").read_text())["turns"]
    load = os.getloadavg()[0]
    add("load average at the start", n, f"{load:.1f}")
    stop_service(root)
    if "walks" in kinds:
        took = [timed(["sync", "--json"], root, "off")[0] for _ in range(runs)]
        add("mem sync, nothing to do, no service", n, fmt(took, "s"), "sync", statistics.median(took))
    if "hooks" in kinds:
        st = session_start(root, runs)
        add("SessionStart (mem autoload --hook), no service running", n, fmt(st), "session_start",
            statistics.median(st))
    if "recall" in kinds:
        res = child(["--inproc", str(root), str(runs)], root, work)
        add("Memory.recall in process, warm: p50 / p95", n, f"{res['p50'] * 1000:.0f} / {res['p95'] * 1000:.0f} ms")
        add("  its CPU per query: p50 / p95", n, f"{res['cpu_p50'] * 1000:.0f} / {res['cpu_p95'] * 1000:.0f} ms")
        add("  the first recall after a write (a new table version), median of 3", n, f"{res['after_write'] * 1000:.0f} ms")
    if kinds & {"recall", "walks", "writes"}:
        start_service(root)
        qs = query_texts()
        timed(["recall", qs[0], "--json"], root)
        if "recall" in kinds:
            warm = [timed(["recall", qs[i % len(qs)], "--json"], root)[0] for i in range(max(runs * 4, 20))]
            add("mem recall end to end, service warm: p50 / p95", n,
                f"{pct(warm, 0.5) * 1000:.0f} / {pct(warm, 0.95) * 1000:.0f} ms", "recall_warm", pct(warm, 0.5))
        if "walks" in kinds:
            took = [timed(["sync", "--json"], root)[0] for _ in range(runs)]
            add("mem sync, nothing to do, service warm", n, fmt(took, "s"), "sync", statistics.median(took))
            took = [timed(["maintain", "--json"], root)[0] for _ in range(2)]
            add("mem maintain (first run, then again), service warm", n, " / ".join(f"{t:.1f} s" for t in took),
                "maintain", max(took))
            from memstrata.storage import clean_records, layout

            layout.path(root, clean_records.CLEAN_FILE).unlink(missing_ok=True)  # the first run checks every record
            runs_found = []
            for _ in range(2):
                took, p = timed(["doctor", "--json"], root)
                runs_found.append((took, len(json.loads(p.stdout).get("findings", [])) if p.stdout.strip().startswith("{")
                                   else "?"))
            add("mem doctor (first run, then again: records found clean are not scanned again), in its own process", n,
                " / ".join(f"{t:.1f} s" for t, _ in runs_found) + f" ({runs_found[-1][1]} findings)", "doctor",
                runs_found[-1][0])
        if "writes" in kinds:
            took = [timed(["write", f"Scratch note {i} of the scale benchmark ({time.time_ns()}): the build cache "
                           "warms on Mondays.", "--title", f"Scale benchmark scratch {time.time_ns()}",
                           "--category", "bench-scratch", "--force", "--json"], root)[0] for i in range(WRITES)]
            add(f"mem write through the service, {WRITES} notes: p50 / max", n,
                f"{pct(took, 0.5) * 1000:.0f} / {max(took) * 1000:.0f} ms")
            time.sleep(15)  # the service's upkeep of the written table, between calls
            timed(["recall", qs[1], "--json"], root)
            after = [timed(["recall", qs[i % len(qs)], "--json"], root)[0] for i in range(max(runs * 4, 20))]
            add("mem recall end to end after those writes (the table's upkeep included): p50 / p95", n,
                f"{pct(after, 0.5) * 1000:.0f} / {pct(after, 0.95) * 1000:.0f} ms", "recall_warm", pct(after, 0.5))
        st = service_status(root)
        add("service RSS now / peak (this tree open, after the calls above)", n,
            f"{st['rss_mb']:.0f} / {st['peak_rss_mb']:.0f} MB", "rss", st["rss_mb"])
        stop_service(root)
    if "disk" in kinds:
        d = disk_use(root, turns)
        parts = d["parts"]
        per = {k: v / turns * 1000 / 1e6 for k, v in parts.items()}
        add("disk per 1,000 captured turns (whole tree, MB)", n, f"{sum(parts.values()) / turns * 1000 / 1e6:.2f}")
        add("  of which", n, ", ".join(f"{k} {v:.2f}" for k, v in per.items()))
        index = parts["lance"] + parts["term statistics cache"]
        add("index (LanceDB + term statistics cache) / the Markdown it indexes", n,
            f"{index / max(d['indexed_text'], 1):.1f}x ({index / 1e6:.0f} MB / {d['indexed_text'] / 1e6:.0f} MB)",
            "disk_ratio", index / max(d["indexed_text"], 1))
    if "quality" in kinds:
        q = child(["--quality", str(root), str(work / "alone"), str(work)], root, work, timeout=4 * 3600)
        for conv, v in q.items():
            add(f"recall@10 of conversation {conv}'s {v['n']} questions: in this tree / alone", n,
                f"{v['big']:.3f} / {v['alone']:.3f} ({v['big'] - v['alone']:+.3f})", "quality", v["big"] - v["alone"])
        total = sum(v["n"] for v in q.values())
        big = sum(v["big"] * v["n"] for v in q.values()) / total
        alone = sum(v["alone"] * v["n"] for v in q.values()) / total
        add("recall@10, all five conversations: in this tree / alone", n, f"{big:.3f} / {alone:.3f} ({big - alone:+.3f})",
            "quality", big - alone)
    add("load average at the end", n, f"{os.getloadavg()[0]:.1f}")


def rates(work: Path, adopt_notes: int, add) -> None:
    """`mem capture` and `mem init --adopt` against the model alone on the same text (no memo)."""
    import ingest
    import scale_tree

    conv = sorted(Path(scale_tree.LOCOMO).glob("*.json"))[0]
    folder = work / "rate"
    shutil.rmtree(folder, ignore_errors=True)
    paths, _ = scale_tree.write_transcripts(conv, folder / "transcripts", None, f"locomo-{conv.stem}")
    root = folder / "capture-tree"
    ingest.run_mem(["init"], root)
    wall, cpu, _ = ingest.run_mem(["capture", "--json", *map(str, paths)], root)
    texts = child(["--texts", str(root)], root, work)["texts"]
    m_wall, m_cpu = ingest.model_alone(texts)
    turns = scale_tree.conversation_turns(conv)
    add(f"mem capture of conversation {conv.stem} ({turns} turns, {len(texts)} texts): turns/s; CPU s against the "
        "model alone on its texts", "-", f"{turns / wall:.1f} turns/s; {cpu:.1f} / {m_cpu:.1f} CPU s "
        f"= {cpu / max(m_cpu, 1e-9):.2f}x (wall {wall:.0f} / {m_wall:.0f} s)")
    vault = folder / "vault"
    made = scale_tree.distinct_notes(vault, adopt_notes)
    got = ingest.adopt_vault(folder, vault)
    ratio = got["cpu"] / max(got["model_cpu"], 1e-9)
    add(f"mem init --adopt of {made} distinct notes against the model alone on their {got['paragraphs']} paragraphs "
        "(CPU s; wall)", "-", f"{got['cpu']:.0f} / {got['model_cpu']:.0f} CPU s = {ratio:.2f}x; wall "
        f"{got['wall']:.0f} / {got['model_wall']:.0f} s = {got['wall'] / max(got['model_wall'], 1e-9):.2f}x",
        "adopt_ratio", got["wall"] / max(got["model_wall"], 1e-9))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000", help="captured turns per tree, comma-separated (default 10000)")
    ap.add_argument("--reuse", required=True, help="work folder: trees, transcripts, the embedding memo")
    ap.add_argument("--runs", type=int, default=5, help="runs per timing (default 5)")
    ap.add_argument("--vault-share", type=float, default=0.1, help="vault notes per captured turn")
    ap.add_argument("--only", action="append", choices=KINDS, help="only these measures (repeatable)")
    ap.add_argument("--rate", action="store_true", help="also capture and adopt against the model alone")
    ap.add_argument("--adopt-notes", type=int, default=1000, help="with --rate: distinct notes to adopt (default 1000)")
    ap.add_argument("--out", help="also write the table to this file")
    ap.add_argument("--build", nargs=3, help=argparse.SUPPRESS)
    ap.add_argument("--inproc", nargs=2, help=argparse.SUPPRESS)
    ap.add_argument("--quality", nargs=3, help=argparse.SUPPRESS)
    ap.add_argument("--texts", nargs=1, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    work = Path(args.reuse)
    if args.build:
        import scale_tree

        log = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
        print(json.dumps(scale_tree.build(Path(args.build[0]), int(args.build[1]), int(args.build[2]), work, log)))
        return 0
    if args.inproc:
        print(json.dumps(inproc_worker(args.inproc[0], int(args.inproc[1]))))
        return 0
    if args.quality:
        print(json.dumps(quality_worker(*args.quality)))
        return 0
    if args.texts:
        import scale_tree

        print(json.dumps({"texts": scale_tree.session_texts(Path(args.texts[0]))}))
        return 0
    work.mkdir(parents=True, exist_ok=True)
    perf_cli.RUNTIME = work / "run"
    perf_cli.RUNTIME.mkdir(mode=0o700, exist_ok=True)
    perf_cli.RUNTIME.chmod(0o700)
    rows: list[tuple] = []

    def add(measure, size, result, target=None, value=None):
        verdict = "" if target is None else ("met" if TARGETS[target][1](value) else "NOT met")
        rows.append((measure, size, result, TARGETS[target][0] if target else "", verdict))
        print(f"  {measure} @ {size}: {result} {verdict}", file=sys.stderr, flush=True)

    kinds = set(args.only or KINDS)
    for n in [int(s) for s in args.sizes.split(",") if s]:
        root = work / f"tree-{n}"
        if not (root.parent / f"{root.name}.built.json").exists():
            print(f"building {root} ({n} turns)", file=sys.stderr, flush=True)
            info = child(["--build", str(root), str(n), str(int(n * args.vault_share))], root, work, timeout=48 * 3600)
            print(f"  built: {info}", file=sys.stderr, flush=True)
        info = json.loads((root.parent / f"{root.name}.built.json").read_text())
        add("tree: captured turns, vault notes (built through adopt and capture, each distinct text embedded once)",
            n, f"{info['turns']} turns, {info['notes']} notes; {info['embedded']} texts embedded, "
            f"{info['reused']} reused")
        measure(root, n, args.runs, kinds, work, add)
    if args.rate:
        rates(work, args.adopt_notes, add)
    head = [f"# memstrata at scale ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})", "",
            f"{os.cpu_count()} cores; runs per timing: {args.runs}; wall times: median (min-max) unless said; "
            "timings are only figures on a quiet machine (see each size's load average).", "",
            "| measure | turns | result | target | verdict |", "| --- | --- | --- | --- | --- |"]
    text = "\n".join(head + [f"| {m} | {n} | {r} | {t} | {v} |" for m, n, r, t, v in rows]) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
