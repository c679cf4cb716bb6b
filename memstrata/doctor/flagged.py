"""The entries that hold a credential as the index would see them; records found clean before are not scanned again."""
from __future__ import annotations

from pathlib import Path


def flagged(root: Path, entries) -> dict:
    """rel -> why for the entries holding a credential; a record whose digest was found clean under
    the same rules before is not scanned again (storage/clean_records.py: the scan was most of
    `mem doctor` beside 300,000 captured turns)."""
    from memstrata.retrieval.sync import flag
    from memstrata.retrieval.table import indexed_form
    from memstrata.storage import clean_records
    from memstrata.storage.secrets import located_in_entry, record_fields

    known, clean, out = clean_records.load(root), set(), {}
    for entry in entries:
        form = indexed_form(root, entry)
        digest = clean_records.record_digest(record_fields(form))
        if digest in known:
            clean.add(digest)
            continue
        located = located_in_entry(form)
        if not located:
            clean.add(digest)
        elif (why := flag(form, root, located)) is not None:
            out[entry.path] = why
    if clean != known:
        clean_records.save(root, clean)
    return out
