"""The check after bench/safety.py's storm or crash rounds: the final tree against what the workers acknowledged."""
from __future__ import annotations

import fcntl
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from safety_workers import digest


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
