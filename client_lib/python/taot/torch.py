"""taot.torch: an expert-parallel MoE layer balanced by taot, for PyTorch (pure Python over taot).

    import taot.torch
    moe = taot.torch.ExpertParallel(local_experts, num_experts=E, slots=2, mode="local")
    y = moe(x, topk_ids, topk_weights)          # [T, D], [T, k] ids, [T, k] gates -> [T, D_out]

`local_experts` is this rank's nn.ModuleList of E / R experts (rank r owns experts r * E/R ...
(r + 1) * E/R - 1), any module mapping [n, D] rows to [n, D_out]. The layer dispatches every
(token, choice) pair to the rank that computes it (the expert's home or a guest holding a copy,
as taot's plan says), runs the experts there, brings the outputs back and combines them with the
gates, differentiably; guest gradients come home inside the backward pass. docs/integration.md
has the whole story; what is kept where:

- The experts' parameters live in one flat parameter, `home` ([E/R, P] for P values per expert),
  and each expert module sees views of its row (as FSDP's flat parameters do). Give `home` to
  the optimizer (model.parameters() does); its gradient arrives whole, guests' parts included.
- Every forward gets fresh guest slots ([K, P], the same layout), kept by autograd until its
  backward: microbatches in flight (gradient accumulation, pipeline schedules) each keep theirs.
- Moving weights to guests is an autograd function whose backward is its adjoint: the guests'
  gradients are sent home and added (ascending guest order) before the home parameter's
  gradient is accumulated, so optimizers, DDP's reducer and clipping all see complete gradients.
- All collectives in backward are joined by every rank, also one that received no token.
"""
import atexit
import copy
import socket
import uuid
import weakref

import torch
import torch.distributed as dist

import taot

__all__ = ["ExpertParallel", "Session", "expert_parameters"]

_GRAD_DTYPES = {torch.float32: "float32", torch.bfloat16: "bfloat16"}


class _Layout:
    """Where each parameter of an expert lies in its row of the flat storage."""

    def __init__(self, module):
        self.names, self.shapes, self.numels = [], [], []
        for name, p in module.named_parameters():
            self.names.append(name)
            self.shapes.append(p.shape)
            self.numels.append(p.numel())
        self.values = sum(self.numels)  # P: values per expert
        first = next(module.parameters(), None)
        self.dtype = first.dtype if first is not None else None
        self.device = first.device if first is not None else None

    def describe(self):
        return [(n, tuple(s)) for n, s in zip(self.names, self.shapes)]

    def bind(self, module, pieces):
        """Sets the module's parameters to `pieces` (flat views, in layout order)."""
        for name, shape, piece in zip(self.names, self.shapes, pieces):
            owner, _, leaf = name.rpartition(".")
            setattr(module.get_submodule(owner) if owner else module, leaf, piece.view(shape))


def _layout_error(local_experts):
    """None when the experts can share one flat layout, else what is wrong, naming the expert."""
    if not isinstance(local_experts, torch.nn.ModuleList) or len(local_experts) == 0:
        return "local_experts: must be a non-empty torch.nn.ModuleList of this rank's experts"
    first = _Layout(local_experts[0])
    if first.values == 0:
        return "local_experts[0]: has no parameters to move"
    if first.dtype not in _GRAD_DTYPES:
        return f"local_experts[0]: parameters must be float32 or bfloat16 (gradients come home in those), got {first.dtype}"
    for i, expert in enumerate(local_experts):
        buffers = [n for n, _ in expert.named_buffers()]
        if buffers:
            return f"local_experts[{i}]: has buffers {buffers}; taot moves parameters only"
        for name, p in expert.named_parameters():
            if p.dtype != first.dtype or p.device != first.device:
                return (f"local_experts[{i}].{name}: {p.dtype} on {p.device}, but local_experts[0] has "
                        f"{first.dtype} on {first.device}: one flat storage needs one dtype and device")
        layout = _Layout(expert)
        if layout.describe() != first.describe():
            return (f"local_experts[{i}]: parameters {layout.describe()} differ from local_experts[0]'s "
                    f"{first.describe()}; every expert must have the same layout")
    return None


def _global_rank(group, group_rank):
    get = getattr(dist, "get_global_rank", None) or dist.distributed_c10d._get_global_rank
    return group_rank if group is None or group is dist.group.WORLD else get(group, group_rank)


def _agree(group, error, settings):
    """Every rank's local check and settings, gathered: raises the same ValueError on every rank
    if any rank's check failed or the settings differ, so that no rank goes on to a collective
    the others never join."""
    gathered = [None] * dist.get_world_size(group)
    dist.all_gather_object(gathered, (error, settings), group=group)
    for rank, (err, _) in enumerate(gathered):
        if err is not None:
            raise ValueError(f"taot.torch on rank {rank}: {err}")
    for key in settings:
        values = {rank: s[key] for rank, (_, s) in enumerate(gathered)}
        if len({repr(v) for v in values.values()}) > 1:
            raise ValueError(f"taot.torch: {key} differs between ranks: {values}")


class Session:
    """taot's transport and client for one process group, shared by every ExpertParallel layer
    over that group (one registration with the daemon per rank, layers numbered in order).
    It lives as long as the group and a layer over it do, or until close(); it holds no
    reference to the group, so torch.distributed.destroy_process_group() frees the group once
    the trainer's own references are gone."""

    def __init__(self, group, *, num_experts, slots, device, expert_bytes, mode="local", address="", job_id="",
                 node=None, hostname=None, timeout_s=60.0, **client_options):
        self.rank = dist.get_rank(group)
        self.ranks = dist.get_world_size(group)
        self.experts, self.slots, self.device = num_experts, slots, torch.device(device)
        self.timeout_s = timeout_s
        self.settings = dict(num_experts=num_experts, slots=slots, mode=mode, address=address, job_id=job_id,
                             expert_bytes=expert_bytes, device_type=self.device.type,
                             **{k: client_options[k] for k in sorted(client_options)})
        self._layers = 0
        self._reserved = 0  # pairs the reroute's workspace holds without growing
        self._pending = []  # device-plane exchanges not yet checked, oldest first
        node = node if node is not None else socket.gethostname()
        hosts = [None] * self.ranks
        dist.all_gather_object(hosts, socket.gethostname(), group=group)
        if hostname is None:  # the address peers reach this rank at: loopback when all share a host
            hostname = "127.0.0.1" if len(set(hosts)) == 1 else socket.gethostname()
        self.transport = self._connect(group, hostname)
        self.client = taot.Client(self.transport, experts=num_experts, node=node, mode=mode, address=address,
                                  job_id=job_id, slots_per_rank=slots, expert_bytes=expert_bytes,
                                  collective_timeout_s=timeout_s, **client_options)

    def close(self):
        """Ends the client (its threads stopped, reports queued for the daemon sent within one
        call timeout) and the transport, now. Every layer over the session fails after it; a new
        ExpertParallel over the group starts a new session. Idempotent."""
        self.client.close()
        self.transport = None
        for group, session in list(_sessions.items()):
            if session is self:
                del _sessions[group]

    def _connect(self, group, hostname):
        """NCCL for CUDA experts (a communicator of taot's own, from a unique id rank 0 draws),
        else Gloo meeting through the default group's store under a prefix rank 0 draws (a fresh
        rendezvous every run, nothing left on disk)."""
        if self.device.type == "cuda":
            if not taot.has_nccl:
                raise RuntimeError("taot.torch: CUDA experts need taot built with NCCL (taot.has_nccl is False)")
            uid = [taot.nccl_unique_id() if self.rank == 0 else None]
            dist.broadcast_object_list(uid, src=_global_rank(group, 0), group=group)
            index = self.device.index if self.device.index is not None else torch.cuda.current_device()
            return taot.connect_nccl(self.rank, self.ranks, index, uid[0], timeout_s=self.timeout_s)
        run = [uuid.uuid4().hex if self.rank == 0 else None]
        dist.broadcast_object_list(run, src=_global_rank(group, 0), group=group)
        store = dist.distributed_c10d._get_default_store()
        return taot.connect_store(self.rank, self.ranks, store, f"taot/{run[0]}/", hostname=hostname,
                                  timeout_s=self.timeout_s)

    def reserve(self, max_pairs):
        """The reroute's workspace, shared by the session's layers, for max_pairs pairs from now on."""
        if max_pairs > self._reserved:
            self.client.reserve_reroute(max_pairs)
            self._reserved = max_pairs

    def next_layer(self):
        self._layers += 1
        return self._layers - 1

    def stream(self):
        """The trainer's current CUDA stream as an integer, None on the CPU."""
        return torch.cuda.current_stream(self.device).cuda_stream if self.device.type == "cuda" else None

    def settle(self, pending):
        """A host plane finishes an exchange in wait(); on a device plane the trainer's stream
        already waits for it (an event), so its wait, a check that blocks the host until the
        exchange is done, is put off until 16 later exchanges have been started: long enough that
        the device has finished it, so the host never waits on the layer it is enqueueing."""
        if self.device.type != "cuda":
            pending.wait(self.timeout_s)
            return
        self._pending.append(pending)
        while len(self._pending) > 16:
            self._pending.pop(0).wait(self.timeout_s)


# Keyed weakly by the group: holding it here would keep torch's process group alive past
# destroy_process_group() into interpreter teardown, where its Gloo worker threads, releasing the
# tensors of their last work, need the GIL after Python has stopped giving it out, and the process
# aborts ("terminate called without an active exception").
_sessions = weakref.WeakKeyDictionary()


@atexit.register
def _close_sessions():
    """Ends every session while the interpreter is whole: a client freed during teardown would
    join its threads when Python's modules are half gone."""
    for session in list(_sessions.values()):
        session.close()


def _session_for(group, **settings):
    session = _sessions.get(group)
    if session is None:
        session = _sessions[group] = Session(group, **settings)
        return session
    shared = ("num_experts", "slots", "mode", "address", "job_id", "expert_bytes")
    mine, wanted = ({k: d[k] for k in shared} for d in (session.settings, settings))
    if mine != wanted:
        raise ValueError(f"taot.torch: this process group already has a taot session with {mine}; every "
                         f"ExpertParallel over one group must use the same settings, got {wanted}")
    return session


class _LayerState:
    """What one forward leaves for its backward: the plan and its moves."""

    def __init__(self, session, plan, slots, values, dtype):
        self.session, self.plan, self.slots, self.values, self.dtype = session, plan, slots, values, dtype
        self.replicated = len(plan.replicas) > 0
        self.moves = None


def _rows(tensor, values):
    """The tensor form's description of [n, values] contiguous rows: one tensor, one chunk each."""
    size = values * tensor.element_size()
    return [(tensor.data_ptr(), size, 1, size, 0)]


class _SlotWeights(torch.autograd.Function):
    """home -> guest slots under the plan (the weight moves, started here and awaited before the
    guests compute); backward is the adjoint: slot gradients go home and are added there."""

    @staticmethod
    def forward(ctx, home, state):
        ctx.state = state
        if state.replicated:
            s = state.session
            state.moves, _, _ = s.client.start_tensor_moves(state.plan, _rows(home, state.values),
                                                            _rows(state.slots, state.values), stream=s.stream())
        return state.slots, home.new_empty(0)

    @staticmethod
    def backward(ctx, grad_slots, grad_link):
        state = ctx.state
        if not state.replicated:
            return None, None
        s = state.session
        grad_slots = grad_slots.to(state.dtype).contiguous()
        home_grad = torch.zeros(s.experts // s.ranks, state.values, dtype=torch.float32, device=s.device)
        pending, _, _ = s.client.start_gradient_return(state.plan, _rows(grad_slots, state.values),
                                                       _GRAD_DTYPES[state.dtype], _rows(home_grad, state.values),
                                                       stream=s.stream())
        s.settle(pending)
        return home_grad.to(state.dtype), None


class _AllToAll(torch.autograd.Function):
    """rows -> the ranks the splits say (torch.distributed's all_to_all_single), differentiable.
    `link` (an empty tensor) chains it to the layer's other collectives, so that backward runs
    them in one order on every rank, and runs them even on a rank whose rows need no gradient."""

    @staticmethod
    def forward(ctx, rows, link, group, send, recv):
        ctx.group, ctx.send, ctx.recv = group, send, recv
        out = rows.new_empty(sum(recv), *rows.shape[1:])
        dist.all_to_all_single(out, rows.contiguous(), recv, send, group=group)
        return out, link.new_empty(0)

    @staticmethod
    def backward(ctx, grad_out, grad_link):
        grad_rows = grad_out.new_empty(sum(ctx.send), *grad_out.shape[1:])
        dist.all_to_all_single(grad_rows, grad_out.contiguous(), ctx.send, ctx.recv, group=ctx.group)
        return grad_rows, grad_link.new_zeros(0), None, None, None


def _inverse(permutation):
    inverse = torch.empty_like(permutation)
    inverse[permutation] = torch.arange(permutation.numel(), device=permutation.device)
    return inverse


def _expert_major(recv):
    """Arrived rows come by source rank, then by local expert: the order that groups them by
    local expert (then source), for recv [R, L] rows per (source, local expert)."""
    ranks, local = recv.shape
    starts = (torch.cumsum(recv.reshape(-1), 0) - recv.reshape(-1)).view(ranks, local).t().reshape(-1)
    sizes = recv.t().reshape(-1)
    total = int(sizes.sum())
    block = torch.repeat_interleave(torch.arange(sizes.numel(), device=recv.device), sizes, output_size=total)
    block_start = torch.cumsum(sizes, 0) - sizes
    return starts[block] + torch.arange(total, device=recv.device) - block_start[block]


class ExpertParallel(torch.nn.Module):
    """An expert-parallel MoE layer over `group` (default: the default process group), balanced
    by taot: `local_experts` are this rank's E / R experts, `slots` the K guest slots per rank.

    mode: "local" (every rank plans in-process), "remote" (the daemon at `address` plans) or
    "predictive" (the daemon places replicas a step ahead); job_id names the daemon's job. The
    other keywords go to taot.Client (token, tls_ca, tls_cert, tls_key, planner, params,
    call_timeout_s, placement_wait_s, connect_timeout_s, run_id); node names this rank's host
    for the topology (default: its hostname), hostname the address taot's Gloo transport listens
    on (default: loopback when all ranks share a host, else the hostname). Every ExpertParallel
    over one group shares one Session, and is numbered as a layer in construction order unless
    `layer` is given. `microbatches`: how many forwards make one step (see forward). `max_pairs`:
    the most (token, choice) pairs one forward routes (tokens x top-k); given, the reroute's
    workspace is reserved for it here, so that no forward allocates device memory or waits on the
    host for it (what capturing the layer in a CUDA graph needs), and a forward with more pairs is
    refused; without it, the workspace grows to the largest forward seen."""

    def __init__(self, local_experts, *, num_experts, group=None, slots=2, mode="local", address="", job_id="",
                 layer=None, microbatches=1, max_pairs=None, node=None, hostname=None, timeout_s=60.0,
                 **client_options):
        super().__init__()
        if not dist.is_initialized():
            raise RuntimeError("taot.torch: call torch.distributed.init_process_group before ExpertParallel")
        group = group if group is not None else dist.group.WORLD
        ranks = dist.get_world_size(group)
        error = _layout_error(local_experts)
        if error is None and num_experts != ranks * len(local_experts):
            error = (f"num_experts: must be the world size times the local experts ({ranks} x "
                     f"{len(local_experts)} = {ranks * len(local_experts)}), got {num_experts}")
        if error is None and not (isinstance(slots, int) and slots >= 0):
            error = f"slots: must be a whole number >= 0, got {slots!r}"
        if error is None and not (isinstance(microbatches, int) and microbatches >= 1):
            error = f"microbatches: must be a whole number >= 1, got {microbatches!r}"
        if error is None and max_pairs is not None and not (isinstance(max_pairs, int) and max_pairs >= 0):
            error = f"max_pairs: must be a whole number >= 0 or None, got {max_pairs!r}"
        layout = _Layout(local_experts[0]) if error is None else None
        _agree(group, error, dict(num_experts=num_experts, slots=slots, mode=mode, address=address, job_id=job_id,
                                  microbatches=microbatches, layout=layout and layout.describe(),
                                  dtype=layout and str(layout.dtype), device_type=layout and layout.device.type))
        self.layout, self.group, self.microbatches = layout, group, microbatches
        self.rank, self.ranks, self.slots = dist.get_rank(group), ranks, slots
        with torch.no_grad():
            flat = torch.stack([torch.cat([p.detach().reshape(-1) for p in e.parameters()]) for e in local_experts])
        self.home = torch.nn.Parameter(flat)
        for expert in local_experts:  # the modules keep their code; their parameters become views
            for name in layout.names:
                owner, _, leaf = name.rpartition(".")
                module = expert.get_submodule(owner) if owner else expert
                del module._parameters[leaf]
                setattr(module, leaf, None)
        self.local_experts = local_experts
        self._guests = [copy.deepcopy(local_experts[0]) for _ in range(slots)]
        self.session = _session_for(group, num_experts=num_experts, slots=slots, device=layout.device,
                                    expert_bytes=layout.values * flat.element_size(), mode=mode, address=address,
                                    job_id=job_id, node=node, hostname=hostname, timeout_s=timeout_s,
                                    **client_options)
        self.layer = layer if layer is not None else self.session.next_layer()
        self.max_pairs = max_pairs
        if max_pairs is not None:
            self.session.reserve(max_pairs)
        self._forwards = 0
        self.last_plan = None

    def expert_parameters(self, i):
        """Local expert i's parameters, by name: views of `home` (for checkpoints in the modules' names)."""
        pieces = self.home[i].split(self.layout.numels)
        return {n: p.view(s) for n, p, s in zip(self.layout.names, pieces, self.layout.shapes)}

    def forward(self, x, topk_ids, topk_weights, *, step=None, layer=None, microbatch=0):
        """x [T, D] this rank's tokens, topk_ids [T, k] their experts (any integer dtype),
        topk_weights [T, k] their gates; returns [T, D_out]. Every rank calls it for the same
        layers in the same order. step/microbatch name the plan (microbatch < microbatches;
        step * microbatches + microbatch is the client's step); without step, each forward is the
        next step. layer overrides the layer number."""
        T = self._check_inputs(x, topk_ids, topk_weights, microbatch)
        s, layout = self.session, self.layout
        key = self._forwards if step is None else step * self.microbatches + microbatch
        self._forwards += 1
        layer = self.layer if layer is None else layer
        k = topk_ids.shape[1]
        ids = topk_ids.reshape(-1).to(torch.int64).contiguous()
        n = ids.numel()
        plan = s.client.plan_layer_from_ids(key, layer, ids.data_ptr(), n, wide=True, stream=s.stream())
        self.last_plan = plan
        state = _LayerState(s, plan, self.home.new_empty(self.slots, layout.values), layout.values, layout.dtype)
        slots, link = _SlotWeights.apply(self.home, state)

        order, send, recv, per_expert = self._reroute(plan, ids)
        rows = x.index_select(0, torch.div(order, k, rounding_mode="floor"))
        arrived, link = _AllToAll.apply(rows, link, self.group, send, recv)
        if state.moves is not None:
            s.settle(state.moves)
        outputs = self._compute(arrived, per_expert, slots)
        back, _ = _AllToAll.apply(outputs, link, self.group, recv, send)
        per_pair = back.index_select(0, _inverse(order)).view(T, k, -1)
        return (per_pair * topk_weights.to(per_pair.dtype).unsqueeze(-1)).sum(dim=1)

    def _check_inputs(self, x, topk_ids, topk_weights, microbatch):
        if x.dim() != 2:
            raise ValueError(f"x: must be [tokens, features], got shape {tuple(x.shape)}")
        if topk_ids.dim() != 2 or topk_ids.shape[0] != x.shape[0]:
            raise ValueError(f"topk_ids: must be [tokens, k] with tokens = {x.shape[0]}, got {tuple(topk_ids.shape)}")
        if topk_ids.dtype.is_floating_point or topk_ids.dtype == torch.bool:
            raise ValueError(f"topk_ids: must hold integer expert ids, got {topk_ids.dtype}")
        if topk_weights.shape != topk_ids.shape:
            raise ValueError(f"topk_weights: must have topk_ids' shape {tuple(topk_ids.shape)}, "
                             f"got {tuple(topk_weights.shape)}")
        for name, t in (("x", x), ("topk_ids", topk_ids), ("topk_weights", topk_weights)):
            if t.device != self.home.device:
                raise ValueError(f"{name}: must be on the experts' device {self.home.device}, got {t.device}")
        if not (isinstance(microbatch, int) and 0 <= microbatch < self.microbatches):
            raise ValueError(f"microbatch: must be in [0, {self.microbatches}), got {microbatch!r}")
        if self.max_pairs is not None and topk_ids.numel() > self.max_pairs:
            raise ValueError(f"topk_ids: routes {topk_ids.numel()} pairs, more than the layer's max_pairs "
                             f"{self.max_pairs}")
        return x.shape[0]

    def _reroute(self, plan, ids):
        """Each pair's virtual expert (rank r owns E/R home experts then K slots) from the plan's
        tables, the stable order by it (so by destination), the splits both ways, and the pairs
        this rank receives per (source, local virtual expert): the [R, L] counts per virtual
        expert go to their ranks, so no per-pair id travels."""
        s, n = self.session, ids.numel()
        local = s.experts // s.ranks + self.slots
        ids32 = ids.to(torch.int32)
        virtual = torch.empty(n, dtype=torch.int32, device=ids.device)
        dest = torch.empty(n, dtype=torch.int32, device=ids.device)
        sends = torch.empty(s.ranks, dtype=torch.int64, device=ids.device)
        order = torch.empty(n, dtype=torch.int64, device=ids.device)
        check = torch.zeros(2, dtype=torch.int64, device=ids.device)
        s.client.reroute_on_plane(plan, ids32.data_ptr(), n, virtual.data_ptr(), dest.data_ptr(), sends.data_ptr(),
                                  order.data_ptr(), check.data_ptr(), stream=s.stream())
        counts = torch.bincount(virtual, minlength=s.ranks * local)
        arrived = torch.empty_like(counts)
        dist.all_to_all_single(arrived, counts, group=self.group)
        host = torch.cat([sends, arrived, check]).tolist()  # the one copy to the host the splits need
        bad_pair, short_expert = host[-2], host[-1] & 0xFFFFFFFF
        if bad_pair != n or short_expert != s.experts:
            raise RuntimeError(f"taot.torch: the plan does not fit this layer's ids (first bad pair {bad_pair} of {n}, "
                               f"first expert short of pairs {short_expert})")
        received = host[s.ranks:-2]
        recv = [sum(received[r * local:(r + 1) * local]) for r in range(s.ranks)]
        return order, host[:s.ranks], recv, arrived.view(s.ranks, local)

    def _compute(self, arrived, recv, slots):
        """Every local virtual expert on its rows: home experts from `home`, guests from `slots`."""
        layout, home_count = self.layout, len(self.local_experts)
        grouped = _expert_major(recv)
        rows = arrived.index_select(0, grouped)
        sizes = recv.sum(dim=0).tolist()
        home_pieces = self.home.view(-1).split(layout.values)
        slot_pieces = slots.view(-1).split(layout.values) if self.slots else ()
        outputs = []
        for local, chunk in enumerate(rows.split(sizes)):
            if chunk.shape[0] == 0:
                continue
            if local < home_count:
                module, piece = self.local_experts[local], home_pieces[local]
            else:
                module, piece = self._guests[local - home_count], slot_pieces[local - home_count]
            layout.bind(module, piece.split(layout.numels))
            outputs.append(module(chunk))
        if not outputs:  # nothing arrived: the output's width from an empty pass
            layout.bind(self.local_experts[0], home_pieces[0].split(layout.numels))
            outputs.append(self.local_experts[0](rows))
        return torch.cat(outputs).index_select(0, _inverse(grouped))


def expert_parameters(model):
    """(name, parameter) of every ExpertParallel's experts in `model`: the parameters that are not
    data-parallel over the expert-parallel group. Leave them out of that group's gradient
    averaging, e.g. DistributedDataParallel._set_params_and_buffers_to_ignore_for_model(model,
    [name for name, _ in expert_parameters(model)]); their gradients are complete (guests'
    parts included) when their own gradient hooks fire, so a DDP over an expert-data-parallel
    group needs no communication hook."""
    return [(f"{name}.home" if name else "home", module.home) for name, module in model.named_modules()
            if isinstance(module, ExpertParallel)]
