"""Embedding speed of the bundled model on each backend (torch, onnx, onnx-int8), as a small Markdown table.

Usage: python bench/embed_speed.py [--runs 3] [--queries 100] [--model bundled]

Each run is a fresh process per backend (so load time includes the imports): load time is
import + model load + first embedding; then single-query latency (p50/p95 over --queries
calls) and batch-32 throughput (texts/s over 128 texts). The table shows the median over
--runs processes. The ONNX export (and its int8 form) is made first (once) if it is not cached.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

WORDS = (
    "memory agent project deploy billing postgres review weekly notes meeting decision "
    "cache index vector archive summary tier weight friday budget server backup release"
).split()


def _texts(n: int, seed: int) -> list[str]:
    import random

    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 40))) + "." for _ in range(n)]


def worker(model: str, backend: str, queries: int) -> dict:
    t0 = time.perf_counter()
    from memstrata.models.embedder import get_embedder

    emb = get_embedder(model, backend)
    emb.embed_query("warm up the model")
    load = time.perf_counter() - t0
    qs = _texts(queries, 1)
    for q in qs[:5]:
        emb.embed_query(q)
    lat = []
    for q in qs:
        t = time.perf_counter()
        emb.embed_query(q)
        lat.append((time.perf_counter() - t) * 1000)
    lat.sort()
    batch = _texts(128, 2)
    emb.embed(batch[:32], batch_size=32)
    rates = []
    for _ in range(3):
        t = time.perf_counter()
        emb.embed(batch, batch_size=32)
        rates.append(len(batch) / (time.perf_counter() - t))
    return {
        "backend": emb.backend,
        "load_s": load,
        "p50_ms": lat[len(lat) // 2],
        "p95_ms": lat[min(len(lat) - 1, int(round(0.95 * (len(lat) - 1))))],
        "batch32_tps": statistics.median(rates),
    }


def _spawn(args: list[str]) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, *args], capture_output=True, text=True, env=dict(os.environ)
    )
    if out.returncode != 0:
        raise SystemExit(f"worker failed: {out.stderr.strip().splitlines()[-1:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="bundled")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--worker", choices=["torch", "onnx", "onnx-int8"])
    ap.add_argument("--prepare", action="store_true")
    a = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if a.prepare:
        from memstrata.models.embedder import ensure_onnx_export

        from memstrata.models.quantize import ensure_int8

        path = ensure_onnx_export(a.model)
        print(json.dumps({"path": str(path), "int8": str(ensure_int8(a.model, path.parent))}))
        return
    if a.worker:
        print(json.dumps(worker(a.model, a.worker, a.queries)))
        return

    _spawn(["--prepare", "--model", a.model])
    rows = []
    for backend in ("torch", "onnx", "onnx-int8"):
        runs = [
            _spawn(["--worker", backend, "--model", a.model, "--queries", str(a.queries)])
            for _ in range(a.runs)
        ]
        med = {k: statistics.median(r[k] for r in runs) for k in ("load_s", "p50_ms", "p95_ms", "batch32_tps")}
        rows.append((backend, med))
    from memstrata.models.backends import thread_count

    print(
        f"model `{a.model}`, {os.cpu_count()} CPUs, {thread_count()} threads, Python "
        f"{platform.python_version()}, median of {a.runs} fresh processes\n"
    )
    print("| backend | load (import + model + 1st embedding) | query p50 | query p95 | batch-32 throughput |")
    print("| --- | --- | --- | --- | --- |")
    for backend, m in rows:
        print(
            f"| {backend} | {m['load_s']:.2f} s | {m['p50_ms']:.1f} ms | {m['p95_ms']:.1f} ms "
            f"| {m['batch32_tps']:.0f} texts/s |"
        )


if __name__ == "__main__":
    main()
