#!/usr/bin/python3
"""The benchmarks' command lines as the README's Measuring section has users run them: a bad
flag is one error line naming the benchmark and the flag, exit code 2 and no table; a small run
prints its table; --help exits 0.

Usage: test_bench_cli.py BUILD/tests/bench
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

BENCH = None

# Small enough to run in seconds: EP16, one planner, short budgets.
SMALL = {
    "planner_families": ["--ranks", "16", "--planners", "taot", "--budget-ms", "1"],
    "planner_quality": ["--ranks", "16", "--slots", "2", "--targets", "5", "--seeds", "1", "--planners", "taot,echo"],
    "first_plan": ["--ranks", "16", "--processes", "1", "--budget-ms", "1", "--evict-mb", "1"],
    "plan_hash_families": ["--ranks", "16", "--planners", "taot", "--calls", "1"],
    "batch_planning_bench": ["--ranks", "16", "--threads", "1"],
}

# A bad value for each, and the flag the error must name.
BAD = {
    "planner_families": [(["--ranks", "1x6"], "--ranks"), (["--planners", "taot,ehco"], "ehco"),
                         (["--budget-ms", "abc"], "--budget-ms"), (["--resident", "maybe"], "--resident"),
                         (["--slots", "-1"], "--slots"), (["--ranks"], "--ranks")],
    "planner_quality": [(["--seeds", "one"], "--seeds"), (["--planners", "taot"], "--planners"),
                        (["--planners", "taot,nope"], "nope")],
    "first_plan": [(["--processes", "0"], "--processes"), (["--evict-mb", "x"], "--evict-mb")],
    "plan_hash_families": [(["--calls", "x"], "--calls"), (["--ranks", "0"], "--ranks")],
    "batch_planning_bench": [(["--threads", "0"], "--threads"), (["--planner", "nope"], "nope")],
    "client_bench": [(["--ranks", "3"], "--ranks"), (["--transport", "pigeon"], "--transport")],
    "daemon_bench": [(["--rounds", "0"], "--rounds"), (["--paths", "teleport"], "--paths")],
    "reroute_bench": [(["--repeats", "0"], "--repeats")],
    "prefetch_bench": [(["--mib", "0"], "--mib")],
}


def run(name, *args):
    return subprocess.run([os.path.join(BENCH, name), *args], capture_output=True, text=True, timeout=300)


class BenchCliTest(unittest.TestCase):
    def test_a_bad_flag_is_one_line_naming_it_and_exit_code_2(self):
        for name, cases in BAD.items():
            for args, named in cases:
                with self.subTest(bench=name, args=args):
                    r = run(name, *args)
                    self.assertEqual(r.returncode, 2, r.stderr)
                    self.assertEqual(r.stdout, "")
                    lines = r.stderr.strip().splitlines()
                    self.assertEqual(len(lines), 1, r.stderr)
                    self.assertTrue(lines[0].startswith(name + ": "), lines[0])
                    self.assertIn(named, lines[0])

    def test_a_small_run_prints_its_table(self):
        for name, args in SMALL.items():
            with self.subTest(bench=name):
                r = run(name, *args)
                self.assertEqual(r.returncode, 0, r.stderr)
                rows = [line for line in r.stdout.splitlines() if line.startswith("| ")]
                self.assertGreaterEqual(len(rows), 2, r.stdout)  # a header and at least one row
                self.assertTrue(any("EP16" in row for row in rows), r.stdout)

    def test_help_exits_0(self):
        for name in SMALL:
            with self.subTest(bench=name):
                r = run(name, "--help")
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertIn("--", r.stdout)

    def test_plan_repeat_plans_a_case_n_times(self):
        case = {"topology": {"ranks": 4, "ranks_per_node": 2, "inter_node_cost": 3}, "experts": 8,
                "slots_per_rank": 2, "expert_bytes": 1000, "load": [[400, 10, 10, 10, 10, 10, 10, 10]] * 4}
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "case.json")
            with open(path, "w") as f:
                json.dump(case, f)
            once, twice = run("plan_repeat", path, "1", "taot"), run("plan_repeat", path, "2", "taot")
            self.assertEqual((once.returncode, twice.returncode), (0, 0), once.stderr + twice.stderr)
            self.assertGreater(int(once.stdout), 0)
            self.assertEqual(int(twice.stdout), 2 * int(once.stdout))
            for args, named in [([path], "count"), ([path, "x"], "count"), ([path, "1", "nope"], "nope"),
                                ([os.path.join(d, "missing.json"), "1"], "missing.json")]:
                with self.subTest(args=args):
                    r = run("plan_repeat", *args)
                    self.assertEqual(r.returncode, 2, r.stderr)
                    self.assertIn(named, r.stderr)


if __name__ == "__main__":
    BENCH = sys.argv.pop(1)
    unittest.main()
