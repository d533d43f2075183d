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

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from taot_testing import memory_capped  # noqa: E402

TAOT = None


def read(path):
    with open(path) as f:
        return f.read()


def run(*args, stdin=None):
    return subprocess.run([TAOT, *args], input=stdin, capture_output=True, text=True, timeout=120,
                          preexec_fn=memory_capped(TAOT))


def nested(depth):
    return "[" * depth + "]" * depth


def case_text(**members):
    """CASE's JSON with `members` (already JSON text) added at the top level."""
    return json.dumps(CASE)[:-1] + "".join(f', "{k}": {v}' for k, v in members.items()) + "}"


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
        # One line says what was written, and where.
        self.assertEqual(len(r.stdout.splitlines()), 1, r.stdout)
        self.assertTrue(r.stdout.startswith(f"wrote the PLAN to {out}: taot, "), r.stdout)
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
        s = run("score", "--input", self.case, "--plan", out, "--json")
        self.assertEqual(s.returncode, 0, s.stderr)
        rescored = json.loads(s.stdout)["stats"]
        self.assertEqual(rescored["weighted_cost"], plan["stats"]["weighted_cost"])
        # By default the scorecard as a table; the whole plan only when asked.
        table = run("score", "--input", self.case, "--plan", out)
        self.assertEqual(table.returncode, 0, table.stderr)
        self.assertIn("w.cost", table.stdout.splitlines()[0])
        self.assertNotIn("assignments", table.stdout)
        whole = run("score", "--input", self.case, "--plan", out, "--print-plan")
        self.assertEqual(json.loads(whole.stdout)["replicas"], plan["replicas"])
        self.assertNotEqual(run("score", "--input", self.case, "--plan", out, "--print-plan", "--json").returncode, 0)

    def test_every_planner_and_the_target_flag(self):
        names = [l.split()[0] for l in run("planners").stdout.splitlines() if not l.startswith(" ")]
        self.assertEqual(names, ["taot", "taot-block", "taot-paper", "echo", "llep", "eplb", "eplb-fixed-home", "lplb",
                                 "none"])
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
        for name in ("taot", "taot-block", "taot-paper", "echo", "llep", "eplb", "eplb-fixed-home", "lplb", "none"):
            self.assertIn(name, r.stdout)
        rows = [json.loads(l) for l in run("compare", "-i", self.case, "--json").stdout.splitlines()]
        self.assertEqual(len(rows), 9)
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
        as_percent = run("gen", "--ranks", "16", "--experts", "128", "--imbalance", "70%", "--seed", "3")
        self.assertEqual(as_percent.stdout, read(out))

    def test_imbalance_flags_take_either_unit_written(self):
        for unit in ("10", "10%"):
            r = run("plan", "-i", self.case, "--target-imbalance", unit)
            self.assertEqual(json.loads(r.stdout)["stats"]["target_imbalance_pct"], 10)
        for flag, value in [("--imbalance", "%"), ("--imbalance", "7o%"), ("--imbalance", "-5%"),
                            ("--target-imbalance", "x%"), ("--target-imbalance", "-1%")]:
            with self.subTest(flag=flag, value=value):
                self.assert_bad_input(run("gen", "--ranks", "4", "--experts", "8", flag, value), flag)
        self.assertIn("70%", run("gen", "--help").stdout)

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
        self.assert_fails(run("plan", "-i", self.case, "--target-imbalance", "-3"), "--target-imbalance")
        self.assert_fails(run("gen", "--ranks", "16", "--experts", "100"), "experts: must be a positive multiple")
        self.assert_fails(run("plan", "-i", self.case, "--frobnicate"), "frobnicate")
        self.assertEqual(run("plan", "-i", self.case, "--frobnicate").returncode, 2)
        self.assert_fails(run("plan"), "--input is required")

    def assert_bad_input(self, result, phrase):
        """Refused as bad input: exit code 2, one short line naming the problem."""
        self.assert_fails(result, phrase)
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertLess(len(result.stderr), 400, result.stderr[:400])

    def test_deep_nesting_is_refused_not_a_crash(self):
        for depth in (70000, 100000):
            deep = self.path("deep.json", case_text(meta=nested(depth)))
            self.assert_bad_input(run("plan", "-i", deep), "nests deeper than 64")
            self.assert_bad_input(run("score", "-i", deep, "--plan", deep), "nests deeper than 64")
            unclosed = self.path("unclosed.json", case_text(meta="[" * depth)[:-1])
            self.assert_bad_input(run("plan", "-i", unclosed), "nests deeper than 64")
        deep_plan = self.path("plan.json", '{"replicas": [], "assignments": ' + nested(100000) + "}")
        self.assert_bad_input(run("score", "-i", self.case, "--plan", deep_plan), "nests deeper than 64")

    def test_numbers_beyond_a_double_are_refused(self):
        self.assert_bad_input(run("plan", "-i", self.path("big.json", json.dumps(CASE).replace("400", "1e400", 1))),
                              "load[0][0]: number 1e400 is out of range")
        self.assert_bad_input(run("plan", "-i", self.path("meta.json", case_text(meta='{"x": [1, -1e400]}'))),
                              "meta.x[1]: number -1e400 is out of range")
        huge = "9" * 100000
        r = run("plan", "-i", self.path("huge.json", case_text(meta=huge)))
        self.assert_bad_input(r, "meta: number 99999999999999999999... is out of range")
        plan = self.path("plan.json", '{"replicas": [], "assignments": [{"source": 0, "expert": 0, '
                                      '"rank": 0, "tokens": 1e999}]}')
        self.assert_bad_input(run("score", "-i", self.case, "--plan", plan),
                              "assignments[0].tokens: number 1e999 is out of range")
        self.assert_bad_input(run("compare", "-i", self.path("t.json", case_text(target_imbalance_pct="1E+400"))),
                              "target_imbalance_pct: number")

    def test_declared_sizes_are_checked_before_allocating(self):
        def declared(ranks, experts, rows=1):
            return self.path("declared.json", json.dumps({
                "topology": {"ranks": ranks}, "experts": experts, "slots_per_rank": 1,
                "load": [[1] * 8] * rows}))

        # Each ran out of memory or took gigabytes before; under a 2 GiB cap they must be refused.
        self.assert_bad_input(run("plan", "-i", declared(20000, 20000)), "topology.ranks: must be in [1, 4096]")
        self.assert_bad_input(run("plan", "-i", declared(65536, 65536)), "topology.ranks: must be in [1, 4096]")
        self.assert_bad_input(run("plan", "-i", declared(4096, 65536)), "more than the limit of 16777216")
        self.assert_bad_input(run("plan", "-i", declared(4096, 4096)), "load: must have 4096 rows, got 1")
        matrix = self.path("matrix.json", json.dumps({
            "topology": {"ranks": 4096, "cost_matrix": [[0]]}, "experts": 4096, "slots_per_rank": 1,
            "load": [[0] * 4096] * 4096}))
        self.assert_bad_input(run("plan", "-i", matrix), "topology.cost_matrix: must have 4096 rows, got 1")
        self.assert_bad_input(run("gen", "--ranks", "65536", "--experts", "65536"), "--ranks: must be in [1, 4096]")
        self.assert_bad_input(run("gen", "--ranks", "4096", "--experts", "65536"), "more than the limit of")

    def test_every_flag_is_range_checked(self):
        gen = ["gen", "--ranks", "4", "--experts", "8"]
        for flag, value in [("--ranks", "0"), ("--ranks", "-1"), ("--experts", "0"), ("--imbalance", "nan"),
                            ("--imbalance", "-1"), ("--imbalance", "inf"), ("--top-k", "0"), ("--top-k", "9"),
                            ("--tokens-per-rank", "0"), ("--slots", "-1"), ("--ranks-per-node", "0"),
                            ("--inter-node-cost", "nan"), ("--inter-node-cost", "0.5"), ("--expert-bytes", "-1"),
                            ("--noise", "nan"), ("--noise", "-1"), ("--skew", "inf"), ("--hot-experts", "-1"),
                            ("--hot-factor", "nan"), ("--hot-factor", "0.5"), ("--target-imbalance", "nan"),
                            ("--target-imbalance", "-1"), ("--seed", "-1")]:
            with self.subTest(flag=flag, value=value):
                self.assert_bad_input(run(*gen, flag, value), flag)
        for flag, value in [("--ranks", "0"), ("--ranks", "5000"), ("--imbalance", "nan"), ("--imbalance", "-1")]:
            with self.subTest(demo=flag, value=value):
                self.assert_bad_input(run("demo", flag, value), flag)
        for value in ("nan", "inf", "-1"):
            self.assert_bad_input(run("plan", "-i", self.case, "--target-imbalance", value), "--target-imbalance")
            self.assert_bad_input(run("compare", "-i", self.case, "--target-imbalance", value),
                                  "--target-imbalance")

    def test_exit_codes_tell_bad_input_from_failure(self):
        self.assertEqual(run("plan", "-i", self.path("missing.json")).returncode, 2)
        self.assertEqual(run("plan", "-i", self.path("m.json", "not json")).returncode, 2)
        r = run("plan", "-i", self.case, "-o", os.path.join(self.dir.name, "no", "such", "dir", "plan.json"))
        self.assert_fails(r, "cannot write")
        self.assertEqual(r.returncode, 1)

    def test_out_of_memory_is_an_error_not_an_abort(self):
        if memory_capped(TAOT) is None:
            self.skipTest("a sanitizer build cannot run under an address-space cap")
        # Within every limit, but more than 256 MiB of address space holds.
        r = subprocess.run([TAOT, "gen", "--ranks", "4096", "--experts", "4096"], capture_output=True,
                           text=True, timeout=120, preexec_fn=memory_capped(TAOT, 256 << 20))
        self.assert_fails(r, "out of memory")
        self.assertEqual(r.returncode, 1)

    def test_a_failed_run_leaves_the_output_file_alone(self):
        out = self.path("keep.json", "precious\n")
        r = run("plan", "-i", self.path("m.json", "not json"), "--output", out)
        self.assertNotEqual(r.returncode, 0)
        self.assertEqual(read(out), "precious\n")

    def test_a_comparison_only_plan_scores_only_with_the_slot_limit_lifted(self):
        case = self.path("gen16.json")
        g = run("gen", "--ranks", "16", "--experts", "128", "--seed", "3", "--output", case)
        self.assertEqual(g.returncode, 0, g.stderr)
        self.assertTrue(g.stdout.startswith(f"wrote the CASE to {case}: 16 ranks (8 per node), 128 experts, K 2, "),
                        g.stdout)
        out = self.path("eplb_plan.json")
        r = run("plan", "-i", case, "--planner", "eplb", "--output", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assert_fails(run("score", "-i", case, "--plan", out), "holds more than slots_per_rank")
        s = run("score", "-i", case, "--plan", out, "--lift-slot-limit", "--json")
        self.assertEqual(s.returncode, 0, s.stderr)
        self.assertEqual(json.loads(s.stdout)["stats"]["weighted_cost"],
                         json.loads(read(out))["stats"]["weighted_cost"])

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
