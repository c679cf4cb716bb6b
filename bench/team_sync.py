"""Team sync at a larger scale: three clones written by the CLI, the API and MCP at random; prints the figures."""
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "memstrata"))
os.environ.setdefault("MEMSTRATA_SERVICE", "off")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from team_scenario import Team  # noqa: E402


def main(steps: int = 120, seed: int = 7) -> dict:
    from memstrata.models.embedder import get_embedder

    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        team = Team(Path(tmp), get_embedder("bundled"), seed=seed)
        anyio.run(team.run, steps)
        figures = team.check()
    figures.update(steps=steps, seconds=round(time.monotonic() - started, 1))
    print(json.dumps(figures))
    return figures


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("steps", nargs="?", type=int, default=120, help="random steps of the scenario (default 120)")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    main(args.steps, seed=args.seed)
