#!/usr/bin/env bash
# Create .venv and install memstrata into it (torch's CPU build first). Idempotent and quick
# when nothing changed. Usage: scripts/setup.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
stamp=".venv/.memstrata-installed"
want="$(cat pyproject.toml | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  # pip runs --quiet: say what the minutes of silence are (nothing is said when nothing changed)
  echo "setting up .venv (torch CPU build and dependencies; a few minutes the first time)" >&2
  .venv/bin/pip install --quiet --upgrade pip >/dev/null 2>&1 || true
  # torch first: a bare torch requirement would pull a multi-GB CUDA build.
  .venv/bin/pip install --quiet "torch==2.13.0"
  .venv/bin/pip install --quiet -e '.[dev]'
  echo "$want" > "$stamp"
  echo ".venv is ready" >&2
fi
