"""The embedding backends: the Embedder interface, sentence-transformers on torch, and onnxruntime."""
from __future__ import annotations

# Importing this module is cheap on purpose: only numpy and the standard library load here;
# torch / sentence_transformers are imported inside the torch path. Which backend a process
# uses, and the one-off ONNX export, are decided in embedder.py (see its notes).

import json
import os
import re
import threading
from pathlib import Path
from typing import Callable, Optional

import numpy as np

from memstrata.models.locate import ModelUnavailable, canonical_name, local_dir

# A word (letters and digits; CJK excepted: the tokenizer splits it per character) longer than
# this is cut to it before the tokenizer sees it. WordPiece makes any word past its
# max_input_chars_per_word (100 for the bundled model) one [UNK] anyway, so the tokens are the
# same; the tokenizer just no longer spends seconds per megabyte of one word.
MAX_WORD_CHARS = 256
_LONG_WORD = re.compile(r"[^\W_\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0002ffff]{%d,}"
                        % (MAX_WORD_CHARS + 1))


def cap_words(text: str) -> str:
    """`text` with every word longer than MAX_WORD_CHARS cut to that length."""
    if len(text) <= MAX_WORD_CHARS:
        return text
    return _LONG_WORD.sub(lambda m: m.group(0)[:MAX_WORD_CHARS], text)

# An ONNX export replaces the torch backend only if every check sentence (onnx_export.py)
# embeds with at least this cosine to sentence-transformers; read by the export at call time.
MIN_EXPORT_COSINE = 0.999


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


def _load_tokenizer(path: Path):
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
        text = text or ""
        tok = self._counter()
        keep = int(n) - int(self._special_count or 0)
        if keep <= 0:
            return ""
        enc = tok.encode(text, add_special_tokens=False)
        if len(enc.ids) <= keep:
            return text
        offsets = enc.offsets
        while keep > 0:
            cut = text[: offsets[keep - 1][1]].rstrip()
            if self.count_tokens(cut) <= n:
                return cut
            keep -= 1
        return ""


# --------------------------------------------------------------------------- torch backend


def load_sentence_transformer(model: str):
    """Load a SentenceTransformer on CPU, always offline: the bundled model from its package
    folder, any other from a folder or the local Hugging Face cache (nothing is downloaded)."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    local = local_dir(model)
    if local is None:
        raise ModelUnavailable(f"model {model} is not on this machine and memstrata never downloads one: "
                               "put its files in a folder and set embedding_model to that path")
    target = str(local)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        import torch
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise ModelUnavailable(
            f"cannot load {canonical_name(model)}: sentence-transformers/torch not installed ({exc.name})"
        ) from exc
    try:
        torch.set_num_threads(thread_count())
    except RuntimeError:
        pass
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    except Exception:  # noqa: BLE001 - cosmetic only
        pass
    try:
        st = SentenceTransformer(target, device="cpu")
    except Exception as exc:  # noqa: BLE001 - any load failure is one clear message
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelUnavailable(f"cannot load embedding model {canonical_name(model)}: {first}") from exc
    st.eval()
    return st


def st_dim(st) -> int:
    for attr in ("get_embedding_dimension", "get_sentence_embedding_dimension"):
        fn = getattr(st, attr, None)
        if fn is not None:
            try:
                d = fn()
            except Exception:  # noqa: BLE001
                d = None
            if d:
                return int(d)
    return int(st.encode(["x"], convert_to_numpy=True).shape[1])


class TorchEmbedder(Embedder):
    """sentence-transformers on CPU."""

    def __init__(self, model: str, st=None):
        st = st if st is not None else load_sentence_transformer(model)
        self._st = st
        self._model = model
        super().__init__(canonical_name(model), st_dim(st), int(st.max_seq_length or 512), "torch")

    def _encode(self, texts: list[str]) -> np.ndarray:
        import torch

        with torch.inference_mode():
            vecs = self._st.encode(
                texts,
                batch_size=len(texts),
                show_progress_bar=False,
                convert_to_numpy=True,
                normalize_embeddings=False,
            )
        return np.asarray(vecs, dtype=np.float32)

    def _raw_tokenizer(self):
        local = local_dir(self._model)
        if local is not None and (local / "tokenizer.json").is_file():
            return _load_tokenizer(local / "tokenizer.json")
        backend = getattr(self._st.tokenizer, "backend_tokenizer", None)
        if backend is None:
            raise ModelUnavailable(f"no fast tokenizer available for {self.name}")
        from tokenizers import Tokenizer

        return Tokenizer.from_str(backend.to_str())


# --------------------------------------------------------------------------- onnx backend


ARENA_SHRINKAGE = "memory.enable_memory_arena_shrinkage"  # onnxruntime's run option (devices to shrink)


class OnnxEmbedder(Embedder):
    """onnxruntime + tokenizers; pooling and normalisation in numpy. Never imports torch."""

    def __init__(self, model: str, export_dir: Path, backend: str = "onnx"):
        try:
            import onnxruntime as ort
        except ImportError as exc:
            raise ModelUnavailable("onnx backend needs the onnxruntime package") from exc
        meta = json.loads((export_dir / "meta.json").read_text())
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = thread_count()
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        opts.log_severity_level = 3
        # Both cores, and threads that sleep when idle instead of spinning: with other work on the
        # machine (an IDE, a build, another agent) spinning threads fight it for the cores. On 2
        # cores at load 18, 400 note paragraphs: spinning 2 threads 75 s and 9.4 CPU s per pass,
        # 1 thread 72 s / 6.6, 2 sleeping threads 57 s / 6.8 (docs/performance.md).
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        try:
            self._sess = ort.InferenceSession(
                str(export_dir / "model.onnx"), sess_options=opts, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # noqa: BLE001
            raise ModelUnavailable(f"cannot open ONNX export at {export_dir}: {exc}") from exc
        self._inputs = [i.name for i in self._sess.get_inputs()]
        # The CPU arena keeps the peak of every batch it ran (a batch of 32 texts of 256 tokens:
        # ~600 MB of attention tensors) and never gives it back, so a long-lived process grew
        # with its largest batch (the service: 1.4 GB after writes that conflict, whose entries
        # carry their kept versions). Shrinking the arena after each run returns it; no slower.
        self._run_options = ort.RunOptions()
        self._run_options.add_run_config_entry(ARENA_SHRINKAGE, "cpu:0")
        self._pooling = meta.get("pooling", "mean")
        self._dir = export_dir
        super().__init__(canonical_name(model), meta["dim"], meta["max_tokens"], backend)
        tok = _load_tokenizer(export_dir / "tokenizer.json")
        tok.enable_truncation(max_length=self.max_tokens)
        tok.enable_padding(pad_id=int(meta.get("pad_id", 0)), pad_token=meta.get("pad_token", "[PAD]"))
        self._tok = tok
        self._pad_id = int(meta.get("pad_id", 0))
        # Token ids are cut and padded here only for the [CLS] text [SEP] template this truncation
        # matches (BERT-like models, the bundled one); any other model keeps the tokenizer's own path.
        self._template = _single_template(tok) and self.per_text is False

    def _raw_tokenizer(self):
        return _load_tokenizer(self._dir / "tokenizer.json")

    @property
    def takes_ids(self) -> bool:
        return self._template

    def _encode_ids(self, ids: list[np.ndarray]) -> np.ndarray:
        """_encode for texts already tokenised (token_ids): cut to the window as the tokenizer's
        truncation does ([CLS] first tokens [SEP]) and padded to the longest."""
        window = self.max_tokens
        cut = [i if len(i) <= window else np.concatenate([i[:window - 1], i[-1:]]) for i in ids]
        width = max(len(i) for i in cut)
        input_ids = np.full((len(cut), width), self._pad_id, dtype=np.int64)
        mask = np.zeros((len(cut), width), dtype=np.int64)
        for row, i in enumerate(cut):
            input_ids[row, :len(i)] = i
            mask[row, :len(i)] = 1
        return self._run(input_ids, mask, np.zeros_like(input_ids))

    def _run(self, ids: np.ndarray, mask: np.ndarray, types: np.ndarray) -> np.ndarray:
        feed = {}
        for name in self._inputs:
            if name == "input_ids":
                feed[name] = ids
            elif name == "attention_mask":
                feed[name] = mask
            elif name == "token_type_ids":
                feed[name] = types
        hidden = self._sess.run(None, feed, self._run_options)[0]
        return _pool(hidden, mask, self._pooling)

    def _encode(self, texts: list[str]) -> np.ndarray:
        encs = self._tok.encode_batch(texts)
        ids = np.asarray([e.ids for e in encs], dtype=np.int64)
        mask = np.asarray([e.attention_mask for e in encs], dtype=np.int64)
        return self._run(ids, mask, np.asarray([e.type_ids for e in encs], dtype=np.int64))


def _single_template(tok) -> bool:
    """Whether a text is encoded as one special token, its tokens, one special token (and type id 0)."""
    try:
        enc = tok.encode("a b", add_special_tokens=True)
        bare = tok.encode("a b", add_special_tokens=False)
    except Exception:  # noqa: BLE001 - an unusual tokenizer: the tokenizer's own path
        return False
    return (len(enc.ids) == len(bare.ids) + 2 and enc.ids[1:-1] == bare.ids
            and not any(enc.type_ids) and enc.special_tokens_mask[0] == 1 and enc.special_tokens_mask[-1] == 1)


def _pool(hidden: np.ndarray, mask: np.ndarray, mode: str) -> np.ndarray:
    hidden = hidden.astype(np.float32, copy=False)
    if mode == "cls":
        return hidden[:, 0, :]
    m = mask[:, :, None].astype(np.float32)
    if mode == "max":
        return np.where(m > 0, hidden, -1e9).max(axis=1)
    summed = (hidden * m).sum(axis=1)
    counts = np.clip(m.sum(axis=1), 1e-9, None)
    return summed / counts
