"""What taot.torch's ExpertParallel costs per layer, against the raw module calls (CPU, gloo).

R processes, each with E/R experts (Linear-ReLU-Linear), T tokens x top-k per rank. Per layer,
forward and backward, median over --iters after --warmup, each row measured in the same run:
- raw: each rank calls its own experts on T x k / (E/R) rows each, no communication (the floor);
- plain EP: standard expert parallelism by hand (every pair to its expert's home, torch's
  differentiable all_to_all_single both ways, a count exchange), no taot;
- ExpertParallel, K = 0, planner none: the wrapper and its all-to-alls, no replication;
- ExpertParallel, K = 2, taot, local mode: planning, weight moves and gradient return too.
Routing families: uniform, zipf-like (weights 1/(e+1)), one hot expert (half the pairs).
Overhead = row - raw and row - plain EP, in microseconds per layer (worst family); a table on stdout.

Usage: PYTHONPATH=build/client_lib/python /usr/bin/python3 tests/bench/taot_torch_bench.py
       [--ranks 2] [--experts 8] [--tokens 1024] [--dim 64] [--hidden 128] [--iters 30]
"""
import argparse
import statistics
import tempfile
import time

import torch
import torch.distributed as dist
import torch.distributed.nn.functional as dist_fn
import torch.multiprocessing as mp


def make_experts(args, rank):
    torch.manual_seed(rank)
    return torch.nn.ModuleList(
        torch.nn.Sequential(torch.nn.Linear(args.dim, args.hidden), torch.nn.ReLU(), torch.nn.Linear(args.hidden, args.dim))
        for _ in range(args.experts // args.ranks))


def routing(args, family, rank, step):
    g = torch.Generator().manual_seed(1000 * step + rank)
    if family == "uniform":
        weights = torch.ones(args.experts)
    elif family == "zipf":
        weights = 1.0 / torch.arange(1, args.experts + 1, dtype=torch.float32)
    else:  # one hot expert: half of all pairs
        weights = torch.full((args.experts,), 1.0 / (args.experts - 1))
        weights[0] = 1.0
    ids = torch.multinomial(weights.expand(args.tokens, -1), args.top_k, replacement=False, generator=g)
    return ids, torch.full((args.tokens, args.top_k), 1.0 / args.top_k)


def plain_ep(args, experts, x, ids, gates):
    """Every pair to its expert's home rank: what a trainer runs without taot."""
    k, local = ids.shape[1], args.experts // args.ranks
    flat = ids.reshape(-1)
    order = torch.argsort(flat, stable=True)  # by expert, so by home rank, then local expert
    counts = torch.bincount(flat, minlength=args.experts)
    received = torch.empty_like(counts)
    dist.all_to_all_single(received, counts)
    send = counts.view(args.ranks, local).sum(1).tolist()
    recv = received.view(args.ranks, local).sum(1).tolist()
    arrived = dist_fn.all_to_all_single(x.new_empty(sum(recv), x.shape[1]), x.index_select(0, order // k), recv, send)
    by_expert = torch.arange(local).repeat(args.ranks).repeat_interleave(received)
    grouped = torch.argsort(by_expert, stable=True)
    rows = arrived.index_select(0, grouped)
    outs = [experts[e](chunk) for e, chunk in enumerate(rows.split(received.view(args.ranks, local).sum(0).tolist()))]
    outputs = torch.empty_like(rows).index_copy(0, grouped, torch.cat(outs))
    back = dist_fn.all_to_all_single(x.new_empty(sum(send), x.shape[1]), outputs, send, recv)
    per_pair = torch.empty_like(back).index_copy(0, order, back)
    return (per_pair.view(-1, k, x.shape[1]) * gates.unsqueeze(-1)).sum(1)


def timed(args, fn):
    times = []
    for i in range(args.warmup + args.iters):
        dist.barrier()
        start = time.perf_counter()
        fn(i)
        times.append(time.perf_counter() - start)
    mine = torch.tensor([statistics.median(times[args.warmup:])])
    dist.all_reduce(mine, op=dist.ReduceOp.MAX)  # a layer is as slow as its slowest rank
    return mine.item() * 1e6


def worker(rank, args):
    import taot.torch

    torch.set_num_threads(1)  # one core per rank
    dist.init_process_group("gloo", init_method=f"file://{args.tmp}/pg", rank=rank, world_size=args.ranks)
    x = torch.randn(args.tokens, args.dim)
    raw = make_experts(args, rank)
    per_expert = args.tokens * args.top_k // (args.experts // args.ranks)

    rows_raw = x.repeat(-(-per_expert // args.tokens), 1)[:per_expert]

    def raw_layer(_):
        sum(e(rows_raw).sum() for e in raw).backward()

    # Two groups over the same ranks: one taot session each (a session's layers share K and mode).
    layers = {
        "ExpertParallel K=0, planner none": taot.torch.ExpertParallel(
            make_experts(args, rank), num_experts=args.experts, slots=0, planner="none"),
        "ExpertParallel K=2, taot (local)": taot.torch.ExpertParallel(
            make_experts(args, rank), num_experts=args.experts, slots=2, group=dist.new_group(list(range(args.ranks)))),
    }
    rows = {}
    rows["raw module calls"] = {f: timed(args, raw_layer) for f in args.families}
    plain = make_experts(args, rank)
    rows["plain EP (no taot)"] = {}
    for family in args.families:
        def plain_layer(i, family=family):
            ids, gates = routing(args, family, rank, i)
            plain_ep(args, plain, x.detach().requires_grad_(), ids, gates).sum().backward()
        rows["plain EP (no taot)"][family] = timed(args, plain_layer)
    for name, moe in layers.items():
        rows[name] = {}
        for family in args.families:
            def layer(i, moe=moe, family=family):
                ids, gates = routing(args, family, rank, i)
                xi = x.detach().requires_grad_()
                moe(xi, ids, gates).sum().backward()
            rows[name][family] = timed(args, layer)
    dist.destroy_process_group()
    if rank == 0:
        print_table(args, rows)


def print_table(args, rows):
    print(f"{args.ranks} ranks, E = {args.experts}, {args.tokens} tokens x top-{args.top_k} per rank, "
          f"D = {args.dim}, H = {args.hidden}; forward + backward per layer, median of {args.iters} (us)")
    raw, plain = rows["raw module calls"], rows["plain EP (no taot)"]
    print("| layer | " + " | ".join(args.families) + " | over raw (worst family) | over plain EP (worst family) |")
    print("|---|" + "---|" * (len(args.families) + 2))
    for name, times in rows.items():
        over_raw = max(times[f] - raw[f] for f in args.families)
        over_plain = max(times[f] - plain[f] for f in args.families)
        print(f"| {name} | " + " | ".join(f"{times[f]:.0f}" for f in args.families) +
              f" | {over_raw:+.0f} | {over_plain:+.0f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--experts", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=1024)
    parser.add_argument("--top-k", type=int, default=2)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--iters", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    args = parser.parse_args()
    args.families = ["uniform", "zipf", "one hot"]
    with tempfile.TemporaryDirectory() as tmp:
        args.tmp = tmp
        mp.spawn(worker, args=(args,), nprocs=args.ranks, join=True)


if __name__ == "__main__":
    main()
