#!/usr/bin/python3
"""Writes the taot-sim results page from the experiments' CSVs, metadata and plots.

    /usr/bin/python3 sim/report/report.py --data DIR --doc PATH [--quick]

Reads DIR/<experiment>.csv, DIR/<experiment>.json (title, description, scenario, command,
report_command, quick) and links DIR/<experiment>.png (drawn beforehand by plot.py) relative to
PATH's folder. Experiments come in the order of ORDER; a CSV in DIR under another name is
appended with a generic section. The output depends only on the inputs (no dates, no absolute
paths), so regenerating unchanged data does not change the page. Standard library only.
Exits 2 with a message naming the file on a CSV or JSON it cannot use.
"""
import argparse
import json
import math
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plot import DataError, PLANNER_ORDER, MODE_ORDER, SCHEMAS, ordered, read_table  # noqa: E402

ORDER = ("table1", "imbalance", "scale", "slots", "overhead", "modes", "frontier")
# Experiments where taot is compared with every other planner at each x-point, and on what.
# metric, unit, planners left out of the comparison (and why).
PLANNER_RULES = {
    "table1": ("step_time_ms", "ms", {}),
    "imbalance": ("step_time_ms", "ms", {}),
    "scale": ("step_time_ms", "ms", {}),
    "slots": ("step_time_ms", "ms", {}),
    "overhead": ("overhead_pct", "%", {"none": "it does not plan"}),
}
# Relative tolerance within which taot counts as tied.
TOLERANCE = 0.0005
DEFAULT_REPORT_COMMAND = "taot-sim report"
QUICK_WARNING = "quick run (CI smoke test): small sweeps, not the published figures"
# x-point columns that are whole numbers in practice: printed without decimals.
KEY_COLUMNS = {"ep", "slots", "initial_pct", "target"}


def fail(msg):
    print(f"report.py: {msg}", file=sys.stderr)
    sys.exit(2)


# ---------------------------------------------------------------------------------------------
# Number formatting


def fixed(v, decimals):
    """v with `decimals` decimals, or with two significant digits when that would hide it."""
    if v != 0 and abs(v) < 0.5 * 10 ** -decimals:
        decimals = -math.floor(math.log10(abs(v))) + 1
    return f"{v:.{decimals}f}"


def decimals_for(col):
    if col.endswith("_ms"):
        return 2
    if col.endswith("_us") or col.endswith("_pct") or col.endswith("_pp"):
        return 1
    if col == "speedup":
        return 3
    return None


def fmt_cell(col, v, integral=False):
    """integral: every value in the column is a whole number (so print none with decimals)."""
    if v is None:
        return "–"
    if isinstance(v, str):
        return v.replace("|", "\\|")
    if col in KEY_COLUMNS and float(v).is_integer():
        return str(int(v))
    d = decimals_for(col)
    if d is not None:
        return fixed(v, d)
    if integral:
        return str(int(v))
    return fixed(v, 2)


def fmt_pair(a, b, decimals):
    """a and b with enough decimals (from `decimals`, up to 5) that they read differently."""
    d = decimals
    while d < 5 and fixed(a, d) == fixed(b, d) and a != b:
        d += 1
    return fixed(a, d), fixed(b, d)


def fmt_gap(pct):
    return fixed(pct, 1)


def num(v):
    return str(int(v)) if float(v).is_integer() else f"{v:g}"


def with_unit(text, unit):
    return f"{text}%" if unit == "%" else f"{text} {unit}"


def x_label(experiment, key_cols, key):
    vals = dict(zip(key_cols, key))
    if experiment == "table1":
        return f"EP{num(vals['ep'])} {num(vals['initial_pct'])}%"
    if experiment == "imbalance":
        return f"{num(vals['initial_pct'])}% initial"
    if experiment in ("scale", "overhead", "modes"):
        return f"EP{num(vals['ep'])}"
    if experiment == "slots":
        return f"K={num(vals['slots'])}"
    return " ".join(f"{c}={fmt_cell(c, v)}" for c, v in vals.items())


def markdown_table(header, rows, cols=None):
    cols = cols or header
    out = ["| " + " | ".join(cols) + " |"]
    align = []
    for c in cols:
        numeric = any(isinstance(r.get(c), float) for r in rows)
        align.append("---:" if numeric else "---")
    out.append("| " + " | ".join(align) + " |")
    integral = {c: all(float(r[c]).is_integer() for r in rows if isinstance(r.get(c), float))
                for c in cols}
    for r in rows:
        out.append("| " + " | ".join(fmt_cell(c, r.get(c), integral[c]) for c in cols) + " |")
    return "\n".join(out)


def plain_table(cols, rows):
    out = ["| " + " | ".join(cols) + " |", "| " + " | ".join("---" for _ in cols) + " |"]
    for r in rows:
        out.append("| " + " | ".join(str(c).replace("|", "\\|") for c in r) + " |")
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------
# Comparisons


def key_columns(experiment, header, pivot):
    """The columns that make up an x-point: those before the planner (or mode) column."""
    return tuple(header[:header.index(pivot)])


def points_in_order(rows, key_cols):
    keys = []
    seen = set()
    for r in rows:
        k = tuple(r[c] for c in key_cols)
        if k not in seen:
            seen.add(k)
            keys.append(k)

    def sort_key(k):
        return tuple((0, v, "") if isinstance(v, float) else (1, 0, str(v)) for v in k)
    return sorted(keys, key=sort_key)


def compare_planners(experiment, header, rows, metric, unit, excluded):
    """taot against every other planner at each x-point on `metric` (lower is better)."""
    key_cols = key_columns(experiment, header, "planner")
    planners = ordered([r["planner"] for r in rows], PLANNER_ORDER)
    others = [p for p in planners if p != "taot" and p not in excluded]
    by = {}
    for r in rows:
        by[(tuple(r[c] for c in key_cols), r["planner"])] = r.get(metric)
    res = {"comparisons": 0, "ok": 0, "exceptions": [], "no_taot": [], "leads": [],
           "others": others, "points": 0, "excluded": {p: why for p, why in excluded.items()
                                                       if p in planners}}
    d = decimals_for(metric) or 2
    for key in points_in_order(rows, key_cols):
        label = x_label(experiment, key_cols, key)
        present = [(p, by[(key, p)]) for p in others if by.get((key, p)) is not None]
        if not present:
            continue
        res["points"] += 1
        t = by.get((key, "taot"))
        if t is None:
            res["no_taot"].append(label)
            continue
        for p, v in present:
            res["comparisons"] += 1
            if t <= v * (1 + TOLERANCE):
                res["ok"] += 1
            else:
                vs, ts = fmt_pair(v, t, d)
                gap = (t - v) / v * 100 if v else math.inf
                res["exceptions"].append(
                    f"{label}: {p} {with_unit(vs, unit)} < taot {with_unit(ts, unit)} "
                    f"({fmt_gap(gap)}%)")
        best_p, best = min(present, key=lambda pv: pv[1])
        lead = (best - t) / best * 100 if best else 0.0
        res["leads"].append((lead, label, best_p))
    return res


def speedup_range(rows, planner="taot"):
    vals = [(r["speedup"], r) for r in rows if r.get("planner") == planner
            and r.get("speedup") is not None]
    if not vals:
        return None
    return min(v for v, _ in vals), max(v for v, _ in vals)


def modes_summary(header, rows):
    """Per EP: the fastest mode and its speedup over none."""
    key_cols = key_columns("modes", header, "mode")
    out = []
    for key in points_in_order(rows, key_cols):
        here = [r for r in rows if tuple(r[c] for c in key_cols) == key
                and r["step_time_ms"] is not None]
        replicated = [r for r in here if r["mode"] != "none"] or here
        if not replicated:
            continue
        order = {m: i for i, m in enumerate(ordered([r["mode"] for r in here], MODE_ORDER))}
        best = min(replicated, key=lambda r: (r["step_time_ms"], order[r["mode"]]))
        none = next((r for r in here if r["mode"] == "none"), None)
        out.append((x_label("modes", key_cols, key), best, none, here))
    return out


def frontier_summary(rows):
    """Per scenario: the best fixed target's row and each auto variant (a row whose target is a
    word: `auto`, `auto-step`) with its gap to that best, in %."""
    scenarios = []
    for r in rows:
        if r["scenario"] not in scenarios:
            scenarios.append(r["scenario"])
    out = []
    for s in scenarios:
        here = [r for r in rows if r["scenario"] == s and r["step_time_ms"] is not None]
        fixed_rows = [r for r in here if isinstance(r["target"], float)]
        best = min(fixed_rows, key=lambda r: (r["step_time_ms"], r["target"])) if fixed_rows \
            else None
        autos = []
        for r in here:
            if isinstance(r["target"], float):
                continue
            gap = None
            if best and best["step_time_ms"]:
                gap = (r["step_time_ms"] - best["step_time_ms"]) / best["step_time_ms"] * 100
            autos.append((r["target"], r, gap))
        out.append({"scenario": s, "best": best, "autos": autos})
    return out


# ---------------------------------------------------------------------------------------------
# The page


class Experiment:
    def __init__(self, name, data_dir, doc_dir):
        self.name = name
        self.csv = os.path.join(data_dir, name + ".csv")
        self.json = os.path.join(data_dir, name + ".json")
        self.png = os.path.join(data_dir, name + ".png")
        self.run = os.path.exists(self.csv)
        self.meta = {}
        self.has_meta = False
        self.header, self.rows = [], []
        link = os.path.relpath(self.png, doc_dir).replace(os.sep, "/")
        self.png_link = link[2:] if link.startswith("./") else link
        if not self.run:
            return
        try:
            self.header, self.rows = read_table(self.csv, name,
                                                None if name in SCHEMAS else ())
        except DataError as e:
            fail(str(e))
        if os.path.exists(self.json):
            try:
                with open(self.json) as f:
                    self.meta = json.load(f)
            except (OSError, ValueError) as e:
                fail(f"{self.json}: not valid JSON: {e}")
            if not isinstance(self.meta, dict):
                fail(f"{self.json}: expected a JSON object")
            self.has_meta = True

    @property
    def title(self):
        return self.meta.get("title") or self.name

    def comparison(self):
        rule = PLANNER_RULES.get(self.name)
        if rule is None and self.name not in SCHEMAS and {"planner", "step_time_ms"} <= set(
                self.header):
            rule = ("step_time_ms", "ms", {})
        if rule is None:
            return None
        metric, unit, excluded = rule
        return compare_planners(self.name, self.header, self.rows, metric, unit, excluded)


def summary_cells(exp, res):
    comparisons = f"{res['comparisons']} ({len(res['others'])} planners × {res['points']} points)"
    if res["comparisons"] and res["ok"] == res["comparisons"]:
        ok = f"yes, all {res['comparisons']}"
    else:
        ok = f"{res['ok']} of {res['comparisons']}"
    where = list(res["exceptions"]) + [f"{label}: no taot row" for label in res["no_taot"]]
    return [exp.name, comparisons, ok, "; ".join(where) if where else "–"]


def planner_line(exp, res):
    metric = PLANNER_RULES.get(exp.name, ("step_time_ms",))[0]
    what = "has the lowest planning overhead" if metric == "overhead_pct" else "is fastest"
    parts = []
    if res["comparisons"] == 0:
        parts.append("no comparison possible (no other planner, or no taot rows)")
    elif res["ok"] == res["comparisons"]:
        parts.append(f"taot {what} or ties (within {TOLERANCE * 100:g}%) in all "
                     f"{res['comparisons']} comparisons against "
                     f"{', '.join(res['others'])}")
    else:
        parts.append(f"taot {what} or ties (within {TOLERANCE * 100:g}%) in {res['ok']} of "
                     f"{res['comparisons']} comparisons against {', '.join(res['others'])}; "
                     f"not at {'; '.join(res['exceptions'])}")
    if res["no_taot"]:
        parts.append(f"no taot row at {', '.join(res['no_taot'])}")
    if res["leads"]:
        lo = min(res["leads"])
        hi = max(res["leads"])
        noun = "overhead" if metric == "overhead_pct" else "step time"
        if fmt_gap(lo[0]) == fmt_gap(hi[0]):
            parts.append(f"its margin over the best other planner is {fmt_gap(lo[0])}% of that "
                         f"planner's {noun} at every point")
        else:
            parts.append(f"its margin over the best other planner ranges from "
                         f"{fmt_gap(lo[0])}% ({lo[1]}, {lo[2]}) to {fmt_gap(hi[0])}% "
                         f"({hi[1]}, {hi[2]}) of that planner's {noun}")
    if metric == "overhead_pct":
        taot = [r["overhead_pct"] for r in exp.rows
                if r["planner"] == "taot" and r["overhead_pct"] is not None]
        if taot:
            parts.append(f"taot's planning costs {fixed(min(taot), 1)}% to "
                         f"{fixed(max(taot), 1)}% of the forward time")
    elif "speedup" in exp.header:
        rng = speedup_range(exp.rows)
        if rng:
            parts.append(f"taot's speedup over no replication is {fixed(rng[0], 3)}× to "
                         f"{fixed(rng[1], 3)}×")
    for p, why in res["excluded"].items():
        parts.append(f"{p} is left out ({why})")
    return "**taot vs the others:** " + "; ".join(parts) + "."


def paper_line(exp):
    """table1 only: how our numbers compare with the ones the paper reported."""
    diffs = []
    for r in exp.rows:
        for ours, theirs, unit in (("improvement_pp", "paper_improvement_pp", " pp"),
                                   ("weighted_cost", "paper_weighted_cost", "")):
            if r.get(theirs) is not None and r.get(ours) is not None:
                diffs.append((abs(r[ours] - r[theirs]), ours, r, unit))
    if not diffs:
        return None
    parts = []
    for col, unit, name in (("improvement_pp", " pp", "improvement"),
                            ("weighted_cost", "", "weighted cost")):
        ds = [d for d in diffs if d[1] == col]
        if not ds:
            continue
        worst = max(ds, key=lambda d: d[0])
        mean = sum(d[0] for d in ds) / len(ds)
        r = worst[2]
        parts.append(f"{name} differs by {fixed(mean, 1)}{unit} on average over {len(ds)} rows, "
                     f"at most {fixed(worst[0], 1)}{unit} (EP{num(r['ep'])} "
                     f"{num(r['initial_pct'])}% {r['planner']})")
    return ("**Against the paper's reported numbers** (the paper's TAOT is our `taot-paper`): "
            + "; ".join(parts) + ".")


def modes_line(summary):
    parts = []
    for label, best, none, _ in summary:
        s = f"{label} {best['mode']} ({fixed(best['step_time_ms'], 2)} ms"
        if none and none["step_time_ms"] and best is not none:
            s += f", {fixed(none['step_time_ms'] / best['step_time_ms'], 3)}× over none"
        parts.append(s + ")")
    return ("**taot vs the others:** every row is planned by taot (no pass/fail here); the modes "
            "differ in how replicas get their weights. Fastest mode per EP: "
            + ("; ".join(parts) if parts else "none") + ".")


def frontier_variants(summary):
    names = []
    for f in summary:
        for name, _, _ in f["autos"]:
            if name not in names:
                names.append(name)
    return names


def frontier_header(summary):
    head = ["scenario", "best fixed target", "its step time"]
    for name in frontier_variants(summary):
        head += [f"{name}'s step time", f"{name}'s gap"]
    return head


def frontier_rows(summary):
    out = []
    for f in summary:
        best = f["best"]
        row = [f["scenario"],
               f"{num(best['target'])}%" if best else "–",
               f"{fixed(best['step_time_ms'], 2)} ms" if best else "–"]
        by_name = {name: (r, gap) for name, r, gap in f["autos"]}
        for name in frontier_variants(summary):
            if name not in by_name:
                row += ["–", "–"]
                continue
            r, gap = by_name[name]
            row.append(f"{fixed(r['step_time_ms'], 2)} ms" + (
                f" (target {fixed(r['chosen_target_pct'], 1)}%)"
                if r.get("chosen_target_pct") is not None else ""))
            row.append(f"{fmt_gap(gap)}%" if gap is not None else "–")
        out.append(row)
    return out


def frontier_line(summary):
    lines = []
    for name in frontier_variants(summary):
        gaps = [(gap, f["scenario"]) for f in summary for n, _, gap in f["autos"]
                if n == name and gap is not None]
        if not gaps:
            continue
        worst = max(gaps)
        if worst[0] <= 0:
            lines.append(f"{name} is at least as fast as the best fixed target in all {len(gaps)} "
                         f"scenarios")
            continue
        text = (f"{name}'s step time is at most {fixed(worst[0], 1)}% above the best fixed "
                f"target's over {len(gaps)} scenarios (largest gap: {worst[1]})")
        better = [s for g, s in gaps if g < 0]
        if better:
            text += f"; it beats every fixed target in {', '.join(better)}"
        lines.append(text)
    if not lines:
        return "**taot vs the others:** every row is planned by taot; no scenario has both a " \
               "fixed target and an auto row."
    return "**taot vs the others:** every row is planned by taot; " + "; ".join(lines) + "."


def scenario_list(meta):
    scenario = meta.get("scenario")
    if not isinstance(scenario, dict) or not scenario:
        return None
    return "\n".join(f"- {k}: {v}" for k, v in scenario.items())


def build(data_dir, doc_path, quick_flag):
    doc_dir = os.path.dirname(os.path.abspath(doc_path))
    names = list(ORDER)
    if os.path.isdir(data_dir):
        extra = sorted(f[:-4] for f in os.listdir(data_dir)
                       if f.endswith(".csv") and f[:-4] not in ORDER)
        names += extra
    exps = [Experiment(n, data_dir, doc_dir) for n in names]
    ran = [e for e in exps if e.run]
    if not ran:
        fail(f"{data_dir}: no experiment CSV ({', '.join(ORDER)})")

    report_command = next((e.meta["report_command"] for e in ran
                           if e.meta.get("report_command")), DEFAULT_REPORT_COMMAND)
    quick = quick_flag or any(e.meta.get("quick") is True for e in ran)
    data_rel = os.path.relpath(os.path.abspath(data_dir), doc_dir).replace(os.sep, "/")

    out = ["# taot-sim results", ""]
    if quick:
        out += [f"> **Warning:** {QUICK_WARNING}.", ""]
    out += [f"Generated by `{report_command}` from the CSVs and plots in `{data_rel}/`; edits to "
            f"this file are lost. The model behind these numbers (its formulas and their "
            f"sources) is described in [model.md](model.md).", ""]

    # Summary.
    out += ["## Summary", "",
            f"For each experiment below, taot is compared with every other planner at every "
            f"x-point on modeled step time (lower is better; within {TOLERANCE * 100:g}% "
            f"relative counts as tied); `overhead` compares planning overhead instead.", ""]
    table = []
    results = {}
    for e in ran:
        res = e.comparison()
        if res is not None:
            results[e.name] = res
            table.append(summary_cells(e, res))
    if table:
        out += [plain_table(["experiment", "comparisons", "taot fastest or tied",
                             "where it is not"], table), ""]
    modes = next((e for e in ran if e.name == "modes"), None)
    if modes:
        out += ["`modes` (taot in each replica mode, no pass/fail): fastest mode per EP: "
                + "; ".join(f"{label} {best['mode']} ({fixed(best['step_time_ms'], 2)} ms)"
                            for label, best, _, _ in modes_summary(modes.header, modes.rows))
                + ".", ""]
    frontier = next((e for e in ran if e.name == "frontier"), None)
    if frontier:
        out += ["`frontier` (taot's fixed targets against auto), per scenario:", "",
                plain_table(frontier_header(frontier_summary(frontier.rows)),
                            frontier_rows(frontier_summary(frontier.rows))), ""]
    missing = [e.name for e in exps if not e.run]
    if missing:
        out += [f"Not run: {', '.join(missing)}.", ""]

    # One section per experiment.
    for e in exps:
        if not e.run:
            out += [f"## {e.name}", "",
                    f"Not run: there is no `{data_rel}/{e.name}.csv`.", ""]
            continue
        out += [f"## {e.name}: {e.title}", ""]
        desc = (e.meta.get("description") or "").strip()
        if desc:
            out += [desc, ""]
        if not e.has_meta:
            out += [f"(No metadata: `{data_rel}/{e.name}.json` is missing.)", ""]
        sc = scenario_list(e.meta)
        if sc:
            out += ["Scenario:", "", sc, ""]
        if e.meta.get("command"):
            out += ["Reproduce:", "", "```sh", str(e.meta["command"]), "```", ""]
        out += [markdown_table(e.header, e.rows), ""]
        if os.path.exists(e.png):
            out += [f"![{e.title}]({e.png_link})", ""]
        else:
            print(f"report.py: warning: {e.png} missing (draw it with plot.py)", file=sys.stderr)
            out += [f"(Plot missing: `{e.png_link}` was not drawn.)", ""]
        if e.name in results:
            out += [planner_line(e, results[e.name]), ""]
            if e.name == "table1":
                pl = paper_line(e)
                if pl:
                    out += [pl, ""]
        elif e.name == "modes":
            out += [modes_line(modes_summary(e.header, e.rows)), ""]
        elif e.name == "frontier":
            out += [frontier_line(frontier_summary(e.rows)), ""]
    return "\n".join(out).rstrip("\n") + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True, help="folder with <experiment>.csv/.json/.png")
    ap.add_argument("--doc", required=True, help="markdown file to write")
    ap.add_argument("--quick", action="store_true",
                    help="mark the page as a quick (CI smoke test) run")
    args = ap.parse_args(argv)
    if not os.path.isdir(args.data):
        fail(f"{args.data}: no such folder")
    text = build(args.data, args.doc, args.quick)
    os.makedirs(os.path.dirname(os.path.abspath(args.doc)), exist_ok=True)
    with open(args.doc, "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
