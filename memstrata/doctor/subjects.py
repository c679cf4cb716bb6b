"""Titles that several entries of one category share: one subject written as two entries."""
from __future__ import annotations

from collections import defaultdict

from memstrata.doctor.checks import Finding, Scan

SHOWN_IDS = 5  # ids named per group (a title shared by a thousand imported turns is one line)


def check_shared_titles(scan: Scan) -> list[Finding]:
    """A notice per title that two or more live entries of one category share (case, spacing and
    punctuation aside: scoring.conflicts.title_key). A write with that title cannot tell which one
    it is about: it becomes a version of the one it is most like, else a new entry. Releases before
    the title rule wrote a reworded change of mind as such a second entry (`editor-theme-2.md`).
    Only a person can say which text is current: the doctor reports, it never merges."""
    from memstrata.scoring.conflicts import title_key

    groups: dict[tuple[str, str], list] = defaultdict(list)
    for entry in scan.entries:
        key = title_key(entry.title)
        if key and entry.status != "expired":
            groups[(entry.category, key)].append(entry)
    findings = []
    for (category, _), group in sorted(groups.items()):
        if len(group) < 2:
            continue
        group.sort(key=lambda e: (e.updated.timestamp() if e.updated else 0.0, e.path or ""), reverse=True)
        ids = ", ".join(e.id or e.path for e in group[:SHOWN_IDS]) + (", ..." if len(group) > SHOWN_IDS else "")
        findings.append(Finding(
            "shared_title", path=group[0].path, fixable=False, notice=True,
            detail=(f'{len(group)} entries of {category or "the top level"} share the title "{group[0].title}" '
                    f"(newest first: {ids}); a write with it becomes a version of the one it is most like. "
                    f"If they are one subject, keep the current text (mem update) and delete the others "
                    f"(their text stays in the trash); else give them distinct titles")))
    return findings
