"""The torch backend: sentence-transformers on CPU, loaded offline (also the ONNX export's reference)."""
from __future__ import annotations

# torch and sentence_transformers are imported inside these functions only: importing this module
# stays cheap (embedder.py decides which backend a process uses).

import os

import numpy as np

from memstrata.models.embedder_base import Embedder, load_tokenizer, thread_count
from memstrata.models.locate import ModelUnavailable, canonical_name, local_dir


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
            return load_tokenizer(local / "tokenizer.json")
        backend = getattr(self._st.tokenizer, "backend_tokenizer", None)
        if backend is None:
            raise ModelUnavailable(f"no fast tokenizer available for {self.name}")
        from tokenizers import Tokenizer

        return Tokenizer.from_str(backend.to_str())
