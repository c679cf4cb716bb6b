#!/usr/bin/env bash
# Set up (scripts/setup.sh) and run the whole test suite on two workers (pytest-xdist); extra
# arguments go to pytest. MEMSTRATA_TEST_WORKERS=N sets the workers; 0 (or `-p no:xdist` among
# the arguments) runs everything in this one process. See docs/testing.md.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
workers=${MEMSTRATA_TEST_WORKERS:-2}
parallel=(-n "$workers" --dist loadfile --no-loadscope-reorder)
for arg in "$@"; do
  if [ "$arg" = "no:xdist" ] || [ "$arg" = "-pno:xdist" ]; then parallel=(); fi
done
if [ "$workers" -eq 0 ]; then parallel=(); fi
exec .venv/bin/python -m pytest -q ${parallel[@]+"${parallel[@]}"} "$@"
