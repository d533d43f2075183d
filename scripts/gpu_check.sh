#!/usr/bin/env bash
# The checks that need a GPU, as one script for a machine lent with one (the `device` tool runs it
# in the repository root). Builds with CUDA and NCCL into build-gpu, runs the tests labelled `gpu`
# (the CUDA kernels against their CPU references; taot-block planned on the device, as a planner
# and in the daemon's rounds; the device transports' contract, NCCL's and 4
# ranks as threads on one device; the FFN layer end to end on the device plane; taot.torch's
# device variant where torch has CUDA and a device per rank), and writes what it saw to $OUT (or
# ./gpu-check) for the notes.
set -euo pipefail
cd "$(dirname "$0")/.."
out="$(realpath -m "${OUT:-gpu-check}")"
mkdir -p "$out"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$out/devices.csv" 2>&1 || true
cat "$out/devices.csv"
# Only what the device runs: the gpu-labelled test binaries and the kernel benchmark (the whole
# tree would take most of the time a lent device has).
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
{ cmake -S . -B build-gpu -G Ninja -DTAOT_WITH_CUDA=ON -DTAOT_WITH_NCCL=ON &&
  cmake --build build-gpu --parallel "$(nproc)" --target taot_kernels_cuda_tests taot_device_planner_gpu_tests taot_nccl_tests \
    kernels_gpu_bench; } \
  > "$out/build.log" 2>&1 || { tail -40 "$out/build.log"; exit 1; }
cd build-gpu
# The binaries themselves rather than ctest: only they are built here.
status=0
for t in tests/kernels/taot_kernels_cuda_tests tests/kernels/taot_device_planner_gpu_tests tests/client/taot_nccl_tests; do
  "./$t" 2>&1 | tee -a "$out/tests-gpu.log" || status=1
done
# taot.torch on CUDA tensors, only where it can run: a CUDA torch and a device for each of its 4
# ranks (it needs the Python module and the daemon, whose build takes minutes).
python=/usr/bin/python3
if "$python" -c "import torch, sys; sys.exit(torch.cuda.device_count() < 4)" 2>/dev/null; then
  cmake --build . --parallel "$(nproc)" --target taot_python taot-planner >> "$out/build.log" 2>&1 &&
    "$python" ../tests/e2e/taot_torch_moe.py . local --device cuda 2>&1 | tee -a "$out/tests-gpu.log" || status=1
else
  echo "gpu_check: taot.torch's device variant skipped (needs a CUDA torch and 4 devices)" | tee -a "$out/tests-gpu.log"
fi
# Anything skipped here should not have been: a device is present.
if grep -q "SKIPPED" "$out/tests-gpu.log"; then
  echo "gpu_check: some gpu tests skipped (NCCL takes one rank per device: checks of 2 or 4 ranks skip on fewer GPUs)"
fi
# The kernels' device figures (docs/performance.md): reroute, pack/unpack, gradient add; taot-block
# on the device beside the CPU, with the share of the forward pass at the simulator's EP64 and EP128.
"./tests/bench/kernels_gpu_bench" 2>&1 | tee "$out/kernels_bench.md"
exit "$status"
