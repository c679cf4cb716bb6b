"""The access journal after each counted recall: read whole (as before the eleventh round) against read as it grows.

    python bench/journal_read.py [--lines 2000,6400,25000] [--rounds 30]

Every counted recall appends a line to the journal and the next recall reads the accesses. A tree's
journal holds the reads not yet folded by `mem maintain`; a vault's is never folded, only compacted by a
team sync past 256 KB (about 6,400 lines). Each round appends one line, then times the accesses and the
days of use read whole (`journal.read`, `journal.days`) and read as the journal grows (`JournalTail`, what
`TreeState.accesses` and `TreeState.journal_days` use), and prints the medians.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memstrata.storage import journal  # noqa: E402
from memstrata.storage.journal_tail import JournalTail  # noqa: E402


def journal_text(lines: int, start: datetime) -> str:
    """`lines` journal lines over 500 entries and a month of days, as recalls write them."""
    ids = [f"{n:012x}" for n in range(0xabc000000000, 0xabc000000000 + 500)]
    out = []
    for n in range(lines):
        corr = "-" if n % 3 else f"{(n % 97) / 100:.4f}"
        out.append(f"{journal.format_datetime(start + timedelta(minutes=7 * n))}\t{ids[(n * 37) % 500]}\t{corr}\n")
    return "".join(out)


def measure(lines: int, rounds: int) -> tuple[list[float], int]:
    """Median ms of: accesses read whole, as it grows; days read whole, as it grows."""
    root = Path(tempfile.mkdtemp(prefix="journal-read-")) / "tree"
    (root / journal.PENDING_DIR).mkdir(parents=True)
    start = datetime(2026, 9, 1, tzinfo=timezone.utc)
    text = journal_text(lines, start)
    (root / journal.PENDING_DIR / f"{journal.machine_name()}{journal.LOG_SUFFIX}").write_text(text)
    now = start + timedelta(minutes=7 * lines + 60)
    tail = JournalTail(root)
    tail.accesses(now)
    took: list[list[float]] = [[], [], [], []]
    readers = (lambda: journal.read(root, now), lambda: tail.accesses(now),
               lambda: journal.days(root, now.date()), lambda: tail.days(now))
    for column, read in enumerate(readers):  # each its own rounds: one's garbage is not collected in another's time
        for n in range(rounds):
            assert journal.append(root, [(f"{0xabc000000000 + column * rounds + n:012x}", now, 0.5)])
            began = time.perf_counter()
            read()
            took[column].append(time.perf_counter() - began)
    got = {i: (a.count, a.last) for i, a in tail.accesses(now).items()}
    assert got == {i: (a.count, a.last) for i, a in journal.read(root, now).items()}
    assert tail.days(now) == journal.days(root, now.date())
    return [statistics.median(t) * 1000 for t in took], len(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", default="2000,6400,25000", help="journal sizes in lines, comma-separated")
    parser.add_argument("--rounds", type=int, default=30, help="counted recalls per size")
    args = parser.parse_args()
    print("| journal | accesses, read whole | as it grows | days of use, read whole | as it grows |")
    print("| --- | --- | --- | --- | --- |")
    for lines in (int(x) for x in args.lines.split(",")):
        (whole, grown, days_whole, days_grown), size = measure(lines, args.rounds)
        print(f"| {lines:,} lines ({size // 1024} KB) | {whole:.1f} ms | {grown:.2f} ms | {days_whole:.1f} ms | {days_grown:.2f} ms |")


if __name__ == "__main__":
    main()
