"""`mem doctor`: check a memory tree for damage and, with fix=True, repair what can be repaired.

The Markdown files are the source of truth; everything else (catalog, INDEX.md files, the
LanceDB table) is derived and can be rebuilt. The doctor never deletes content: a file it
cannot parse, a leftover copy of an entry, an orphan sidecar or version folder and a
symlink that leads outside the root are moved to `.quarantine/` with a line in
`.quarantine/INDEX.md`. Only the doctor's own derived files (catalog, INDEX.md, vectors)
and stale temporary files (`.*.tmp`, left by a writer that died) are rewritten or removed.

Each check is a small function from a `Scan` of the tree to a list of findings
(`doctor/checks.py`, `doctor/derived.py`); the repairs (`doctor/fixes.py`) run afterwards under the
tree lock, and every check runs again to verify them, so `fixed` in the report means "was
wrong and is right now".
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from memstrata.doctor.permissions import check_permissions
from memstrata.doctor.kept_files import check_kept_files
from memstrata.doctor.checks import (  # noqa: F401 - re-exported: the doctor's public names
    DERIVED_DIRS,
    FULL_DIR,
    KINDS,
    QUARANTINE_DIR,
    TEMP_MIN_AGE_SECONDS,
    TRASH_DIR,
    VECTORS_DIR,
    VERSIONS_DIR,
    Finding,
    scan_tree,
    check_duplicates,
    check_lock,
    check_bad_names,
    check_missing_sidecars,
    check_orphans,
    check_symlinks,
    check_temp_files,
    check_secrets,
    check_unparseable,
    duplicate_plan,
    lock_holder,
    temp_is_stale,
    temp_pid,
)
from memstrata.doctor.derived import (  # noqa: F401 - re-exported
    check_catalog,
    check_indexes,
    check_vectors,
    compare_rows,
    configured_model,
    expected_indexes,
    vector_state,
)
from memstrata.doctor.fixes import QUARANTINE_INDEX, Repairs, quarantine  # noqa: F401 - re-exported
from memstrata.doctor.subjects import check_shared_titles
from memstrata.doctor.kept import check_originals, check_trash
from memstrata.engine.save import SavePath
from memstrata.engine.state import TreeState
from memstrata.storage.lock import TreeLock


@dataclass
class DoctorReport:
    root: str
    fix: bool
    findings: list[Finding] = field(default_factory=list)
    checked: dict = field(default_factory=dict)

    @property
    def problems(self) -> list[Finding]:
        """Findings still wrong (not fixed; a notice is no damage)."""
        return [f for f in self.findings if not f.fixed and not f.notice]

    @property
    def healthy(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict:
        return {"root": self.root, "fix": self.fix, "healthy": self.healthy,
                "problems": len(self.problems), "fixed": sum(1 for f in self.findings if f.fixed),
                "checked": self.checked, "findings": [f.to_dict() for f in self.findings]}


class Doctor:
    """`doctor(fix=False)` checks (and repairs) a tree."""

    def __init__(self, state: TreeState, save: SavePath, recall):
        self.state = state
        self.root = state.root
        self.repairs = Repairs(state, save, recall)

    def doctor(self, fix: bool = False, lock_timeout: float = 60.0) -> DoctorReport:
        """Check tree <-> catalog <-> INDEX.md <-> LanceDB, parse errors, duplicate ids, temp files,
        orphan sidecars/versions, symlinks leading out, a model mismatch and permissions.

        With fix=True repair what can be repaired (nothing is deleted: see the module doc).
        The checks run under the tree lock so that they see one consistent state.
        """
        from memstrata.storage import tree

        tree.require_initialised(self.root)
        report = DoctorReport(root=str(self.root), fix=fix)
        report.findings.extend(check_lock(self.root))
        for f in report.findings:
            if f.kind == "lock_file" and fix:  # before the lock: it cannot be taken while this is there
                os.unlink(self.root / f.path)  # unlink never follows a link
                f.fixed, f.action = True, "removed"
        if any(f.kind == "lock_file" and not f.fixed for f in report.findings):
            return report  # the lock cannot be taken: the other checks wait for `--fix`
        with TreeLock(self.root, timeout=lock_timeout):
            report.findings = [f for f in report.findings if f.kind != "lock_held"]  # we got it: it was free
            first = self._checks(report)
            report.findings.extend(first)
            if fix and any(not f.fixed and f.fixable for f in first):
                if any(f.kind == "permissions" and f.fixable for f in first):
                    # folders that open again show entries the first checks could not see: repair
                    # the modes, then check and repair once more with everything in view
                    self.repairs.run([f for f in first if f.kind == "permissions"])
                    seen = {f.key() for f in first}
                    first.extend(f for f in self._checks(None) if f.key() not in seen)
                self.repairs.run([f for f in first if f.kind != "permissions"])
                again = {f.key(): f for f in self._checks(None)}
                for finding in first:
                    if finding.key() not in again and finding.fixable:
                        finding.fixed = True
                        again.pop(finding.key(), None)
                    elif finding.key() in again:
                        again.pop(finding.key())
                report.findings.extend(again.values())  # new trouble the repairs uncovered
        return report

    # -- the checks, in order --------------------------------------------------------
    def _checks(self, report: DoctorReport | None) -> list[Finding]:
        scan = scan_tree(self.root)
        if report is not None:
            report.checked = {"entry_files": len(scan.stats), "entries": len(scan.entries),
                              "temp_files": len(scan.temp_files)}
        now = self.state.now()
        findings: list[Finding] = []
        findings += check_symlinks(scan)
        findings += check_unparseable(scan)
        findings += check_bad_names(scan)
        findings += check_secrets(scan)
        findings += check_duplicates(scan, self._first_seen)
        findings += check_temp_files(scan)
        findings += check_kept_files(scan)
        findings += check_orphans(scan)
        findings += check_missing_sidecars(scan)
        findings += check_originals(scan)
        findings += check_trash(scan)
        findings += check_catalog(scan)
        findings += check_indexes(scan, now)
        findings += check_vectors(scan, self.state.settings)
        findings += check_permissions(self.root)
        findings += check_shared_titles(scan)
        return findings


    def _first_seen(self, entry_id: str) -> str | None:
        """The path the catalog saw hold an id first (None when it cannot tell: unreadable, rebuilt)."""
        try:
            return self.state.catalog.first_seen(entry_id)
        except Exception:  # noqa: BLE001 - a broken catalog is the doctor's to report, not to stop on
            return None


def report_lines(report: DoctorReport) -> list[str]:
    """One line per finding, for people."""
    lines = []
    for f in report.findings:
        state = "note" if f.notice else "fixed" if f.fixed else ("problem" if f.fixable else "needs you")
        where = f.path or f.id or ""
        action = f" -> {f.action}" if f.action else ""
        lines.append(f"[{state}] {f.kind} {where}: {f.detail}{action}")
    return lines


__all__ = ["Doctor", "DoctorReport", "Finding", "quarantine", "report_lines", "duplicate_plan",
           "temp_is_stale", "compare_rows", "expected_indexes"]
