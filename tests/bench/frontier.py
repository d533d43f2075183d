#!/usr/bin/python3
"""The planner evaluation behind docs/planners.md: residual imbalance against weight-transfer
cost, `taot` at several targets beside every peer and the exact MILP optimum.

  frontier.py run    --taot BUILD/tools/taot/taot --out DIR [--jobs 2] [--seeds 10] [--quick]
  frontier.py report --out DIR --doc docs/planners.md --plot docs/img/frontier.png

`run` generates the cases (EP16 and EP32, E = 128, K = 2, λ = 3; initial imbalance 10..90% and
burst cases, `--seeds` seeds each), solves the MILP (milp_reference.py) at targets 2/5/10%,
and runs every planner; results are cached as JSON lines in DIR, so a second run only fills
gaps. `report` checks the acceptance criteria and writes the markdown and the plot.
"""
import argparse
import concurrent.futures as futures
import json
import os
import subprocess
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
EPS = (16, 32)
IMBALANCES = (0.1, 0.3, 0.5, 0.7, 0.9)
BURST = "burst"
MILP_TARGETS = (2.0, 5.0, 10.0)
TAOT_TARGETS = (0.0, 1.0, 2.0, 5.0, 10.0)
PEERS = ("taot-paper", "echo", "llep", "eplb", "eplb-fixed-home", "lplb", "none")


def case_name(ep, kind, seed):
    label = BURST if kind == BURST else f"i{int(round(kind * 100)):02d}"
    return f"ep{ep}_{label}_s{seed:02d}"


def gen_args(ep, kind, seed):
    args = ["gen", "--ranks", str(ep), "--experts", "128", "--slots", "2", "--seed", str(seed)]
    if kind == BURST:
        args += ["--hot-experts", "4", "--hot-factor", "10"]
    else:
        args += ["--imbalance", str(kind)]
    return args


class Cache:
    """Append-only JSON lines keyed by a string; safe across threads."""

    def __init__(self, path):
        self.path = path
        self.lock = threading.Lock()
        self.data = {}
        if os.path.exists(path):
            with open(path) as f:
                for line in f:
                    if line.strip():
                        row = json.loads(line)
                        self.data[row["key"]] = row
    def get(self, key):
        return self.data.get(key)

    def put(self, key, row):
        row = dict(row, key=key)
        with self.lock:
            self.data[key] = row
            with open(self.path, "a") as f:
                f.write(json.dumps(row) + "\n")


def sh(args):
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout


def cases(seeds, quick):
    eps = (16,) if quick else EPS
    kinds = (0.7, BURST) if quick else IMBALANCES + (BURST,)
    return [(ep, k, s) for ep in eps for k in kinds for s in range(1, seeds + 1)]


def run(args):
    os.makedirs(os.path.join(args.out, "cases"), exist_ok=True)
    milp = Cache(os.path.join(args.out, "milp.jsonl"))
    plans = Cache(os.path.join(args.out, "planners.jsonl"))
    todo = cases(args.seeds, args.quick)
    paths = {}
    for ep, kind, seed in todo:
        name = case_name(ep, kind, seed)
        path = os.path.join(args.out, "cases", name + ".json")
        if not os.path.exists(path):
            sh([args.taot] + gen_args(ep, kind, seed) + ["--output", path])
        paths[name] = path

    def planners_job(name):
        key = f"{name}|compare"
        if plans.get(key) is None or args.refresh_planners:
            rows = [json.loads(l) for l in sh([args.taot, "compare", "--json", "-i", paths[name]]).splitlines()]
            plans.put(key, {"case": name, "rows": rows})
        paper = next(r for r in plans.get(key)["rows"] if r["planner"] == "taot-paper")["stats"]
        targets = [(f"t{t:g}", t) for t in TAOT_TARGETS] + [("paper", paper["imbalance_after_pct"])]
        for label, t in targets:
            k = f"{name}|taot|{label}"
            if plans.get(k) is None or args.refresh_planners:
                row = json.loads(sh([args.taot, "compare", "--json", "--planners", "taot",
                                     "--target-imbalance", repr(t), "-i", paths[name]]))
                plans.put(k, {"case": name, "target": t, "stats": row["stats"]})

    def milp_job(name, target, full):
        key = f"{name}|{target:g}" + ("|full" if full else "")
        if milp.get(key) is None:
            out = sh(["/usr/bin/python3", os.path.join(HERE, "milp_reference.py"), paths[name],
                      "--target", str(target), "--time-limit",
                      str(args.full_time_limit if full else args.milp_time_limit)] + (["--full"] if full else []))
            milp.put(key, dict(json.loads(out), case=name))

    names = list(paths)
    jobs = [(planners_job, (n,)) for n in names]
    if not args.skip_milp:
        jobs += [(milp_job, (n, t, False)) for n in names for t in MILP_TARGETS]
        # The full model (chains allowed) is the exact optimum but slow: a few seeds per group.
        jobs += [(milp_job, (n, t, True)) for n in names for t in MILP_TARGETS
                 if int(n.rsplit("_s", 1)[1]) <= args.full_seeds]
    done = 0
    with futures.ThreadPoolExecutor(args.jobs) as pool:
        for f in futures.as_completed([pool.submit(fn, *a) for fn, a in jobs]):
            f.result()
            done += 1
            print(f"\r{done}/{len(jobs)} jobs", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--taot", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--jobs", type=int, default=2)
    r.add_argument("--seeds", type=int, default=10)
    r.add_argument("--quick", action="store_true")
    r.add_argument("--skip-milp", action="store_true")
    r.add_argument("--refresh-planners", action="store_true", help="rerun the planners, keep the MILP cache")
    r.add_argument("--milp-time-limit", type=float, default=300)
    r.add_argument("--full-seeds", type=int, default=3, help="seeds per group for the full MILP")
    r.add_argument("--full-time-limit", type=float, default=120)
    p = sub.add_parser("report")
    p.add_argument("--out", required=True)
    p.add_argument("--doc")
    p.add_argument("--plot")
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    if args.cmd == "run":
        run(args)
    else:
        import frontier_report
        frontier_report.report(args, cases(args.seeds, args.quick), case_name)


if __name__ == "__main__":
    main()
