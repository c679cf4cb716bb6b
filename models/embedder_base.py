"""The Embedder interface every backend implements: batches bounded by tokens, token counting and cutting, unit rows."""
from __future__ import annotations

# Importing this module is cheap on purpose: only numpy and the standard library load here.
# The backends are torch_backend.py and onnx_backend.py (backends.py names them all).

import os
import threading
from pathlib import Path
from typing import Callable, Optional

import numpy as np

from memstrata.models.tokens import MAX_WORD_CHARS, cap_words, truncate_with  # noqa: F401 - one rule for counting and embedding


ProgressFn = Optional[Callable[[int, int], None]]

# Token ids of the texts counted or embedded lately (chunking counts a chunk's tokens, then the
# chunk is embedded: one tokenisation serves both). Bounded: a service lives long.
TOKEN_CACHE_TEXTS = 20000


# Padded tokens per onnxruntime run, where texts come as token ids (the batch is cut by this as
# well as by batch_size): a run's activations and attention tensors grow with its tokens, and
# smaller runs used less CPU per text, with identical vectors (320 of a vault's note chunks, 2
# threads, load 19-26, CPU s per pass: 32 texts a run 8.5-9.4, 2,048 tokens 8.0, 1,024 tokens
# 6.8-7.3; docs/performance.md). Short texts still go batch_size to a run.
BATCH_TOKENS = 1024


def _batches(order: list[int], batch_size: int, lengths: list[int] | None, window: int):
    """Runs of `order` (texts sorted longest first): at most batch_size texts each and, when
    `lengths` (token counts in that order) are known, at most BATCH_TOKENS padded tokens (the
    first text of a run is its longest, cut to the model's window)."""
    start, total = 0, len(order)
    while start < total:
        size = batch_size
        if lengths is not None:
            size = max(1, min(batch_size, BATCH_TOKENS // max(1, min(lengths[start], window))))
        yield order[start:start + size]
        start += size


# --------------------------------------------------------------------------- helpers


def thread_count() -> int:
    env = os.environ.get("MEMSTRATA_THREADS")
    if env:
        try:
            return max(1, int(env))
        except ValueError:
            pass
    return max(1, min(4, os.cpu_count() or 1))


def has_module(name: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def l2_normalise(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (x / norms).astype(np.float32, copy=False)


def load_tokenizer(path: Path):
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(path))


# --------------------------------------------------------------------------- base class


class Embedder:
    """A loaded embedding model. Rows of `embed` are float32 and L2-normalised."""

    name: str
    dim: int
    max_tokens: int
    backend: str

    def __init__(self, name: str, dim: int, max_tokens: int, backend: str):
        self.name = name
        self.dim = int(dim)
        self.max_tokens = int(max_tokens)
        self.backend = backend
        self.per_text = backend == "onnx-int8"  # see embed()
        self._count_tok = None  # tokenizers.Tokenizer without truncation/padding
        self._special_count: Optional[int] = None
        self._ids: dict[str, np.ndarray] = {}  # text (words capped) -> its token ids, special tokens included
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<Embedder {self.name} backend={self.backend} dim={self.dim}>"

    @property
    def reads_cjk(self) -> bool:
        """Whether the model reads Chinese, Japanese and Korean (models.locate.reads_cjk): an index
        embeds no mostly-CJK text with a model that does not (retrieval/readable.py)."""
        from memstrata.models.locate import reads_cjk

        return reads_cjk(self.name)

    # -- subclasses implement
    def _encode(self, texts: list[str]) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def _raw_tokenizer(self):  # pragma: no cover - abstract
        raise NotImplementedError

    # -- public API
    def embed(self, texts: list[str], batch_size: int = 32, progress: ProgressFn = None) -> np.ndarray:
        """Embed texts: (n, dim) float32, unit rows. progress(done, total) after each batch."""
        if isinstance(texts, str):
            raise TypeError("embed() takes a list of strings; use embed_query() for one")
        texts = ["" if t is None else cap_words(str(t)) for t in texts]
        total = len(texts)
        out = np.zeros((total, self.dim), dtype=np.float32)
        if total == 0:
            return out
        # A quantised model embeds one text per run: its activations are scaled per run, so a text
        # batched with others would get a slightly different vector (cosine ~0.99) than alone, and
        # the index would depend on how writes were batched. Alone it is as fast as batched.
        batch_size = max(1, int(batch_size))
        # Longest first, so each batch pads to similar lengths (padding is most of the work of a
        # batch of mixed lengths); order restored on output. A backend that takes token ids sorts
        # by tokens, tokenising each text once (or not at all: chunking counted it already).
        ids = self.token_ids(texts) if self.takes_ids else None
        order = sorted(range(total), key=(lambda i: -len(ids[i])) if ids is not None else (lambda i: -len(texts[i])))
        done = 0
        for idx in _batches(order, batch_size, [len(ids[i]) for i in order] if ids is not None else None,
                            self.max_tokens):
            if self.per_text:
                vecs = np.concatenate([self._encode([texts[i]]) for i in idx])
            elif ids is not None:
                vecs = self._encode_ids([ids[i] for i in idx])
            else:
                vecs = self._encode([texts[i] for i in idx])
            out[idx] = l2_normalise(vecs)
            done += len(idx)
            if progress is not None:
                progress(done, total)
        return out

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one text: a (dim,) float32 unit vector. The last few queries are remembered
        (autoload embeds its context for promotion and again for recall)."""
        cache = self.__dict__.setdefault("_recent_queries", {})
        vec = cache.get(text)
        if vec is None:
            vec = self.embed([text], batch_size=1)[0]
            vec.setflags(write=False)  # shared between callers
            with self._lock:
                if len(cache) >= 32:
                    cache.pop(next(iter(cache)))
                cache[text] = vec
        return vec

    def _counter(self):
        if self._count_tok is None:
            with self._lock:
                if self._count_tok is None:
                    tok = self._raw_tokenizer()
                    tok.no_truncation()
                    tok.no_padding()
                    self._special_count = len(tok.encode("", add_special_tokens=True).ids)
                    self._count_tok = tok
        return self._count_tok

    takes_ids = False  # whether _encode_ids exists (the text is tokenised here, once)

    def _encode_ids(self, ids: list[np.ndarray]) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def token_ids(self, texts: list[str]) -> list[np.ndarray]:
        """Token ids of each text (words capped; special tokens included; not truncated), from the
        cache where the text was counted or embedded lately; the others in one parallel batch."""
        cache = self._ids
        out = [cache.get(t) for t in texts]
        missing = list(dict.fromkeys(t for t, got in zip(texts, out) if got is None))
        if missing:
            made = {t: np.asarray(e.ids, dtype=np.int32)
                    for t, e in zip(missing, self._counter().encode_batch(missing, add_special_tokens=True))}
            self._remember(made)
            out = [got if got is not None else made[t] for t, got in zip(texts, out)]
        return out

    def _remember(self, made: dict) -> None:
        with self._lock:
            if len(self._ids) + len(made) > TOKEN_CACHE_TEXTS:
                self._ids.clear()
            self._ids.update(made)

    def count_tokens(self, text: str) -> int:
        """Tokens the model sees for `text`, special tokens ([CLS], [SEP]) included.

        `count_tokens(t) <= max_tokens` means `t` fits the model's window whole.
        """
        text = cap_words(text or "")
        ids = self._ids.get(text)
        if ids is None:
            ids = np.asarray(self._counter().encode(text, add_special_tokens=True).ids, dtype=np.int32)
            self._remember({text: ids})
        return len(ids)

    def truncate_to_tokens(self, text: str, n: int) -> str:
        """The longest prefix of `text` (cut at a token boundary) with count_tokens <= n."""
        tok = self._counter()
        return truncate_with(tok, int(self._special_count or 0), self.count_tokens, text, n)
