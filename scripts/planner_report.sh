#!/usr/bin/env bash
# Regenerates docs/planners.md's measured part and docs/img/frontier.png (see that page).
# Results are cached in build/frontier: a second run only fills gaps; pass --refresh-planners
# to rerun the planners after a change (the MILP cache stays).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh >/dev/null
out="${TAOT_BUILD_DIR:-build}/frontier"
/usr/bin/python3 tests/bench/frontier.py run --taot "${TAOT_BUILD_DIR:-build}/tools/taot/taot" --out "$out" "$@"
/usr/bin/python3 tests/bench/frontier.py report --out "$out" --doc docs/planners.md --plot docs/img/frontier.png
