#!/usr/bin/env bash
# The README's main job, shortened: it must exit 0, plan every round for every rank alike, and
# reach taotctl's status with all 16 ranks registered.
set -euo pipefail
out=$("$1/scripts/demo.sh" --steps 2 --layers 2)
echo "$out"
grep -q "4 rounds x 16 ranks: 0 fallback rounds, 0 plans that differ from rank 0's" <<<"$out"
grep -q "job demo: 16 of 16 ranks registered, 2 nodes" <<<"$out"
grep -Eq "^taot: [0-9]+ replicas" <<<"$out"
