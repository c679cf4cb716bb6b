"""The int8 model: made once from the cached ONNX export by onnxruntime's dynamic quantisation, checked, cached beside it."""
from __future__ import annotations

# Dynamic quantisation (weights int8 per output channel, activations quantised at run time) of
# the MatMul nodes only: embeds about twice as fast on CPU. Measured on bench/locomo.py with the
# bundled model: recall@10 0.801 against 0.800 for the float model (per-tensor weights lost
# more: cosine to the float vectors 0.95 on average; static quantisation, calibrated on LoCoMo
# turns, 0.92). Activations are scaled per run, so the int8 embedder embeds one text per run
# (Embedder.embed): a vector then depends on its text alone, as the index needs. The export is accepted only if
# every check sentence (onnx_export.py) embeds with at least _MIN_INT8_COSINE to the float export.
# It lives in <float export>/int8/ (model.onnx, tokenizer.json, meta.json written last), so it
# goes away with the export it was made from.

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import numpy as np

from memstrata.models.locate import ModelUnavailable, canonical_name

INT8_DIR = "int8"
_MIN_INT8_COSINE = 0.97


def cached_int8(export_dir: Path) -> Path | None:
    d = Path(export_dir) / INT8_DIR
    if (d / "meta.json").is_file() and (d / "model.onnx").is_file() and (d / "tokenizer.json").is_file():
        return d
    return None


def can_quantize() -> bool:
    """onnxruntime's quantisation tools need the `onnx` package."""
    import importlib.util

    try:
        return (importlib.util.find_spec("onnx") is not None
                and importlib.util.find_spec("onnxruntime.quantization") is not None)
    except (ImportError, ValueError):
        return False


_QUANTIZE = """
import logging, sys
logging.getLogger().setLevel(logging.ERROR)  # the tool's "consider pre-processing" advice
from onnxruntime.quantization import QuantType, quantize_dynamic
quantize_dynamic(sys.argv[1], sys.argv[2], per_channel=True, weight_type=QuantType.QInt8,
                 op_types_to_quantize=["MatMul"])
"""


def _quantize_in_child(model: str, source: Path, scratch: Path) -> None:
    """onnxruntime's quantiser: in a child process whose working folder is `scratch`, because
    its shape inference leaves temporary files (sym_shape_infer_temp.onnx and a ~90 MB .data
    file) in the current folder, which must never be the user's."""
    done = subprocess.run([sys.executable, "-c", _QUANTIZE, str(source), str(scratch / "model.onnx")],
                          cwd=str(scratch), capture_output=True, text=True)
    if done.returncode != 0 or not (scratch / "model.onnx").is_file():
        lines = [ln for ln in (done.stderr or "").strip().splitlines() if ln.strip()]
        raise ModelUnavailable(f"int8 quantisation of {canonical_name(model)} failed: "
                               f"{lines[-1] if lines else 'exit ' + str(done.returncode)}")
    for leftover in scratch.iterdir():  # the shape inference's temporary files
        if leftover.name != "model.onnx":
            leftover.unlink(missing_ok=True)


def ensure_int8(model: str, export_dir: Path) -> Path:
    """The int8 export of `model` made from its float export in `export_dir` (made once, then
    cached). Raises ModelUnavailable when the tools are missing or the check fails."""
    export_dir = Path(export_dir)
    done = cached_int8(export_dir)
    if done is not None:
        return done
    if not can_quantize():
        raise ModelUnavailable("the int8 model needs the `onnx` package (pip install onnx)")
    from memstrata.models import backends
    from memstrata.models.onnx_export import CHECK_SENTENCES
    from memstrata.storage.atomic import atomic_write_bytes

    out = export_dir / INT8_DIR
    scratch = export_dir / f".int8.{os.getpid()}.{uuid.uuid4().hex[:8]}"
    scratch.mkdir(parents=True)
    try:
        _quantize_in_child(model, export_dir / "model.onnx", scratch)
        shutil.copyfile(export_dir / "tokenizer.json", scratch / "tokenizer.json")
        meta = json.loads((export_dir / "meta.json").read_text())
        meta.update(quantized="int8 dynamic, per channel, MatMul", created=time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                                                            time.gmtime()))
        (scratch / "meta.json").write_text(json.dumps(meta))
        ref = backends.OnnxEmbedder(model, export_dir).embed(CHECK_SENTENCES)
        got = backends.OnnxEmbedder(model, scratch).embed(CHECK_SENTENCES)
        cos = float(np.min(np.sum(ref * got, axis=1)))
        if not cos >= _MIN_INT8_COSINE:
            raise ModelUnavailable(f"int8 model of {canonical_name(model)} refused: cosine {cos:.4f} to the float model")
        meta["check_min_cosine"] = cos
        out.mkdir(exist_ok=True)
        for name in ("model.onnx", "tokenizer.json"):
            os.replace(scratch / name, out / name)  # same file system: atomic
        atomic_write_bytes(out / "meta.json", json.dumps(meta, indent=2).encode())  # last: marks completion
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return out
