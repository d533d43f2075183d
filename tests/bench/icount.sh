#!/usr/bin/env bash
# Instructions per plan of one planner on one CASE, counted by callgrind (repeatable whatever
# else the machine is doing): icount.sh CASE.json [PLANNER] [BUILD_DIR]
# Per plan: a planner planning the case again and again, ((N = 21) - (N = 1)) / 20 of the whole
# program. Then a new planner's first plan (the registry's Create and the first MakePlan, callgrind
# collecting only inside them) against a later plan counted the same way: issue 16's cold
# against warm, without the timing noise (docs/performance.md, "A plan allocates only the Plan
# it returns").
set -euo pipefail
case_file=$1 planner=${2:-taot} build=${3:-build}
count() {
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "${@:2}" "$build/tests/bench/plan_repeat" \
    "$case_file" "$1" "$planner" 2>&1 >/dev/null | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
one=$(count 1)
many=$(count 21)
# Only inside the planner's creation and its plans:
inside=('--toggle-collect=taot::PlannerRegistry::Create*' '--toggle-collect=*::MakePlan(taot::PlanRequest const&)')
cold=$(count 1 "${inside[@]}")
later=$((($(count 21 "${inside[@]}") - cold) / 20))
echo "$(basename "$case_file") $planner: $(((many - one) / 20)) instructions per plan;" \
  "a new planner's first plan $cold against $later for a later one" \
  "($(awk -v c="$cold" -v w="$later" 'BEGIN { printf "%.2f", c / w }')x)"
