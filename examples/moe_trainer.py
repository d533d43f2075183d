"""A small MoE model trained with taot.torch, to copy and adapt (docs/integration.md).

Each rank holds E / R experts (SwiGLU FFNs) of every MoE block; the router, the norms and the
embedding are data-parallel (their gradients are averaged over ranks), the experts are not (each
is one rank's). The router starts skewed, so a few experts are hot: taot copies them into the
guest slots of idle ranks and splits their tokens. AdamW, gradient accumulation over
--microbatches, gradient clipping.

    # one machine, CPU, 4 processes:
    PYTHONPATH=build/client_lib/python /usr/bin/python3 examples/moe_trainer.py --ranks 4
    # under torchrun (one process per rank; add --mode remote --address HOST:PORT for a daemon):
    PYTHONPATH=build/client_lib/python torchrun --nproc-per-node 4 examples/moe_trainer.py

It prints one line per step: the loss, and how many experts taot replicated in the last block.
"""
import argparse
import os
import socket

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F

import taot.torch


class Expert(torch.nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.w1 = torch.nn.Linear(dim, hidden, bias=False)
        self.w3 = torch.nn.Linear(dim, hidden, bias=False)
        self.w2 = torch.nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class MoEBlock(torch.nn.Module):
    def __init__(self, args, rank, world):
        super().__init__()
        self.top_k = args.top_k
        self.norm = torch.nn.LayerNorm(args.dim)
        self.router = torch.nn.Linear(args.dim, args.experts)
        with torch.no_grad():  # a skewed start: a few hot experts
            self.router.bias.zero_()
            self.router.bias[: max(1, args.experts // 8)] = 2.0
        local = args.experts // world
        experts = []
        for e in range(rank * local, (rank + 1) * local):
            torch.manual_seed(1000 + e)  # expert e is the same whatever the world size
            experts.append(Expert(args.dim, args.hidden))
        # The taot part: this rank's experts, balanced across ranks with K guest slots each.
        self.experts = taot.torch.ExpertParallel(torch.nn.ModuleList(experts), num_experts=args.experts,
                                                 slots=args.slots, mode=args.mode, address=args.address,
                                                 job_id=args.job_id, microbatches=args.microbatches)

    def forward(self, x, step, microbatch):
        h = self.norm(x)
        weights, ids = torch.topk(torch.softmax(self.router(h), dim=-1), self.top_k, dim=-1)
        weights = weights / weights.sum(dim=-1, keepdim=True)
        return x + self.experts(h, ids, weights, step=step, microbatch=microbatch)


class Model(torch.nn.Module):
    def __init__(self, args, rank, world):
        super().__init__()
        torch.manual_seed(0)  # the data-parallel parts start equal on every rank
        self.embed = torch.nn.Linear(args.features, args.dim)
        self.blocks = torch.nn.ModuleList(MoEBlock(args, rank, world) for _ in range(args.layers))
        torch.manual_seed(1)
        self.head = torch.nn.Linear(args.dim, 1)

    def forward(self, x, step, microbatch):
        h = self.embed(x)
        for block in self.blocks:
            h = block(h, step, microbatch)
        return self.head(h).squeeze(-1)


def batch(args, rank, step, microbatch):
    """A regression task from a fixed random teacher: each rank's own tokens."""
    g = torch.Generator().manual_seed(7)
    teacher = torch.randn(args.features, generator=g)
    g.manual_seed(10_000 * step + 100 * microbatch + rank)
    x = torch.randn(args.tokens, args.features, generator=g)
    return x, torch.tanh(x @ teacher)


def clip_grad_norm(shared, experts, max_norm):
    """Clipping by the norm of the whole model's gradient: the shared parameters' gradients are
    the same on every rank, each rank's experts are its own (so their squares are summed)."""
    squares = torch.stack([p.grad.pow(2).sum() for p in experts]).sum()
    dist.all_reduce(squares)
    norm = (squares + torch.stack([p.grad.pow(2).sum() for p in shared]).sum()).sqrt().item()
    scale = min(1.0, max_norm / (norm + 1e-6))
    for p in shared + experts:
        p.grad.mul_(scale)


def train(rank, world, args):
    model = Model(args, rank, world)
    experts = [p for _, p in taot.torch.expert_parameters(model)]  # each rank's own: not averaged
    shared = [p for p in model.parameters() if all(p is not e for e in experts)]
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    for step in range(args.steps):
        opt.zero_grad()
        total = 0.0
        for mb in range(args.microbatches):
            x, y = batch(args, rank, step, mb)
            loss = F.mse_loss(model(x, step, mb), y) / args.microbatches
            loss.backward()  # guest gradients are home when this returns
            total += loss.item()
        for p in shared:  # data parallelism for everything but the experts
            dist.all_reduce(p.grad)
            p.grad /= world
        clip_grad_norm(shared, experts, 1.0)
        opt.step()
        mean = torch.tensor([total])
        dist.all_reduce(mean)
        replicas = len(model.blocks[-1].experts.last_plan.replicas)
        if rank == 0:
            print(f"step {step} loss {mean.item() / world:.6f} replicas {replicas}", flush=True)


def spawned(rank, world, args):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{args.port}", rank=rank, world_size=world)
    train(rank, world, args)
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ranks", type=int, default=4, help="processes to spawn (ignored under torchrun)")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--microbatches", type=int, default=2, help="forwards accumulated per optimizer step")
    parser.add_argument("--layers", type=int, default=2, help="MoE blocks")
    parser.add_argument("--experts", type=int, default=16)
    parser.add_argument("--top-k", type=int, default=2)
    parser.add_argument("--slots", type=int, default=2, help="taot's guest slots per rank (0: no replication)")
    parser.add_argument("--mode", default="local", choices=["local", "remote", "predictive"])
    parser.add_argument("--address", default="", help="the taot-planner daemon (host:port), for remote/predictive")
    parser.add_argument("--job-id", default="", help="the daemon's job id")
    parser.add_argument("--dim", type=int, default=32)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--features", type=int, default=16)
    parser.add_argument("--tokens", type=int, default=128, help="tokens per rank and microbatch")
    parser.add_argument("--lr", type=float, default=3e-3)
    args = parser.parse_args()
    if "RANK" in os.environ:  # torchrun
        dist.init_process_group("gloo")
        train(dist.get_rank(), dist.get_world_size(), args)
        dist.destroy_process_group()
        return
    if args.ranks < 1 or args.experts % args.ranks:
        parser.error(f"--experts ({args.experts}) must be a multiple of --ranks ({args.ranks})")
    args.port = free_port()
    mp.spawn(spawned, args=(args.ranks, args), nprocs=args.ranks, join=True)


if __name__ == "__main__":
    main()
