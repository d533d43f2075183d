"""The deploy artifacts checked against the real things (ctest, CPU; Debian's prometheus,
promtool, yamllint, python3-jsonschema and python3-yaml).

- The dashboard's and the alert rules' PromQL against a real Prometheus that scrapes a running
  taot-planner driven by simulated ranks: every expression must parse, and every dashboard
  panel must return data.
- promtool: the rules pass `check rules` and their unit tests (`test rules`).
- The chart: its plain YAML passes yamllint; values.yaml and every helm/taot/ci/ values file pass
  values.schema.json, and bad values fail it; every `.Values.x` a template reads exists in
  values.yaml; the dashboard it ships is the one in deploy/grafana.
- The daemon accepts the configuration file the examples and the chart write.

Usage: test_observability.py SOURCE_DIR BUILD_DIR
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

import jsonschema
import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import taot_testing  # noqa: E402 (tests/taot_testing.py)
from chart_render import merged, render_config_toml  # noqa: E402 (tests/deploy/chart_render.py)
from prometheus_testing import Prometheus, dashboard_queries  # noqa: E402 (tests/deploy/prometheus_testing.py)

SOURCE, BUILD = sys.argv[1], sys.argv[2]
DAEMON = os.path.join(BUILD, "server", "taot-planner")
SIMRANKS = os.path.join(BUILD, "tools", "taot-simranks", "taot-simranks")
DASHBOARD = os.path.join(SOURCE, "deploy", "grafana", "taot-overview.json")
RULES = os.path.join(SOURCE, "deploy", "prometheus", "rules.yaml")
CHART = os.path.join(SOURCE, "helm", "taot")


def start_daemon(*args):
    return taot_testing.Daemon(DAEMON, *args)


def rule_queries():
    with open(RULES) as f:
        rules = yaml.safe_load(f)
    return [(r["alert"], r["expr"]) for g in rules["groups"] for r in g["rules"]]


class LivePrometheusTest(unittest.TestCase):
    """One daemon, simulated ranks and a Prometheus for all the PromQL checks."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.prometheus = cls.ranks = cls.daemon = None
        try:
            cls.start()
        except BaseException:
            cls.tearDownClass()  # unittest skips it when setUpClass fails
            raise

    @classmethod
    def start(cls):
        cls.daemon = start_daemon("--job-id", "obs", "--world-size", "8", "--experts", "32",
                                                    "--expert-bytes", "1048576")
        address, metrics = cls.daemon.address, cls.daemon.metrics
        cls.ranks = subprocess.Popen([SIMRANKS, "--address", address, "--job-id", "obs", "--world-size", "8",
                                      "--experts", "32", "--ranks-per-node", "4", "--steps", "100000",
                                      "--layers", "4"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        cls.prometheus = Prometheus(metrics, cls.tmp.name)
        # Until rates over the scrapes exist: a few scrapes of a daemon that is planning.
        cls.prometheus.wait_for("rate(taot_plans_total[30s]) > 0", 60, alive=[("taot-simranks", cls.ranks)])

    @classmethod
    def tearDownClass(cls):
        if cls.prometheus is not None:
            cls.prometheus.stop()
        if cls.ranks is not None:
            cls.ranks.kill()
            cls.ranks.wait()
        if cls.daemon is not None:
            cls.daemon.stop()
        cls.tmp.cleanup()

    @classmethod
    def query(cls, expr):
        return cls.prometheus.query(expr)

    def test_every_dashboard_panel_parses_and_returns_data(self):
        with open(DASHBOARD) as f:
            dashboard = json.load(f)
        for title, expr in dashboard_queries(dashboard):
            with self.subTest(panel=title):
                reply = self.query(expr)
                self.assertEqual(reply["status"], "success", f"{expr}: {reply.get('error')}")
                self.assertTrue(reply["data"]["result"], f"no data for: {expr}")

    def test_every_alert_rule_parses(self):
        for name, expr in rule_queries():
            with self.subTest(alert=name):
                reply = self.query(expr)
                self.assertEqual(reply["status"], "success", f"{expr}: {reply.get('error')}")

    def test_a_broken_expression_is_caught(self):
        # The checks above can fail: Prometheus refuses what does not parse.
        reply = self.query("sum by (layer (taot_layer_imbalance_after_ratio)")
        self.assertEqual(reply["status"], "error")


class RulesTest(unittest.TestCase):
    def test_promtool_checks_and_unit_tests_the_rules(self):
        for args in (["check", "rules", RULES], ["test", "rules", os.path.join(os.path.dirname(RULES), "rules_test.yaml")]):
            proc = subprocess.run(["promtool", *args], capture_output=True, text=True)
            self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)


class ChartTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(os.path.join(CHART, "values.yaml")) as f:
            cls.values = yaml.safe_load(f)
        with open(os.path.join(CHART, "values.schema.json")) as f:
            cls.schema = json.load(f)

    def test_plain_yaml_passes_yamllint(self):
        paths = [os.path.join(SOURCE, "deploy"), os.path.join(CHART, "Chart.yaml"), os.path.join(CHART, "values.yaml"),
                 os.path.join(CHART, "ci")]
        proc = subprocess.run(["yamllint", "--strict", "-c", os.path.join(SOURCE, ".yamllint"), *paths],
                              capture_output=True, text=True)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)

    def valid_defaults(self):
        """values.yaml with what a user must add: job.id and a token."""
        return merged(self.values, {"job": {"id": "default"},
                                    "token": {"enabled": True, "create": True, "value": "t"}})

    def test_values_and_every_ci_values_file_pass_the_schema(self):
        jsonschema.validate(self.valid_defaults(), self.schema)
        ci = os.path.join(CHART, "ci")
        files = sorted(os.listdir(ci))
        self.assertGreaterEqual(len(files), 3)
        for name in files:
            with self.subTest(values=name), open(os.path.join(ci, name)) as f:
                jsonschema.validate(merged(self.values, yaml.safe_load(f)), self.schema)

    def test_bad_values_fail_the_schema(self):
        bad = [
            {"mode": "daemonset"},
            {"job": {"worldSize": 0}},
            {"job": {"id": "has space"}},
            {"token": {"enabled": True, "create": True, "value": ""}},
            {"tls": {"enabled": True, "secretName": ""}},
            {"metrics": {"podMonitor": {"enabled": True, "interval": "fast"}}},
            {"unknownKey": 1},
            {"drainSeconds": -1},
            # Listening beyond loopback with no way to authenticate callers, unless said so.
            {"token": {"enabled": False}},
            {"token": {"enabled": False}, "tls": {"enabled": True, "secretName": "s"}},
        ]
        for override in bad:
            with self.subTest(override=override):
                values = merged(self.valid_defaults(), override)
                with self.assertRaises(jsonschema.ValidationError):
                    jsonschema.validate(values, self.schema)
        for good in ({"token": {"enabled": False}, "allowUnauthenticated": True},
                     {"token": {"enabled": False}, "tls": {"enabled": True, "secretName": "s", "clientCA": True}}):
            with self.subTest(good=good):
                jsonschema.validate(merged(self.valid_defaults(), good), self.schema)

    def test_templates_read_only_values_that_exist(self):
        templates = os.path.join(CHART, "templates")
        for name in sorted(os.listdir(templates)):
            with open(os.path.join(templates, name)) as f:
                text = f.read()
            for path in set(re.findall(r"\.Values\.([A-Za-z0-9_.]+)", text)):
                node = self.values
                for key in path.split("."):
                    with self.subTest(template=name, value=path):
                        self.assertIsInstance(node, dict, f".Values.{path}")
                        self.assertIn(key, node, f"{name} reads .Values.{path}, which values.yaml lacks")
                    node = node.get(key) if isinstance(node, dict) else None

    def test_template_actions_are_balanced(self):
        # Without helm here, a structural check of the Go templates: every action closes, and
        # every if/with/range/define has its end (the mistakes `helm lint` reports first).
        templates = os.path.join(CHART, "templates")
        for name in sorted(os.listdir(templates)):
            with open(os.path.join(templates, name)) as f:
                text = f.read()
            with self.subTest(template=name):
                self.assertEqual(text.count("{{"), text.count("}}"), "unbalanced {{ }}")
                depth = 0
                for action in re.findall(r"\{\{-?\s*(/\*.*?\*/|[^}]*?)\s*-?\}\}", text, re.S):
                    if action.startswith("/*"):
                        continue
                    word = action.split()[0] if action.split() else ""
                    if word in ("if", "with", "range", "define", "block"):
                        depth += 1
                    elif word == "end":
                        depth -= 1
                        self.assertGreaterEqual(depth, 0, "an end without its block")
                self.assertEqual(depth, 0, "a block without its end")

    def test_the_chart_ships_the_dashboard(self):
        with open(os.path.join(CHART, "dashboards", "taot-overview.json")) as a, open(DASHBOARD) as b:
            self.assertEqual(a.read(), b.read())

    def test_the_dashboard_is_templated_and_every_panel_has_a_query(self):
        with open(DASHBOARD) as f:
            dashboard = json.load(f)
        variables = {v["name"]: v for v in dashboard["templating"]["list"]}
        self.assertEqual(variables["datasource"]["type"], "datasource")
        self.assertEqual(set(variables), {"datasource", "job", "pod"})
        self.assertEqual(len({p["id"] for p in dashboard["panels"]}), len(dashboard["panels"]))
        for panel in dashboard["panels"]:
            with self.subTest(panel=panel["title"]):
                self.assertEqual(panel["datasource"]["uid"], "${datasource}")
                self.assertTrue(panel["targets"])
                for t in panel["targets"]:
                    self.assertIn('job=~"$job"', t["expr"])
                    self.assertIn('pod=~"$pod"', t["expr"])


class ConfigFileTest(unittest.TestCase):
    """What the examples and the chart give the daemon starts it, under its strict reader."""

    def run_config(self, toml, *args):
        with tempfile.NamedTemporaryFile("w", suffix=".toml") as config:
            config.write(toml)
            config.flush()
            # Flags win over the file: free ports instead of the example's.
            daemon = start_daemon("--config", config.name, "--drain-s", "0", *args)
            self.assertEqual(daemon.stop(), 0, "".join(daemon.log))

    def test_the_daemon_accepts_the_examples_configuration(self):
        with open(os.path.join(SOURCE, "deploy", "k8s", "examples", "standalone-deployment.yaml")) as f:
            config_map = next(d for d in yaml.safe_load_all(f) if d["kind"] == "ConfigMap")
        self.run_config(config_map["data"]["config.toml"])

    def test_every_example_daemon_authenticates_its_callers(self):
        examples = os.path.join(SOURCE, "deploy", "k8s", "examples")
        for name in sorted(os.listdir(examples)):
            with open(os.path.join(examples, name)) as f:
                text = f.read()
            containers = re.findall(r"- name: taot-planner\n((?:\s+.*\n)+?)\s+(?:ports|volumeMounts):", text)
            with self.subTest(example=name):
                self.assertTrue(containers, "no taot-planner container found")
                for c in containers:
                    self.assertRegex(c, r"--token-file=|--tls-client-ca=|--allow-unauthenticated")

    def test_the_daemon_accepts_the_charts_configuration(self):
        with open(os.path.join(CHART, "values.yaml")) as f:
            values = yaml.safe_load(f)
        ci = os.path.join(CHART, "ci")
        cases = {"defaults": merged(values, {"job": {"id": "default"}, "token": {"enabled": True}})}
        for name in sorted(os.listdir(ci)):
            with open(os.path.join(ci, name)) as f:
                cases[name] = merged(values, yaml.safe_load(f))
        with tempfile.NamedTemporaryFile("w") as token:
            token.write("t\n")
            token.flush()
            for name, v in cases.items():
                with self.subTest(values=name):
                    toml = render_config_toml(v)
                    self.assertIn(f"drain-s = {v['drainSeconds']}", toml)
                    self.assertEqual("allow-unauthenticated = true" in toml, v["allowUnauthenticated"])
                    args = ["--token-file", token.name] if v["token"]["enabled"] else []
                    self.run_config(toml, *args)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
