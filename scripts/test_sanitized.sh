#!/usr/bin/env bash
# CI's sanitizer row: the planner, simulator, server, client, kernel and tools tests (GoogleTest,
# in process) built with AddressSanitizer, UndefinedBehaviorSanitizer and libstdc++'s assertions
# (TAOT_SANITIZE) into ./build-asan (or $TAOT_ASAN_BUILD_DIR), run with ctest. The Python tests
# stay in the plain build: an instrumented extension module would need the sanitizer runtime
# preloaded into Python.
# It is also CI's build without CUDA (-DTAOT_WITH_CUDA=OFF, a supported configuration: README,
# "Building"): the extension module and the daemon are compiled in it as well, so that code that
# only builds with CUDA fails here.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${TAOT_ASAN_BUILD_DIR:-build-asan}"
# ccache hits across clones, as in scripts/build.sh.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}" CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"
targets=(taot_planner_tests taot_sim_tests taot_kernels_cpu_tests taot_server_tests taot_service_tests
         taot_service_hardening_tests taot_plugin_tests taot_plugin_planner_tests taot_daemon_config_tests taot_client_tests
         taot_client_mode_tests taot_c_api_test taot_tools_tests taot_python taot-planner)
if [ ! -f "$build/build.ninja" ]; then
  # -O1 keeps the instrumented build and its tests quick; frame pointers keep the reports readable.
  cmake -S . -B "$build" -G Ninja -DTAOT_SANITIZE=ON -DTAOT_WITH_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g"
fi
cmake --build "$build" --parallel "$(nproc)" --target "${targets[@]}"
cd "$build"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
# The GoogleTest cases (Suite.Case, suites named *Test, parameterised ones as Rows/Suite.Case/row)
# and the C ABI's test; the plain build runs the rest.
ctest --output-on-failure --timeout 900 -R '^(([A-Za-z0-9_]+/)?[A-Za-z0-9_]+Test\.|client\.c_api$)' "$@"
