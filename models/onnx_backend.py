"""The onnxruntime backend: the model's ONNX export and its tokenizer; pooling and normalisation in numpy, never torch."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from memstrata.models.embedder_base import Embedder, load_tokenizer, thread_count
from memstrata.models.locate import ModelUnavailable, canonical_name


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
        tok = load_tokenizer(export_dir / "tokenizer.json")
        tok.enable_truncation(max_length=self.max_tokens)
        tok.enable_padding(pad_id=int(meta.get("pad_id", 0)), pad_token=meta.get("pad_token", "[PAD]"))
        self._tok = tok
        self._pad_id = int(meta.get("pad_id", 0))
        # Token ids are cut and padded here only for the [CLS] text [SEP] template this truncation
        # matches (BERT-like models, the bundled one); any other model keeps the tokenizer's own path.
        self._template = _single_template(tok) and self.per_text is False

    def _raw_tokenizer(self):
        return load_tokenizer(self._dir / "tokenizer.json")

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
