"""The one-off ONNX export of a sentence-transformers model: pooling, export, check against torch, atomic write."""
from __future__ import annotations

# torch, onnx and tokenizers are imported inside the export only. The backends (the torch
# loader, OnnxEmbedder that checks the export, the acceptance cosine) are looked up on
# memstrata.models.embedder at call time: it imports this module, and tests patch them there.

import json
import os
import time
import uuid
from pathlib import Path

import numpy as np

from memstrata.models.locate import ModelUnavailable, cached_export, canonical_name, export_dir_for, package_version
from memstrata.storage.atomic import atomic_write_bytes

# Sentences used to check an export against sentence-transformers.
CHECK_SENTENCES = [
    "The cat sits on the mat.",
    "Memories age through tiers and come back when the task needs them.",
    "Quarterly revenue grew by 12 percent, driven by strong demand in Asia.",
    "深色模式在晚上更舒服。",
    "x",
    # Longer than the 256-token window: checks truncation matches too.
    " ".join(["Agents write notes about projects, people, decisions and dates."] * 40),
]


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

    from memstrata.models import backends

    try:
        import onnx  # noqa: F401 - torch.onnx.export needs it
    except ImportError as exc:
        raise ModelUnavailable("ONNX export needs the `onnx` package (pip install onnx)") from exc

    pooling = _pooling_mode(st)
    if pooling == "unsupported":
        raise ModelUnavailable(f"{canonical_name(model)}: pooling not supported by the ONNX path")
    first = st[0]
    hf_model = getattr(first, "auto_model", None) or getattr(first, "model", None)
    hf_tok = st.tokenizer
    if hf_model is None or hf_tok is None:
        raise ModelUnavailable(f"{canonical_name(model)}: not a transformer model, cannot export")
    backend_tok = getattr(hf_tok, "backend_tokenizer", None)
    if backend_tok is None:
        raise ModelUnavailable(f"{canonical_name(model)}: no fast tokenizer, cannot export")

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
            "model": canonical_name(model),
            "dim": backends.st_dim(st),
            "max_tokens": int(st.max_seq_length or 512),
            "pooling": pooling,
            "pad_id": int(pad_id),
            "pad_token": str(hf_tok.pad_token or "[PAD]"),
            "inputs": input_names,
            "torch": package_version("torch"),
            "transformers": package_version("transformers"),
            "onnxruntime": package_version("onnxruntime"),
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
            candidate = backends.OnnxEmbedder(model, scratch)
            ref = backends.l2_normalise(st.encode(CHECK_SENTENCES, convert_to_numpy=True, show_progress_bar=False))
            got = candidate.embed(CHECK_SENTENCES)
            del candidate
            cos = float(np.min(np.sum(ref * got, axis=1)))
        finally:
            for f in scratch.iterdir():
                f.unlink()
            scratch.rmdir()
        if not cos > backends.MIN_EXPORT_COSINE:
            raise ModelUnavailable(
                f"ONNX export of {canonical_name(model)} refused: cosine {cos:.5f} vs sentence-transformers"
            )
        meta["check_min_cosine"] = cos
        os.replace(tmp_onnx, out_dir / "model.onnx")  # same directory: atomic
        atomic_write_bytes(out_dir / "tokenizer.json", raw_tok.to_str().encode())
        atomic_write_bytes(out_dir / "meta.json", json.dumps(meta, indent=2).encode())  # last
    finally:
        if tmp_onnx.exists():
            tmp_onnx.unlink()


def ensure_onnx_export(model: str = "bundled", _st=None) -> Path:
    """Make (once) and return the ONNX export directory of `model` (holds model.onnx).

    Needs torch, sentence-transformers and the `onnx` package the first time; raises
    ModelUnavailable if the export cannot be made or does not match sentence-transformers.
    """
    cached = cached_export(model)
    if cached is not None:
        return cached / "model.onnx"
    from memstrata.models import backends

    st = _st if _st is not None else backends.load_sentence_transformer(model)
    out_dir = export_dir_for(model)  # after loading: a hub model is now in the local cache
    try:
        _export_from_st(st, model, out_dir)
    except ModelUnavailable:
        raise
    except Exception as exc:  # noqa: BLE001
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelUnavailable(f"ONNX export of {canonical_name(model)} failed: {first}") from exc
    return out_dir / "model.onnx"
