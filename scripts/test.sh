#!/usr/bin/env bash
# Builds taot with its tests and runs them all with ctest (the README's test command).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh
cd "${TAOT_BUILD_DIR:-build}"
ctest --output-on-failure --timeout 900 "$@"
