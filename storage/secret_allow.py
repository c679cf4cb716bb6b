"""Values a user said are no credential, per note: salted slow fingerprints, never the values.

`mem secrets allow PATH` records, for each value the detector flags in that note, a fingerprint
of (path, kind, value); a later scan passes a finding whose fingerprint is recorded and reports any
other, so a new credential put into the same note (or the same value in another note) is still
caught. The fingerprint is PBKDF2-SHA256 with a random per-tree salt: a short default password
(`postgres`) cannot be read back from the file by hashing a word list with one fast hash.

The record is one JSON file in the tree's own state (`.memstrata/secrets-allowed.json` in an
adopted vault, `.secrets-allowed.json` in a tree made by `mem init`), written atomically. It is this
machine's word: the engine's .gitignore keeps it out of team sync (an allowance pulled by a teammate
would stay in their index after a revoke here), so a teammate allows on their own machine. Git still
overwrites an ignored file with one a teammate force-added, so every fingerprint is also keyed with a
random key kept outside the tree (`machine_key`): a record made on another machine (or before the
key) never matches here, it is listed as not this machine's and its note stays flagged.
"""
from __future__ import annotations

import hashlib
import json
import os
import secrets as _random

from pathlib import Path

from memstrata.storage import layout
from memstrata.storage.atomic import atomic_write_text
from memstrata.storage.errors import CorruptEntry

ALLOW_FILE = ".secrets-allowed.json"
# Slow enough that guessing a weak value costs (about 10 ms a guess), fast enough for the few
# values of flagged notes a sync meets.
_ROUNDS = 20_000


KEY_FILE = "secrets-allow.key"
_keys: dict[str, bytes] = {}


def key_path() -> Path:
    """This user's machine-local key: $XDG_STATE_HOME/memstrata (else ~/.local/state/memstrata), never
    in a tree, so nothing a sync pulls can know or replace it."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base).expanduser() / "memstrata" / KEY_FILE


def machine_key() -> bytes:
    """The key (32 random bytes), made once with mode 0600; CorruptEntry when the file is not one."""
    p = key_path()
    if str(p) in _keys:
        return _keys[str(p)]
    if not p.is_file():
        os.makedirs(p.parent, mode=0o700, exist_ok=True)
        tmp = p.with_name(f".{KEY_FILE}.{os.getpid()}.{_random.token_hex(4)}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, (_random.token_hex(32) + "\n").encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, p)  # never replaces a key another process made first: theirs is kept
        except FileExistsError:
            pass
        finally:
            os.unlink(tmp)
    try:
        key = bytes.fromhex(p.read_text(encoding="ascii").strip())
    except (OSError, ValueError):
        key = b""
    if len(key) != 32:
        raise CorruptEntry(f"{p}: not a secrets-allow key; move it away (what was allowed is allowed again "
                           "with `mem secrets allow`)")
    _keys[str(p)] = key
    return key


def key_id() -> str:
    """A name of this machine's key written with each record (not the key): which records are this machine's."""
    return hashlib.sha256(b"memstrata secrets-allow key\0" + machine_key()).hexdigest()[:16]


def is_here(record: dict) -> bool:
    """Whether `record` was made with this machine's key (one made elsewhere or before the key allows nothing)."""
    try:
        return record.get("key") == key_id()
    except CorruptEntry:
        return False


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
    """Keyed with this machine's key: a file made elsewhere cannot hold a fingerprint that matches here."""
    raw = "\0".join((rel, kind, value)).encode("utf-8")
    return hashlib.pbkdf2_hmac("sha256", raw, bytes.fromhex(salt) + machine_key(), _ROUNDS).hex()


def allow(root, rel: str, located, now: str) -> list[dict]:
    """Record every (finding, value) of `located` for note `rel` (replacing what was recorded for
    it); returns the records (kind and where, no value)."""
    data = load(root)
    salt = data.get("salt") or _random.token_hex(16)
    here = key_id()
    records = [{"kind": f.kind, "field": f.field, "line": f.line, "column": f.column, "allowed_at": now,
                "key": here, "fingerprint": fingerprint(salt, rel, f.kind, value)} for f, value in located]
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
    mine = {rel: [r for r in records if is_here(r)] for rel, records in data["notes"].items()}
    return {rel: hashlib.sha1("\0".join([salt, *sorted(r["fingerprint"] for r in records)]).encode()).hexdigest()[:16]
            for rel, records in mine.items() if records}


def holds(root, rel: str) -> bool:
    """Whether anything is allowed for note `rel` (cheap when nothing is allowed anywhere)."""
    if not _path(root).is_file():
        return False
    try:
        return any(is_here(r) for r in load(root)["notes"].get(rel) or [])
    except CorruptEntry:
        return False


def held_before_pull(root, incoming) -> str | None:
    """This machine's allow file, when the commits about to be pulled (`incoming`: paths) hold it: git
    overwrites (or deletes) an ignored file with what a teammate force-added, so it is put back after."""
    if layout.at(root, ALLOW_FILE) not in incoming:
        return None
    try:
        return _path(root).read_text(encoding="utf-8")
    except OSError:  # none here: the pulled one stays, and allows nothing here (its records are not this machine's)
        return None


def put_back(root, text: str) -> None:
    p = _path(root)
    os.makedirs(p.parent, exist_ok=True)
    atomic_write_text(p, text, root=root)


def not_allowed(root, rel: str, located) -> list:
    """The findings of `located` (pairs of finding and value) the user did not allow for `rel`."""
    if not located:
        return []
    try:
        data = load(root)
    except CorruptEntry:  # an unreadable list allows nothing: the notes stay flagged, doctor says why
        return [f for f, _value in located]
    known = {r.get("fingerprint") for r in data["notes"].get(rel) or [] if is_here(r)}
    if not known or not data.get("salt"):
        return [f for f, _value in located]
    try:
        return [f for f, value in located if fingerprint(data["salt"], rel, f.kind, value) not in known]
    except CorruptEntry:  # the key went bad since is_here read it: nothing is allowed
        return [f for f, _value in located]


def elsewhere(root, rel: str) -> bool:
    """Whether the allow file holds records for `rel` made on another machine (or before the machine
    key) and none made here: what a flagged note says, as such a file allows nothing here."""
    try:
        records = load(root)["notes"].get(rel) or [] if _path(root).is_file() else []
    except CorruptEntry:
        return False
    return bool(records) and not any(is_here(r) for r in records)
