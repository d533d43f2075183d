"""taot.torch's refusals: bad input at construction raises the same ValueError on every rank,
naming the rank and the field, and never leaves a rank waiting in a rendezvous; bad input to
forward raises a ValueError naming the argument, before any collective; a daemon whose job has
another K fails construction on every rank with its message. 2 processes, gloo, CPU.
After every refusal the process group still works (a barrier), and a good layer then trains.

Usage: taot_torch_errors.py BUILD_DIR
"""
import os
import sys
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import taot_testing  # noqa: E402 (tests/taot_testing.py)

R, E = 2, 4


def expert(hidden=3, dtype=torch.float32):
    return torch.nn.Sequential(torch.nn.Linear(2, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 2)).to(dtype)


def experts(**kw):
    return torch.nn.ModuleList(expert(**kw) for _ in range(E // R))


def expect(rank, fn, *fragments):
    try:
        fn()
    except ValueError as e:
        message = str(e)
        missing = [f for f in fragments if f not in message]
        if missing:
            raise AssertionError(f"rank {rank}: the error lacks {missing}: {message}")
        dist.barrier()  # every rank got here: nobody is left in a collective
        return
    raise AssertionError(f"rank {rank}: no ValueError, expected one naming {fragments}")


def worker(rank, build, tmp, address):
    sys.path.insert(0, os.path.join(build, "client_lib", "python"))
    import taot.torch

    dist.init_process_group("gloo", init_method=f"file://{tmp}/pg", rank=rank, world_size=R)
    EP = taot.torch.ExpertParallel
    # One rank's mistake fails every rank, naming that rank and the field.
    expect(rank, lambda: EP(experts(), num_experts=E + 2 * (rank == 1)), "rank 1", "num_experts")
    expect(rank, lambda: EP(experts(), num_experts=E, slots=-1 if rank == 0 else 1), "rank 0", "slots")
    expect(rank, lambda: EP(experts(), num_experts=E, microbatches=0), "microbatches")
    expect(rank, lambda: EP(experts(), num_experts=E, max_pairs=-1), "max_pairs: must be a whole number")
    expect(rank, lambda: EP([expert(), expert()], num_experts=E), "local_experts: must be a non-empty")
    expect(rank, lambda: EP(torch.nn.ModuleList([expert(3), expert(4)]), num_experts=E), "local_experts[1]",
           "same layout")
    expect(rank, lambda: EP(experts(dtype=torch.float16), num_experts=E), "float32 or bfloat16")
    expect(rank, lambda: EP(torch.nn.ModuleList([torch.nn.BatchNorm1d(2)] * 2), num_experts=E), "buffers")
    # Each rank fine alone, but not the same as the others.
    expect(rank, lambda: EP(experts(hidden=3 + rank), num_experts=E), "layout differs between ranks")
    expect(rank, lambda: EP(experts(), num_experts=E, mode=["local", "remote"][rank]), "mode differs between ranks")

    # The daemon's job disagrees (its K is 1): construction fails on every rank with its word.
    try:
        EP(experts(), num_experts=E, slots=2, mode="remote", address=address, job_id="errors", layer=0)
    except (ValueError, RuntimeError) as e:
        if rank == 0:
            print(f"the daemon refused: {e}")
        if "slots" not in str(e):
            raise AssertionError(f"rank {rank}: the daemon's refusal does not name the slots: {e}")
    else:
        raise AssertionError(f"rank {rank}: a daemon with K = 1 accepted a layer with K = 2")
    dist.barrier()

    moe = EP(experts(), num_experts=E, slots=1, group=dist.new_group([0, 1]), max_pairs=12)
    x, ids, gates = torch.randn(6, 2), torch.randint(0, E, (6, 2)), torch.rand(6, 2)
    expect(rank, lambda: moe(x.view(3, 2, 2), ids, gates), "x: must be [tokens, features]")
    expect(rank, lambda: moe(x, ids.float(), gates), "topk_ids: must hold integer")
    expect(rank, lambda: moe(x, ids[:5], gates), "topk_ids: must be [tokens, k]")
    expect(rank, lambda: moe(x, ids, gates[:, :1]), "topk_weights")
    expect(rank, lambda: moe(x, ids, gates, microbatch=1), "microbatch: must be in [0, 1)")
    more = torch.randint(0, E, (7, 2))
    expect(rank, lambda: moe(torch.randn(7, 2), more, torch.rand(7, 2)), "topk_ids: routes 14 pairs",
           "max_pairs 12")
    x.requires_grad_()
    moe(x, ids, gates).sum().backward()  # the refusals changed nothing: a good layer trains
    if x.grad is None or moe.home.grad is None:
        raise AssertionError(f"rank {rank}: no gradients after the refusals")
    # The low-level client checks its timeouts before it lets go of the GIL (raising without it crashes).
    client, plan = moe.session.client, moe.last_plan
    expect(rank, lambda: client.move_weights(plan, [], [], 0, timeout_s=-1), "timeout_s")
    expect(rank, lambda: client.return_gradients(plan, [], [], 0, timeout_s=float("nan")), "timeout_s")
    dist.destroy_process_group()
    if rank == 0:
        print("every refusal named its field, on every rank; the layer then trained")


def main():
    build = sys.argv[1]
    daemon, _ = taot_testing.e2e_daemon(build, None, False, job_id="errors", ranks=R, experts=E, slots=1,
                                        expert_bytes=4)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            mp.spawn(worker, args=(build, tmp, daemon.address), nprocs=R, join=True)
    finally:
        daemon.stop()
    print("ok")


if __name__ == "__main__":
    main()
