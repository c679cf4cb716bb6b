"""Digests of the records the credential guard found nothing in, per version of its rules: a whole-tree check reads only what changed."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from memstrata.storage import layout
from memstrata.storage.atomic import atomic_write_text
from memstrata.storage.safe_io import read_regular_text

CLEAN_FILE = ".cache/clean-records"  # git-ignored: this machine's, never pulled
MAX_BYTES = 64 * 1024 * 1024


def rules_stamp() -> str:
    """What the guard's decision depends on besides the record: its code (the rules, their hints and
    validators, the normalisation, what counts as public data, a placeholder or a share link): any
    change to one of those files checks every record again."""
    from memstrata.storage import placeholders, public_data, secret_rules, secret_starts, secrets, share_links

    digest = hashlib.sha1()
    for module in (secrets, secret_rules, secret_starts, public_data, placeholders, share_links):
        digest.update(Path(module.__file__).read_bytes())
    return digest.hexdigest()


def record_digest(fields: dict) -> str:
    """A digest of a record's fields (storage.secrets.record_fields) as the guard reads them."""
    text = json.dumps(fields, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()


def load(root) -> set[str]:
    """The digests found clean under the current rules (none when the rules changed or the file is unreadable)."""
    try:
        lines = read_regular_text(layout.path(root, CLEAN_FILE), MAX_BYTES).split("\n")
    except (OSError, UnicodeDecodeError, ValueError):
        return set()
    if not lines or lines[0] != rules_stamp():
        return set()
    return {line for line in lines[1:] if len(line) == 40}


def save(root, digests: set[str]) -> None:
    """Keep `digests` (those of records found clean now, under the current rules); derived, so a
    failure to write only costs the next check its time."""
    try:
        atomic_write_text(layout.path(root, CLEAN_FILE), "\n".join([rules_stamp(), *sorted(digests)]) + "\n",
                          root=Path(root))
    except OSError:
        pass
