"""taot's raw Python API in a real MoE layer, trained with and without taot, compared step by step
(ctest, CPU only). taot.torch wraps all of this (tests/e2e/taot_torch_moe.py tests it in every
mode, with the daemon killed and over TLS); this test keeps the calls a trainer with its own
dispatcher makes, in the buffer form and the tensor form.

4 ranks in 4 processes on two simulated nodes (n0: ranks 0-1, n1: ranks 2-3), a PyTorch gloo
process group for the trainer's own all-to-alls, 16 experts (E/R = 4, each a 2-layer FFN held as
one flat float32 parameter), top-2 routing skewed towards a few experts, K = 2 guest slots. Each
step runs the layer twice on the same inputs: as standard expert parallelism (every pair goes to
its expert's home), and with taot (plan, weight moves into slots, reroute, guest gradients
returned home). Outputs, input gradients, router and expert weight gradients must agree, and so
must the weights after each SGD step.

Tolerance: rtol = 1e-4, atol = 1e-5 on float32. With taot a home expert's gradient is a sum of
the same per-pair terms, split between the home's GEMM and its guests' and added back in another
order; float32 carries 24 bits (about 6e-8 relative), and a sum of n reordered terms may move by
about n * 6e-8 of their magnitude: below 1e-5 for the at most 128 pairs an expert gets here.
Forward outputs differ only where the GEMM's blocking changes with the row count.

Usage: moe_torch.py BUILD_DIR MODE [--tensor-form]; MODE is local, remote, predictive.
--tensor-form: the plan comes from the router's ids (plan_layer_from_ids), pairs are rerouted from
the plan's tables (reroute_on_plane), and weights and gradients move in the tensor form
(start_tensor_moves, start_gradient_return) from stacked home experts into strided slots; in
predictive mode the weights move ahead of the layer (placement).
"""
import argparse
import os
import sys
import tempfile

import numpy as np
import torch
import torch.distributed as dist
import torch.distributed.nn.functional as dist_fn
import torch.multiprocessing as mp

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import taot_testing  # noqa: E402 (tests/taot_testing.py)

R, E, K, TOPK = 4, 16, 2, 2
D, H, T = 8, 16, 64  # model width, expert hidden width, tokens per rank
STEPS, LR = 4, 0.05
RTOL, ATOL = 1e-4, 1e-5
P = D * H + H * D  # floats per expert


def ffn(x, flat):
    w1 = flat[: D * H].view(D, H)
    w2 = flat[D * H:].view(H, D)
    return torch.relu(x @ w1) @ w2


def route(x, router, bias):
    """Top-2 experts and gates of every token; the bias makes a few experts hot."""
    logits = x @ router + bias
    top, experts = torch.topk(logits, TOPK, dim=1)
    return experts.reshape(-1), torch.softmax(top, dim=1).reshape(-1)


def exchange(rows, dest, ranks):
    """Sends rows[i] to rank dest[i] (an all-to-all, differentiable); returns what arrived, the
    order that sorted the rows by destination, and the split sizes both ways."""
    order = torch.argsort(dest, stable=True)
    send = torch.bincount(dest, minlength=ranks).tolist()
    counts = torch.tensor(send, dtype=torch.int64)
    recv_counts = torch.empty(ranks, dtype=torch.int64)
    dist.all_to_all_single(recv_counts, counts)
    recv = recv_counts.tolist()
    out = torch.empty(sum(recv), *rows.shape[1:], dtype=rows.dtype)
    arrived = dist_fn.all_to_all_single(out, rows[order].contiguous(), recv, send)
    return arrived, order, send, recv


def send_ids(ids, order, send, recv):
    out = torch.empty(sum(recv), dtype=torch.int64)
    dist.all_to_all_single(out, ids[order].contiguous(), recv, send)
    return out


def moe_layer(x, router, bias, dest_of, weights_of):
    """One MoE layer on this rank: route, dispatch each pair to dest_of(experts), compute with
    weights_of(expert) there, bring the outputs back and combine them with the gates."""
    experts, gates = route(x, router, bias)
    dest = dest_of(experts)
    tokens = x.repeat_interleave(TOPK, dim=0)
    arrived, order, send, recv = exchange(tokens, dest, R)
    arrived_experts = send_ids(experts, order, send, recv)
    outputs = torch.zeros_like(arrived)
    for e in torch.unique(arrived_experts).tolist():
        mask = arrived_experts == e
        outputs = outputs.index_put((mask.nonzero().squeeze(1),), ffn(arrived[mask], weights_of(e)))
    back = torch.empty(len(dest), D)
    back = dist_fn.all_to_all_single(back, outputs, send, recv)
    per_pair = torch.empty_like(back)
    per_pair = per_pair.index_put((order,), back)
    return (per_pair * gates.unsqueeze(1)).view(T, TOPK, D).sum(dim=1), experts


def close(a, b, what, step, rank):
    if not torch.allclose(a, b, rtol=RTOL, atol=ATOL):
        diff = (a - b).abs().max().item()
        raise AssertionError(f"rank {rank} step {step}: {what} differ by up to {diff:.3g}")


def start_tensor_moves(client, plan, home, mine):
    """The tensor form: the home experts as one [E/R, P] tensor, the slots strided as the columns
    of a [P, K] one, so that each slot's floats lie K apart. Both must live until the wait."""
    home_stack = torch.stack([home[e].detach() for e in mine])
    slot_store = torch.zeros(P, K)
    pending, sent, received = client.start_tensor_moves(
        plan, [(home_stack.data_ptr(), P * 4, 1, P * 4, 0)], [(slot_store.data_ptr(), 4, P, 4, K * 4)])
    return {"pending": pending, "slots": slot_store, "homes": home_stack, "bytes": (sent, received)}


def reroute_on_plane(client, plan, ex):
    """Each pair's rank from the plan's tables on the transport's plane (host memory here)."""
    ids = ex.to(torch.int32).contiguous()
    n = ids.numel()
    virtual, dest = torch.empty(n, dtype=torch.int32), torch.empty(n, dtype=torch.int32)
    sends, order = torch.empty(R, dtype=torch.int64), torch.empty(n, dtype=torch.int64)
    check = torch.empty(2, dtype=torch.int64)
    client.reroute_on_plane(plan, ids.data_ptr(), n, virtual.data_ptr(), dest.data_ptr(), sends.data_ptr(),
                            order.data_ptr(), check.data_ptr())
    if check[0].item() != n:
        raise AssertionError(f"reroute_on_plane: pair {check[0].item()} has an expert id out of range")
    if not torch.equal(dest, virtual // (E // R + K)):
        raise AssertionError("reroute_on_plane: a pair's rank is not its virtual expert's")
    return dest.to(torch.int64)


def worker(rank, args):
    sys.path.insert(0, os.path.join(args.build, "client_lib", "python"))
    import taot

    dist.init_process_group("gloo", init_method=f"file://{args.tmp}/pg", rank=rank, world_size=R)
    torch.manual_seed(0)  # the same model on every rank
    router = torch.randn(D, E) * 0.5
    bias = torch.zeros(E)
    bias[[0, 1, 5]] = torch.tensor([2.5, 2.0, 1.5])  # hot experts, two of them on rank 0
    experts = [torch.randn(P) * 0.3 for _ in range(E)]
    torch.manual_seed(100 + rank)
    inputs = [torch.randn(T, D) for _ in range(STEPS)]
    targets = [torch.randn(T, D) for _ in range(STEPS)]
    mine = range(rank * (E // R), (rank + 1) * (E // R))

    # Two copies of this rank's trainable state: standard EP, and with taot.
    def state():
        return ({"router": router.clone().requires_grad_()},
                {e: experts[e].clone().requires_grad_() for e in mine})
    base_router, base_home = state()
    taot_router, taot_home = state()

    transport = taot.connect_gloo(rank, R, args.tmp + "/taot", timeout_s=60)
    client = taot.Client(transport, experts=E, node="n0" if rank < 2 else "n1", mode=args.mode,
                         address=args.address, job_id="e2e", slots_per_rank=K, call_timeout_s=2.0,
                         placement_wait_s=2.0)
    client.reserve_reroute(T * TOPK)  # every layer's reroute then runs in this workspace
    try:
        client.reserve_reroute(-1)
        raise AssertionError("reserve_reroute accepted max_pairs = -1")
    except ValueError as e:
        assert "max_pairs: must be >= 0" in str(e), e
    slots = [torch.zeros(P) for _ in range(K)]
    moved = 0
    prefetched = None  # predictive mode, tensor form: the next step's weights already on their way
    prefetches_used = 0
    sources = []
    for step in range(STEPS):
        dist.barrier()
        for p in list(base_home.values()) + list(taot_home.values()):
            p.grad = torch.zeros(P)  # an expert with no pairs this step has a zero gradient
        x_base = inputs[step].clone().requires_grad_()
        y_base, _ = moe_layer(x_base, base_router["router"], bias, lambda ex: ex // (E // R), lambda e: base_home[e])
        (y_base * targets[step]).sum().backward()

        # taot: plan from this rank's counts, move replicas, reroute, compute, return gradients.
        x_taot = inputs[step].clone().requires_grad_()
        routed, _ = route(x_taot.detach(), taot_router["router"].detach(), bias)
        if args.tensor_form:
            ids = routed.to(torch.int64).contiguous()  # the router's ids, counted by the client
            plan = client.plan_layer_from_ids(step, 0, ids.data_ptr(), ids.numel(), wide=True)
        else:
            counts = np.bincount(routed.numpy(), minlength=E).astype(np.int64)
            plan = client.plan_layer(step, 0, counts)
        sources.append(plan.source)
        home_ptrs = [taot_home[e].data_ptr() for e in mine]
        slot_ptrs = [s.data_ptr() for s in slots]
        if args.tensor_form:
            if prefetched is not None and sorted(prefetched["placement"].replicas) == sorted(plan.replicas):
                # Moved ahead of the layer, right after the last optimizer step: only wait here.
                moves = prefetched
                prefetches_used += 1
            else:
                moves = start_tensor_moves(client, plan, taot_home, mine)
            moves["pending"].wait(60)
            moved += sum(moves["bytes"])
            slots = [moves["slots"][:, k].clone() for k in range(K)]
        elif args.mode == "predictive":
            # The asynchronous form: start the moves, do other work, then wait before using slots.
            pending = client.start_weight_moves(plan, home_ptrs, slot_ptrs, P * 4)
            pending.wait(60)
            moved += P * 4 * sum((e // (E // R) == rank) + (g == rank) for e, g in plan.replicas)
        else:
            sent, received = client.move_weights(plan, home_ptrs, slot_ptrs, P * 4)
            moved += sent + received
        slot_of = {e: i for i, e in enumerate(plan.guest_slots(rank))}
        slot_params = [s.clone().requires_grad_() for s in slots]
        for s in slot_params:
            s.grad = torch.zeros(P)

        def dest_of(ex):
            if args.tensor_form:
                return reroute_on_plane(client, plan, ex)
            d, _ = taot.reroute(plan, R, E, rank, ex.numpy().astype(np.int32))
            return torch.from_numpy(d).to(torch.int64)

        def weights_of(e):
            return taot_home[e] if e in taot_home else slot_params[slot_of[e]]

        y_taot, _ = moe_layer(x_taot, taot_router["router"], bias, dest_of, weights_of)
        (y_taot * targets[step]).sum().backward()
        if args.tensor_form:
            main_grad = torch.stack([taot_home[e].grad for e in mine])
            slot_grads = torch.stack([s.grad for s in slot_params])
            pending, _, _ = client.start_gradient_return(plan, [(slot_grads.data_ptr(), P * 4, 1, P * 4, 0)],
                                                         "float32", [(main_grad.data_ptr(), P * 4, 1, P * 4, 0)])
            pending.wait(60)
            for i, e in enumerate(mine):
                taot_home[e].grad.copy_(main_grad[i])
        else:
            client.return_gradients(plan, [taot_home[e].grad.data_ptr() for e in mine],
                                    [s.grad.data_ptr() for s in slot_params], P * 4)

        close(y_taot, y_base, "outputs", step, rank)
        close(x_taot.grad, x_base.grad, "input gradients", step, rank)
        close(taot_router["router"].grad, base_router["router"].grad, "router gradients", step, rank)
        for e in mine:
            close(taot_home[e].grad, base_home[e].grad, f"expert {e} gradients", step, rank)
        # SGD; the router's gradient is summed over ranks, as data parallelism would.
        with torch.no_grad():
            for st in ((base_router, base_home), (taot_router, taot_home)):
                g = st[0]["router"].grad.clone()
                dist.all_reduce(g)
                st[0]["router"] -= LR * g
                st[0]["router"].grad = None
                for p in st[1].values():
                    p -= LR * p.grad
                    p.grad = None
        for e in mine:
            close(taot_home[e], base_home[e], f"expert {e} weights after SGD", step, rank)
        prefetched = None
        if args.tensor_form and args.mode == "predictive" and step + 1 < STEPS:
            placement = client.placement(step + 1, 0, wait_s=5.0)
            if placement is not None:
                prefetched = dict(start_tensor_moves(client, placement, taot_home, mine), placement=placement)

    total = torch.tensor([moved], dtype=torch.int64)
    dist.all_reduce(total)
    if total.item() <= 0:
        raise AssertionError("no replica weights moved: the skew should have made taot replicate")
    stats = client.stats()
    if rank == 0:
        print(f"mode {args.mode}: sources {sources}, bytes moved {total.item()}, stats {stats}"
              + (f", layers on prefetched weights {prefetches_used}" if args.tensor_form else ""), flush=True)
    if args.tensor_form and args.mode == "predictive" and prefetches_used == 0:
        raise AssertionError(f"rank {rank}: no layer used weights moved ahead of it: {sources}")
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("build")
    parser.add_argument("mode", choices=["local", "remote", "predictive"])
    parser.add_argument("--tensor-form", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        args.tmp = tmp
        daemon, _ = taot_testing.e2e_daemon(args.build, tmp, False, job_id="e2e", ranks=R, experts=E, slots=K,
                                            expert_bytes=P * 4)
        args.address, metrics = daemon.address, daemon.metrics
        os.makedirs(tmp + "/taot")
        try:
            mp.spawn(worker, args=(args,), nprocs=R, join=True)
            taot_testing.assert_replica_transfers(metrics)
        finally:
            daemon.stop()
    print("ok")


if __name__ == "__main__":
    main()
