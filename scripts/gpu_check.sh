#!/usr/bin/env bash
# The checks that need a GPU, as one script for a machine lent with one (the `device` tool runs it
# in the repository root). Builds with CUDA and NCCL into build-gpu, runs the tests labelled `gpu`
# (the CUDA kernels against their CPU references, the NCCL transport), and writes what it saw to
# $OUT (or ./gpu-check) for the notes.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-gpu-check}"
mkdir -p "$out"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$out/devices.csv" 2>&1 || true
cat "$out/devices.csv"
TAOT_BUILD_DIR=build-gpu ./scripts/build.sh -DTAOT_WITH_CUDA=ON -DTAOT_WITH_NCCL=ON > "$out/build.log" 2>&1 \
  || { tail -40 "$out/build.log"; exit 1; }
cd build-gpu
ctest -L gpu --output-on-failure 2>&1 | tee "$OLDPWD/$out/ctest-gpu.log"
# Anything skipped here should not have been: a device is present.
if grep -q "Skipped" "$OLDPWD/$out/ctest-gpu.log"; then
  echo "gpu_check: some gpu tests skipped (NCCL takes one rank per device: checks of 2 or 4 ranks skip on fewer GPUs)"
fi
# The kernels' device figures (docs/performance.md): reroute, pack/unpack, gradient add.
"./tests/bench/kernels_gpu_bench" 2>&1 | tee "$OLDPWD/$out/kernels_bench.md"
