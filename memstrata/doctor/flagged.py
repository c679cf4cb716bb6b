"""One read of every entry as the index sees it: those holding a credential, and the rows the others should have."""
from __future__ import annotations

from pathlib import Path


def row_key(unit) -> tuple[str, str, str]:
    """(row key, content hash, path) of one row the index should hold of `unit` (retrieval.table.index_units)."""
    from memstrata.retrieval.chunking import content_hash
    from memstrata.retrieval.table import row_id

    return row_id(unit), content_hash(unit.title, unit.body), unit.path


def indexed_pass(root: Path, entries, workers: int | None = None,
                 min_chars: int | None = None) -> tuple[dict, list[tuple[str, str, str]]]:
    """(rel -> why for the entries holding a credential, the (row key, content hash, path) of each row the
    index should hold of the others). Each entry's indexed form is built once for both. A record whose
    digest was found clean under the same rules before is not scanned again (storage/clean_records.py);
    the others are scanned on the machine's cores (doctor/secret_pool.py: beside 300,000 captured turns
    the scan was most of `mem doctor`). `workers`, `min_chars`: the pool's, for tests."""
    from memstrata.doctor.secret_pool import MIN_CHARS, SecretScan
    from memstrata.retrieval.sync import flag
    from memstrata.retrieval.table import indexed_form
    from memstrata.retrieval.units import units
    from memstrata.storage import clean_records
    from memstrata.storage.secrets import record_fields

    known, digests, rows = clean_records.load(root), [], []
    with SecretScan(workers, MIN_CHARS if min_chars is None else min_chars) as scan:
        for i, entry in enumerate(entries):
            form = indexed_form(root, entry)
            fields = record_fields(form)
            digests.append(clean_records.record_digest(fields))
            if digests[-1] not in known:
                scan.add(i, fields)
            rows.append([row_key(unit) for unit in units(form)])  # a captured session: one row key per turn
        holding = set(scan.finish())
    out = {}
    for i in sorted(holding):  # few: read again to say what and where
        form = indexed_form(root, entries[i])
        if (why := flag(form, root)) is not None:
            out[entries[i].path] = why
            rows[i] = []  # never indexed
    clean = {d for i, d in enumerate(digests) if i not in holding}
    if clean != known:
        clean_records.save(root, clean)
    return out, [row for entry_rows in rows for row in entry_rows]
