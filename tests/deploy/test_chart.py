"""The chart rendered by real helm and every manifest validated against the Kubernetes API schema
(ctest deploy.chart; helm and kubernetes-models from scripts/deploy_tools.sh):
- `helm lint --strict` passes with every values file in helm/taot/ci;
- every object `helm template` renders from them, the examples in deploy/k8s/examples, and the
  training pod with the sidecar (a chart depending on taot, using its named templates) pass
  kubernetes-models' validation (tests/deploy/validate_k8s.mjs), and a bad object does not;
- the sidecar container helm renders is the one the container test runs (tests/deploy/
  test_image.py builds its podman flags from chart_render.py): the same args, ports, volume
  mounts, security context and resources; and chart_render's config.toml is helm's, byte for
  byte, for every values file.

Usage: test_chart.py SOURCE_DIR
"""
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from chart_render import CHART, SIDECAR, render_config_toml, render_container, values  # noqa: E402

SOURCE = sys.argv[1]
TOOLS = os.environ.get("TAOT_DEPLOY_TOOLS", "/usr/local/lib/taot-deploy-tools")
HELM = os.path.join(TOOLS, "bin", "helm")
VALIDATE = os.path.join(SOURCE, "tests", "deploy", "validate_k8s.mjs")
CI_VALUES = sorted(glob.glob(os.path.join(CHART, "ci", "*.yaml")))

# A training chart that depends on taot and puts its sidecar in the pod of rank 0, as
# docs/operations.md tells users to.
TRAINER_POD = textwrap.dedent("""\
    apiVersion: v1
    kind: Pod
    metadata:
      name: trainer-0
      labels:
        {{- include "taot.podLabels" .Subcharts.taot | nindent 4 }}
    spec:
      initContainers:
        {{- include "taot.nativeSidecar" .Subcharts.taot | nindent 4 }}
      containers:
        - name: trainer
          image: trainer:latest
      volumes:
        {{- include "taot.volumes" .Subcharts.taot | nindent 4 }}
    """)


def helm(*args):
    proc = subprocess.run([HELM, *args], capture_output=True, text=True)
    if proc.returncode != 0:
        raise AssertionError(f"helm {' '.join(args)}: {proc.stderr.strip()[-1500:]}")
    return proc.stdout


def read(path):
    with open(path) as f:
        return f.read()


def documents(text):
    return [d for d in yaml.safe_load_all(text) if d]


class ChartTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        for tool in (HELM, VALIDATE):
            if not os.path.exists(tool):
                raise AssertionError(f"{tool} is missing: run ./scripts/setup.sh")
        cls.tmp = tempfile.TemporaryDirectory()

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def validate(self, *files, ok=True):
        proc = subprocess.run(["node", VALIDATE, *files], capture_output=True, text=True)
        self.assertEqual(proc.returncode == 0, ok, proc.stdout + proc.stderr)
        return proc.stdout

    def render(self, values_file):
        out = os.path.join(self.tmp.name, "rendered-" + os.path.basename(values_file))
        with open(out, "w") as f:
            f.write(helm("template", "t", CHART, "-f", values_file))
        return out

    def trainer_pod(self, overrides):
        """The training pod rendered by helm from a chart depending on taot, with `overrides`."""
        chart = os.path.join(self.tmp.name, "trainer")
        shutil.rmtree(chart, ignore_errors=True)
        os.makedirs(os.path.join(chart, "templates"))
        with open(os.path.join(chart, "Chart.yaml"), "w") as f:
            yaml.safe_dump({"apiVersion": "v2", "name": "trainer", "version": "0.0.1",
                            "dependencies": [{"name": "taot", "version": ">=0.0.0", "repository": f"file://{CHART}"}]}, f)
        with open(os.path.join(chart, "templates", "pod.yaml"), "w") as f:
            f.write(TRAINER_POD)
        with open(os.path.join(chart, "values.yaml"), "w") as f:
            yaml.safe_dump({"taot": overrides}, f)
        helm("dependency", "build", chart)
        out = os.path.join(self.tmp.name, "trainer-pod.yaml")
        with open(out, "w") as f:
            f.write(helm("template", "t", chart))
        return out

    def test_helm_lint_passes_with_every_ci_values_file(self):
        self.assertGreaterEqual(len(CI_VALUES), 3)
        for path in CI_VALUES:
            with self.subTest(values=os.path.basename(path)):
                self.assertIn("0 chart(s) failed", helm("lint", CHART, "-f", path, "--strict"))

    def test_every_rendered_object_and_example_is_valid_kubernetes(self):
        files = [self.render(p) for p in CI_VALUES] + sorted(glob.glob(os.path.join(SOURCE, "deploy", "k8s", "examples", "*.yaml")))
        report = self.validate(*files)
        self.assertGreaterEqual(report.count("valid "), 15, report)
        for kind in ("Deployment", "Service", "ConfigMap", "Secret", "PodMonitor", "ServiceMonitor"):
            lines = [line for line in report.splitlines() if f" {kind}/" in line]
            self.assertTrue(lines, f"no {kind} rendered")
            self.assertTrue(all("not modelled" not in line for line in lines), f"{kind} validated whole: {lines}")

    def test_a_bad_object_is_refused(self):
        bad = os.path.join(self.tmp.name, "bad.yaml")
        with open(bad, "w") as f:
            f.write("apiVersion: v1\nkind: Pod\nmetadata: {name: bad}\n"
                    "spec: {containers: [{name: a, image: i, ports: [{containerPort: '50051'}]}]}\n")
        self.assertIn("containerPort must be integer", self.validate(bad, ok=False))

    def test_the_container_test_runs_the_charts_sidecar(self):
        pod_file = self.trainer_pod(SIDECAR)
        self.validate(pod_file)
        pod = documents(read(pod_file))[-1]
        self.assertEqual(pod["kind"], "Pod")
        sidecar = pod["spec"]["initContainers"][0]
        self.assertEqual(sidecar["restartPolicy"], "Always")
        v = values(SIDECAR)
        mine = render_container(v)
        for key in ("args", "ports", "volumeMounts"):
            self.assertEqual(sidecar[key], mine[key], key)
        self.assertEqual(sidecar["securityContext"], v["securityContext"])
        self.assertEqual(sidecar["resources"], v["resources"])
        volumes = {vol["name"] for vol in pod["spec"]["volumes"]}
        self.assertEqual(volumes, {m["name"] for m in mine["volumeMounts"]})

    def test_the_config_file_the_tests_render_is_helms(self):
        for path in CI_VALUES + [None]:
            with self.subTest(values=os.path.basename(path) if path else "the container test's"):
                rendered = self.render(path) if path else self.trainer_configmap()
                configmaps = [d for d in documents(read(rendered))
                              if d["kind"] == "ConfigMap" and "config.toml" in d.get("data", {})]
                self.assertEqual(len(configmaps), 1)
                v = values(yaml.safe_load(read(path))) if path else values(SIDECAR)
                self.assertEqual(configmaps[0]["data"]["config.toml"], render_config_toml(v))

    def trainer_configmap(self):
        out = os.path.join(self.tmp.name, "sidecar-values.rendered.yaml")
        overrides = os.path.join(self.tmp.name, "sidecar-values.yaml")
        with open(overrides, "w") as f:
            yaml.safe_dump(SIDECAR, f)
        with open(out, "w") as f:
            f.write(helm("template", "t", CHART, "-f", overrides))
        return out


if __name__ == "__main__":
    sys.argv[1:] = []
    unittest.main(verbosity=2)
