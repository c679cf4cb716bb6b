"""The package's import graph has layers: no cycle (lazy imports included), no `_private` name across
modules, no source file past 450 lines.

Every module of the memstrata package (the folders of pyproject's package-dir: memstrata.storage is
storage/, and so on) is parsed with ast; every `import` and `from ... import` anywhere in it, at the
top or inside a function, is an edge to the module it loads (`from pkg import mod` to pkg.mod);
`importlib.import_module("a.b")` is an edge to a.b, and `import_module(f"a.b.{name}")` one to every
module under a.b. Names reached as attributes (`module._name`) are not seen.
"""
from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FOLDERS = {"memstrata": "memstrata", "memstrata.storage": "storage", "memstrata.retrieval": "retrieval",
           "memstrata.scoring": "scoring", "memstrata.models": "models", "memstrata.cli": "cli"}
# The lowest layers import only each other and the standard library / third parties: never the facade,
# the engine, its features or the front ends above them (errors and the clock live in storage/).
LOW = ("memstrata.storage", "memstrata.scoring", "memstrata.models", "memstrata.retrieval")
# Past this a file holds more than one thing; split it along what each part does.
MAX_LINES = 450
# Known: split in another branch of this round (retrieval's search and full-text matching).


def modules() -> dict[str, Path]:
    """{dotted name: file} of every module of the package."""
    found = {}
    for package, folder in FOLDERS.items():
        base = REPO / folder
        for path in sorted(base.rglob("*.py")):
            parts = list(path.relative_to(base).with_suffix("").parts)
            if package == "memstrata" and parts[0] == "cli" or ".venv" in parts:
                continue
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join([package, *parts])] = path
    return found


def _owner(name: str, known) -> str | None:
    """The longest known module that `name` is or is inside of."""
    while name not in known and "." in name:
        name = name.rsplit(".", 1)[0]
    return name if name in known else None


def _type_only(tree: ast.Module) -> set[int]:
    """The nodes under `if TYPE_CHECKING:`: imports for annotations, never run, so never a cycle.
    Computed once per tree by its caller (a cache keyed by id(tree) outlived the tree: a later tree
    given the same id was judged by the dead one's nodes, and a cycle came and went with memory layout)."""
    inside = set()
    for node in ast.walk(tree):
        test = getattr(node, "test", None)
        if isinstance(node, ast.If) and (getattr(test, "id", None) == "TYPE_CHECKING"
                                         or getattr(test, "attr", None) == "TYPE_CHECKING"):
            inside.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return inside


def _dynamic(node: ast.Call, known) -> set[str]:
    """The modules an `importlib.import_module(...)` call can load: its string, or every module
    under the constant prefix of an f-string."""
    func = node.func
    if getattr(func, "attr", getattr(func, "id", None)) != "import_module" or not node.args:
        return set()
    arg = node.args[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return {t for t in [_owner(arg.value, known)] if t}
    if isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.Constant):
        prefix = arg.values[0].value
        return {m for m in known if m.startswith(prefix) and prefix.endswith(".")}
    return set()


def imports(known: dict[str, Path]):
    """({module: modules it imports}, [(module, imported module, private name)])."""
    edges, private = {}, []
    for name, path in known.items():
        edges[name] = out = set()
        here = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        tree = ast.parse(path.read_text(encoding="utf-8"))
        type_only = _type_only(tree)
        for node in ast.walk(tree):
            if id(node) in type_only:
                continue
            if isinstance(node, ast.Call):
                out.update(_dynamic(node, known))
            elif isinstance(node, ast.Import):
                out.update(t for a in node.names if (t := _owner(a.name, known)))
            elif isinstance(node, ast.ImportFrom):
                base = here
                for _ in range(node.level - 1):
                    base = base.rsplit(".", 1)[0]
                source = (f"{base}.{node.module}" if node.module else base) if node.level else node.module
                for alias in node.names:
                    if f"{source}.{alias.name}" in known:
                        out.add(f"{source}.{alias.name}")
                    elif (target := _owner(source, known)) is not None:
                        out.add(target)
                        if alias.name.startswith("_") and not alias.name.startswith("__") and target != name:
                            private.append((name, target, alias.name))
        out.discard(name)
    return edges, private


def cycles(edges: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, stack, on_stack, found, counter = {}, {}, [], set(), [], 0
    for start in edges:
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def test_private_and_type_only_imports_are_told_apart(tmp_path):
    (tmp_path / "a.py").write_text("from typing import TYPE_CHECKING\nfrom b import _hidden\n"
                                   "if TYPE_CHECKING:\n    from c import C\n")
    (tmp_path / "b.py").write_text("_hidden = 1\n")
    (tmp_path / "c.py").write_text("import a\n")
    (tmp_path / "d.py").write_text("import importlib\ndef f(n):\n    importlib.import_module('c')\n"
                                   "    importlib.import_module(f'p.{n}')\n")
    for name in ("p.x", "p.y"):
        (tmp_path / f"{name}.py").write_text("")
    edges, private = imports({m: tmp_path / f"{m}.py" for m in ["a", "b", "c", "d", "p.x", "p.y"]})
    assert private == [("a", "b", "_hidden")]
    assert edges["a"] == {"b"} and edges["c"] == {"a"}
    assert edges["d"] == {"c", "p.x", "p.y"}  # lazy and importlib loads are edges too


def test_the_graph_is_seen():
    # A parser that saw nothing would pass every check below.
    known = modules()
    edges, private = imports(known)
    assert {"memstrata.storage.atomic", "memstrata.memory", "memstrata.cli.app", "memstrata.service.server"} <= set(known)
    assert "memstrata.storage.errors" in edges["memstrata.storage.codec"]
    assert "memstrata.cli.commands.entries" in edges["memstrata.cli.app"]  # through importlib
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [frozenset("abc")]


def test_no_import_cycle():
    assert [sorted(c) for c in cycles(imports(modules())[0])] == []


def test_no_private_name_imported_across_modules():
    private = imports(modules())[1]
    assert private == []


def test_the_lowest_layers_never_reach_up():
    edges = imports(modules())[0]
    up = [(name, target) for name, targets in edges.items() if name.startswith(LOW)
          for target in targets if not target.startswith(LOW)]
    assert up == []


def test_no_source_file_past_the_limit():
    files = list(modules().values()) + sorted((REPO / "bench").rglob("*.py"))
    assert len(files) > 100 and any(p.parts[-2] == "experiments" for p in files)
    long = {str(p.relative_to(REPO)): n for p in files
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert sorted(long) == []
