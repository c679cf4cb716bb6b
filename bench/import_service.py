"""`mem import` of the LoCoMo turns cold (service off: each process loads the code and the model) against warm (through a service started first), in one run.

    python bench/import_service.py [--work /tmp/imptab-svc] [--data DIR]

For each conversation, in turn, one cold import (MEMSTRATA_SERVICE=off) and one warm import
(MEMSTRATA_SERVICE=auto, the benchmark's own service started and warm before the first), each
into a fresh tree: the load is the same for both. Reported: turns, wall seconds, entries/s, and
CPU seconds (user+sys) of the `mem` client process and, warm, of the service during the call
(from /proc/PID/stat). The service's own start-up (until it says it is warm) is counted apart.
Both trees of a conversation must hold the same texts (variant_index.fingerprint): the service
changes where the work runs, not what is written.
"""
from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def proc_cpu(pid: int) -> float:
    """CPU seconds (user+sys, every thread) a live process has used."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_import(src: Path, root: Path, service: str, service_pid: int | None) -> dict:
    import perf_cli

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    s0 = proc_cpu(service_pid) if service_pid else 0.0
    t0 = time.perf_counter()
    p = subprocess.run(perf_cli.mem_bin() + ["import", str(src), "--json"], capture_output=True, text=True,
                       env=perf_cli.env_for(root, service), timeout=7200)
    wall = time.perf_counter() - t0
    s1 = proc_cpu(service_pid) if service_pid else 0.0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise RuntimeError(f"mem import ({service}) failed ({p.returncode}): {p.stderr.strip()[-500:]}")
    client = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"imported": json.loads(p.stdout)["imported"], "wall": wall, "client_cpu": client,
            "service_cpu": s1 - s0}


def fresh_tree(root: Path) -> None:
    import perf_cli

    if root.exists():
        shutil.rmtree(root)
    perf_cli.timed(["init"], root, "off")
    perf_cli.timed(["config", "set", "secrets", "warn"], root, "off")


def main(argv=None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", default="/tmp/memstrata-import-service")
    ap.add_argument("--data", help="the LoCoMo conversations (default: as bench/locomo.py finds them)")
    ap.add_argument("--fixed", type=int, default=3, metavar="N",
                    help="also N imports of 5 turns each way: the fixed cost of a call (0: none)")
    ap.add_argument("--only-fixed", action="store_true", help="the 5-turn imports only")
    args = ap.parse_args(argv)
    import locomo
    import perf_cli
    from variant_index import tree_fingerprint

    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    perf_cli.RUNTIME = Path(os.environ.get("MEMSTRATA_RUNTIME_DIR") or work / ".run")
    data = Path(args.data) if args.data else locomo.DATA
    convs = [] if args.only_fixed else sorted(data.glob("*.json"))
    rows = {"cold": [], "warm": []}
    fresh_tree(work / "first")  # the tree `mem serve --detach` is started from
    t0, c0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    status = perf_cli.start_service(work / "first")
    c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    pid = int(status["pid"])
    start = {"wall": time.perf_counter() - t0, "service_cpu": proc_cpu(pid),
             "client_cpu": (c1.ru_utime - c0.ru_utime) + (c1.ru_stime - c0.ru_stime)}
    try:
        for f in convs:
            lines, _ = locomo.load(f)
            src = work / f"conv{f.stem}.jsonl"
            src.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
            prints = {}
            for mode, service in (("cold", "off"), ("warm", "auto")):
                root = work / f"{mode}-conv{f.stem}"
                fresh_tree(root)
                r = run_import(src, root, service, pid if mode == "warm" else None)
                if r["imported"] != len(lines):
                    raise RuntimeError(f"{mode} conv{f.stem}: {r['imported']} of {len(lines)} imported")
                rows[mode].append({"conv": f.stem, **r})
                prints[mode] = tree_fingerprint([root])["hash"]
                sys.stderr.write(f"conv{f.stem} {mode}: {r}\n")
            if prints["cold"] != prints["warm"]:
                raise RuntimeError(f"conv{f.stem}: the warm import embedded other texts than the cold one")
        lines, _ = locomo.load(sorted(data.glob("*.json"))[0])
        small = work / "five.jsonl"
        small.write_text("\n".join(json.dumps(x) for x in lines[:5]) + "\n")
        for n in range(args.fixed):
            for mode, service in (("cold", "off"), ("warm", "auto")):
                root = work / f"{mode}-five{n}"
                fresh_tree(root)
                r = run_import(small, root, service, pid if mode == "warm" else None)
                rows[mode].append({"conv": f"5 turns #{n + 1}", **r})
                sys.stderr.write(f"five #{n + 1} {mode}: {r}\n")
        # upkeep the service runs between calls (compaction, indexes) is the warm imports' too
        start["after"] = proc_cpu(pid) - start["service_cpu"]
    finally:
        perf_cli.stop_service(work / "first")
    (work / "results.json").write_text(json.dumps({"start": start, **rows}))
    print(report(start, rows))
    return 0


def report(start: dict, rows: dict) -> str:
    out = ["| import | turns | wall s | entries/s (wall) | client CPU s | service CPU s | CPU s per turn |"
           " turns per CPU s |", "| --- |" + " --- |" * 7]
    for mode in ("cold", "warm"):
        convs = [r for r in rows[mode] if not r["conv"].startswith("5 turns")]
        for r in convs + ([_total(convs)] if convs else []) + [r for r in rows[mode] if r not in convs]:
            cpu = r["client_cpu"] + r["service_cpu"]
            out.append(f"| {mode} {r['conv']} | {r['imported']} | {r['wall']:.1f} | {r['imported'] / r['wall']:.1f} "
                       f"| {r['client_cpu']:.1f} | {r['service_cpu']:.1f} | {1000 * cpu / r['imported']:.1f} ms "
                       f"| {r['imported'] / cpu:.1f} |")
    out.append(f"\nService start until warm (once, not in the warm rows): {start['wall']:.1f} s wall, "
               f"{start['service_cpu']:.1f} CPU s in the service, {start['client_cpu']:.1f} in `mem serve --detach`; the service's CPU s from warm to the "
               f"last import's end, upkeep between calls included: {start['after']:.1f}.")
    return "\n".join(out)


def _total(rows: list[dict]) -> dict:
    keys = ("imported", "wall", "client_cpu", "service_cpu")
    return {"conv": "all", **{k: sum(r[k] for r in rows) for k in keys}}


if __name__ == "__main__":
    sys.exit(main())
