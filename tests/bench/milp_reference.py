#!/usr/bin/python3
"""Exact reference for taot's planning problem: the minimum weighted replica-transfer cost that
brings every rank under the load cap of a target residual imbalance, with at most K replicas per
rank. A yardstick for the planners (docs/planners.md), not a planner.

The MILP (scipy.optimize.milp, HiGHS):
  y[e,g] in {0,1}   a replica of expert e on guest rank g (g != home(e))
  x[e,g] >= 0       tokens of e computed on g
  min  sum cost(home(e), g) * y[e,g]            (0 for a resident replica)
  s.t. sum_g x[e,g] <= T_e                       (an expert sheds at most its tokens)
       x[e,g] <= T_e * y[e,g]                    (tokens only where a replica is)
       load_r - sum_{e home r, g} x[e,g] + sum_{e not home r} x[e,r] <= cap   (every rank)
       sum_e y[e,r] <= K                         (guest slots)
cap = max(ceil(mean), floor(mean * (1 + target/100))), as in taot's LoadCap. With y fixed the rest
is a flow problem with integer data, so continuous x loses nothing against whole tokens.

Only experts of ranks above the cap and guests below it are modelled. This loses nothing when the
costs obey the triangle inequality (the 0/1/λ topology does): in a chain H -> M -> G, where M
sheds what it takes in, sending H's expert straight to G needs no more room on G, one slot
fewer and costs cost(H,G) <= cost(H,M) + cost(M,G). With no chains, a guest g never sheds, so
x[e,g] <= cap - load_g is a valid and much tighter bound than T_e. Pass --full to model every
pair anyway (for a general matrix or resident replicas).

Usage: milp_reference.py CASE.json --target PCT [--time-limit S] [--plan-out PLAN.json]
Prints one JSON line: {"status", "target_pct", "cap", "weighted_cost", "intra", "inter",
"max_load", "residual_pct", "seconds", "gap"}. The plan it writes can be checked with
`taot score --input CASE --plan PLAN`.
"""
import argparse
import json
import math
import sys
import time

import numpy as np
from scipy.optimize import LinearConstraint, Bounds, milp
from scipy.sparse import lil_matrix


def load_case(path):
    with open(path) as f:
        case = json.load(f)
    topo = case["topology"]
    R = topo["ranks"]
    if "node_of_rank" in topo:
        node = topo["node_of_rank"]
    else:
        g = topo.get("ranks_per_node", 8)
        node = [r // g for r in range(R)]
    if "cost_matrix" in topo:
        cost = np.array(topo["cost_matrix"], dtype=float)
    else:
        lam = topo.get("inter_node_cost", 3.0)
        cost = np.array([[0.0 if a == b else (1.0 if node[a] == node[b] else lam)
                          for b in range(R)] for a in range(R)])
    load = np.array(case["load"], dtype=np.int64)
    resident = {(r["expert"], r["rank"]) for r in case.get("resident", [])}
    return case, R, node, cost, load, resident


def load_cap(total, R, target_pct):
    ceil_mean = -(-total // R)
    return max(ceil_mean, math.floor(total * (1 + target_pct / 100.0) / R + 1e-6))


def solve(case_path, target_pct, time_limit, full=False):
    case, R, node, cost, load, resident = load_case(case_path)
    E = case["experts"]
    K = case["slots_per_rank"]
    per = E // R
    home = [e // per for e in range(E)]
    T = load.sum(axis=0)
    rank_load = np.array([T[r * per:(r + 1) * per].sum() for r in range(R)])
    total = int(T.sum())
    cap = load_cap(total, R, target_pct)

    def useful(e, g):
        if g == home[e] or T[e] == 0:
            return False
        return full or (rank_load[home[e]] > cap and rank_load[g] < cap)

    def room(e, g):
        return float(T[e]) if full else float(min(T[e], cap - rank_load[g]))

    pairs = [(e, g) for e in range(E) for g in range(R) if useful(e, g)]
    P = len(pairs)
    mean = total / R
    out = {"case": case_path, "target_pct": target_pct, "cap": int(cap)}
    if rank_load.max() <= cap:
        out.update(status="optimal", weighted_cost=0.0, gap=0.0, intra=0, inter=0, seconds=0.0,
                   max_load=float(rank_load.max()), residual_pct=(rank_load.max() - mean) / mean * 100)
        return out, []
    n = 2 * P  # y then x
    c = np.zeros(n)
    for i, (e, g) in enumerate(pairs):
        c[i] = 0.0 if (e, g) in resident else cost[home[e], g]
    integrality = np.concatenate([np.ones(P), np.zeros(P)])
    ub = np.concatenate([np.ones(P), [room(e, g) for e, g in pairs]])
    bounds = Bounds(np.zeros(n), ub)

    rows = E + P + R + R
    A = lil_matrix((rows, n))
    lo = np.full(rows, -np.inf)
    hi = np.zeros(rows)
    by_expert = [[] for _ in range(E)]
    for i, (e, g) in enumerate(pairs):
        by_expert[e].append(i)
    row = 0
    for e in range(E):
        for i in by_expert[e]:
            A[row, P + i] = 1
        hi[row] = T[e]
        row += 1
    for i, (e, g) in enumerate(pairs):
        A[row, P + i] = 1
        A[row, i] = -room(e, g)
        hi[row] = 0
        row += 1
    for r in range(R):
        for i, (e, g) in enumerate(pairs):
            if home[e] == r:
                A[row, P + i] = -1
            elif g == r:
                A[row, P + i] = 1
        hi[row] = cap - rank_load[r]
        row += 1
    for r in range(R):
        for i, (e, g) in enumerate(pairs):
            if g == r:
                A[row, i] = 1
        hi[row] = K
        row += 1

    start = time.time()
    res = milp(c, constraints=LinearConstraint(A.tocsr(), lo, hi), integrality=integrality,
               bounds=bounds, options={"time_limit": time_limit, "disp": False})
    out["seconds"] = round(time.time() - start, 3)
    if res.x is None:
        out.update(status="infeasible" if res.status == 2 else "no solution", weighted_cost=None)
        return out, None
    y = np.round(res.x[:P]).astype(int)
    x = res.x[P:]
    chosen = [(pairs[i], x[i]) for i in range(P) if y[i] == 1]
    intra = sum(1 for (e, g), _ in chosen if node[home[e]] == node[g] and (e, g) not in resident)
    inter = sum(1 for (e, g), _ in chosen if node[home[e]] != node[g] and (e, g) not in resident)
    final = rank_load.astype(float).copy()
    for (e, g), amount in chosen:
        final[home[e]] -= amount
        final[g] += amount
    out.update(
        status="optimal" if res.status == 0 else "time limit",
        weighted_cost=float(round(res.fun, 6)),
        gap=getattr(res, "mip_gap", None),
        intra=intra, inter=inter,
        max_load=float(final.max()),
        residual_pct=(final.max() - mean) / mean * 100 if mean > 0 else 0.0,
    )
    return out, chosen


def plan_json(case_path, chosen):
    """The MILP's replicas and tokens as a PLAN (docs/formats.md). Tokens are rounded down to whole
    ones and taken from the expert's sources in ascending rank order, so the plan may sit a few
    tokens above the cap where HiGHS returned fractions; `taot score` says by how much."""
    case, R, _, _, load, _ = load_case(case_path)
    taken = np.zeros_like(load)
    replicas, assignments = [], []
    for (e, g), amount in sorted(chosen):
        replicas.append({"expert": int(e), "rank": int(g)})
        need = int(math.floor(amount + 1e-6))
        for src in range(R):
            if need == 0:
                break
            n = int(min(need, load[src][e] - taken[src][e]))
            if n > 0:
                assignments.append({"source": src, "expert": int(e), "rank": int(g), "tokens": n})
                taken[src][e] += n
                need -= n
    assignments.sort(key=lambda a: (a["source"], a["expert"], a["rank"]))
    return {"planner": "milp", "replicas": replicas, "assignments": assignments}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("case")
    ap.add_argument("--target", type=float, required=True, help="target residual imbalance, percent")
    ap.add_argument("--time-limit", type=float, default=120.0, help="seconds for HiGHS")
    ap.add_argument("--full", action="store_true", help="model every (expert, guest) pair")
    ap.add_argument("--plan-out", help="write the optimum as a PLAN here (checked by `taot score`)")
    args = ap.parse_args()
    out, chosen = solve(args.case, args.target, args.time_limit, args.full)
    if args.plan_out and chosen is not None:
        with open(args.plan_out, "w") as f:
            json.dump(plan_json(args.case, chosen), f)
    print(json.dumps(out))


if __name__ == "__main__":
    sys.exit(main())
