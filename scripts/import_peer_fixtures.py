#!/usr/bin/python3
"""Copies the peers' reference plans into tests/data/peers/, the fixtures of the port tests.

Usage: scripts/import_peer_fixtures.py PEERS_DIR

PEERS_DIR holds cases/<case>.json (taot gen output), plans/<peer>/<case>.json (each peer's own
code's plan, PLAN format; gzip-compressed as <case>.json.gz for EPLB's two variants, whose plans
are large), eplb_native/<case>.json and summary.json (independent scores). The
tests read only what this writes, so they pass from a plain clone:
  tests/data/peers/cases/<case>.json       the CASE files, byte for byte
  tests/data/peers/<peer>.json             per case: the peer's replica set and its scores
  tests/data/peers/eplb_native/<case>.json EPLB's own output (phy2log, logcnt, parameters)
Assignments are left out: the port tests compare replica sets and scores, and the scores come
from the independent scorer (summary.json), so nothing here depends on our own scorer.
"""
import gzip
import json
import pathlib
import shutil
import sys

PEERS = ("taot", "echo", "llep", "eplb_g8", "eplb_gR")
COMPRESSED = ("eplb_g8", "eplb_gR")
SCORES = ("imbalance_after_pct", "weighted_cost", "intra_node_transfers", "inter_node_transfers",
          "k_exceeded", "max_replicas_of_one_expert")


def read_plan(folder: pathlib.Path, case: str, compressed: bool) -> dict:
    if compressed:
        with gzip.open(folder / f"{case}.json.gz", "rt") as f:
            return json.load(f)
    return json.loads((folder / f"{case}.json").read_text())


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    src = pathlib.Path(sys.argv[1])
    dst = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "peers"
    summary = json.loads((src / "summary.json").read_text())
    cases = sorted(p.stem for p in (src / "cases").glob("*.json"))
    if not cases:
        print(f"import_peer_fixtures: no cases under {src / 'cases'}", file=sys.stderr)
        return 1
    for sub in ("cases", "eplb_native"):
        (dst / sub).mkdir(parents=True, exist_ok=True)
        for case in cases:
            shutil.copyfile(src / sub / f"{case}.json", dst / sub / f"{case}.json")
    for peer in PEERS:
        table = {}
        for case in cases:
            plan = read_plan(src / "plans" / peer, case, peer in COMPRESSED)
            scores = summary["results"][case][peer]
            table[case] = {"replicas": sorted([r["expert"], r["rank"]] for r in plan["replicas"]),
                           **{k: scores[k] for k in SCORES}}
        # One case per line, so a diff shows which case changed.
        rows = [f"{json.dumps(c)}: {json.dumps(table[c], sort_keys=True)}" for c in cases]
        (dst / f"{peer}.json").write_text("{\n" + ",\n".join(rows) + "\n}\n")
    print(f"import_peer_fixtures: {len(cases)} cases, peers {', '.join(PEERS)} -> {dst}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
