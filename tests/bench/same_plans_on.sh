#!/usr/bin/env bash
# Whether two builds of `taot` make the same plans, bit for bit, of given CASE files:
# same_plans_on.sh OLD_TAOT NEW_TAOT [-p PLANNER] CASE_OR_DIR... A directory stands for every
# .json file under it, in name order. same_plans.sh's families beside the requests a user cares
# about, e.g. those the simulator times (`taot-sim simulate --ranks 128 --planners taot
# --dump-requests DIR`, docs/model.md). Each case is planned at its own target. Names each case
# whose plans differ, prints the count, exits 1 if any differ.
set -euo pipefail
if [[ $# -lt 3 ]]; then
  echo "usage: same_plans_on.sh OLD_TAOT NEW_TAOT [-p PLANNER] CASE_OR_DIR..." >&2
  exit 2
fi
old=$1 new=$2 planner=taot
shift 2
if [[ $1 == -p ]]; then
  planner=$2
  shift 2
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# The plan without its timing (plan_time_us differs from run to run).
plan() { "$1" plan -i "$2" -p "$planner" | grep -v '"plan_time_us"'; }
differ=0 total=0
while IFS= read -r -d '' case_file; do
  total=$((total + 1))
  plan "$old" "$case_file" >"$dir/old.json"
  plan "$new" "$case_file" >"$dir/new.json"
  if ! cmp -s "$dir/old.json" "$dir/new.json"; then
    differ=$((differ + 1))
    echo "differs: $case_file"
  fi
done < <(find "$@" -name '*.json' -type f -print0 | sort -z)
if [[ $total -eq 0 ]]; then
  echo "same_plans_on.sh: no .json CASE files under $*" >&2
  exit 2
fi
echo "$differ of $total plans differ ($planner)"
[[ $differ -eq 0 ]]
