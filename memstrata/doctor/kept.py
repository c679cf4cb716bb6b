"""The doctor's checks of what the engine keeps as the only copy of a text: trash files and the
`.full/` originals of compressed entries. Neither can be rebuilt, so neither is ever "fixed": a
damaged one is reported for a person, and kept as it is."""
from __future__ import annotations

from memstrata.doctor.checks import Finding, Scan
from memstrata.errors import MemstrataError
from memstrata.storage import sidecars, trash


def check_trash(scan: Scan) -> list[Finding]:
    """Trash files that cannot be read (truncated, garbled): `mem trash` lists them as damaged,
    `mem restore` refuses them, nothing purges them unasked."""
    try:
        items = trash.list_trash(scan.root)
    except (OSError, MemstrataError):
        return []
    return [Finding("trash_damaged", f"{i.damaged}: the deleted entry {i.title or i.id or ''} cannot be "
                    "restored from it", path=i.path, id=i.id or None, fixable=False)
            for i in items if i.damaged]


def check_originals(scan: Scan) -> list[Finding]:
    """Originals in `.full/` that do not match the hash kept when they were written: the only copy
    of a compressed entry's full text, truncated or changed (`mem decompress --restore` refuses it)."""
    out = []
    for e in scan.entries:
        rel = e.full_content_file
        if not rel or e.layer == "L0" or not sidecars.exists(scan.root, rel):
            continue  # a missing one is check_missing_sidecars'
        try:
            why = sidecars.damage(scan.root, rel)
        except (OSError, MemstrataError) as exc:
            why = f"the original {rel} cannot be read ({getattr(exc, 'message', None) or exc})"
        if why:
            out.append(Finding("full_damaged", f"{why}; it is the only copy of the full text of {e.path} "
                               f"({e.layer}): `mem decompress --restore` refuses it, the compressed entry is kept",
                               path=rel, id=e.id, fixable=False))
    return out
