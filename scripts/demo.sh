#!/usr/bin/env bash
# The main job until the daemon lands: builds taot, generates a skewed EP32 case and plans it
# with every planner, printing the scorecard table.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh >/dev/null
exec "${TAOT_BUILD_DIR:-build}/planner/cli/taot" demo "$@"
