#!/usr/bin/python3
"""taot-sim's command line refuses bad input: every flag range-checked (exit code 2, a message
that names the flag), CASE files bounded like `taot plan`'s (depth, declared sizes, numbers),
nothing aborts.

    /usr/bin/python3 tests/sim/test_sim_cli.py path/to/taot-sim
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from taot_testing import memory_capped  # noqa: E402

SIM = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else "build/tools/taot-sim/taot-sim"
CASE = {"topology": {"ranks": 4, "ranks_per_node": 2}, "experts": 8, "slots_per_rank": 2,
        "load": [[40, 5, 5, 5, 5, 5, 5, 5]] * 4}


def run(*args):
    return subprocess.run([SIM, *args], capture_output=True, text=True, timeout=120,
                          preexec_fn=memory_capped(SIM))


class BadInput(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.dir.cleanup()

    def path(self, name, text):
        p = os.path.join(self.dir.name, name)
        with open(p, "w") as f:
            f.write(text)
        return p

    def assert_bad_input(self, result, phrase):
        self.assertEqual(result.returncode, 2, result.stderr[:400])
        lines = result.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, result.stderr[:400])
        self.assertTrue(lines[0].startswith("taot-sim: error: "), lines[0])
        self.assertIn(phrase, lines[0])
        self.assertLess(len(lines[0]), 400)

    def test_every_scenario_flag_is_range_checked(self):
        for flag, value in [("--ranks", "0"), ("--ranks", "-4"), ("--ranks", "8192"), ("--slots", "-1"),
                            ("--layers", "0"), ("--layers", "5000"), ("--steps", "0"), ("--steps", "-2"),
                            ("--microbatches", "0"), ("--imbalance", "nan"), ("--imbalance", "-1"),
                            ("--imbalance", "inf"), ("--seed", "-1")]:
            for command in ("simulate", "export-trace", "run"):
                args = {"simulate": ["simulate"], "export-trace": ["export-trace", "--out", self.dir.name],
                        "run": ["run", "table1", "--out", self.dir.name]}[command]
                with self.subTest(command=command, flag=flag, value=value):
                    self.assert_bad_input(run(*args, flag, value), flag)

    def test_a_workload_too_large_to_hold_is_refused(self):
        self.assert_bad_input(run("simulate", "--ranks", "128", "--layers", "1024", "--steps", "100000"),
                              "more than the limit")

    def test_case_files_are_bounded_like_taot_plan(self):
        text = json.dumps(CASE)
        deep = self.path("deep.json", text[:-1] + ', "meta": ' + "[" * 100000 + "]" * 100000 + "}")
        self.assert_bad_input(run("simulate", "--case", deep), "nests deeper than 64")
        big = self.path("big.json", text.replace("40", "1e400", 1))
        self.assert_bad_input(run("simulate", "--case", big), "load[0][0]: number 1e400 is out of range")
        for ranks in (20000, 65536):
            declared = self.path("declared.json", json.dumps(dict(CASE, topology={"ranks": ranks}, experts=ranks)))
            self.assert_bad_input(run("simulate", "--case", declared), "topology.ranks: must be in [1, 4096]")
        self.assert_bad_input(run("simulate", "--case", os.path.join(self.dir.name, "missing.json")),
                              "missing.json")


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]], verbosity=2)
