#!/usr/bin/python3
"""tests/bench/same_plans_on.sh finds the same plans the same, and names each CASE whose plans
differ (a build that plans at another target stands in for a change that moves plans).

    /usr/bin/python3 tests/bench/test_same_plans_on.py path/to/same_plans_on.sh path/to/taot path/to/case.json
"""
import os
import stat
import subprocess
import sys
import tempfile
import unittest

SCRIPT, TAOT, REQUEST = (os.path.abspath(a) for a in sys.argv[1:4])
del sys.argv[1:4]


def run(*args):
    return subprocess.run(["bash", SCRIPT, *args], capture_output=True, text=True, timeout=300)


class SamePlansOn(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.cases = os.path.join(self.tmp.name, "cases")
        os.makedirs(os.path.join(self.cases, "nested"))
        for seed, family in ((1, ["--hot-experts", "1", "--hot-factor", "30"]), (2, ["--imbalance", "70%"])):
            subprocess.run([TAOT, "gen", "--ranks", "16", "--experts", "64", "--seed", str(seed), *family, "-o",
                            os.path.join(self.cases, "nested", f"case{seed}.json")], check=True, capture_output=True)

    def tearDown(self):
        self.tmp.cleanup()

    def test_the_same_build_makes_the_same_plans(self):
        result = run(TAOT, TAOT, self.cases, REQUEST)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertEqual(result.stdout.strip(), "0 of 3 plans differ (taot)")

    def test_each_case_whose_plans_differ_is_named(self):
        other = os.path.join(self.tmp.name, "other_target")
        with open(other, "w") as f:
            f.write(f'#!/bin/sh\nexec "{TAOT}" "$@" --target-imbalance 40\n')
        os.chmod(other, os.stat(other).st_mode | stat.S_IXUSR)
        result = run(TAOT, other, "-p", "taot", self.cases, REQUEST)
        self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
        lines = result.stdout.strip().splitlines()
        self.assertEqual(lines[-1], "3 of 3 plans differ (taot)")
        self.assertEqual(sorted(lines[:-1]), sorted(f"differs: {p}" for p in [
            os.path.join(self.cases, "nested", "case1.json"), os.path.join(self.cases, "nested", "case2.json"),
            REQUEST]))

    def test_no_cases_is_an_error(self):
        result = run(TAOT, TAOT, self.tmp.name + "/nothing")
        self.assertEqual(result.returncode, 2)
        self.assertIn("no .json CASE files", result.stderr)


if __name__ == "__main__":
    unittest.main()
