"""scoring/ stays pure: no IO, no wall clock, no heavy imports; every module says what it owns."""
from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

SCORING = Path(importlib.import_module("memstrata.scoring").__file__).parent
MODULES = sorted(SCORING.glob("*.py"))
FORBIDDEN_IMPORTS = {"lancedb", "torch", "sentence_transformers", "onnxruntime", "os", "pathlib",
                     "shutil", "subprocess", "time", "memstrata.models", "memstrata.retrieval"}
FORBIDDEN_CALLS = {"open", "now", "utcnow", "today", "time"}


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_module_is_pure(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    doc = ast.get_docstring(tree)
    assert doc and "\n" not in doc.strip(), f"{path.name} needs a one-line docstring"
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        else:
            names = []
        for name in names:
            assert not any(name == f or name.startswith(f + ".") for f in FORBIDDEN_IMPORTS), name
        if isinstance(node, ast.ImportFrom) and node.module in ("memstrata.clock", "memstrata.storage.clock"):
            assert all(a.name != "now" for a in node.names)
        if isinstance(node, ast.Call):
            fn = node.func
            name = fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", "")
            assert name not in FORBIDDEN_CALLS, f"{path.name} calls {name}()"
