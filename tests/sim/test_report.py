#!/usr/bin/python3
"""Checks sim/report/plot.py and sim/report/report.py on synthetic taot-sim output.

    /usr/bin/python3 tests/sim/test_report.py [REPO_ROOT]

Writes CSV + JSON for all seven experiments into a temporary folder laid out like the real one
(docs/results/*.csv, docs/results.md), draws every plot, writes the page, and checks the PNGs,
the page's sections, commands, tables and summary, including a planted case where another
planner beats taot. Needs Debian's python3-matplotlib; exits non-zero on a failure.
"""
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
if len(sys.argv) > 1 and not sys.argv[1].startswith("-"):
    ROOT = os.path.abspath(sys.argv.pop(1))
PLOT = os.path.join(ROOT, "sim", "report", "plot.py")
REPORT = os.path.join(ROOT, "sim", "report", "report.py")

EXPERIMENTS = ("table1", "imbalance", "scale", "slots", "overhead", "modes", "frontier")
PLANNERS = ("taot", "taot-auto", "taot-paper", "echo", "llep", "eplb", "lplb", "none")
# Per-planner slowdown over taot (fraction of the gap none leaves), so taot is fastest by default.
GAP = {"taot": 0.0, "taot-auto": 0.02, "taot-paper": 0.05, "echo": 0.35, "llep": 0.25,
       "eplb": 0.45, "lplb": 0.30, "none": 1.0}
STEP_COLS = ["step_time_ms", "speedup", "imbalance_after_pct", "transfers_intra",
             "transfers_inter", "stall_ms", "plan_ms"]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def step_rows(xcol, xs, base_ms, imb_of, plant=None, tie=None):
    """Rows for a speedup experiment; plant/tie = (x, planner, step factor over taot)."""
    rows = []
    for x in xs:
        imb = imb_of(x)
        taot = base_ms * (1 + 0.02 * imb / 70)
        none = base_ms * (1 + imb / 100)
        steps = {p: taot + (none - taot) * GAP[p] for p in PLANNERS}
        for case in (plant, tie):
            if case and case[0] == x:
                steps[case[1]] = taot * case[2]
        for p in PLANNERS:
            s = steps[p]
            rows.append({xcol: x, "planner": p, "step_time_ms": f"{s:.4f}",
                         "speedup": f"{none / s:.5f}",
                         "imbalance_after_pct": f"{imb * GAP[p] + 1.5:.3f}" if p != "none"
                         else f"{imb:.3f}",
                         "transfers_intra": 0 if p == "none" else 40 + len(p) * 3,
                         "transfers_inter": 0 if p == "none" else 4 + len(p),
                         "stall_ms": f"{0 if p == 'none' else 0.04 * len(p):.4f}",
                         "plan_ms": f"{0 if p == 'none' else 0.0031 * len(p):.5f}"})
    return rows


def synthetic():
    """{experiment: (header, rows, meta)}, with the planted cases described in PLANTED."""
    data = {}
    t1 = []
    paper = {"taot-paper": (-40.0, 30.0), "echo": (-30.0, 50.0), "llep": (-35.0, 45.0),
             "lplb": (-20.0, 60.0)}
    for ep in (16, 32):
        for init in (10, 30, 50, 70):
            base = 30.0 + ep / 4
            for p in PLANNERS:
                after = init * GAP[p] * 0.5 + 1.0 if p != "none" else init
                step = base * (1 + 0.02 * init / 70 + (init / 100) * GAP[p])
                if (ep, init, p) == (32, 50, "llep"):
                    step = base * (1 + 0.02 * init / 70) * 0.99  # planted: llep beats taot
                pr = paper.get(p)
                t1.append({"ep": ep, "initial_pct": init, "planner": p,
                           "imbalance_before_pct": init, "imbalance_after_pct": f"{after:.2f}",
                           "improvement_pp": f"{after - init:.2f}",
                           "weighted_cost": 0 if p == "none" else 10 + ep * (1 + GAP[p]) + init / 5,
                           "transfers_intra": 0 if p == "none" else 8 + init // 10,
                           "transfers_inter": 0 if p == "none" else 2 + init // 20,
                           "step_time_ms": f"{step:.4f}",
                           "speedup": f"{base * (1 + init / 100) / step:.5f}",
                           "paper_improvement_pp": "" if pr is None else pr[0] * init / 70,
                           "paper_weighted_cost": "" if pr is None else pr[1] + ep / 2})
    data["table1"] = (["ep", "initial_pct", "planner", "imbalance_before_pct",
                       "imbalance_after_pct", "improvement_pp", "weighted_cost",
                       "transfers_intra", "transfers_inter", "step_time_ms", "speedup",
                       "paper_improvement_pp", "paper_weighted_cost"], t1)
    data["imbalance"] = (["initial_pct", "planner"] + STEP_COLS,
                         step_rows("initial_pct", (10, 30, 50, 70, 90), 40.0, lambda x: x))
    # Planted: at EP128 eplb is 0.4% faster than taot; at EP64 echo is within the tolerance.
    data["scale"] = (["ep", "planner"] + STEP_COLS,
                     step_rows("ep", (4, 8, 16, 32, 64, 128), 41.35, lambda x: 40 + x / 8,
                               plant=(128, "eplb", 1 / 1.004), tie=(64, "echo", 1 / 1.0003)))
    data["slots"] = (["slots", "planner"] + STEP_COLS,
                     step_rows("slots", (1, 2, 4, 8, 16), 38.0, lambda x: 60 / x ** 0.5))
    ov = []
    for ep in (8, 16, 32, 64, 128):
        fwd = 20.0 + ep / 10
        for i, p in enumerate(PLANNERS):
            us = 0.0 if p == "none" else (3.0 + i * 4.0) * (ep / 8) ** 0.7
            ov.append({"ep": ep, "planner": p, "plan_time_us": f"{us:.3f}",
                       "forward_time_ms": f"{fwd:.3f}",
                       "overhead_pct": f"{us * 48 / (fwd * 1000) * 100:.5f}"})
    data["overhead"] = (["ep", "planner", "plan_time_us", "forward_time_ms", "overhead_pct"], ov)
    md = []
    for ep in (16, 32, 64):
        for mode, f in (("none", 1.30), ("remote", 1.08), ("predictive", 1.03),
                        ("local", 1.05 if ep < 64 else 1.01)):
            s = 30.0 * f + ep / 16
            md.append({"ep": ep, "mode": mode, "step_time_ms": f"{s:.4f}",
                       "speedup": f"{(30.0 * 1.3 + ep / 16) / s:.5f}",
                       "imbalance_after_pct": 45.0 if mode == "none" else 2.5,
                       "transfers_intra": 0 if mode == "none" else 50,
                       "transfers_inter": 0 if mode == "none" else 6,
                       "stall_ms": 0 if mode != "remote" else 1.2,
                       "plan_ms": 0 if mode == "none" else 0.02})
    data["modes"] = (["ep", "mode"] + STEP_COLS, md)
    fr = []
    for si, sc in enumerate(("qwen3 EP32 h800 70%", "qwen3 EP64 h800 50%",
                             "deepseek EP128 h20 burst")):
        best_t = (2, 5, 10)[si]
        for t in (0, 1, 2, 5, 10, 20):
            s = 50.0 * (1 + 0.0005 * (t - best_t) ** 2)
            fr.append({"scenario": sc, "target": t, "step_time_ms": f"{s:.4f}",
                       "speedup": f"{65 / s:.5f}", "imbalance_after_pct": t + 0.3,
                       "transfers_intra": 100 - 4 * t, "transfers_inter": 20 - t,
                       "stall_ms": 0.3, "chosen_target_pct": "", "plan_ms": 1.0})
        auto_t = best_t + 0.7
        s = 50.0 * (1 + 0.0005 * (auto_t - best_t) ** 2 + 0.001)
        fr.append({"scenario": sc, "target": "auto", "step_time_ms": f"{s:.4f}",
                   "speedup": f"{65 / s:.5f}", "imbalance_after_pct": auto_t + 0.3,
                   "transfers_intra": 80, "transfers_inter": 12, "stall_ms": 0.3,
                   "chosen_target_pct": f"{auto_t:.2f}", "plan_ms": 5.0})
        # auto-step beats every fixed target here.
        s = 50.0 * (1 - 0.001)
        fr.append({"scenario": sc, "target": "auto-step", "step_time_ms": f"{s:.4f}",
                   "speedup": f"{65 / s:.5f}", "imbalance_after_pct": best_t + 0.3,
                   "transfers_intra": 80, "transfers_inter": 12, "stall_ms": 0.3,
                   "chosen_target_pct": f"{best_t:.2f}", "plan_ms": 1.5})
    data["frontier"] = (["scenario", "target", "step_time_ms", "speedup", "imbalance_after_pct",
                         "transfers_intra", "transfers_inter", "stall_ms", "chosen_target_pct",
                         "plan_ms"], fr)
    out = {}
    for name, (header, rows) in data.items():
        meta = {"experiment": name, "title": f"Synthetic {name} title",
                "description": f"Synthetic description of the {name} experiment: what it varies "
                               f"and why.",
                "command": f"taot-sim run {name} --out docs/results --seed 7",
                "report_command": "taot-sim report --out docs",
                "scenario": {"model": "qwen3-30b-a3b", "cluster": "h800",
                             "workload": f"synthetic-{name}"},
                "quick": False}
        out[name] = (header, rows, meta)
    return out


def write_data(folder, data, only=None):
    os.makedirs(folder, exist_ok=True)
    for name, (header, rows, meta) in data.items():
        if only is not None and name not in only:
            continue
        with open(os.path.join(folder, name + ".csv"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=header, lineterminator="\n")
            w.writeheader()
            w.writerows(rows)
        with open(os.path.join(folder, name + ".json"), "w") as f:
            json.dump(meta, f, indent=1)


def run(*args):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=300)


def read(path):
    with open(path) as f:
        return f.read()


def sections(text):
    """{heading line: body} for every '## ' section."""
    parts = re.split(r"^(## .*)$", text, flags=re.M)
    return {parts[i].strip(): parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def tables(body):
    """Every markdown table in body, as lists of rows (each a list of cells), header first."""
    out, cur = [], []
    for line in body.splitlines() + [""]:
        if line.startswith("|"):
            cur.append([c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]])
        elif cur:
            out.append(cur)
            cur = []
    return out


class ReportTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="taot-report-test-")
        cls.docs = os.path.join(cls.tmp.name, "docs")
        cls.data_dir = os.path.join(cls.docs, "results")
        cls.data = synthetic()
        write_data(cls.data_dir, cls.data)
        cls.plot_results = {}
        for name in EXPERIMENTS:
            png = os.path.join(cls.data_dir, name + ".png")
            cls.plot_results[name] = run(PLOT, name, os.path.join(cls.data_dir, name + ".csv"),
                                         png)
        cls.doc = os.path.join(cls.docs, "results.md")
        cls.report_result = run(REPORT, "--data", cls.data_dir, "--doc", cls.doc)
        cls.text = read(cls.doc) if os.path.exists(cls.doc) else ""

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_plots(self):
        for name in EXPERIMENTS:
            with self.subTest(experiment=name):
                r = self.plot_results[name]
                self.assertEqual(r.returncode, 0, f"plot.py {name} failed:\n{r.stderr}")
                png = os.path.join(self.data_dir, name + ".png")
                self.assertTrue(os.path.exists(png), png)
                with open(png, "rb") as f:
                    blob = f.read()
                self.assertEqual(blob[:8], PNG_MAGIC, f"{png} is not a PNG")
                self.assertGreater(len(blob), 5 * 1024, f"{png} is suspiciously small")
                self.assertNotIn(b"Software", blob[:4096], f"{png} carries Software metadata")

    def test_plot_deterministic(self):
        for name in ("scale", "table1"):
            again = os.path.join(self.tmp.name, f"again-{name}.png")
            r = run(PLOT, name, os.path.join(self.data_dir, name + ".csv"), again)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(again, "rb") as a, open(os.path.join(self.data_dir, name + ".png"),
                                                 "rb") as b:
                self.assertEqual(a.read(), b.read(), f"{name}: a rerun drew different bytes")

    def test_report_ran(self):
        self.assertEqual(self.report_result.returncode, 0,
                         f"report.py failed:\n{self.report_result.stderr}")
        self.assertTrue(self.text.startswith("# taot-sim results\n"))
        self.assertIn("`taot-sim report --out docs`", self.text)
        self.assertIn("edits to this file are lost", self.text)
        self.assertIn("](model.md)", self.text)
        self.assertNotIn("quick run", self.text)
        self.assertNotIn(self.tmp.name, self.text, "the page holds an absolute temporary path")

    def test_sections(self):
        secs = sections(self.text)
        self.assertIn("## Summary", secs)
        heads = [h for h in secs if h != "## Summary"]
        self.assertEqual(heads, [f"## {n}: Synthetic {n} title" for n in EXPERIMENTS],
                         "experiment sections missing or out of order")
        for name in EXPERIMENTS:
            with self.subTest(experiment=name):
                body = secs[f"## {name}: Synthetic {name} title"]
                _, rows, meta = self.data[name]
                self.assertIn(meta["description"], body)
                self.assertIn(f"```sh\n{meta['command']}\n```", body)
                self.assertIn(f"- workload: synthetic-{name}", body)
                self.assertIn(f"](results/{name}.png)", body)
                self.assertIn("**taot vs the others:**", body)
                ts = tables(body)
                self.assertTrue(ts, f"{name}: no table")
                # header + separator + one line per CSV row
                self.assertEqual(len(ts[0]) - 2, len(rows), f"{name}: table rows != CSV rows")
                self.assertEqual(ts[0][0], self.data[name][0])

    def test_number_format(self):
        body = sections(self.text)["## scale: Synthetic scale title"]
        row = tables(body)[0][2]  # ep 4, taot
        header = tables(body)[0][0]
        cell = dict(zip(header, row))
        self.assertEqual(cell["ep"], "4")
        self.assertRegex(cell["step_time_ms"], r"^\d+\.\d\d$")
        self.assertRegex(cell["speedup"], r"^\d+\.\d\d\d$")
        self.assertRegex(cell["imbalance_after_pct"], r"^\d+\.\d$")

    def summary_row(self, name):
        summary = sections(self.text)["## Summary"]
        table = tables(summary)[0]
        self.assertEqual(table[0], ["experiment", "comparisons", "taot fastest or tied",
                                    "where it is not"])
        rows = {r[0]: r for r in table[2:]}
        self.assertIn(name, rows)
        return rows[name]

    def test_summary_planted(self):
        row = self.summary_row("scale")
        self.assertIn("EP128: eplb", row[3])
        self.assertRegex(row[3], r"EP128: eplb \d+\.\d\d ms < taot \d+\.\d\d ms \(0\.4%\)")
        # The EP64 echo case is within the 0.05% tolerance: a tie, not an exception.
        self.assertNotIn("EP64", row[3])
        self.assertEqual(row[2], "41 of 42")
        t1 = self.summary_row("table1")
        self.assertIn("EP32 50%: llep", t1[3])
        for name in ("imbalance", "slots", "overhead"):
            with self.subTest(experiment=name):
                r = self.summary_row(name)
                self.assertEqual(r[3], "–")
                self.assertTrue(r[2].startswith("yes, all"), r[2])
        self.assertIn("none is left out", sections(self.text)[
            "## overhead: Synthetic overhead title"])
        body = sections(self.text)["## scale: Synthetic scale title"]
        self.assertIn("not at EP128: eplb", body)

    def test_summary_modes_frontier(self):
        summary = sections(self.text)["## Summary"]
        self.assertIn("EP16 predictive", summary)
        self.assertIn("EP64 local", summary)
        ft = tables(summary)[1]
        self.assertEqual(len(ft) - 2, 3)
        first = dict(zip(ft[0], ft[2]))
        self.assertEqual(first["scenario"], "qwen3 EP32 h800 70%")
        self.assertEqual(first["best fixed target"], "2%")
        self.assertIn("target 2.7%", first["auto's step time"])
        self.assertEqual(first["auto's gap"], "0.1%")
        self.assertTrue(first["auto-step's gap"].startswith("-"), first)
        self.assertIn("auto-step is at least as fast as the best fixed target in all 3",
                      sections(self.text)["## frontier: Synthetic frontier title"])

    def test_missing_column(self):
        header, rows, _ = self.data["imbalance"]
        bad = os.path.join(self.tmp.name, "bad", "imbalance.csv")
        os.makedirs(os.path.dirname(bad), exist_ok=True)
        with open(bad, "w", newline="") as f:
            cols = [c for c in header if c != "stall_ms"]
            w = csv.DictWriter(f, fieldnames=cols, lineterminator="\n", extrasaction="ignore")
            w.writeheader()
            w.writerows(rows)
        png = os.path.join(self.tmp.name, "bad", "imbalance.png")
        r = run(PLOT, "imbalance", bad, png)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("stall_ms", r.stderr)
        self.assertIn(bad, r.stderr)
        self.assertFalse(os.path.exists(png))
        r = run(REPORT, "--data", os.path.dirname(bad), "--doc",
                os.path.join(self.tmp.name, "bad.md"))
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("stall_ms", r.stderr)

    def test_quick_and_not_run(self):
        folder = os.path.join(self.tmp.name, "quick", "results")
        write_data(folder, self.data, only=("scale", "modes"))
        shutil.copy(os.path.join(self.data_dir, "scale.png"), folder)
        doc = os.path.join(self.tmp.name, "quick", "page", "results.md")
        r = run(REPORT, "--data", folder, "--doc", doc, "--quick")
        self.assertEqual(r.returncode, 0, r.stderr)
        text = read(doc)
        head = text.split("## Summary")[0]
        self.assertIn("quick run (CI smoke test): small sweeps, not the published figures", head)
        secs = sections(text)
        for name in ("table1", "imbalance", "slots", "overhead", "frontier"):
            self.assertIn(f"## {name}", secs)
            self.assertIn("Not run", secs[f"## {name}"])
        # The plots are linked relative to the page's own folder.
        self.assertIn("](../results/scale.png)", text)

    def test_report_deterministic(self):
        r = run(REPORT, "--data", self.data_dir, "--doc", self.doc)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(self.doc) as f:
            self.assertEqual(f.read(), self.text, "a rerun wrote a different page")

if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + sys.argv[1:], verbosity=2)
