#!/usr/bin/env bash
# Whether two builds of `taot` make the same plans, bit for bit, over the workload families:
# same_plans.sh OLD_TAOT NEW_TAOT [PLANNER]. OLD_TAOT and NEW_TAOT are `taot` tool binaries (copy
# the old build's build/tools/taot/taot aside before rebuilding). A speed-up that must not change
# plans is checked with it: EP16/64/256, K = 1/2/4, zipf-like 10-90%, bursts of 1, 3 and R/8
# experts 10x and 30x hotter, uniform, seeds 1 and 2, targets 2/5/10%, each case alone and with
# resident replicas: those OLD_TAOT plans for the same family's next seed, as a microbatch's plan
# leaves them for the next (1,296 plans). Prints each case that differs with both plans' weighted
# cost and residual imbalance (old -> new), the count, and where any differ, the quality
# comparison of a change that moves plans: per EP and family, both builds' mean weighted cost
# over its 36 plans (K, seeds, targets, with and without residents), their ratio, and the
# targets each met. Exits 1 if any differs.
set -euo pipefail
old=$1 new=$2 planner=${3:-taot}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
differ=0 total=0
costs="$dir/costs.tsv"  # EP, family, old cost, new cost, old met, new met: one line a plan
# The plan without its timing (plan_time_us differs from run to run).
plan() { "$1" plan -i "$2" -p "$planner" --target-imbalance "$3" | grep -v '"plan_time_us"'; }
stat() { sed -n "s/.*\"$1\": \([^,]*\),*/\1/p" "$2"; }
for ranks in 16 64 256; do
  experts=$((4 * ranks))
  families=("--imbalance 10%" "--imbalance 30%" "--imbalance 50%" "--imbalance 70%" "--imbalance 90%"
    "--hot-experts 1 --hot-factor 10" "--hot-experts 1 --hot-factor 30"
    "--hot-experts 3 --hot-factor 10" "--hot-experts 3 --hot-factor 30"
    "--hot-experts $((ranks / 8)) --hot-factor 10" "--hot-experts $((ranks / 8)) --hot-factor 30"
    "--skew 0")
  for slots in 1 2 4; do
    for family in "${families[@]}"; do
      for seed in 1 2; do
        case_file="$dir/case.json"
        # shellcheck disable=SC2086  # the family is several flags
        "$new" gen --ranks "$ranks" --experts "$experts" --slots "$slots" --seed "$seed" $family \
          -o "$case_file" >/dev/null
        # shellcheck disable=SC2086
        "$new" gen --ranks "$ranks" --experts "$experts" --slots "$slots" --seed $((seed + 100)) $family \
          -o "$dir/previous.json" >/dev/null
        "$old" plan -i "$dir/previous.json" -p "$planner" -o "$dir/previous_plan.json" >/dev/null
        /usr/bin/python3 -c '
import json, sys
case = json.load(open(sys.argv[1]))
case["resident"] = [{"expert": r["expert"], "rank": r["rank"]} for r in json.load(open(sys.argv[2]))["replicas"]]
json.dump(case, open(sys.argv[3], "w"))' "$case_file" "$dir/previous_plan.json" "$dir/resident.json"
        for input in case resident; do
          for target in 2 5 10; do
            total=$((total + 1))
            plan "$old" "$dir/$input.json" "$target" >"$dir/old.json"
            plan "$new" "$dir/$input.json" "$target" >"$dir/new.json"
            old_cost=$(stat weighted_cost "$dir/old.json") new_cost=$(stat weighted_cost "$dir/new.json")
            printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$ranks" "$family" "$old_cost" "$new_cost" \
              "$(stat target_met "$dir/old.json")" "$(stat target_met "$dir/new.json")" >>"$costs"
            if ! cmp -s "$dir/old.json" "$dir/new.json"; then
              differ=$((differ + 1))
              echo "differs: EP$ranks K$slots $family seed $seed target $target% ($input):" \
                "cost $old_cost -> $new_cost," \
                "imbalance $(stat imbalance_after_pct "$dir/old.json") -> $(stat imbalance_after_pct "$dir/new.json")"
            fi
          done
        done
      done
    done
  done
done
echo "$differ of $total plans differ ($planner)"
[[ $differ -eq 0 ]] && exit 0
/usr/bin/python3 - "$costs" <<'PY'
import collections, sys
rows = collections.OrderedDict()
for line in open(sys.argv[1]):
    ep, family, old, new, old_met, new_met = line.rstrip("\n").split("\t")
    r = rows.setdefault((ep, family), [0.0, 0.0, 0, 0, 0])
    r[0] += float(old); r[1] += float(new); r[2] += old_met == "true"; r[3] += new_met == "true"; r[4] += 1
print("| EP | family | plans | mean cost (old) | mean cost (new) | ratio | targets met (old -> new) |")
print("|---|---|---|---|---|---|---|")
for (ep, family), (old, new, om, nm, n) in rows.items():
    # A family that moved nothing before (uniform loads) has no ratio: say whether it does now.
    ratio = f"{new / old:.3f}" if old else ("1.000" if new == old else "from 0")
    print(f"| EP{ep} | {family} | {n} | {old / n:.1f} | {new / n:.1f} | {ratio} | {om} -> {nm} |")
PY
exit 1
