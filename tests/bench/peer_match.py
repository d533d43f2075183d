#!/usr/bin/python3
"""taot against each peer at the peer's own operating point: for every case and every peer port,
the peer plans, then `taot` is asked for the residual the peer reached; the table says how often
taot reached it at no more weight-transfer cost, and its cost relative to the peer's.

  peer_match.py --taot build/tools/taot/taot [--seeds 3] [--jobs 2] [--markdown]
                [--milp FAMILY ...] [--milp-peers PEER,...] [--milp-cache FILE]

Cases: the public cases of tests/data/peers (where the ports are checked against the peers' own
code), and `taot gen` cases at EP16/32 (E = 128) and EP64 (E = 256), K = 2, initial imbalance
10, 30, 50, 70 and 90% (zipf-like) and bursts of 1 and 3 experts 10x hotter, `--seeds` seeds each.
Families are reported apart, the worst case beside the mean, so that no family hides behind
another. Costs are the scorecard's weighted cost (intra-node transfers + λ x inter-node ones).

--milp FAMILY (e.g. "burst EP16", "zipf EP16"; repeatable) also solves the exact MILP
(milp_reference.py --full: every expert and guest, chains included) on that family's cases at each
peer's residual (--milp-peers: only these peers), and reports taot's cost over the optimum and the
optimum's over the peer's: what any planner could save at that residual. It takes up to a few
minutes per case and target at EP16, longer beyond.
--milp-cache FILE keeps every MILP's result (JSON lines, keyed by the case's content and the
target), so that an interrupted or repeated run solves only what is missing.
"""
import argparse
import concurrent.futures as futures
import hashlib
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "data", "peers", "cases")
PEERS = (("taot-paper", []), ("echo", []), ("llep", []), ("eplb", []), ("eplb", ["groups=R"]))
IMBALANCES = (0.1, 0.3, 0.5, 0.7, 0.9)
BURSTS = (1, 3)
SHAPES = ((16, 128), (32, 128), (64, 256))


def peer_label(name, params):
    return name + ("(" + ",".join(params) + ")" if params else "")


def generated(taot, out_dir, seeds):
    cases = []
    for ranks, experts in SHAPES:
        for seed in range(1, seeds + 1):
            kinds = [("zipf", ["--imbalance", str(i)], f"i{int(i * 100):02d}") for i in IMBALANCES]
            kinds += [("burst", ["--hot-experts", str(h), "--hot-factor", "10"], f"b{h}") for h in BURSTS]
            for family, args, label in kinds:
                path = os.path.join(out_dir, f"ep{ranks}_{label}_s{seed}.json")
                cmd = [taot, "gen", "--ranks", str(ranks), "--experts", str(experts), "--slots", "2",
                       "--seed", str(seed), *args]
                with open(path, "w") as f:
                    subprocess.run(cmd, stdout=f, check=True)
                cases.append((f"{family} EP{ranks}", path))
    return cases


def fixtures():
    out = []
    for name in sorted(os.listdir(FIXTURES)):
        family = "public corners" if name.startswith("corner") else "public cases"
        out.append((family, os.path.join(FIXTURES, name)))
    return out


def stats(taot, case, planner, params, target=None):
    cmd = [taot, "plan", "-i", case, "-p", planner]
    for p in params:
        cmd += ["--param", p]
    if target is not None:
        cmd += ["--target-imbalance", repr(target)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {proc.stderr.strip()}")
    return json.loads(proc.stdout)["stats"]


def match(taot, family, case, peer, params):
    theirs = stats(taot, case, peer, params)
    ours = stats(taot, case, "taot", [], target=theirs["imbalance_after_pct"])
    return {"family": family, "case": os.path.basename(case), "peer": peer_label(peer, params),
            "peer_residual": theirs["imbalance_after_pct"], "peer_cost": theirs["weighted_cost"],
            "taot_residual": ours["imbalance_after_pct"], "taot_cost": ours["weighted_cost"]}


class MilpCache:
    """MILP results by (case content, target); a result stands for any time limit up to the one
    it was solved under, and for every limit once it is proven optimal."""

    def __init__(self, path):
        self.path, self.rows = path, {}
        if path and os.path.exists(path):
            with open(path) as f:
                for line in f:
                    row = json.loads(line)
                    self.rows[row["key"]] = row

    @staticmethod
    def key(case, target):
        with open(case, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest() + "|" + repr(target)

    def get(self, case, target, time_limit):
        row = self.rows.get(self.key(case, target))
        if row and (row["status"] == "optimal" or row["time_limit"] >= time_limit):
            return row["weighted_cost"], row["status"]
        return None

    def put(self, case, target, time_limit, cost, status):
        row = {"key": self.key(case, target), "case": os.path.basename(case), "target": target,
               "time_limit": time_limit, "weighted_cost": cost, "status": status}
        self.rows[row["key"]] = row
        if self.path:
            with open(self.path, "a") as f:
                f.write(json.dumps(row) + "\n")


def milp_cost(case, target, time_limit, cache):
    cached = cache.get(case, target, time_limit)
    if cached:
        return cached
    cmd = [sys.executable, os.path.join(HERE, "milp_reference.py"), case, "--target", repr(target), "--full",
           "--time-limit", str(time_limit)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {proc.stderr.strip()}")
    out = json.loads(proc.stdout)
    cache.put(case, target, time_limit, out["weighted_cost"], out["status"])
    return out["weighted_cost"], out["status"]


def summarise(rows):
    groups = {}
    for r in rows:
        groups.setdefault((r["peer"], r["family"]), []).append(r)
    out = []
    for (peer, family), rs in sorted(groups.items()):
        worse = [r for r in rs if r["taot_cost"] > r["peer_cost"] or r["taot_residual"] > r["peer_residual"] + 1e-9]
        ratios = [r["taot_cost"] / r["peer_cost"] for r in rs if r["peer_cost"] > 0]
        mean_ratio = sum(r["taot_cost"] for r in rs) / max(sum(r["peer_cost"] for r in rs), 1e-12)
        out.append({"peer": peer, "family": family, "cases": len(rs), "taot_worse": len(worse),
                    "worse_cases": [r["case"] for r in worse], "mean_cost_ratio": mean_ratio,
                    "worst_ratio": max(ratios) if ratios else 0.0,
                    "mean_peer_residual": sum(r["peer_residual"] for r in rs) / len(rs)})
    return out


def milp_table(rows):
    lines = ["| peer | case | peer's residual % | peer's cost | taot cost | exact optimum | taot / optimum | solver |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ratio = r["taot_cost"] / r["milp_cost"] if r["milp_cost"] > 0 else float(r["taot_cost"] == 0)
        lines.append(f"| {r['peer']} | {r['case']} | {r['peer_residual']:.2f} | {r['peer_cost']:g} | {r['taot_cost']:g} | "
                     f"{r['milp_cost']:g} | {ratio:.3f} | {r['milp_status']} |")
    lines.append("")
    groups = {}
    for r in rows:
        groups.setdefault((r["family"], r["peer"]), []).append(r)
    for (family, peer), rs in sorted(groups.items()):
        ratios = [r["taot_cost"] / r["milp_cost"] for r in rs if r["milp_cost"] > 0]
        within = sum(x <= 1.05 for x in ratios)
        optimum = sum(r["milp_cost"] for r in rs)
        lines.append(f"- {family}, at {peer}'s residual: taot / optimum {sum(r['taot_cost'] for r in rs) / max(optimum, 1e-12):.3f} "
                     f"(total over total), worst {max(ratios, default=1.0):.3f}, {within} of {len(ratios)} within 5%; "
                     f"the optimum costs {optimum / max(sum(r['peer_cost'] for r in rs), 1e-12):.3f}x the peer.")
    return "\n".join(lines)


def markdown(summary):
    lines = ["| peer | family | cases | peer's mean residual % | taot costlier or short | "
             "taot's cost / peer's (mean) | worst case |", "|---|---|---|---|---|---|---|"]
    for s in summary:
        worse = str(s["taot_worse"]) + (f" ({', '.join(s['worse_cases'])})" if s["worse_cases"] else "")
        lines.append(f"| {s['peer']} | {s['family']} | {s['cases']} | {s['mean_peer_residual']:.2f} | {worse} | "
                     f"{s['mean_cost_ratio']:.3f} | {s['worst_ratio']:.3f} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--taot", required=True, help="the taot binary (build/tools/taot/taot)")
    ap.add_argument("--seeds", type=int, default=3, help="seeds per generated group (default 3)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="plans run in parallel")
    ap.add_argument("--markdown", action="store_true", help="print the summary as a markdown table")
    ap.add_argument("--milp", action="append", default=[], metavar="FAMILY",
                    help='also the exact MILP on this family\'s cases at each peer\'s residual ("burst EP16")')
    ap.add_argument("--milp-peers", help="comma-separated peers for --milp (default: every peer)")
    ap.add_argument("--milp-time-limit", type=float, default=300, help="seconds per MILP (default 300)")
    ap.add_argument("--milp-cache", help="JSON lines file that keeps MILP results between runs")
    args = ap.parse_args()
    if args.seeds < 1:
        ap.error("--seeds: must be >= 1")
    families = {f"{kind} EP{ranks}" for kind in ("zipf", "burst") for ranks, _ in SHAPES} | {"public cases", "public corners"}
    for family in args.milp:
        if family not in families:
            ap.error(f"--milp: unknown family {family!r} (one of: {', '.join(sorted(families))})")
    labels = [peer_label(p, q) for p, q in PEERS]
    milp_peers = args.milp_peers.split(",") if args.milp_peers else labels
    for peer in milp_peers:
        if peer not in labels:
            ap.error(f"--milp-peers: unknown peer {peer!r} (one of: {', '.join(labels)})")
    with tempfile.TemporaryDirectory() as tmp:
        cases = fixtures() + generated(args.taot, tmp, args.seeds)
        work = [(family, case, peer, params) for family, case in cases for peer, params in PEERS]
        rows = []
        with futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
            for i, row in enumerate(pool.map(lambda w: match(args.taot, *w), work), 1):
                rows.append(row)
                print(f"\r{i}/{len(work)} plans compared", end="", file=sys.stderr)
        print(file=sys.stderr)
        exact = [r for r in rows if r["family"] in args.milp and r["peer"] in milp_peers]
        cases_by_name = {os.path.basename(c): c for _, c in cases}
        cache = MilpCache(args.milp_cache)
        for i, r in enumerate(exact, 1):  # peers that reach the same residual share one MILP
            r["milp_cost"], r["milp_status"] = milp_cost(cases_by_name[r["case"]], r["peer_residual"],
                                                         args.milp_time_limit, cache)
            print(f"\r{i}/{len(exact)} MILPs solved", end="", file=sys.stderr)
        if exact:
            print(file=sys.stderr)
    summary = summarise(rows)
    print(markdown(summary) if args.markdown else json.dumps(summary, indent=1))
    if exact:
        print()
        print(milp_table(exact) if args.markdown else json.dumps(exact, indent=1))
    return 1 if any(s["taot_worse"] for s in summary) else 0


if __name__ == "__main__":
    sys.exit(main())
