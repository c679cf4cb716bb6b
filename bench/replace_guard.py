"""What the replace guard costs a write (storage/replace_guard.py), as a small Markdown table.

Usage: python bench/replace_guard.py [--files 2000] [--runs 5] [--dir /tmp/replace-guard-bench]

Three ways of replacing files that already exist, each in one `one_sync` batch (as `mem sync` gives
ids and `mem maintain` compresses) and one at a time (as `mem update` writes): unguarded (no check),
guarded with the exchange (the default on Linux), and guarded with a plain rename (no renameat2, as
on macOS). Median over --runs of the whole batch, in microseconds per file. The files are small
notes on the machine's own disk, so each batch also pays one flush of the file system.
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memstrata.storage import libc, replace_guard  # noqa: E402
from memstrata.storage.atomic import atomic_write_bytes, one_sync  # noqa: E402

TEXT = b"---\nid: 0123456789ab\ntitle: Pump\n---\nThe water pump in the basement was replaced in March.\n"


def _files(folder: Path, n: int) -> list[Path]:
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    paths = [folder / f"note-{i}.md" for i in range(n)]
    for p in paths:
        p.write_bytes(TEXT)
    return paths


def _run(folder: Path, n: int, guarded: bool, batch: bool) -> float:
    paths = _files(folder, n)
    new = TEXT + b"Checked again.\n"

    def write(p):
        atomic_write_bytes(p, new, unchanged=(lambda p=p: p.read_bytes() == TEXT) if guarded else None)

    start = time.perf_counter()
    if batch:
        with one_sync():
            for p in paths:
                write(p)
    else:
        for p in paths:
            write(p)
    return (time.perf_counter() - start) / n * 1e6


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--dir", default="/tmp/replace-guard-bench")
    args = ap.parse_args(argv)
    folder = Path(args.dir)
    exchange = replace_guard._renameat2()  # None: no exchange on this system
    ways = [("unguarded", False, True), ("guarded, exchange", True, True), ("guarded, plain rename", True, False)]
    ways = [w for w in ways if exchange is not None or not w[2] or not w[1]]
    times = {name: ([], []) for name, *_ in ways}
    for _ in range(args.runs):  # the ways take turns: the disk's flush time drifts from minute to minute
        for name, guarded, with_exchange in ways:
            libc._found["renameat2"] = exchange if with_exchange else None
            times[name][0].append(_run(folder, args.files, guarded, True))
            times[name][1].append(_run(folder, max(1, args.files // 10), guarded, False))
    libc._found["renameat2"] = exchange
    rows = [(name, statistics.median(batch), statistics.median(single)) for name, (batch, single) in times.items()]
    shutil.rmtree(folder, ignore_errors=True)
    print(f"| replacing {args.files} notes (median of {args.runs}) | one batch, us per file | one at a time, us per file |")
    print("| --- | --- | --- |")
    for name, batch, single in rows:
        print(f"| {name} | {batch:.0f} | {single:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
