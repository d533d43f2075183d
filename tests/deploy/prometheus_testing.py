"""A real Prometheus (Debian's) scraping a daemon's /metrics, and the dashboard's queries, for
the deploy tests (tests/deploy/test_observability.py, tests/deploy/test_image.py)."""
import json
import os
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request

import yaml

DASHBOARD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "deploy", "grafana",
                         "taot-overview.json")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def dashboard_queries(dashboard=None):
    """(panel title, PromQL) for every target, with Grafana's variables as a test would set them."""
    if dashboard is None:
        with open(DASHBOARD) as f:
            dashboard = json.load(f)
    out = []
    for panel in dashboard["panels"]:
        for target in panel["targets"]:
            expr = target["expr"]
            expr = expr.replace("$__rate_interval", "30s").replace("$job", ".*").replace("$pod", ".*")
            out.append((panel["title"], expr))
    return out


class Prometheus:
    """Prometheus scraping `target` (host:port) every second, its data in `directory`."""

    def __init__(self, target, directory):
        config = os.path.join(directory, "prometheus.yml")
        with open(config, "w") as f:
            yaml.safe_dump({"global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                            "scrape_configs": [{"job_name": "taot-planner", "static_configs": [{"targets": [target]}]}]},
                           f)
        self.web = f"127.0.0.1:{free_port()}"
        self.proc = subprocess.Popen(
            ["prometheus", f"--config.file={config}", f"--storage.tsdb.path={directory}/data",
             f"--web.listen-address={self.web}", "--log.level=warn"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def query(self, expr):
        url = f"http://{self.web}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
        try:
            with urllib.request.urlopen(url, timeout=10) as r:
                return json.load(r)
        except urllib.error.HTTPError as e:  # a bad expression: 400 with Prometheus's error
            return json.load(e)

    def wait_for(self, expr, timeout_s, alive=()):
        """Until `expr` returns data; AssertionError at the deadline, or when Prometheus or one of
        the (name, process) pairs in `alive` exits first."""
        deadline = time.time() + timeout_s
        while True:
            try:
                if self.query(expr)["data"]["result"]:
                    return
            except (OSError, KeyError, ValueError):  # not up yet: refused, or an answer that is no JSON
                pass
            for name, proc in (("prometheus", self.proc), *alive):
                if proc.poll() is not None:
                    raise AssertionError(f"{name} exited early with status {proc.returncode}")
            if time.time() > deadline:
                raise AssertionError(f"Prometheus never returned data for {expr}")
            time.sleep(0.5)

    def stop(self):
        self.proc.kill()
        self.proc.wait()
