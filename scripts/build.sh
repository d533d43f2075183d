#!/usr/bin/env bash
# Configures (once) and builds taot into ./build (or $TAOT_BUILD_DIR). Extra args go to CMake.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${TAOT_BUILD_DIR:-build}"
# ccache hits across clones in other folders (CI builds a fresh clone each time): paths below
# the source root are hashed relative to it.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}" CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"
if [ ! -f "$build/build.ninja" ] || [ $# -gt 0 ]; then
  cmake -S . -B "$build" -G Ninja "$@"
fi
cmake --build "$build" --parallel "$(nproc)"
