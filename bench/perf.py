"""Performance of memstrata end to end, against its targets, as one Markdown table.

Usage:
  python bench/perf.py                      # 1,000 and 10,000 entries (about 15-30 min)
  python bench/perf.py --sizes 1000,10000,100000 --runs 5 --out bench/results/perf.md

What is measured (every number: median over --runs runs, with min and max):
  - `mem recall` end to end (process start to output, a fresh `mem` process each run):
    the first call with no service running (service: auto: the call runs in-process and
    starts a service in the background, which is stopped again after each run), and with
    the service warm; at 1k and 10k entries.
  - `Memory.recall` in process, warm (p50 and p95 over 30 queries per run), at every size.
  - `mem autoload --hook` end to end with the service warm (skipped if the command is absent).
  - `mem write` end to end, service warm and service off; bulk `mem import` throughput.
  - `mem sync` when nothing changed (10k), service warm and service off.
  - peak RSS of the service after recalls and a sync at the largest size.
  - the one service's RSS with three trees of --multi-root entries open (a recall and a
    sync in each; issue 17: <= 700 MB with three 10k trees).
  - brute force vs the ANN index (IVF_HNSW_SQ) on the table: latency and recall@10 against
    exact search, to place `ann_min_rows`.

How the trees are built: synthetic entries (a fixed vocabulary, 20-80 words, 33 categories)
are written as Markdown files, INDEX.md files are rebuilt once, and the LanceDB rows are
written through the engine's own `VectorIndex.upsert` (so chunking, full-text columns,
hashes, sizes and mtimes are the real ones) with one shortcut: entry vectors are the
normalised mean of the real model's vectors of the entry's words (every vocabulary word is
embedded once with the real model). Queries are embedded by the real model at recall time.
Embedding 100k entries for real takes longer than this benchmark should; its cost is
measured separately by the import throughput (real embeddings, real write path). A `mem
sync` afterwards finds nothing to do, which checks that the built tree is consistent.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import perf_cli  # noqa: E402  (perf_cli.RUNTIME: the benchmark's own service folder, set by main)
from perf_cli import PY, env_for, mem_bin, pct, service_status, start_service, stats, stop_service, timed  # noqa: E402
from perf_tree import SHORT, WORDS, build_tree_index, entries  # noqa: E402

QUERIES = ["which database did we pick for billing", "kubernetes outage last friday", "hiring roadmap for next quarter",
           "security audit of the vendor contract", "frontend dashboard metrics launch", "backup server migration",
           "pricing decision in the weekly meeting", "customer invoice bug ticket", "latency of the cache index",
           "onboarding notes for the design review"]
TARGETS = {
    "recall_warm_10000": ("<= 150 ms", 0.150),
    "recall_cold_any": ("<= 3 s", 3.0),
    "hook_cold": ("<= 300 ms", 0.3),
    "inproc_10000": ("<= 20 ms", 0.020),
    "inproc_100000": ("<= 40 ms", 0.040),
    "autoload": ("<= 250 ms", 0.250),
    "import": (">= 150 entries/s", 150.0),
    "rss_3x10000": ("<= 700 MB", 700.0),
    "sync_10000": ("<= 1 s", 1.0),
    "rss_100000": ("<= 1024 MB", 1024.0),
}


def pinned_settings(root: Path) -> list[str]:
    """The settings a tree's config.md sets besides the defaults (bench trees should set none)."""
    import re

    cfg = root / "config.md"
    text = cfg.read_text() if cfg.exists() else ""
    head = text.split("\n---", 1)[0] if text.startswith("---") else ""
    return re.findall(r"^(\w+):", head, re.M)


# --------------------------------------------------------------------------- measuring

def inproc_worker(root: str, runs: int, per_run: int) -> dict:
    """In a fresh process: warm Memory.recall, then p50/p95 per run."""
    from memstrata import Memory

    m = Memory(root)
    m.recall(QUERIES[0], k=10)
    m.recall(QUERIES[1], k=10)
    p50s, p95s, plan = [], [], []
    from memstrata.retrieval import sync as sync_mod

    for r in range(runs):
        lat = []
        for i in range(per_run):
            q = QUERIES[(i + r) % len(QUERIES)]
            t0 = time.perf_counter()
            m.recall(q, k=10)
            lat.append(time.perf_counter() - t0)
        p50s.append(pct(lat, 0.5))
        p95s.append(pct(lat, 0.95))
        index = m.state.vector_index()
        t0 = time.perf_counter()
        sync_mod.plan(index, m.embedder.name, m.embedder.dim)
        plan.append(time.perf_counter() - t0)
    no_sync = []
    for i in range(per_run):
        t0 = time.perf_counter()
        m._recall.recall(QUERIES[i % len(QUERIES)], k=10, _sync=False)  # the recall part alone
        no_sync.append(time.perf_counter() - t0)
    return {"p50": p50s, "p95": p95s, "plan": plan, "no_sync_p50": pct(no_sync, 0.5),
            "backend": m.embedder.backend}


def ann_probe(n: int, queries: int = 50) -> dict:
    """Brute force vs IVF_HNSW_SQ on n random unit rows (dim 384): latency and recall@10."""
    import tempfile

    import lancedb
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(0)
    base = rng.normal(size=(64, 384)).astype("float32")
    mix = rng.random(size=(n, 64)).astype("float32") ** 4  # clustered, like real embeddings
    vecs = mix @ base + 0.3 * rng.normal(size=(n, 384)).astype("float32")
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    with tempfile.TemporaryDirectory() as d:
        db = lancedb.connect(d)
        tbl = db.create_table("t", pa.table({"id": [f"r{i}" for i in range(n)],
                                             "vector": pa.FixedSizeListArray.from_arrays(pa.array(vecs.ravel()), 384)}))
        qs = [vecs[int(i)] + 0.05 * rng.normal(size=384).astype("float32") for i in rng.integers(0, n, queries)]
        exact, brute = [], []
        for q in qs:
            t0 = time.perf_counter()
            ids = tbl.search(q.tolist()).bypass_vector_index().limit(10).select(["id"]).to_arrow()["id"].to_pylist()
            brute.append(time.perf_counter() - t0)
            exact.append(ids)
        from lancedb.index import IvfHnswSq

        t0 = time.perf_counter()
        tbl.create_index("vector", config=IvfHnswSq(distance_type="l2", num_partitions=max(1, min(256, n // 4096))))
        build = time.perf_counter() - t0
        approx, hits = [], 0
        for q, ex in zip(qs, exact):
            t0 = time.perf_counter()
            ids = tbl.search(q.tolist()).limit(10).select(["id"]).to_arrow()["id"].to_pylist()
            approx.append(time.perf_counter() - t0)
            hits += len(set(ids) & set(ex))
    return {"rows": n, "brute_p50_ms": 1000 * pct(brute, 0.5), "ann_p50_ms": 1000 * pct(approx, 0.5),
            "recall10": hits / (10 * len(qs)), "build_s": build}


# --------------------------------------------------------------------------- the run

def fmt_s(st, unit="ms"):
    k = 1000 if unit == "ms" else 1
    return f"{st['median'] * k:.0f} ({st['min'] * k:.0f}-{st['max'] * k:.0f}) {unit}" if unit == "ms" else \
        f"{st['median']:.2f} ({st['min']:.2f}-{st['max']:.2f}) s"


def build(root: Path, n: int, reuse: bool, log) -> bool:
    """Build the synthetic tree of n entries at root (in a child process); False when reused."""
    if reuse and (root / ".vectors" / "meta.json").exists():
        log(f"reusing {root}")
        return False
    log(f"building {n} entries in {root}")
    t0 = time.perf_counter()
    built = subprocess.run([PY, __file__, "--build", str(root), str(n)], capture_output=True, text=True,
                           env=env_for(root, "off"))
    if built.returncode != 0:
        raise RuntimeError(built.stderr[-2000:])
    log(f"  built in {time.perf_counter() - t0:.0f}s: {json.loads(built.stdout.strip().splitlines()[-1])}")
    return True


def measure_three_trees(work: Path, n: int, reuse: bool, add, log) -> None:
    """One service, three trees of n entries open (recall, write and sync in each): its RSS."""
    roots = [work / f"tree-{n}"] + [work / f"tree-{n}-{s}" for s in ("b", "c")]
    for root in roots:
        build(root, n, reuse, log)
        timed(["sync", "--json"], root, "off")
    stop_service(roots[0])
    start_service(roots[0])
    for i, root in enumerate(roots):
        for q in QUERIES[:3]:
            timed(["recall", q, "--json"], root)
        timed(["write", f"three trees note {i}", "--category", "bench", "--force", "--json"], root)
        timed(["sync", "--json"], root)
        timed(["recall", QUERIES[4], "--json"], root)
    time.sleep(4)  # the index upkeep after the writes
    st = service_status()
    held = sorted(r["root"] for r in st["roots"])
    if held != sorted(str(r.resolve()) for r in roots):
        raise RuntimeError(f"the service holds {held}, not the three trees")
    add(f"service RSS now / peak, 3 trees x {n} entries open", n * 3,
        f"{st['rss_mb']:.0f} / {st['peak_rss_mb']:.0f} MB", "rss_3x10000" if n == 10000 else None, st["peak_rss_mb"])
    stop_service(roots[0])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1000,10000")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--work", default="/tmp/memstrata-perf")
    ap.add_argument("--import-entries", type=int, default=1000,
                    help="short entries (8-20 words, one sentence) per bulk-import run")
    ap.add_argument("--ann-sizes", default="5000,10000,20000,50000")
    ap.add_argument("--out", default=None)
    ap.add_argument("--e2e-max", type=int, default=10000,
                    help="largest size for the end-to-end measures (beyond: warm service and RSS only)")
    ap.add_argument("--no-import", action="store_true", help="skip the bulk-import measure")
    ap.add_argument("--multi-root", type=int, default=10000,
                    help="entries per tree for the three-trees service RSS measure (0: skip it)")
    ap.add_argument("--reuse", action="store_true", help="reuse trees built by an earlier run in --work")
    ap.add_argument("--skip-inproc", action="store_true", help="skip the in-process recall measure")
    ap.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    ap.add_argument("--build", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        print(json.dumps(inproc_worker(args.worker[0], int(args.worker[1]), int(args.worker[2]))))
        return 0
    if args.build:
        print(json.dumps(build_tree_index(Path(args.build[0]), int(args.build[1]))))
        return 0

    sizes = [int(s) for s in args.sizes.split(",") if s]
    runs = args.runs
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    perf_cli.RUNTIME = work / "run"
    perf_cli.RUNTIME.mkdir(mode=0o700, exist_ok=True)
    perf_cli.RUNTIME.chmod(0o700)
    rows: list[tuple] = []   # (measure, size, result, target, verdict)
    notes: list[str] = []
    load0 = os.getloadavg()

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    def add(measure, size, result, target_key=None, value=None, better="lower"):
        verdict = ""
        target = ""
        if target_key:
            target, limit = TARGETS[target_key]
            ok = value <= limit if better == "lower" else value >= limit
            verdict = "met" if ok else "NOT met"
        rows.append((measure, size, result, target, verdict))
        log(f"  {measure} @ {size}: {result} {target} {verdict}")

    floor = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run([PY, "-c", "pass"], capture_output=True)
        floor.append(time.perf_counter() - t0)
    add("calibration: a bare `python -c pass` (interpreter start)", "-", fmt_s(stats(floor)))
    has_autoload = "autoload" in subprocess.run(mem_bin() + ["--help"], capture_output=True, text=True,
                                                env=env_for(work, "off")).stdout
    for n in sizes:
        root = work / f"tree-{n}"
        if not build(root, n, args.reuse, log):
            pinned = pinned_settings(root)
            if pinned:
                notes.append(f"{n}: the reused tree's config.md sets {', '.join(pinned)} (a tree written before "
                             "config.md kept only changed settings); measured with those, not the defaults")
        took, p = timed(["sync", "--json"], root, "off")
        synced = json.loads(p.stdout)
        if synced.get("embedded") or synced.get("removed"):
            notes.append(f"{n}: the first sync after the build still changed something: {synced}")
        stop_service(root)

        # in-process warm recall
        if args.skip_inproc:
            w = None
        else:
            w = subprocess.run([PY, __file__, "--worker", str(root), str(runs), "30"], capture_output=True, text=True,
                               env=env_for(root, "off"), timeout=3600)
        if w is not None:
            if w.returncode != 0:
                raise RuntimeError(w.stderr[-2000:])
            res = json.loads(w.stdout.strip().splitlines()[-1])
            key = {10000: "inproc_10000", 100000: "inproc_100000"}.get(n)
            add("Memory.recall in process, warm: p50", n, fmt_s(stats(res["p50"])), key, statistics.median(res["p50"]))
            add("Memory.recall in process, warm: p95", n, fmt_s(stats(res["p95"])))
            add("  of which the tree walk (sync.plan)", n, fmt_s(stats(res["plan"])))
            add("  recall without the sync check (_sync=False) p50", n, f"{res['no_sync_p50'] * 1000:.0f} ms")

        if n > args.e2e_max:
            # large trees: the warm service only (recall end to end, and its memory)
            start_service(root)
            timed(["recall", QUERIES[0], "--json"], root)
            warm = [timed(["recall", QUERIES[r % len(QUERIES)], "--json"], root)[0] for r in range(max(runs, 10))]
            add("mem recall end to end, service warm", n, fmt_s(stats(warm)),
                "recall_warm_10000" if n == 10000 else None, statistics.median(warm))
            sy = [timed(["sync", "--json"], root)[0] for _ in range(runs)]
            add("mem sync, nothing changed, service warm", n, fmt_s(stats(sy)))
            st = service_status(root)
            add("service RSS now / peak", n, f"{st['rss_mb']:.0f} / {st['peak_rss_mb']:.0f} MB",
                "rss_100000" if n == 100000 else None, st["peak_rss_mb"])
            stop_service(root)
            continue
        if True:
            # first call, no service
            cold = []
            for r in range(runs):
                stop_service(root)
                took, p = timed(["recall", QUERIES[r % len(QUERIES)], "--json"], root, "auto")
                cold.append(took)
            stop_service(root)
            add("mem recall end to end, first call, no service", n, fmt_s(stats(cold), "s"), "recall_cold_any",
                statistics.median(cold))
            if has_autoload:  # a prompt hook never waits on a cold start: it answers and starts the service
                hook = json.dumps({"prompt": "what did we decide about the billing database?", "session_id": "c"})
                hc = []
                for _ in range(runs):
                    stop_service(root)
                    hc.append(timed(["autoload", "--hook"], root, "auto", stdin=hook)[0])
                stop_service(root)
                add("mem autoload --hook end to end, no warm service", n, fmt_s(stats(hc)), "hook_cold",
                    statistics.median(hc))
            # warm service
            st = start_service(root)
            timed(["recall", QUERIES[0], "--json"], root)
            warm = [timed(["recall", QUERIES[r % len(QUERIES)], "--json"], root)[0] for r in range(max(runs, 10))]
            add("mem recall end to end, service warm", n, fmt_s(stats(warm)),
                "recall_warm_10000" if n == 10000 else None, statistics.median(warm))
            if has_autoload:
                hook = json.dumps({"prompt": "what did we decide about the billing database?", "session_id": "b"})
                timed(["autoload", "--hook"], root, stdin=hook)
                al = [timed(["autoload", "--hook"], root, stdin=hook)[0] for _ in range(runs)]
                add("mem autoload --hook end to end, service warm", n, fmt_s(stats(al)), "autoload",
                    statistics.median(al))
            wr = []
            for r in range(runs):
                took, _ = timed(["write", f"bench note {r} about {random.choice(WORDS)} and {random.choice(WORDS)}",
                                 "--category", "bench", "--force", "--json"], root)
                wr.append(took)
            add("mem write end to end, service warm", n, fmt_s(stats(wr)))
            sy = [timed(["sync", "--json"], root)[0] for _ in range(runs)]
            add("mem sync, nothing changed, service warm", n, fmt_s(stats(sy)),
                "sync_10000" if n == 10000 else None, statistics.median(sy))
            st = service_status(root)
            add("service RSS now / peak", n, f"{st['rss_mb']:.0f} / {st['peak_rss_mb']:.0f} MB",
                "rss_100000" if n == 100000 else None, st["peak_rss_mb"])
            stop_service(root)
            wr = []
            for r in range(runs):
                took, _ = timed(["write", f"cold note {r} about {random.choice(WORDS)}", "--category", "bench",
                                 "--force", "--json"], root, "off")
                wr.append(took)
            add("mem write end to end, no service", n, fmt_s(stats(wr), "s"))
            sy = [timed(["sync", "--json"], root, "off")[0] for _ in range(runs)]
            add("mem sync, nothing changed, no service", n, fmt_s(stats(sy), "s"),
                "sync_10000" if n == 10000 else None, statistics.median(sy))

    if args.multi_root:
        measure_three_trees(work, args.multi_root, args.reuse, add, log)

    if args.no_import:
        runs_import = 0
    else:
        runs_import = runs
    # bulk import (real embeddings, real write path)
    src = work / "import.jsonl"
    rates, rates_svc = [], []
    with open(src, "w") as fh:
        for item in entries(args.import_entries, seed=99, words_per_entry=SHORT):
            fh.write(json.dumps(item) + "\n")
    for r in range(runs_import):
        root = work / f"import-{r}"
        if root.exists():
            shutil.rmtree(root)
        timed(["init"], root, "off")
        took, p = timed(["import", str(src), "--json"], root, "off")
        rates.append(json.loads(p.stdout)["imported"] / took)
    if runs_import:
        add(f"mem import, {args.import_entries} short entries, no service (entries/s)", "-",
            f"{statistics.median(rates):.1f} ({min(rates):.1f}-{max(rates):.1f})", "import", statistics.median(rates),
            better="higher")
        root = work / "import-svc"
        if root.exists():
            shutil.rmtree(root)
        timed(["init"], root, "off")
        start_service(root)
        for r in range(runs):
            src_r = work / f"import-{r}.jsonl"
            with open(src_r, "w") as fh:
                for item in entries(args.import_entries, seed=100 + r, words_per_entry=SHORT):
                    fh.write(json.dumps(item) + "\n")
            took, p = timed(["import", str(src_r), "--json"], root)
            rates_svc.append(json.loads(p.stdout)["imported"] / took)
        stop_service(root)
        add(f"mem import, {args.import_entries} short entries, service warm (entries/s)", "-",
            f"{statistics.median(rates_svc):.1f} ({min(rates_svc):.1f}-{max(rates_svc):.1f})", "import",
            statistics.median(rates_svc), better="higher")

    # ANN vs brute force
    for n in [int(s) for s in args.ann_sizes.split(",") if s]:
        r = ann_probe(n)
        add("vector top-10 brute force / IVF_HNSW_SQ (p50), recall@10, build", n,
            f"{r['brute_p50_ms']:.1f} / {r['ann_p50_ms']:.1f} ms, {r['recall10']:.3f}, {r['build_s']:.1f} s")

    load1 = os.getloadavg()
    head = [f"# memstrata performance ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})", "",
            f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
            f"load average at start {load0[0]:.1f}, at end {load1[0]:.1f} (other work on the machine inflates "
            f"every number). Runs per measure: {runs}. Cells: median (min-max).", "",
            "| measure | entries | result | target | verdict |", "| --- | --- | --- | --- | --- |"]
    body = [f"| {m} | {n} | {r} | {t} | {v} |" for m, n, r, t, v in rows]
    if not has_autoload:
        notes.append("`mem autoload` is absent: its measure is skipped.")
    text = "\n".join(head + body + [""] + [f"- {x}" for x in notes]) + "\n"
    print(text)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
