"""The model's token counts from its tokenizer alone (models/tokens.py): what the embedder counts, no model."""
from __future__ import annotations

import subprocess
import sys

from memstrata.models.tokens import TokenCounter, counter_for

TEXTS = ["", "hello world", "The orders db primary is down, how do we fail over to the replica?",
         "主数据库宕机了，怎么切换到副本？", "a &amp; b <memory id=\"x\"> …", "w" * 5000, "supercalifragilistic " * 80,
         "line one\n\n## Heading\n- item · two\n```\ncode\n```"]


def test_the_counts_and_cuts_are_the_embedders(embedder):
    counter = counter_for("bundled")
    assert counter.exact
    for text in TEXTS:
        assert counter.count_tokens(text) == embedder.count_tokens(text), text[:40]
        for n in (1, 3, 8, 40, 300):
            assert counter.truncate_to_tokens(text, n) == embedder.truncate_to_tokens(text, n), (text[:40], n)


def test_a_model_without_a_tokenizer_file_is_counted_by_characters():
    counter = TokenCounter(None)
    assert not counter.exact
    assert counter.count_tokens("x" * 40) == 12  # 40 characters at 4 a token, and [CLS] [SEP]
    cut = counter.truncate_to_tokens("word " * 100, 12)
    assert counter.count_tokens(cut) <= 12 and "word" in cut


def test_counting_loads_neither_the_model_nor_numpy():
    code = ("import sys\nfrom memstrata.models.tokens import counter_for\n"
            "assert counter_for('bundled').count_tokens('which database?') == 5\n"
            "heavy = [m for m in ('numpy', 'torch', 'onnxruntime', 'lancedb', 'sentence_transformers') if m in sys.modules]\n"
            "print(heavy)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stderr
