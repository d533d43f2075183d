"""examples/moe_trainer.py as a user runs it: 4 processes on CPU, AdamW, two MoE blocks,
gradient accumulation. With taot's slots (K = 2) it must replicate, learn (the loss falls), and
print the same losses as with no replication (K = 0, the plain expert-parallel path) to within
rtol 1e-4: replication changes only where an expert's tokens are computed, and AdamW's steps
compound float32 rounding over the run (docs/integration.md, "Numbers over many steps").

Usage: example_trainer_test.py BUILD_DIR
"""
import os
import re
import subprocess
import sys

STEPS = 8


def run(build, slots):
    example = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "moe_trainer.py")
    env = dict(os.environ, PYTHONPATH=os.path.join(build, "client_lib", "python"))
    out = subprocess.run([sys.executable, example, "--ranks", "4", "--steps", str(STEPS), "--slots", str(slots)],
                         env=env, capture_output=True, text=True, timeout=240)
    if out.returncode != 0:
        raise AssertionError(f"moe_trainer.py --slots {slots} failed:\n{out.stdout}\n{out.stderr}")
    rows = re.findall(r"^step (\d+) loss (\S+) replicas (\d+)$", out.stdout, re.M)
    if len(rows) != STEPS:
        raise AssertionError(f"moe_trainer.py --slots {slots}: expected {STEPS} step lines, got:\n{out.stdout}")
    return [float(loss) for _, loss, _ in rows], [int(r) for _, _, r in rows]


def main():
    build = sys.argv[1]
    balanced, replicas = run(build, 2)
    plain, none = run(build, 0)
    print("step  K=2 loss   K=0 loss   replicas")
    for step, (a, b, r) in enumerate(zip(balanced, plain, replicas)):
        print(f"{step:4d}  {a:.6f}  {b:.6f}  {r}")
    if sum(replicas) == 0 or sum(none) != 0:
        raise AssertionError(f"replicas with K = 2: {replicas}, with K = 0: {none}")
    if not balanced[-1] < 0.8 * balanced[0]:
        raise AssertionError(f"the loss did not fall: {balanced}")
    for step, (a, b) in enumerate(zip(balanced, plain)):
        if abs(a - b) > 1e-4 * abs(b):
            raise AssertionError(f"step {step}: loss {a} with taot's replicas, {b} without")
    print("ok")


if __name__ == "__main__":
    main()
