"""Public keys and content hashes in a note: spans the entropy rule must not call credentials.

Each is recognised by its own structure, not by a word near it, so a secret dressed up as one is
still caught: an SSH public key's base64 blob must decode to its own algorithm name (RFC 4253
wire format), an SRI / npm ``integrity`` hash must have its digest's exact length, a bitcoin
address must pass its base58check checksum, a PGP block must say PUBLIC KEY in both armour
lines, and a Fernet token (ciphertext, ``gAAAAAB...``) must start with version 0x80 and a time of
creation between 2010 and 2100. Private keys (``-----BEGIN OPENSSH PRIVATE KEY-----``, PGP PRIVATE KEY BLOCK ...) are
not here and stay caught by their own rule.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import re

_SSH = re.compile(r"(?<![\w-])(?P<alg>(?:ssh-(?:rsa|dss|ed25519|ed448)|ecdsa-sha2-nistp(?:256|384|521)"
                  r"|sk-(?:ssh-ed25519|ecdsa-sha2-nistp256)@openssh\.com))[ \t]+(?P<blob>AAAA[A-Za-z0-9+/]+={0,2})")
_PGP_PUBLIC = re.compile(r"-----BEGIN PGP PUBLIC KEY BLOCK-----.*?(?:-----END PGP PUBLIC KEY BLOCK-----|\Z)", re.S)
_SRI_LENGTH = {"256": 44, "384": 64, "512": 88}  # base64 of 32, 48, 64 bytes, padding included
_SRI = re.compile(r"(?<![A-Za-z0-9+/_=\-])sha(?P<bits>256|384|512)-(?P<digest>[A-Za-z0-9+/]+={0,2})")
# A Fernet token: version byte 0x80, then 8 bytes of creation time (seconds), IV, ciphertext, HMAC.
_FERNET = re.compile(r"(?<![A-Za-z0-9_\-])gAAAAAB[A-Za-z0-9_\-]{50,}={0,2}")
_B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_BITCOIN = re.compile(r"(?<![A-Za-z0-9])[13][%s]{25,34}(?![A-Za-z0-9])" % _B58)


def _ssh_blob_ok(alg: str, blob: str) -> bool:
    try:
        raw = base64.b64decode(blob, validate=True)
    except (binascii.Error, ValueError):
        return False
    n = int.from_bytes(raw[:4], "big")
    return 4 + n < len(raw) and raw[4:4 + n] == alg.encode()


def _fernet_ok(token: str) -> bool:
    raw = base64.urlsafe_b64decode(token[:12])  # 9 bytes: the version and the time
    return raw[0] == 0x80 and 1262304000 <= int.from_bytes(raw[1:9], "big") <= 4102444800


def _base58check_ok(text: str) -> bool:
    n = 0
    for ch in text:
        n = n * 58 + _B58.index(ch)
    raw = n.to_bytes(25, "big") if n.bit_length() <= 200 else b""
    return len(raw) == 25 and hashlib.sha256(hashlib.sha256(raw[:21]).digest()).digest()[:4] == raw[21:]


def public_spans(text: str) -> list[tuple[int, int]]:
    """Where `text` holds a public key or a content hash (see the module docstring)."""
    spans = []
    if "AAAA" in text:
        spans += [m.span("blob") for m in _SSH.finditer(text) if _ssh_blob_ok(m["alg"], m["blob"])]
    if "-----BEGIN PGP PUBLIC KEY BLOCK-----" in text:
        spans += [m.span() for m in _PGP_PUBLIC.finditer(text)]
    if "sha" in text:
        spans += [m.span() for m in _SRI.finditer(text) if len(m["digest"]) == _SRI_LENGTH[m["bits"]]]
    if "gAAAAAB" in text:
        spans += [m.span() for m in _FERNET.finditer(text) if _fernet_ok(m.group(0))]
    spans += [m.span() for m in _BITCOIN.finditer(text) if _base58check_ok(m.group(0))]
    return spans
