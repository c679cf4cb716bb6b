"""Counting and cutting text in the model's tokens without the model: its tokenizer alone, through `tokenizers`.

The autoload block's budget is counted in the model's tokens. A session start must not wait for the
model (seconds to import torch or open the ONNX export): the tokenizer file alone gives the same
counts in ~50 ms (the `tokenizers` package: no numpy, no torch, no onnxruntime). This module is
cheap to import; `tokenizers` loads on first use.
"""
from __future__ import annotations

import re
import threading
from pathlib import Path

# A word (letters and digits; CJK excepted: the tokenizer splits it per character) longer than
# this is cut to it before the tokenizer sees it. WordPiece makes any word past its
# max_input_chars_per_word (100 for the bundled model) one [UNK] anyway, so the tokens are the
# same; the tokenizer just no longer spends seconds per megabyte of one word.
MAX_WORD_CHARS = 256
_LONG_WORD = re.compile(r"[^\W_\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0002ffff]{%d,}"
                        % (MAX_WORD_CHARS + 1))
# With no tokenizer file at all (a model given by a hub name that is not cached, a broken install),
# a token is taken as this many characters: English runs ~4-5 characters a WordPiece token, so a
# block counted this way is a little over its budget at worst (documented in docs/hooks.md).
APPROX_CHARS_PER_TOKEN = 4


def cap_words(text: str) -> str:
    """`text` with every word longer than MAX_WORD_CHARS cut to that length."""
    if len(text) <= MAX_WORD_CHARS:
        return text
    return _LONG_WORD.sub(lambda m: m.group(0)[:MAX_WORD_CHARS], text)


class TokenCounter:
    """The model's token counts from its tokenizer.json: what Embedder.count_tokens and
    truncate_to_tokens answer (special tokens included), without loading the model."""

    def __init__(self, tokenizer_file: Path | None):
        self.file = tokenizer_file
        self._tok = None
        self._special = 0
        self._lock = threading.Lock()

    @property
    def exact(self) -> bool:
        """Whether counts come from a tokenizer (else from APPROX_CHARS_PER_TOKEN)."""
        return self.file is not None

    def _tokenizer(self):
        if self._tok is None and self.file is not None:
            with self._lock:
                if self._tok is None:
                    from tokenizers import Tokenizer

                    tok = Tokenizer.from_file(str(self.file))
                    tok.no_truncation()
                    tok.no_padding()
                    self._special = len(tok.encode("", add_special_tokens=True).ids)
                    self._tok = tok
        return self._tok

    def count_tokens(self, text: str) -> int:
        text = cap_words(text or "")
        tok = self._tokenizer()
        if tok is None:
            return 2 + -(-len(text) // APPROX_CHARS_PER_TOKEN)  # as if [CLS] and [SEP] framed it
        return len(tok.encode(text, add_special_tokens=True).ids)

    def truncate_to_tokens(self, text: str, n: int) -> str:
        """The longest prefix of `text` (cut at a token boundary) with count_tokens <= n."""
        tok = self._tokenizer()
        if tok is None:
            return (text or "")[:max(0, (int(n) - 2) * APPROX_CHARS_PER_TOKEN)].rstrip()
        return truncate_with(tok, self._special, self.count_tokens, text, n)


def truncate_with(tok, special: int, count, text: str, n: int) -> str:
    """The longest prefix of `text`, cut at a token boundary of `tok` (a tokenizers.Tokenizer without
    truncation, adding `special` tokens), whose `count` is at most n."""
    text = text or ""
    keep = int(n) - special
    if keep <= 0:
        return ""
    enc = tok.encode(text, add_special_tokens=False)
    if len(enc.ids) <= keep:
        return text
    offsets = enc.offsets
    while keep > 0:
        cut = text[: offsets[keep - 1][1]].rstrip()
        if count(cut) <= n:
            return cut
        keep -= 1
    return ""


_COUNTERS: dict[str, TokenCounter] = {}


def counter_for(model: str) -> TokenCounter:
    """The token counter of the embedding model `model` (a setting's value), one per process: its
    tokenizer.json where the model's files are on this machine (the bundled package, a folder, the
    local Hugging Face cache, an ONNX export), else the bundled model's tokenizer, else characters."""
    counter = _COUNTERS.get(model)
    if counter is None:
        counter = _COUNTERS[model] = TokenCounter(tokenizer_file(model))
    return counter


def tokenizer_file(model: str) -> Path | None:
    from memstrata.models import locate

    def bundled():
        try:
            return locate.bundled_dir() / "tokenizer.json"
        except locate.ModelUnavailable:
            return None

    if locate.is_bundled(model):
        return bundled()
    for folder in (_quiet(locate.local_dir, model), _quiet(locate.cached_export, model)):
        if folder is not None and (Path(folder) / "tokenizer.json").is_file():
            return Path(folder) / "tokenizer.json"
    return bundled()


def _quiet(find, model):
    try:
        return find(model)
    except Exception:  # noqa: BLE001 - a missing package or a broken cache: look elsewhere
        return None
