"""`python -m memstrata.features.start_followup --root R --cwd C --session S`: a session start's
background promotion (features/start_work.py), started by the SessionStart hook after its block.

It runs `mem promote --last-session --cwd C --session S --root R --json` as a `mem` process would:
through the user's warm service (the model is loaded there; a service the hook has just started is
waited for until it is warm, at most WAIT_SECONDS), else here. Its output goes to
`.cache/hook-sessions/start-followup.log`.
"""
from __future__ import annotations

import sys
import time

WAIT_SECONDS = 60.0   # at most this long for a starting service to be warm
APPEAR_SECONDS = 10.0  # ... and this long for one to answer at all


def _arg(name: str) -> str | None:
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv[:-1] else None


def wait_for_service(root: str) -> None:
    """Wait until the user's service is warm, while one is starting (a cold SessionStart hook starts it
    just after its block): loading the model here too would load it twice at once."""
    from memstrata.service import client

    if client.service_mode(root) == "off" or client.under_test():
        return
    start = time.monotonic()
    seen = False
    while time.monotonic() - start < WAIT_SECONDS:
        status = client.request({"op": "status"}, timeout=5)
        if status is not None and status.get("warm"):
            return
        seen = seen or status is not None
        if not seen and time.monotonic() - start > APPEAR_SECONDS:
            return  # no service came up: the call below starts one or runs here
        time.sleep(0.25)


def main() -> int:
    from memstrata.cli.app import main as mem

    root, cwd, session = _arg("--root"), _arg("--cwd"), _arg("--session")
    if not (root and cwd and session):
        return 2
    wait_for_service(root)
    sys.argv = ["mem", "promote", "--last-session", "--cwd", cwd, "--session", session, "--root", root, "--json"]
    return mem()


if __name__ == "__main__":
    sys.exit(main())
