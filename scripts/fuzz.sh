#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz, TAOT_FUZZ=ON with clang) into ./build-fuzz (or
# $TAOT_FUZZ_BUILD_DIR) and fuzzes each in turn for SECONDS (default 60) or 10^7 inputs,
# whichever comes first, printing per target the inputs run, the time, the coverage and whether
# it found anything; exits 1 when any target found something.
#
#   scripts/fuzz.sh                  every target, 60 s each
#   scripts/fuzz.sh 600              the issue's 10-minute runs
#   scripts/fuzz.sh 120 rpc_fuzz     chosen targets only
#   scripts/fuzz.sh --ci             every target for 20 s: the CI stage
#
# Seeds come from tests/fuzz/corpus/<target> (never written to); what a run adds goes to
# build-fuzz/fuzz/corpus/<target>, so later runs start from it. A finding is saved in
# build-fuzz/fuzz/findings/<target>/ with its log: copy the input into the seed corpus (the crash
# is then a test: ctest -L fuzz) and report it to the decoder's owner.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=60
if [ "${1:-}" = "--ci" ]; then
  seconds=20
  shift
elif [[ "${1:-}" =~ ^[0-9]+$ ]]; then
  seconds=$1
  shift
fi

# Each target with the longest input worth mutating: a little over the largest valid input it
# needs to reach every check (a CASE with a cost matrix, a Stream message of several layers),
# since longer inputs only slow each run.
declare -A max_len=(
  [case_json_fuzz]=65536 [plan_json_fuzz]=16384 [daemon_config_fuzz]=4096 [trace_npy_fuzz]=16384
  [trace_csv_fuzz]=16384 [rpc_fuzz]=16384 [plan_check_fuzz]=1024 [plan_wire_fuzz]=4096
)
all=(case_json_fuzz plan_json_fuzz daemon_config_fuzz trace_npy_fuzz trace_csv_fuzz rpc_fuzz plan_check_fuzz
     plan_wire_fuzz)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")
for t in "${targets[@]}"; do
  [ -n "${max_len[$t]:-}" ] || { echo "fuzz.sh: unknown target '$t' (targets: ${all[*]})" >&2; exit 2; }
done

build="${TAOT_FUZZ_BUILD_DIR:-build-fuzz}"
# ccache hits across clones, as in scripts/build.sh.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}" CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"
if [ ! -f "$build/build.ninja" ]; then
  CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DTAOT_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
fi
cmake --build "$build" --parallel "$(nproc)" --target "${targets[@]}"

# A leak inside one input is a finding (LeakSanitizer runs when an input frees less than it
# allocated); one input over 10 s or 2 GiB is a finding too (the daemon answers in milliseconds).
# LeakSanitizer's own check at exit is off: the RPC target's in-process server is never shut down,
# and its gRPC worker threads may be mid-exit then (seen once in 40 minutes), which is no finding.
# libFuzzer still checks every input for leaks.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:leak_check_at_exit=0:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
found=0
printf '%-20s %10s %8s %8s %8s  %s\n' target inputs exec/s cov seconds result
for t in "${targets[@]}"; do
  work="$build/fuzz/corpus/$t"
  findings="$build/fuzz/findings/$t"
  log="$build/fuzz/$t.log"
  mkdir -p "$work" "$findings"
  start=$SECONDS
  rc=0
  "$build/tests/fuzz/$t" "$work" "tests/fuzz/corpus/$t" -max_total_time="$seconds" -runs=10000000 \
    -max_len="${max_len[$t]}" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$findings/" >"$log" 2>&1 || rc=$?
  elapsed=$((SECONDS - start))
  # A crash ends the run before the final stats: then the last progress line counts (none when
  # a seed itself crashes).
  inputs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  [ -n "$inputs" ] || inputs=$(sed -n 's/^#\([0-9]*\).*/\1/p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' "$log" | tail -1)
  if [ "$rc" -eq 0 ]; then
    result="nothing found"
  else
    found=1
    artifact=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)
    result="FOUND (exit $rc): ${artifact:-see log} (log: $log)"
  fi
  printf '%-20s %10s %8s %8s %8s  %s\n' "$t" "${inputs:--}" "${rate:--}" "${cov:--}" "$elapsed" "$result"
done
exit "$found"
