"""Values a user said are no credential, per note: salted slow fingerprints, never the values.

`mem secrets allow PATH` records, for each value the detector flags in that note, a fingerprint
of (path, kind, value); a later scan passes a finding whose fingerprint is recorded and reports any
other, so a new credential put into the same note (or the same value in another note) is still
caught. The fingerprint is PBKDF2-SHA256 with a random per-tree salt: a short default password
(`postgres`) cannot be read back from the file by hashing a word list with one fast hash.

The record is one JSON file in the tree's own state (`.memstrata/secrets-allowed.json` in an
adopted vault, `.secrets-allowed.json` in a tree made by `mem init`), written atomically. It is this
machine's word: the engine's .gitignore keeps it out of team sync (an allowance pulled by a teammate
would stay in their index after a revoke here), so a teammate allows on their own machine.
"""
from __future__ import annotations

import hashlib
import json
import os
import secrets as _random

from memstrata.storage import layout
from memstrata.storage.atomic import atomic_write_text
from memstrata.storage.errors import CorruptEntry

ALLOW_FILE = ".secrets-allowed.json"
# Slow enough that guessing a weak value costs (about 10 ms a guess), fast enough for the few
# values of flagged notes a sync meets.
_ROUNDS = 20_000


def _path(root):
    return layout.path(root, ALLOW_FILE)


def load(root) -> dict:
    """The record: {"salt": hex, "notes": {rel: [{"kind", "fingerprint", "allowed_at"}]}}."""
    p = _path(root)
    if not p.is_file():
        return {"salt": None, "notes": {}}
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CorruptEntry(f"{layout.at(root, ALLOW_FILE)}: not readable JSON ({exc}); move it away to "
                           "start the list again") from None
    if not _well_formed(data):  # a hand edit: every later use of it (hex salt, records) must hold
        raise CorruptEntry(f"{layout.at(root, ALLOW_FILE)}: not a list of allowed values; move it away")
    return data


def problem(root) -> str | None:
    """What is wrong with the allow file (not readable JSON, the wrong shape: it then allows nothing,
    and `mem secrets allow` refuses to write over it), or None when it is missing or sound."""
    if not _path(root).is_file():
        return None
    try:
        load(root)
    except CorruptEntry as exc:
        return exc.message
    return None


def warning(root) -> str | None:
    """What `mem sync` says of an allow file `problem` finds wrong, or None."""
    broken = problem(root)
    return None if broken is None else (f"{broken}: it allows nothing (the notes it allowed are flagged); fix it "
                                        "by hand, or move it away and `mem secrets allow` each note again")


def _well_formed(data) -> bool:
    """Whether `data` has the shape `load` documents (salt: hex or null; each note a list of records)."""
    if not isinstance(data, dict) or not isinstance(data.get("notes"), dict):
        return False
    salt = data.get("salt")
    if salt is not None:
        try:
            if not isinstance(salt, str) or not bytes.fromhex(salt):
                return False
        except ValueError:
            return False
    return all(isinstance(rel, str) and isinstance(records, list)
               and all(isinstance(r, dict) and isinstance(r.get("fingerprint"), str)
                       and isinstance(r.get("kind"), str) for r in records)
               for rel, records in data["notes"].items())


def _save(root, data: dict) -> None:
    p = _path(root)
    os.makedirs(p.parent, exist_ok=True)
    atomic_write_text(p, json.dumps(data, indent=1, sort_keys=True) + "\n", root=root)


def fingerprint(salt: str, rel: str, kind: str, value: str) -> str:
    raw = "\0".join((rel, kind, value)).encode("utf-8")
    return hashlib.pbkdf2_hmac("sha256", raw, bytes.fromhex(salt), _ROUNDS).hex()


def allow(root, rel: str, located, now: str) -> list[dict]:
    """Record every (finding, value) of `located` for note `rel` (replacing what was recorded for
    it); returns the records (kind and where, no value)."""
    data = load(root)
    salt = data.get("salt") or _random.token_hex(16)
    records = [{"kind": f.kind, "field": f.field, "line": f.line, "column": f.column, "allowed_at": now,
                "fingerprint": fingerprint(salt, rel, f.kind, value)} for f, value in located]
    data["salt"] = salt
    data["notes"][rel] = records
    _save(root, data)
    return records


def revoke(root, rel: str) -> int:
    """Forget what was allowed for note `rel`; how many values that was."""
    data = load(root)
    records = data["notes"].pop(rel, None)
    if records is None:
        return 0
    _save(root, data)
    return len(records)


def marks(root) -> dict[str, str]:
    """Per note allowed for, a digest of what is allowed (salt and fingerprints): the index keeps the
    marks it was synced with, so a sync re-checks each note whose allowance changed since (a revoke,
    the file edited or deleted by hand). An unreadable file allows nothing: no marks."""
    if not _path(root).is_file():
        return {}
    try:
        data = load(root)
    except CorruptEntry:
        return {}
    salt = data.get("salt") or ""
    return {rel: hashlib.sha1("\0".join([salt, *sorted(r["fingerprint"] for r in records)]).encode()).hexdigest()[:16]
            for rel, records in data["notes"].items() if records}


def holds(root, rel: str) -> bool:
    """Whether anything is allowed for note `rel` (cheap when nothing is allowed anywhere)."""
    if not _path(root).is_file():
        return False
    try:
        return bool(load(root)["notes"].get(rel))
    except CorruptEntry:
        return False


def not_allowed(root, rel: str, located) -> list:
    """The findings of `located` (pairs of finding and value) the user did not allow for `rel`."""
    if not located:
        return []
    try:
        data = load(root)
    except CorruptEntry:  # an unreadable list allows nothing: the notes stay flagged, doctor says why
        return [f for f, _value in located]
    records = data["notes"].get(rel)
    if not records or not data.get("salt"):
        return [f for f, _value in located]
    known = {r.get("fingerprint") for r in records}
    return [f for f, value in located if fingerprint(data["salt"], rel, f.kind, value) not in known]
