#!/usr/bin/env bash
# Set up (scripts/setup.sh) and run the main job on the embedded default: a memory tree in
# ./demo-memory, a few memories written, then recalled with the bundled model, offline.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# always ./demo-memory: the demo must never write its sample memories into a tree MEMSTRATA_HOME names
export HF_HUB_OFFLINE=1 MEMSTRATA_HOME="$PWD/demo-memory"
exec .venv/bin/python -m memstrata.demo "$@"
