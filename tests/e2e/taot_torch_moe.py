"""taot.torch's ExpertParallel trained beside a dense oracle, step by step (ctest, CPU only).

4 ranks in 4 processes on two simulated nodes (n0: ranks 0-1, n1: ranks 2-3), a gloo process
group, 16 experts (E/R = 4, each nn.Sequential(Linear, ReLU, Linear) with biases), top-2 routing
skewed towards a few experts, K = 2 guest slots. The oracle is dense: every rank holds all 16
experts and computes each of its tokens' choices itself (no dispatch at all), and the experts'
and router's gradients are summed over ranks, as expert parallelism would. Each step runs two
microbatches forward before one backward (both in flight at once), then an SGD step on both.
Outputs, input gradients, router gradients, expert gradients and the weights after each step must
agree; then the layer takes the oracle's weights, so that each step starts from the same ones
(what is guaranteed is per step: over many steps rounding differences compound, docs/
integration.md, "Numbers"). Expert 7 never gets a token.

At the end each rank closes its session (twice: close is idempotent; a call after it raises), and
once the trainer has destroyed the process group and dropped its layer, the group must be gone:
a group kept alive into interpreter teardown aborts the process there (taot/torch.py, _sessions).

Tolerance: rtol = 1e-4, atol = 1e-5 x the tensor's largest magnitude (at least 1) on float32 (as
tests/e2e/moe_torch.py explains: the same per-pair terms, summed in another order).

Usage: taot_torch_moe.py BUILD_DIR MODE [--kill-daemon-at STEP] [--secure] [--idle-rank]
                         [--daemon ADDRESS --tls-dir DIR --token TOKEN] [--steps N] [--pause-s S]
                         [--device cuda]
MODE is local, remote, predictive. --idle-rank: rank 3's experts are never chosen and the planner
is `none`, so rank 3 receives no token at all and must still join every collective in backward.
--daemon: train against a daemon already running (job "e2e", R = 4, E = 16, K = 2; the container
test's), with mutual TLS from DIR (ca.pem, client.pem, client.key) and the token; the plan sources
of every step are printed as one JSON line ("sources: [...]"). --pause-s: a pause between steps.
--device cuda: the device variant (label `gpu`): rank r's experts, tokens and oracle on cuda:r, an
NCCL process group, and taot's NCCL transport (its counts, reroute, moves and gradient return on
the device plane); the same checks. It needs a CUDA build of torch, taot built with NCCL and one
device per rank (NCCL takes one rank per device), and exits with 77 (ctest's skip) without them.
"""
import argparse
import copy
import gc
import json
import os
import signal
import sys
import tempfile
import time
import weakref

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import taot_testing  # noqa: E402 (tests/taot_testing.py)

R, E, K, TOPK = 4, 16, 2, 2
D, H, T = 8, 16, 48
MICRO, LR = 2, 0.05
RTOL, ATOL = 1e-4, 1e-5
NEVER = [7]  # an expert no token chooses
SKIP = 77  # ctest's SKIP_RETURN_CODE for the device variant


def make_expert():
    return torch.nn.Sequential(torch.nn.Linear(D, H), torch.nn.ReLU(), torch.nn.Linear(H, D))


def route(x, router, bias):
    top, ids = torch.topk(x @ router + bias, TOPK, dim=1)
    return ids, torch.softmax(top, dim=1)


def dense_layer(experts, x, ids, gates):
    """Every choice computed here, with every expert: the oracle."""
    out = x.new_zeros(x.shape[0], D)
    for e in range(E):
        token, choice = (ids == e).nonzero(as_tuple=True)
        if len(token):
            out = out.index_add(0, token, experts[e](x[token]) * gates[token, choice].unsqueeze(1))
    return out


def close(a, b, what, step, rank):
    """Equal up to reordered float32 sums: a reordered sum's error scales with its terms, not with
    the result, so atol scales with the tensor's largest magnitude (weights and gradients grow
    over the steps: the loss is linear in the outputs)."""
    scale = max(1.0, b.abs().max().item())
    if not torch.allclose(a, b, rtol=RTOL, atol=ATOL * scale):
        raise AssertionError(f"rank {rank} step {step}: {what} differ by up to {(a - b).abs().max().item():.3g} "
                             f"(largest magnitude {scale:.3g})")


def worker(rank, args):
    group = train(rank, args)
    gc.collect()
    if group() is not None:
        raise AssertionError(f"rank {rank}: the process group outlived destroy_process_group() and the trainer's "
                             f"layer: something of taot's still holds it")


def train(rank, args):
    """The test's steps; returns a weak reference to the process group, destroyed at the end."""
    sys.path.insert(0, os.path.join(args.build, "client_lib", "python"))
    import taot.torch

    device = torch.device("cpu")
    if args.device == "cuda":
        device = torch.device("cuda", rank)
        torch.cuda.set_device(device)
    backend = "nccl" if device.type == "cuda" else "gloo"
    dist.init_process_group(backend, init_method=f"file://{args.tmp}/pg", rank=rank, world_size=R)
    torch.manual_seed(0)  # the same model on every rank (drawn on the CPU, then moved)
    experts = [make_expert().to(device) for _ in range(E)]
    bias = torch.zeros(E, device=device)
    bias[[0, 1, 5]] = torch.tensor([2.5, 2.0, 1.5])  # hot experts, two of them on rank 0
    bias[NEVER] = -1e4
    if args.idle_rank:
        bias[12:16] = -1e4
    router = (torch.randn(D, E) * 0.5).to(device).requires_grad_()
    dense = torch.nn.ModuleList(copy.deepcopy(experts))
    dense_router = router.detach().clone().requires_grad_()
    torch.manual_seed(100 + rank)
    inputs = [[torch.randn(T, D).to(device) for _ in range(MICRO)] for _ in range(args.steps)]
    targets = [[torch.randn(T, D).to(device) for _ in range(MICRO)] for _ in range(args.steps)]
    mine = list(range(rank * (E // R), (rank + 1) * (E // R)))
    options = dict(call_timeout_s=2.0, placement_wait_s=2.0, **args.secure_options)
    if args.idle_rank:
        options.update(planner="none")

    # The taot code of a trainer: the layer, built from this rank's experts.
    moe = taot.torch.ExpertParallel(torch.nn.ModuleList(copy.deepcopy(experts[e]) for e in mine), num_experts=E,
                                    slots=K, mode=args.mode, address=args.address, job_id="e2e",
                                    node="n0" if rank < 2 else "n1", microbatches=MICRO, max_pairs=T * TOPK,
                                    **options)
    sgd = torch.optim.SGD(list(moe.parameters()) + [router], lr=LR)
    dense_sgd = torch.optim.SGD(list(dense.parameters()) + [dense_router], lr=LR)

    sources, replicated = [], 0
    for step in range(args.steps):
        time.sleep(args.pause_s)
        if args.kill_daemon_at == step and rank == 0:
            os.kill(args.daemon_pid, signal.SIGKILL)
        dist.barrier()
        sgd.zero_grad()
        dense_sgd.zero_grad()
        loss, dense_loss, xs = 0, 0, []
        for mb in range(MICRO):
            x = inputs[step][mb].clone().requires_grad_()
            x_dense = inputs[step][mb].clone().requires_grad_()
            ids, gates = route(x, router, bias)
            y = moe(x, ids, gates, step=step, microbatch=mb)
            sources.append(moe.last_plan.source)
            replicated += len(moe.last_plan.replicas) > 0
            dense_ids, dense_gates = route(x_dense, dense_router, bias)
            y_dense = dense_layer(dense, x_dense, dense_ids, dense_gates)
            close(y, y_dense, f"microbatch {mb} outputs", step, rank)
            loss = loss + (y * targets[step][mb]).sum()
            dense_loss = dense_loss + (y_dense * targets[step][mb]).sum()
            xs.append((x, x_dense))
        loss.backward()  # both microbatches' guests still in their slots
        dense_loss.backward()
        for p in list(dense.parameters()) + [dense_router]:  # the oracle's data-parallel sum
            if p.grad is None:  # an expert none of this rank's tokens chose
                p.grad = torch.zeros_like(p)
            dist.all_reduce(p.grad)
        dist.all_reduce(router.grad)
        for mb, (x, x_dense) in enumerate(xs):
            close(x.grad, x_dense.grad, f"microbatch {mb} input gradients", step, rank)
        close(router.grad, dense_router.grad, "router gradients", step, rank)
        for i, e in enumerate(mine):
            want = torch.cat([p.grad.reshape(-1) for p in dense[e].parameters()])
            close(moe.home.grad[i], want, f"expert {e} gradients", step, rank)
        sgd.step()
        dense_sgd.step()
        for i, e in enumerate(mine):
            for name, value in moe.expert_parameters(i).items():
                close(value, dense[e].get_parameter(name), f"expert {e} {name} after SGD", step, rank)
        with torch.no_grad():  # the next step starts from the same weights: the guarantee is per step
            for i, e in enumerate(mine):
                moe.home[i].copy_(torch.cat([p.reshape(-1) for p in dense[e].parameters()]))
            router.copy_(dense_router)

    total = torch.tensor([replicated], device=device)
    dist.all_reduce(total)
    stats = moe.session.client.stats()
    if rank == 0:
        print(f"mode {args.mode}: sources {sources}, layers with replicas (all ranks) {total.item()}, stats {stats}",
              flush=True)
        print("sources: " + json.dumps(sources), flush=True)
    if args.idle_rank:
        if total.item() != 0:
            raise AssertionError("planner none replicated")
    elif total.item() == 0:
        raise AssertionError("no layer had replicas: the skew should have made taot replicate")
    if args.secure and args.mode == "remote" and "daemon" not in sources:
        raise AssertionError(f"rank {rank}: no plan came from the daemon over TLS with the token: {sources}")
    if args.kill_daemon_at is not None:
        if not (sources[0] == "daemon" and sources[-1] == "local" and stats["daemon_failures"] >= 1):
            raise AssertionError(f"rank {rank}: expected daemon plans, then local ones after the kill: {sources}")
    moe.session.close()  # what was queued for the daemon still goes out: main checks its metrics
    moe.session.close()
    try:
        moe.session.client.stats()
    except RuntimeError as e:
        if "closed" not in str(e):
            raise AssertionError(f"rank {rank}: a closed client's error does not say it is closed: {e}")
    else:
        raise AssertionError(f"rank {rank}: a closed client still answered")
    group = weakref.ref(dist.group.WORLD)
    dist.destroy_process_group()
    return group


def device_variant_missing(build):
    """Why the device variant cannot run here, or None."""
    sys.path.insert(0, os.path.join(build, "client_lib", "python"))
    import taot

    if not torch.cuda.is_available():
        return "this torch has no CUDA device"
    if torch.cuda.device_count() < R:
        return f"{R} ranks need {R} CUDA devices (NCCL takes one rank per device), {torch.cuda.device_count()} here"
    if not taot.has_nccl:
        return "taot was built without NCCL"
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("build")
    parser.add_argument("mode", choices=["local", "remote", "predictive"])
    parser.add_argument("--kill-daemon-at", type=int, default=None)
    parser.add_argument("--secure", action="store_true")
    parser.add_argument("--idle-rank", action="store_true")
    parser.add_argument("--daemon", default=None)
    parser.add_argument("--tls-dir", default=None)
    parser.add_argument("--token", default=None)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--pause-s", type=float, default=0.0)
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    args = parser.parse_args()
    if args.device == "cuda":
        missing = device_variant_missing(args.build)
        if missing:
            print(f"skipped: {missing}")
            sys.exit(SKIP)
    with tempfile.TemporaryDirectory() as tmp:
        args.tmp = tmp
        if args.daemon is not None:
            args.address, args.daemon_pid = args.daemon, None
            args.secure_options = dict(token=args.token, tls_ca=f"{args.tls_dir}/ca.pem",
                                       tls_cert=f"{args.tls_dir}/client.pem", tls_key=f"{args.tls_dir}/client.key")
            mp.spawn(worker, args=(args,), nprocs=R, join=True)
            print("ok")
            return
        daemon, args.secure_options = taot_testing.e2e_daemon(
            args.build, tmp, args.secure, job_id="e2e", ranks=R, experts=E, slots=K,
            expert_bytes=(D * H + H + H * D + D) * 4)
        args.address, args.daemon_pid = daemon.address, daemon.proc.pid
        try:
            mp.spawn(worker, args=(args,), nprocs=R, join=True)
            if args.kill_daemon_at is None and not args.idle_rank:  # every mode reports the counts to the daemon
                taot_testing.assert_replica_transfers(daemon.metrics)
        finally:
            daemon.stop()
    print("ok")


if __name__ == "__main__":
    main()
