#!/usr/bin/env bash
# Instructions per plan of one planner on one CASE, counted by callgrind (repeatable whatever
# else the machine is doing): icount.sh CASE.json [PLANNER] [BUILD_DIR]
set -euo pipefail
case_file=$1 planner=${2:-taot} build=${3:-build}
count() {
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$build/tests/bench/plan_repeat" \
    "$case_file" "$1" "$planner" 2>&1 >/dev/null | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
one=$(count 1)
many=$(count 21)
echo "$(basename "$case_file") $planner: $(((many - one) / 20)) instructions per plan"
