#!/usr/bin/python3
"""`taot-sim simulate --dump-requests DIR` writes every request a planner is timed on as a CASE
file that `taot plan` reads: the load the workload gave, and the replicas the microbatch before
left resident, checked against `taot plan`'s own plan of that microbatch's request. A directory
in use is refused before anything is written.

    /usr/bin/python3 tests/sim/test_sim_dump.py path/to/taot-sim path/to/taot
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

SIM = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else "build/tools/taot-sim/taot-sim"
TAOT = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else "build/tools/taot/taot"
RANKS, EXPERTS, STEPS, MICROBATCHES = 8, 16, 2, 3


def load(step, mb):
    """A different matrix for every (step, microbatch), so a file written for the wrong one shows;
    expert 0 hot enough to need replicas."""
    return [[60 + 10 * step + 5 * mb + 3 * rank if e == 0 else 4 + (rank + e + mb) % 3 for e in range(EXPERTS)]
            for rank in range(RANKS)]


def run(*args):
    return subprocess.run(list(args), capture_output=True, text=True, timeout=120)


class DumpRequests(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.trace = os.path.join(self.tmp.name, "trace")
        os.makedirs(self.trace)
        with open(os.path.join(self.trace, "layer_000.csv"), "w") as f:
            f.write(",".join(["step", "microbatch", "rank"] + [f"e{e}" for e in range(EXPERTS)]) + "\n")
            for step in range(STEPS):
                for mb in range(MICROBATCHES):
                    for rank, row in enumerate(load(step, mb)):
                        f.write(",".join(str(v) for v in [step, mb, rank, *row]) + "\n")
        self.out = os.path.join(self.tmp.name, "requests")

    def tearDown(self):
        self.tmp.cleanup()

    def simulate(self, out):
        return run(SIM, "simulate", "--trace", self.trace, "--planners", "taot", "--dump-requests", out,
                   "--no-progress")

    def plan(self, path):
        result = run(TAOT, "plan", "-i", path, "-p", "taot")
        self.assertEqual(result.returncode, 0, result.stderr)
        return json.loads(result.stdout)

    def test_each_timed_request_is_written_with_the_residents_the_plan_before_left(self):
        result = self.simulate(self.out)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(sorted(os.listdir(self.out)), ["none", "taot"])
        names = [f"step_{s:03d}_layer_000_mb_{m:02d}.json" for s in range(STEPS) for m in range(MICROBATCHES)]
        for planner in ("none", "taot"):
            self.assertEqual(sorted(os.listdir(os.path.join(self.out, planner))), names)
        for step in range(STEPS):
            before = None  # the plan of the microbatch before, in this step and layer
            for mb in range(MICROBATCHES):
                with self.subTest(step=step, microbatch=mb):
                    path = os.path.join(self.out, "taot", names[step * MICROBATCHES + mb])
                    with open(path) as f:
                        request = json.load(f)
                    self.assertEqual(request["load"], load(step, mb))
                    self.assertEqual(request["meta"]["planner"], "taot")
                    self.assertEqual((request["meta"]["step"], request["meta"]["microbatch"]), (step, mb))
                    resident = sorted((r["expert"], r["rank"]) for r in request.get("resident", []))
                    expected = [] if before is None else sorted((r["expert"], r["rank"]) for r in before["replicas"])
                    self.assertEqual(resident, expected)
                    before = self.plan(path)
            self.assertTrue(before["replicas"], "the hot expert's load should need replicas")
        for name in names:  # `none` plans nothing, so nothing is ever resident
            with open(os.path.join(self.out, "none", name)) as f:
                self.assertNotIn("resident", json.load(f))

    def test_a_directory_in_use_is_refused_and_left_as_it_was(self):
        os.makedirs(self.out)
        kept = os.path.join(self.out, "notes.txt")
        with open(kept, "w") as f:
            f.write("an earlier run's notes")
        result = self.simulate(self.out)
        self.assertNotEqual(result.returncode, 0)
        self.assertIn(kept, result.stderr)
        self.assertIn("new or empty directory", result.stderr)
        self.assertEqual(os.listdir(self.out), ["notes.txt"])
        with open(kept) as f:
            self.assertEqual(f.read(), "an earlier run's notes")
        self.assertEqual(result.stdout, "", "nothing should run")

    def test_a_file_in_the_way_is_refused(self):
        in_the_way = os.path.join(self.tmp.name, "requests.json")
        with open(in_the_way, "w") as f:
            f.write("{}")
        result = self.simulate(in_the_way)
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("cannot create the request directory", result.stderr)
        with open(in_the_way) as f:
            self.assertEqual(f.read(), "{}")


if __name__ == "__main__":
    unittest.main()
