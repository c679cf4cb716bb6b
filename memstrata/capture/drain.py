"""`python -m memstrata.capture.drain --root R`: the background capture a hook starts (memstrata/capture/hook.py).

It runs `mem capture --drain --root R` as a `mem` process would: handed to the user's warm service
when one runs (the model is loaded there), else here. Its output goes to `.cache/capture/drain.log`;
what it captured is in `mem capture --status`.
"""
from __future__ import annotations

import sys


def main() -> int:
    from memstrata.cli.app import main as mem

    root = sys.argv[sys.argv.index("--root") + 1] if "--root" in sys.argv[:-1] else None
    sys.argv = ["mem", "capture", "--drain"] + (["--root", root] if root else [])
    return mem()


if __name__ == "__main__":
    sys.exit(main())
