#!/usr/bin/python3
"""taot's exact transport solvers against POT's network simplex (ot.emd2), an independent
implementation: random general cost matrices up to 64 x 64 (SolveMinCostTransport) and random
two-level topologies up to 64 ranks (SolveTreeTransport), balanced and unbalanced.

Usage: test_ot_vs_pot.py PATH/TO/ot_solve [--cases N]
"""
import argparse
import json
import subprocess
import sys

import numpy as np
import ot


def pot_cost(supply, demand, cost):
    """Minimum cost of moving min(sum supply, sum demand): the excess goes to a free dummy."""
    a = np.array(supply, dtype=np.float64)
    b = np.array(demand, dtype=np.float64)
    M = np.array(cost, dtype=np.float64)
    if a.sum() > b.sum():
        b = np.append(b, a.sum() - b.sum())
        M = np.hstack([M, np.zeros((M.shape[0], 1))])
    elif b.sum() > a.sum():
        a = np.append(a, b.sum() - a.sum())
        M = np.vstack([M, np.zeros((1, M.shape[1]))])
    if a.sum() == 0:
        return 0.0
    return float(ot.emd2(a, b, M, numItermax=10_000_000))


def cases(rng, n):
    for i in range(n):
        balanced = i % 2 == 0
        if i % 3 == 0:
            R = int(rng.integers(1, 65))
            per_node = int(rng.integers(1, 9))
            nodes = [r // per_node for r in range(R)]
            lam = float(rng.integers(1, 6))
            supply = rng.integers(0, 500, R)
            demand = rng.integers(0, 500, R)
            if balanced and demand.sum() > 0:
                demand = np.floor(demand * supply.sum() / demand.sum()).astype(int)
                demand[0] += supply.sum() - demand.sum()
            cost = [[0.0 if a == b else (1.0 if nodes[a] == nodes[b] else lam) for b in range(R)]
                    for a in range(R)]
            yield ({"supply": supply.tolist(), "demand": demand.tolist(), "node_of_rank": nodes,
                    "inter": lam}, cost)
        else:
            m = int(rng.integers(1, 65))
            n_ = int(rng.integers(1, 65))
            supply = rng.integers(0, 1000, m)
            demand = rng.integers(0, 1000, n_)
            if balanced and demand.sum() > 0:
                demand = np.floor(demand * supply.sum() / demand.sum()).astype(int)
                demand[0] += supply.sum() - demand.sum()
            cost = rng.integers(0, 100, (m, n_)).astype(float) / 4
            yield ({"supply": supply.tolist(), "demand": demand.tolist(), "cost": cost.tolist()},
                   cost.tolist())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("solver")
    ap.add_argument("--cases", type=int, default=120)
    args = ap.parse_args()
    rng = np.random.default_rng(12345)
    problems = list(cases(rng, args.cases))
    stdin = "".join(json.dumps(p) + "\n" for p, _ in problems)
    out = subprocess.run([args.solver], input=stdin, capture_output=True, text=True, check=True)
    ours = [json.loads(line)["cost"] for line in out.stdout.splitlines()]
    assert len(ours) == len(problems), (len(ours), len(problems))
    failures = 0
    for k, ((p, cost), got) in enumerate(zip(problems, ours)):
        want = pot_cost(p["supply"], p["demand"], cost)
        if abs(got - want) > 1e-6 * max(1.0, abs(want)):
            failures += 1
            kind = "tree" if "node_of_rank" in p else "general"
            print(f"case {k} ({kind}, {len(p['supply'])} x {len(p['demand'])}): taot {got} != POT {want}")
    print(f"{len(problems) - failures}/{len(problems)} transport problems match POT's ot.emd2")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
