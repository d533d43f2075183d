"""The runtime image run as the chart's sidecar runs it (ctest label `image`, CPU, rootful podman).

The container gets what the chart gives it, read from the chart itself (tests/deploy/
chart_render.py renders values.yaml through the templates): the ConfigMap's config.toml, the
token Secret and the TLS Secret mounted at the container template's paths, its args, its ports
(published on loopback), and values.yaml's security context (uid/gid, read-only root file system,
no capabilities, no privilege escalation) and resource limits. From outside the container:
1. the gRPC health check answers SERVING (over TLS);
2. the PyTorch end-to-end test (tests/e2e/taot_torch_moe.py, 4 processes, remote mode, mutual
   TLS and the token) trains against it and gets the daemon's plans, while
3. a real Prometheus scrapes its metrics, and every dashboard query returns data;
4. a restart of the container on the same ports is picked up by that trainer, still running:
   it plans locally while the sidecar is away and gets the daemon's plans again after;
5. SIGTERM: health turns NOT_SERVING, and the container exits 0 within the grace period.

Without a usable podman (not installed, not root, or podman cannot run here) the test prints why
and exits 77, which ctest counts as skipped. It tests the tree it runs in: scripts/image.sh
builds taot-planner:local first (minutes the first time; after that podman's layer cache and the
host's ccache make it about 20 s). TAOT_IMAGE=NAME tests an image already built instead.

Usage: test_image.py SOURCE_DIR BUILD_DIR
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

import jsonschema
import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import taot_testing  # noqa: E402 (tests/taot_testing.py)
from chart_render import CHART, SIDECAR, render_config_toml, render_container, values  # noqa: E402
from prometheus_testing import Prometheus, dashboard_queries, free_port  # noqa: E402

SOURCE, BUILD = sys.argv[1], sys.argv[2]
IMAGE = os.environ.get("TAOT_IMAGE", "taot-planner:local")
BUILD_IMAGE = "TAOT_IMAGE" not in os.environ
ENV = dict(os.environ, CONTAINERS_CONF=os.path.join(SOURCE, "deploy", "docker", "containers.conf"))
TOKEN = SIDECAR["token"]["value"]
SKIP = 77


def podman(*args, timeout=120, check=True):
    proc = subprocess.run(["podman", *args], env=ENV, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"podman {' '.join(args)}: {proc.stderr.strip()[-800:]}")
    return proc


def why_podman_cannot_run():
    """None when podman can run containers here, else the reason."""
    if shutil.which("podman") is None:
        return "podman is not installed (./scripts/setup.sh installs it)"
    if os.getuid() != 0:
        return "the test runs rootful podman and needs root"
    info = podman("info", check=False)
    if info.returncode != 0:
        return f"podman cannot run on this machine: {info.stderr.strip()[-300:]}"
    return None


def chart_values():
    """The chart's values for this test's job: a sidecar with a token and mutual TLS."""
    out = values(SIDECAR)
    with open(os.path.join(CHART, "values.schema.json")) as f:
        jsonschema.validate(out, yaml.safe_load(f))
    return out


class Sidecar:
    """The image started as the chart's container, its volumes made as the chart's objects hold them."""

    def __init__(self, v, tmp):
        self.v, self.tmp = v, tmp
        self.name = f"taot-image-test-{os.getpid()}"
        self.grpc, self.metrics = free_port(), free_port()
        container = render_container(v)
        sources = self.volumes(tmp)
        sc, limits = v["securityContext"], v["resources"]["limits"]
        self.args = ["--name", self.name, "--user", f"{sc['runAsUser']}:{sc['runAsGroup']}"]
        if sc["readOnlyRootFilesystem"]:
            self.args.append("--read-only")
        self.args += [f"--cap-drop={c}" for c in sc["capabilities"]["drop"]]
        if not sc["allowPrivilegeEscalation"]:
            self.args += ["--security-opt", "no-new-privileges"]
        self.args += ["--cpus", str(limits["cpu"]), "--memory", limits["memory"].replace("Gi", "g").replace("Mi", "m")]
        for mount in container["volumeMounts"]:
            self.args += ["-v", f"{sources[mount['name']]}:{mount['mountPath']}:{'ro' if mount['readOnly'] else 'rw'}"]
        ports = {p["name"]: p["containerPort"] for p in container["ports"]}
        self.args += ["-p", f"127.0.0.1:{self.grpc}:{ports['taot-grpc']}",
                      "-p", f"127.0.0.1:{self.metrics}:{ports['taot-metrics']}"]
        self.container_args = container["args"]
        self.start()

    def volumes(self, tmp):
        """The ConfigMap, token Secret and TLS Secret as folders, files readable by the uid."""
        config, token, tls = (os.path.join(tmp, n) for n in ("config", "token", "tls"))
        for d in (config, token, tls, os.path.join(config, "token"), os.path.join(config, "tls")):
            os.makedirs(d, exist_ok=True)  # the nested mount points inside the ConfigMap's folder too
        with open(os.path.join(config, "config.toml"), "w") as f:
            f.write(render_config_toml(self.v))
        with open(os.path.join(token, self.v["token"]["key"]), "w") as f:
            f.write(TOKEN)
        taot_testing.make_certs(tmp)
        for src, dst in (("server.pem", "tls.crt"), ("server.key", "tls.key"), ("ca.pem", "ca.crt")):
            shutil.copy(os.path.join(tmp, src), os.path.join(tls, dst))
        for root, dirs, files in os.walk(tmp):
            for d in dirs:
                os.chmod(os.path.join(root, d), 0o755)
            for f in files:
                os.chmod(os.path.join(root, f), 0o644)  # a Secret volume's default mode
        return {"taot-config": config, "taot-token": token, "taot-tls": tls}

    def start(self):
        podman("run", "-d", *self.args, IMAGE, *self.container_args)

    def logs(self):
        return podman("logs", self.name, check=False).stderr[-3000:]

    def remove(self):
        podman("rm", "-f", self.name, check=False)


class ImageTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        if BUILD_IMAGE:
            print(f"test_image: building {IMAGE} from this tree with scripts/image.sh", flush=True)
            subprocess.run([os.path.join(SOURCE, "scripts", "image.sh"), IMAGE], check=True, env=ENV)
        taot_testing.grpc_modules(SOURCE, cls.tmp.name)
        import grpc
        from grpc_health_proto import health_pb2, health_pb2_grpc
        cls.grpc, cls.health_pb, cls.health_grpc = grpc, health_pb2, health_pb2_grpc
        cls.sidecar = Sidecar(chart_values(), cls.tmp.name)
        cls.prometheus = Prometheus(f"127.0.0.1:{cls.sidecar.metrics}", cls.tmp.name)

    @classmethod
    def tearDownClass(cls):
        cls.prometheus.stop()
        cls.sidecar.remove()
        cls.tmp.cleanup()

    def health(self):
        """The health service's answer over TLS, or None if the port does not answer."""
        def read(name):
            with open(os.path.join(self.tmp.name, name), "rb") as f:
                return f.read()

        credentials = self.grpc.ssl_channel_credentials(root_certificates=read("ca.pem"), private_key=read("client.key"),
                                                        certificate_chain=read("client.pem"))
        with self.grpc.secure_channel(f"127.0.0.1:{self.sidecar.grpc}", credentials) as channel:
            stub = self.health_grpc.HealthStub(channel)
            try:
                reply = stub.Check(self.health_pb.HealthCheckRequest(), timeout=2)
            except self.grpc.RpcError:
                return None
            return self.health_pb.HealthCheckResponse.ServingStatus.Name(reply.status)

    def wait_health(self, want, timeout_s):
        deadline = time.time() + timeout_s
        while (status := self.health()) != want:
            if time.time() > deadline:
                self.fail(f"health {status}, not {want}, after {timeout_s} s; log:\n{self.sidecar.logs()}")
            time.sleep(0.2)

    def trainer(self, *args):
        return subprocess.Popen([sys.executable, os.path.join(SOURCE, "tests", "e2e", "taot_torch_moe.py"), BUILD,
                                 "remote", "--daemon", f"127.0.0.1:{self.sidecar.grpc}", "--tls-dir", self.tmp.name,
                                 "--token", TOKEN, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def sources(self, trainer, timeout_s):
        out, _ = trainer.communicate(timeout=timeout_s)
        self.assertEqual(trainer.returncode, 0, out[-3000:])
        return yaml.safe_load(re.search(r"^sources: (.*)$", out, re.M)[1])

    def test_the_sidecar_serves_trains_is_scraped_restarts_and_stops(self):
        self.wait_health("SERVING", 60)

        # A trainer with mutual TLS and the token, planning through the sidecar while Prometheus
        # scrapes it: once rates exist, every dashboard query returns data.
        trainer = self.trainer("--steps", "24", "--pause-s", "0.5")
        self.prometheus.wait_for("rate(taot_plans_total[30s]) > 0", 90, alive=[("the trainer", trainer)])
        for title, expr in dashboard_queries():
            with self.subTest(panel=title):
                reply = self.prometheus.query(expr)
                self.assertEqual(reply["status"], "success", f"{expr}: {reply.get('error')}")
                self.assertTrue(reply["data"]["result"], f"no data for: {expr}")

        # A restart on the same ports under the running trainer: it falls back to local plans
        # while the sidecar is away, and gets the daemon's again after.
        podman("restart", "--time", str(self.sidecar.v["graceSeconds"]), self.sidecar.name, timeout=60)
        sources = self.sources(trainer, 300)
        print(f"plans around the restart: {sources}", flush=True)
        self.assertEqual(sources[0], "daemon", sources)
        self.assertIn("local", sources, "the restart went unnoticed: no layer fell back to local planning")
        self.assertIn("daemon", sources[sources.index("local"):], f"no daemon plan after the restart: {sources}")

        # SIGTERM: NOT_SERVING while it drains, then exit 0 within the grace period.
        self.wait_health("SERVING", 60)
        start = time.time()
        podman("kill", "--signal", "TERM", self.sidecar.name)
        self.wait_health("NOT_SERVING", self.sidecar.v["drainSeconds"] + 2)
        code = podman("wait", self.sidecar.name, timeout=60).stdout.strip()
        elapsed = time.time() - start
        self.assertEqual(code, "0", self.sidecar.logs())
        self.assertLessEqual(elapsed, self.sidecar.v["graceSeconds"], self.sidecar.logs())


if __name__ == "__main__":
    why = why_podman_cannot_run()
    if why is not None:
        print(f"test_image: skipped: {why}")
        sys.exit(SKIP)
    sys.argv[1:] = []
    unittest.main(verbosity=2)
