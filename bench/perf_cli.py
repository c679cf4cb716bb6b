"""Running `mem` as bench/perf.py and bench/ingest.py measure it: a fresh process per call, the benchmark's own service."""
from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

PY = sys.executable
RUNTIME: Path | None = None   # the benchmark's own service folder (never the user's service)


def env_for(root: Path, service: str = "auto") -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    env.update({"MEMSTRATA_HOME": str(root), "MEMSTRATA_SERVICE": service, "HF_HUB_OFFLINE": "1"})
    if RUNTIME is not None:
        env["MEMSTRATA_RUNTIME_DIR"] = str(RUNTIME)
    return env


def mem_bin() -> list[str]:
    exe = shutil.which("mem", path=str(Path(PY).parent))
    return [exe] if exe else [PY, "-m", "memstrata.cli.app"]


def timed(args, root, service="auto", stdin=None) -> tuple[float, subprocess.CompletedProcess]:
    t0 = time.perf_counter()
    p = subprocess.run(mem_bin() + args, input=stdin, capture_output=True, text=True, env=env_for(root, service),
                       timeout=900)
    took = time.perf_counter() - t0
    if p.returncode != 0:
        raise RuntimeError(f"mem {' '.join(args)} failed ({p.returncode}): {p.stderr.strip()[-500:]}")
    return took, p


def service_status(root: Path | None = None):
    """The status of the benchmark's service (it serves every tree of the run)."""
    from memstrata.service import client

    return client.request({"op": "status"}, timeout=5, folder=str(RUNTIME))


def start_service(root: Path) -> dict:
    timed(["serve", "--detach", "--idle-minutes", "60"], root, "off")
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        st = service_status(root)
        if st and st.get("warm"):
            return st
        time.sleep(0.2)
    raise RuntimeError("service did not warm up")


def stop_service(root: Path) -> None:
    subprocess.run(mem_bin() + ["serve", "--stop"], env=env_for(root, "off"), capture_output=True, timeout=120)
    sock = RUNTIME / "mem.sock"
    deadline = time.monotonic() + 60
    while sock.exists() and time.monotonic() < deadline:
        time.sleep(0.1)


def stats(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}


def pct(values, q):
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]
