#!/usr/bin/python3
"""The `taot` command line as a user meets it: plan, gen, compare, score, planners, demo, and
every kind of bad input (one line on stderr, a non-zero exit, no output file touched).

Usage: test_cli.py PATH/TO/taot
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

TAOT = None


def read(path):
    with open(path) as f:
        return f.read()


def run(*args, stdin=None):
    return subprocess.run([TAOT, *args], input=stdin, capture_output=True, text=True)


CASE = {
    "topology": {"ranks": 4, "ranks_per_node": 2, "inter_node_cost": 3},
    "experts": 8, "slots_per_rank": 2, "expert_bytes": 1000,
    "load": [[400, 10, 10, 10, 10, 10, 10, 10]] * 4,
}


class CliTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.case = self.path("case.json", json.dumps(CASE))

    def tearDown(self):
        self.dir.cleanup()

    def path(self, name, text=None):
        p = os.path.join(self.dir.name, name)
        if text is not None:
            with open(p, "w") as f:
                f.write(text)
        return p

    def assert_fails(self, result, phrase):
        self.assertNotEqual(result.returncode, 0, result.stdout)
        lines = result.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, result.stderr)
        self.assertIn(phrase, lines[0])
        self.assertTrue(lines[0].startswith("taot: error: "), lines[0])
        self.assertEqual(result.stdout, "")

    def test_plan_writes_the_documented_fields(self):
        out = self.path("plan.json")
        r = run("plan", "--input", self.case, "--output", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        plan = json.loads(read(out))
        self.assertEqual(plan["planner"], "taot")
        for key in ("imbalance_before_pct", "imbalance_after_pct", "intra_node_transfers",
                    "inter_node_transfers", "weighted_cost", "target_met", "plan_time_us"):
            self.assertIn(key, plan["stats"])
        self.assertTrue(plan["stats"]["target_met"])
        self.assertLessEqual(plan["stats"]["imbalance_after_pct"], 2.0)
        self.assertTrue(plan["replicas"])
        self.assertEqual(set(plan["assignments"][0]), {"source", "expert", "rank", "tokens"})
        # The plan scores the same through `taot score` (the shared validator and evaluator).
        s = run("score", "--input", self.case, "--plan", out)
        self.assertEqual(s.returncode, 0, s.stderr)
        rescored = json.loads(s.stdout)["stats"]
        self.assertEqual(rescored["weighted_cost"], plan["stats"]["weighted_cost"])

    def test_every_planner_and_the_target_flag(self):
        names = [l.split()[0] for l in run("planners").stdout.splitlines() if not l.startswith(" ")]
        self.assertEqual(names, ["taot", "taot-paper", "echo", "llep", "eplb", "lplb", "none"])
        for name in names:
            r = run("plan", "-i", self.case, "--planner", name)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(json.loads(r.stdout)["planner"], name)
        r = run("plan", "-i", self.case, "--target-imbalance", "10")
        self.assertEqual(json.loads(r.stdout)["stats"]["target_imbalance_pct"], 10)

    def test_stdin_input(self):
        r = run("plan", "--input", "-", stdin=json.dumps(CASE))
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_compare_table_and_json(self):
        r = run("compare", "-i", self.case)
        self.assertEqual(r.returncode, 0, r.stderr)
        for name in ("taot", "taot-paper", "echo", "llep", "eplb", "lplb", "none"):
            self.assertIn(name, r.stdout)
        rows = [json.loads(l) for l in run("compare", "-i", self.case, "--json").stdout.splitlines()]
        self.assertEqual(len(rows), 7)
        self.assertEqual(rows[-1]["stats"]["weighted_cost"], 0)

    def test_gen_hits_the_imbalance_and_plans(self):
        out = self.path("gen.json")
        r = run("gen", "--ranks", "16", "--experts", "128", "--imbalance", "0.7", "--seed", "3",
                "--output", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        case = json.loads(read(out))
        self.assertAlmostEqual(case["meta"]["imbalance_pct"], 70, delta=0.5)
        self.assertEqual(len(case["load"]), 16)
        p = run("plan", "-i", out)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertAlmostEqual(json.loads(p.stdout)["stats"]["imbalance_before_pct"], 70, delta=0.5)
        again = run("gen", "--ranks", "16", "--experts", "128", "--imbalance", "0.7", "--seed", "3")
        self.assertEqual(again.stdout, read(out))

    def test_bad_input_is_one_clear_line(self):
        def case_with(**changes):
            c = json.loads(json.dumps(CASE))
            c.update(changes)
            return self.path("bad.json", json.dumps(c))

        self.assert_fails(run("plan", "-i", self.path("m.json", "{\"topology\": ")), "malformed JSON")
        self.assert_fails(run("plan", "-i", case_with(load=[[1] * 8] * 3)), "load: must have 4 rows")
        self.assert_fails(run("plan", "-i", case_with(load=[[1] * 7] * 4)), "load[0]: must have 8 entries")
        self.assert_fails(run("plan", "-i", case_with(load=[[1] * 8] * 3 + [[1] * 7 + [-2]])),
                          "load[3][7]: must be in [0,")
        self.assert_fails(run("plan", "-i", case_with(experts=6, load=[[1] * 6] * 4)),
                          "experts: 6 is not divisible")
        self.assert_fails(run("plan", "-i", case_with(slots_per_rank=-1)), "slots_per_rank")
        self.assert_fails(run("plan", "-i", self.case, "--planner", "magic"), "unknown planner 'magic'")
        self.assert_fails(run("plan", "-i", self.path("none.json")), "cannot open")
        self.assert_fails(run("plan", "-i", self.case, "--param", "x"), "--param: expected key=value")
        self.assert_fails(run("plan", "-i", self.case, "--param", "nope=1"), "unknown parameter 'nope'")
        self.assert_fails(run("plan", "-i", self.case, "--target-imbalance", "-3"), "target_imbalance_pct")
        self.assert_fails(run("gen", "--ranks", "16", "--experts", "100"), "experts: must be a positive multiple")
        self.assert_fails(run("plan", "-i", self.case, "--frobnicate"), "frobnicate")
        self.assertEqual(run("plan", "-i", self.case, "--frobnicate").returncode, 2)
        self.assert_fails(run("plan"), "--input is required")

    def test_a_failed_run_leaves_the_output_file_alone(self):
        out = self.path("keep.json", "precious\n")
        r = run("plan", "-i", self.path("m.json", "not json"), "--output", out)
        self.assertNotEqual(r.returncode, 0)
        self.assertEqual(read(out), "precious\n")

    def test_score_rejects_an_invalid_plan(self):
        bad = self.path("bad_plan.json", json.dumps(
            {"replicas": [{"expert": 0, "rank": 0}], "assignments": []}))
        self.assert_fails(run("score", "-i", self.case, "--plan", bad), "rank 0 is the home of expert 0")

    def test_help_and_demo(self):
        self.assertEqual(run("--help").returncode, 0)
        self.assertIn("plan", run("--help").stdout)
        r = run("demo", "--ranks", "16")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("taot-paper", r.stdout)


if __name__ == "__main__":
    TAOT = sys.argv.pop(1)
    unittest.main(verbosity=1)
