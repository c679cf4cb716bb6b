"""The README's tour runs as written: every block marked `<!-- readme-test: run|python -->` exits 0.

Each marked bash block runs line by line (bash itself drops the `# ...` comments), in one fresh
HOME whose ~/memory is MEMSTRATA_HOME, with a runtime folder of its own and the warm service off,
so the lines see each other's tree as a user's shell would. Not run, because they need a network,
a remote or another program: the team block (a git remote, S3, an HTTP server), `claude mcp add`
(the Claude Code CLI), `scripts/demo.sh` / `scripts/test.sh` (CI runs those), and the hooks' JSON
settings (Claude Code reads them). A marked block must be fenced right below its marker.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
_BLOCK = re.compile(r"<!-- readme-test: (run|python) -->\n```(\w+)\n(.*?)\n```", re.S)


def marked_blocks(text: str) -> list[tuple[str, str]]:
    """(kind, code) of each marked block of the README, in order."""
    return [(kind, code) for kind, _lang, code in _BLOCK.findall(text)]


def commands(code: str) -> list[str]:
    """The shell lines of a bash block (blank and comment-only lines left out)."""
    return [line for line in code.splitlines() if line.strip() and not line.lstrip().startswith("#")]


@pytest.fixture(scope="module")
def shell(tmp_path_factory):
    """run(args, **kw): a user's shell on a fresh HOME, `mem` of this environment first on PATH."""
    home = tmp_path_factory.mktemp("readme-home")
    notes = home / "notes" / "projects"  # the folder the adoption line adopts
    notes.mkdir(parents=True)
    (notes / "alpha.md").write_text("# Alpha\n\nThe alpha service stores its data in Postgres.\n")
    env = dict(os.environ, HOME=str(home), MEMSTRATA_HOME=str(home / "memory"),
               MEMSTRATA_RUNTIME_DIR=str(home / "run"), MEMSTRATA_SERVICE="off", HF_HUB_OFFLINE="1",
               PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    env.pop("MEMSTRATA_NOW", None)
    # The model's one-off ONNX export stays where this user's is (a new HOME would redo it: ~15 s).
    from memstrata.models.locate import cache_root

    env["MEMSTRATA_CACHE"] = str(cache_root().parent)

    def run(args, **kw):
        return subprocess.run(args, cwd=home, env=env, capture_output=True, text=True, timeout=120, **kw)

    return run


def test_readme_is_short_and_marks_its_tour():
    text = README.read_text()
    assert len(text.splitlines()) <= 300
    kinds = [kind for kind, _ in marked_blocks(text)]
    assert kinds.count("run") >= 3 and "python" in kinds  # the tour, adoption, the hooks; the API


def test_readme_links_exist():
    text = README.read_text()
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
        if "://" not in target:
            assert (README.parent / target).exists(), target


def test_readme_tour_runs_as_written(shell):
    outputs = {}
    for kind, code in marked_blocks(README.read_text()):
        if kind == "run":
            for line in commands(code):
                done = shell(["bash", "-c", line])
                assert done.returncode == 0, f"{line}\n{done.stdout}\n{done.stderr}"
                outputs[line] = done.stdout
        else:
            done = shell([sys.executable, "-c", code])
            assert done.returncode == 0, f"{code}\n{done.stdout}\n{done.stderr}"
            # its own memory (the example once re-wrote the tour's "DB choice" as a new version)
            assert "'Staging region'" in done.stdout, done.stdout
    # Exit 0 alone would not tell a working recall or hook from one that prints nothing.
    recall = next(out for line, out in outputs.items() if line.startswith("mem recall"))
    assert "DB choice" in recall
    hook = next(out for line, out in outputs.items() if '"prompt"' in line and "autoload --hook" in line)
    assert "DB choice" in hook
