#!/usr/bin/python3
"""Writes the fuzz targets' seed corpora (tests/fuzz/corpus/<target>/): a few small valid
inputs each, from which libFuzzer mutates. Run again after changing a format; the files it
writes are committed, next to any crash inputs saved as regression seeds."""
import io
import json
import pathlib
import struct
import sys

import numpy as np

CORPUS = pathlib.Path(__file__).resolve().parent / "corpus"


def write(target, name, data):
    d = CORPUS / target
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(data if isinstance(data, bytes) else data.encode())


def cases():
    small = {"topology": {"ranks": 2, "ranks_per_node": 1}, "experts": 4, "slots_per_rank": 1,
             "load": [[90, 1, 2, 3], [80, 0, 4, 1]]}
    full = {"topology": {"ranks": 4, "node_of_rank": [0, 0, 7, 7], "inter_node_cost": 2.5},
            "experts": 8, "slots_per_rank": 2, "expert_bytes": 9437184, "target_imbalance_pct": 2,
            "resident": [{"expert": 0, "rank": 3}], "meta": {"generator": "hand", "seed": 1, "nested": [[1.5]]},
            "load": [[400, 3, 1, 0, 2, 9, 5, 1], [380, 2, 0, 4, 1, 1, 3, 2],
                     [10, 1, 1, 1, 1, 1, 1, 1], [0, 0, 0, 0, 0, 0, 0, 77]]}
    costs = {"topology": {"ranks": 2, "cost_matrix": [[0, 1.5], [4, 0]]}, "experts": 2, "slots_per_rank": 1,
             "load": [[1099511627776, 0], [5, 6]]}
    return {"small.json": json.dumps(small), "full.json": json.dumps(full, indent=2),
            "cost_matrix.json": json.dumps(costs)}


def plans():
    plan = {"planner": "taot", "replicas": [{"expert": 0, "rank": 3}, {"expert": 0, "rank": 2}],
            "assignments": [{"source": 0, "expert": 0, "rank": 3, "tokens": 120},
                            {"source": 1, "expert": 0, "rank": 2, "tokens": 100}],
            "stats": {"imbalance_before_pct": 69.9, "imbalance_after_pct": 2.0, "target_met": True,
                      "intra_node_transfers": 1, "inter_node_transfers": 1, "weighted_cost": 4,
                      "plan_time_us": 9.7}}
    return {"plan.json": json.dumps(plan, indent=2),
            "empty.json": json.dumps({"planner": "none", "replicas": [], "assignments": []})}


def configs():
    base = 'job-id = "demo"\nworld-size = 8\nexperts = 32\n'
    return {
        "minimal.toml": base,
        "full.toml": base + 'slots = 2\nranks-per-node = 4\nplanner = "taot"\n'
                            'param = ["target_imbalance_pct=5"]\nlisten = "127.0.0.1:50051"\n'
                            'metrics-listen = "127.0.0.1:9464"\nround-timeout-ms = 100\nlog-level = "debug"\n'
                            'predictive = true\ngrace-s = 10\n# a comment\n',
        "open.toml": base + 'listen = "0.0.0.0:50051"\nallow-unauthenticated = true\n',
    }


def npy(array):
    out = io.BytesIO()
    np.save(out, array)
    return out.getvalue()


def traces():
    rng = np.random.default_rng(1)
    three = rng.integers(0, 100, size=(2, 2, 4), dtype=np.int64)
    four = rng.integers(0, 100, size=(2, 2, 2, 4)).astype(np.uint16)
    npys = {"steps.npy": npy(three), "microbatches.npy": npy(four), "int8.npy": npy(three.astype(np.int8))}
    rows = ["step,rank,e0,e1,e2,e3"] + [f"{s},{r}," + ",".join(str(v) for v in three[s, r])
                                          for s in range(2) for r in range(2)]
    mb_rows = ["# with microbatches", "step,microbatch,rank,e0,e1"] + [
        f"{s}, {m}, {r}, {s + m}, {r}" for s in range(2) for m in range(2) for r in range(2)]
    csvs = {"steps.csv": "\n".join(rows) + "\n", "microbatches.csv": "\r\n".join(mb_rows) + "\r\n"}
    return npys, csvs


def plan_checks():
    # taot_plan_v1 as a plugin leaves it: replica_count, assignment_count, the replicas
    # (int32 expert, rank) and the assignments (int32 source, expert, rank, 4 bytes of padding,
    # int64 tokens), for the fuzz target's 4-rank, 8-expert, K = 2 request.
    def plan(replicas, assignments):
        out = struct.pack("<ii", len(replicas), len(assignments))
        for e, r in replicas:
            out += struct.pack("<ii", e, r)
        for s, e, r, t in assignments:
            out += struct.pack("<iiixxxxq", s, e, r, t)
        return out
    return {"valid.bin": plan([(0, 3), (0, 2)], [(0, 0, 3, 150), (1, 0, 2, 120), (0, 0, 2, 100)]),
            "empty.bin": plan([], []),
            "home.bin": plan([(0, 0)], [(0, 0, 0, 1)])}


# Hand-encoded protobuf (proto/taot/v1/planner.proto), so no generated code is needed.
def varint(n):
    n &= (1 << 64) - 1
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def field(number, value):
    if isinstance(value, int):
        return varint(number << 3) + varint(value)
    data = value.encode() if isinstance(value, str) else value
    return varint(number << 3 | 2) + varint(len(data)) + data


def packed(number, values):
    return field(number, b"".join(varint(v) for v in values))


def wire_plans():
    # A daemon's Plan replies; the first byte's low bit asks plan_wire_fuzz to fix the hash to
    # the content.
    replica = field(3, field(1, 5) + field(2, 2))
    assignment = field(4, field(1, 0) + field(2, 5) + field(3, 2) + field(4, 40))
    stats = field(10, field(1, 7) + field(2, 1))
    plan = field(1, 3) + field(2, 1) + replica + assignment + field(5, 2) + field(7, "taot") + stats
    negative = field(3, field(1, -1) + field(2, 2))
    return {"plan_hashed.bin": bytes([1]) + plan, "plan_wrong_hash.bin": bytes([0]) + plan + b"\x31" + bytes(8),
            "negative_expert.bin": bytes([1]) + negative, "fallback.bin": bytes([1]) + field(8, 1) + field(9, "rows"),
            "garbage.bin": bytes([1]) + b"\xff\xff\xff"}


def rpcs():
    # The first byte picks the method (low 3 bits, the order of rpc_fuzz.cc's kMethods) and the
    # token (bits 3-5: 0 none, 1 a wrong one, else the job's).
    token = 2 << 3
    row = [90, 1, 2, 3, 4, 5, 6, 7]
    register = field(1, "job-1") + field(2, 1) + field(3, 4) + field(4, "node-a") + field(7, "run-1") + field(8, 8)
    report = field(1, "job-1") + field(2, 0) + field(3, 5) + field(4, 1) + packed(5, row)
    matrix = field(1, "job-1") + field(2, 6) + field(3, 0) + field(4, 4) + field(5, 8) + packed(6, row * 4)
    stream = field(1, "job-1") + field(2, 2) + field(3, 7) + field(4, field(1, 0) + packed(2, row)) + \
        field(4, field(1, 1) + packed(2, row))
    watch = field(1, "job-1") + field(2, 3)
    set_planner = field(1, "taot") + field(2, field(1, "target_imbalance_pct") + field(2, "5"))
    case = json.dumps({"topology": {"ranks": 2, "ranks_per_node": 1}, "experts": 4, "slots_per_rank": 1,
                       "load": [[90, 1, 2, 3], [80, 0, 4, 1]]})
    plan_case = field(1, case) + field(2, "echo")
    seeds = [(0, register), (1, report), (2, matrix), (3, stream), (4, watch), (5, b""), (6, set_planner),
             (7, plan_case)]
    out = {f"method{m}.bin": bytes([m | token]) + body for m, body in seeds}
    out["anonymous.bin"] = bytes([5]) + b""
    out["garbage.bin"] = bytes([0 | token]) + b"\xff\xff\xff\xff"
    return out


def main():
    for name, text in cases().items():
        write("case_json_fuzz", name, text)
    for name, text in plans().items():
        write("plan_json_fuzz", name, text)
    for name, text in configs().items():
        write("daemon_config_fuzz", name, text)
    npys, csvs = traces()
    for name, data in npys.items():
        write("trace_npy_fuzz", name, data)
    for name, text in csvs.items():
        write("trace_csv_fuzz", name, text)
    for name, data in plan_checks().items():
        write("plan_check_fuzz", name, data)
    for name, data in wire_plans().items():
        write("plan_wire_fuzz", name, data)
    for name, data in rpcs().items():
        write("rpc_fuzz", name, data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
