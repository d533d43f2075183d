#!/usr/bin/env bash
# The main job: builds taot, starts taot-planner for a 16-rank job on two simulated nodes,
# drives it with 16 simulated ranks (real taot clients, each reporting to the daemon over gRPC,
# replaying a drifting, bursty workload, printing each layer's imbalance before and after and
# the cross-node traffic as plans come back), plans one generated case through the daemon with taotctl, shows its status, and stops
# it with SIGTERM. Extra arguments go to taot-simranks (e.g. --steps 20 --imbalance 0.7).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh >/dev/null
bin="${TAOT_BUILD_DIR:-build}"
work=$(mktemp -d)
log="$work/taot-planner.log"

"$bin/server/taot-planner" --job-id demo --world-size 16 --experts 128 --listen 127.0.0.1:0 \
  --metrics-listen 127.0.0.1:0 2>"$log" &
daemon=$!
trap 'kill -TERM $daemon 2>/dev/null || true; wait $daemon 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 100); do
  grep -q "msg=listening" "$log" && break
  sleep 0.1
done
address=$(sed -n 's/.*msg=listening address=\([^ ]*\).*/\1/p' "$log")
metrics=$(sed -n 's/.*msg=metrics address=\([^ ]*\).*/\1/p' "$log")
[ -n "$address" ] || { cat "$log"; exit 1; }
echo "taot-planner listening on $address (metrics on http://$metrics/metrics)"
echo
echo "== 16 simulated ranks on 2 nodes, remote planning per (step, layer)"
"$bin/tools/taot-simranks/taot-simranks" --address "$address" --job-id demo --world-size 16 --experts 128 "$@"
echo
echo "== one generated EP16 case planned through the daemon (taotctl plan)"
"$bin/tools/taot/taot" gen --ranks 16 --experts 128 --imbalance 0.7 --seed 7 -o "$work/case.json"
"$bin/tools/taotctl/taotctl" --address "$address" plan "$work/case.json"
echo
echo "== taotctl status"
"$bin/tools/taotctl/taotctl" --address "$address" status
