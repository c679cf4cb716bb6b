"""The embedding backends, one import: the Embedder interface, sentence-transformers on torch, and onnxruntime."""
from __future__ import annotations

# Importing this module is cheap on purpose: only numpy and the standard library load here;
# torch / sentence_transformers are imported inside the torch path. Which backend a process
# uses, and the one-off ONNX export, are decided in embedder.py (see its notes).
# Each part is its own module; their names are given here, where the rest of the package
# (and the export's check, read at call time) finds them.

from memstrata.models.embedder_base import (  # noqa: F401
    BATCH_TOKENS,
    MAX_WORD_CHARS,
    TOKEN_CACHE_TEXTS,
    Embedder,
    ProgressFn,
    cap_words,
    has_module,
    l2_normalise,
    load_tokenizer,
    thread_count,
)
from memstrata.models.onnx_backend import ARENA_SHRINKAGE, OnnxEmbedder  # noqa: F401
from memstrata.models.torch_backend import TorchEmbedder, load_sentence_transformer, st_dim  # noqa: F401

# An ONNX export replaces the torch backend only if every check sentence (onnx_export.py)
# embeds with at least this cosine to sentence-transformers; read by the export at call time.
MIN_EXPORT_COSINE = 0.999
