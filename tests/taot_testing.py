"""What the Python tests share: taot-planner on free ports (and the end-to-end tests' daemon), TLS
certificates for it, its replica-transfer count, and a memory cap for commands given inputs that
once allocated gigabytes."""
import functools
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request


class Daemon:
    """taot-planner on free ports: `address` serves gRPC, `metrics` serves /metrics. Its log goes
    to a file (`log` reads it): a pipe nobody reads would fill up and stall the daemon."""

    def __init__(self, binary, *args):
        self._log = tempfile.NamedTemporaryFile("w+", suffix=".log")
        self.proc = subprocess.Popen([binary, "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", *args],
                                     stderr=self._log, text=True)
        self.address = self.metrics = None
        deadline = time.time() + 30
        while self.address is None or self.metrics is None:
            if self.proc.poll() is not None or time.time() > deadline:
                self.proc.kill()
                raise AssertionError("taot-planner did not start: " + "".join(self.log))
            for kind, value in re.findall(r"msg=(listening|metrics) address=(\S+)", "".join(self.log)):
                if kind == "metrics":
                    self.metrics = value
                else:
                    self.address = value
            time.sleep(0.05)

    @property
    def log(self):
        with open(self._log.name) as f:
            return f.readlines()

    def scrape(self):
        with urllib.request.urlopen(f"http://{self.metrics}/metrics", timeout=10) as response:
            return response.read().decode()

    def stop(self):
        return stop_process(self.proc)


def stop_process(proc):
    """SIGTERM, then the exit status (killed if it has not exited within 20 s)."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


def make_certs(directory):
    """ca.pem, and server.pem/.key and client.pem/.key it signs, valid for 127.0.0.1."""
    def openssl(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True)

    d = directory
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{d}/ca.key", "-out", f"{d}/ca.pem",
            "-days", "1", "-subj", "/CN=taot-test-ca")
    with open(os.path.join(d, "san.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    for name in ("server", "client"):
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{d}/{name}.key", "-out", f"{d}/{name}.csr",
                "-subj", f"/CN={name}")
        openssl("x509", "-req", "-in", f"{d}/{name}.csr", "-CA", f"{d}/ca.pem", "-CAkey", f"{d}/ca.key",
                "-CAcreateserial", "-out", f"{d}/{name}.pem", "-days", "1", "-extfile", f"{d}/san.ext")


@functools.lru_cache(maxsize=None)
def _is_sanitized(binary):
    with open(binary, "rb") as f:
        return b"__asan_init" in f.read()


def memory_capped(binary, limit_bytes=2 << 30):
    """A preexec_fn that caps the child's address space, so that an input making `binary` allocate
    gigabytes fails fast instead of pushing the machine into swap. None for a sanitizer build,
    whose shadow memory needs terabytes of address space."""
    if _is_sanitized(binary):
        return None
    return lambda: resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))


def e2e_daemon(build, tmp, secure, *, job_id, ranks, experts, slots, expert_bytes):
    """The PyTorch end-to-end tests' daemon for one job, and the taot.Client keywords that reach
    it: with `secure`, it requires mutual TLS and a job token (certificates made in `tmp`)."""
    extra, client = [], {}
    if secure:
        token = "e2e-s3cret"
        make_certs(tmp)
        with open(f"{tmp}/token", "w") as f:
            f.write(token)
        extra = ["--tls-cert", f"{tmp}/server.pem", "--tls-key", f"{tmp}/server.key",
                 "--tls-client-ca", f"{tmp}/ca.pem", "--token-file", f"{tmp}/token"]
        client = dict(token=token, tls_ca=f"{tmp}/ca.pem", tls_cert=f"{tmp}/client.pem", tls_key=f"{tmp}/client.key")
    daemon = Daemon(os.path.join(build, "server", "taot-planner"), "--job-id", job_id, "--world-size", str(ranks),
                    "--experts", str(experts), "--slots", str(slots), "--expert-bytes", str(expert_bytes),
                    "--round-timeout-ms", "1000", *extra)
    return daemon, client


def assert_replica_transfers(metrics, wait_s=20):
    """taot_replica_transfers_total, summed, must be positive: the daemon saw replication. Local
    mode's counts reach the daemon off the critical path, so the count may still be rising: wait
    for it a little."""
    deadline = time.time() + wait_s
    while True:
        with urllib.request.urlopen(f"http://{metrics}/metrics", timeout=10) as r:
            text = r.read().decode()
        transfers = sum(float(v) for v in re.findall(r"^taot_replica_transfers_total\{[^}]*\} (\S+)", text, re.M))
        if transfers > 0:
            print(f"daemon metrics: {transfers:.0f} replica transfers")
            return
        if time.time() > deadline:
            raise AssertionError("the daemon's metrics show no replica transfers")
        time.sleep(0.2)


HEALTH_PROTO = """
syntax = "proto3";
package grpc.health.v1;
message HealthCheckRequest { string service = 1; }
message HealthCheckResponse {
  enum ServingStatus { UNKNOWN = 0; SERVING = 1; NOT_SERVING = 2; SERVICE_UNKNOWN = 3; }
  ServingStatus status = 1;
}
service Health { rpc Check(HealthCheckRequest) returns (HealthCheckResponse); }
"""


def grpc_modules(root, out):
    """Python modules for taot.v1 and grpc.health.v1, generated by protoc now."""
    os.makedirs(os.path.join(out, "grpc_health_proto"), exist_ok=True)
    with open(os.path.join(out, "grpc_health_proto", "health.proto"), "w") as f:
        f.write(HEALTH_PROTO)
    plugin = "--plugin=protoc-gen-grpc_python=/usr/bin/grpc_python_plugin"
    for proto_path, proto in ((os.path.join(root, "proto"), "taot/v1/planner.proto"),
                              (out, "grpc_health_proto/health.proto")):
        subprocess.run(["protoc", f"--proto_path={proto_path}", f"--python_out={out}",
                        f"--grpc_python_out={out}", plugin, proto], check=True)
    sys.path.insert(0, out)
