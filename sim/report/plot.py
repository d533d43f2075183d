#!/usr/bin/python3
"""Draws one taot-sim experiment's CSV as a PNG.

    /usr/bin/python3 sim/report/plot.py EXPERIMENT CSV PNG

EXPERIMENT is one of table1, imbalance, scale, slots, overhead, modes, frontier (the CSV schemas
are in SCHEMAS below). If CSV has a sibling CSV-stem.json (the experiment's metadata written by
`taot-sim run`), its title and scenario label the figure. Exits 2, naming the file and the
column, when the CSV lacks a column the experiment needs.

Output is deterministic (fixed hash salt, no Software metadata), so rerunning on the same CSV
gives the same bytes. Needs Debian's python3-matplotlib; the rest is the standard library.
report.py imports this module for SCHEMAS and read_table without needing matplotlib.
"""
import csv
import json
import math
import os
import sys

STEP_METRICS = ("step_time_ms", "speedup", "imbalance_after_pct", "transfers_intra",
                "transfers_inter", "stall_ms")

# Columns each experiment's CSV must have (more are allowed and ignored).
SCHEMAS = {
    "table1": ("ep", "initial_pct", "planner", "imbalance_before_pct", "imbalance_after_pct",
               "improvement_pp", "weighted_cost", "transfers_intra", "transfers_inter",
               "step_time_ms", "speedup", "paper_improvement_pp", "paper_weighted_cost"),
    "imbalance": ("initial_pct", "planner") + STEP_METRICS + ("plan_ms",),
    "scale": ("ep", "planner") + STEP_METRICS + ("plan_ms",),
    "slots": ("slots", "planner") + STEP_METRICS + ("plan_ms",),
    "overhead": ("ep", "planner", "plan_time_us", "forward_time_ms", "overhead_pct"),
    "modes": ("ep", "mode") + STEP_METRICS + ("plan_ms",),
    "frontier": ("scenario", "target", "step_time_ms", "speedup", "imbalance_after_pct",
                 "transfers_intra", "transfers_inter", "stall_ms", "chosen_target_pct", "plan_ms"),
}

# Columns that hold text, not numbers; every other column is parsed as a number (empty = None).
TEXT_COLUMNS = {"planner", "mode", "scenario"}
# `target` is a number or a word naming an auto variant (`auto`, `auto-step`).
MIXED_COLUMNS = {"target"}

PLANNER_ORDER = ("taot", "taot-auto", "taot-block", "taot-paper", "echo", "llep", "eplb", "eplb-fixed-home", "lplb",
                 "none")
TAOT_COLOUR = "#d62728"
PLANNER_STYLE = {
    # colour, marker, line style
    "taot": (TAOT_COLOUR, "o", "-"),
    "taot-auto": ("#9467bd", "D", "--"),
    "taot-block": (TAOT_COLOUR, "s", ":"),
    "taot-paper": ("#8c564b", "s", "-"),
    "echo": ("#1f77b4", "^", "-"),
    "llep": ("#2ca02c", "v", "-"),
    "eplb": ("#bf9000", "P", "-"),
    "eplb-fixed-home": ("#bf9000", "p", "--"),
    "lplb": ("#17becf", "X", "-"),
    "none": ("#7f7f7f", ".", ":"),
}
EXTRA_COLOURS = ("#e377c2", "#bcbd22", "#393b79", "#637939", "#843c39", "#7b4173")
MODE_ORDER = ("none", "remote", "predictive", "local")
MODE_COLOUR = {"none": "#7f7f7f", "remote": "#1f77b4", "predictive": "#ff7f0e",
               "local": TAOT_COLOUR}

FIGSIZE = (8, 4.5)
DPI = 120


class DataError(Exception):
    """A CSV that cannot be used; the message names the file."""


def read_table(path, experiment, required=None):
    """Returns (header, rows) with numeric columns parsed; raises DataError on a bad CSV.

    required defaults to the experiment's SCHEMAS entry; pass () to read any CSV."""
    if required is None:
        if experiment not in SCHEMAS:
            raise DataError(f"unknown experiment '{experiment}' (known: {', '.join(SCHEMAS)})")
        required = SCHEMAS[experiment]
    try:
        with open(path, newline="") as f:
            reader = csv.reader(f)
            header = next(reader, None)
            body = [r for r in reader if r and any(c.strip() for c in r)]
    except OSError as e:
        raise DataError(f"{path}: cannot read: {e.strerror}") from None
    if not header:
        raise DataError(f"{path}: empty file, no header line")
    header = [h.strip() for h in header]
    for col in required:
        if col not in header:
            raise DataError(f"{path}: missing column '{col}' (experiment {experiment} needs: "
                            f"{', '.join(required)})")
    rows = []
    for lineno, raw in enumerate(body, start=2):
        if len(raw) != len(header):
            raise DataError(f"{path}: line {lineno}: {len(raw)} fields, header has {len(header)}")
        row = {}
        for col, cell in zip(header, raw):
            cell = cell.strip()
            if col in TEXT_COLUMNS:
                row[col] = cell
            elif cell == "":
                row[col] = None
            else:
                try:
                    row[col] = float(cell)
                except ValueError:
                    if col in MIXED_COLUMNS or experiment not in SCHEMAS:
                        row[col] = cell
                    else:
                        raise DataError(f"{path}: line {lineno}: column '{col}': "
                                        f"not a number: '{cell}'") from None
        rows.append(row)
    if not rows:
        raise DataError(f"{path}: no data rows")
    return header, rows


def read_meta(csv_path):
    """The experiment's metadata JSON beside the CSV, or {} when there is none."""
    path = os.path.splitext(csv_path)[0] + ".json"
    try:
        with open(path) as f:
            meta = json.load(f)
        return meta if isinstance(meta, dict) else {}
    except (OSError, ValueError):
        return {}


def ordered(names, order):
    known = [n for n in order if n in names]
    return known + sorted(n for n in set(names) if n not in order)


def planner_style(name, index):
    if name in PLANNER_STYLE:
        return PLANNER_STYLE[name]
    return EXTRA_COLOURS[index % len(EXTRA_COLOURS)], "o", "-"


def uniq(values):
    return sorted(set(v for v in values if v is not None))


def fmt_num(v):
    return str(int(v)) if float(v).is_integer() else f"{v:g}"


# ---------------------------------------------------------------------------------------------
# Figures


def setup_matplotlib():
    import matplotlib
    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "taot-sim"
    matplotlib.rcParams["path.simplify"] = True
    import matplotlib.pyplot as plt
    return plt


def title_of(meta, default):
    title = meta.get("title") or default
    if meta.get("quick"):
        title += " (quick run)"
    return title


def subtitle_of(meta):
    scenario = meta.get("scenario")
    if not isinstance(scenario, dict):
        return ""
    parts = [str(v) for k, v in scenario.items() if k in ("model", "cluster", "workload", "ep",
                                                             "slots", "initial", "mode")]
    return " · ".join(parts)


def decorate(fig, ax, meta, default_title):
    fig.suptitle(title_of(meta, default_title), fontsize=12, fontweight="bold", y=0.98)
    sub = subtitle_of(meta)
    if sub:
        fig.text(0.5, 0.915, sub, ha="center", va="center", fontsize=8, color="#444444")
    if ax is not None:
        ax.grid(True, alpha=0.3, which="major")
        ax.set_axisbelow(True)


def side_legend(ax, handles=None, labels=None, title=None):
    if handles is None:
        handles, labels = ax.get_legend_handles_labels()
    ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=8,
              title=title, title_fontsize=8, frameon=False)


def log2_axis(ax, xs):
    """Log2 x axis with a tick at every power of two from the smallest x to the largest."""
    from matplotlib.ticker import FixedLocator, NullLocator
    if not xs or min(xs) <= 0:
        ax.set_xticks(xs)
        ax.set_xticklabels([fmt_num(x) for x in xs])
        return
    ax.set_xscale("log", base=2)
    lo, hi = math.floor(math.log2(min(xs))), math.ceil(math.log2(max(xs)))
    ticks = sorted(set([2.0 ** e for e in range(lo, hi + 1)] + list(xs)))
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticklabels([fmt_num(t) for t in ticks])
    ax.set_xlim(min(xs) / 2 ** 0.25, max(xs) * 2 ** 0.25)


def line_per_planner(ax, rows, xcol, ycol):
    planners = ordered([r["planner"] for r in rows], PLANNER_ORDER)
    # taot is drawn last and thickest so it sits on top of every other line.
    draw_order = [p for p in planners if p != "taot"] + [p for p in planners if p == "taot"]
    handles = {}
    for i, p in enumerate(draw_order):
        pts = sorted((r[xcol], r[ycol]) for r in rows
                     if r["planner"] == p and r[xcol] is not None and r[ycol] is not None)
        if not pts:
            continue
        colour, marker, ls = planner_style(p, i)
        strong = p == "taot"
        (h,) = ax.plot([x for x, _ in pts], [y for _, y in pts], linestyle=ls, marker=marker,
                       color=colour, linewidth=2.8 if strong else 1.5,
                       markersize=7 if strong else 5, alpha=1.0 if strong else 0.85,
                       zorder=10 if strong else 3, label=p)
        handles[p] = h
    legend_order = [p for p in planners if p in handles]
    side_legend(ax, [handles[p] for p in legend_order], legend_order, title="planner")


def speedup_figure(plt, rows, meta, xcol, xlabel, default_title, log2):
    fig, ax = plt.subplots(figsize=FIGSIZE)
    fig.subplots_adjust(left=0.09, right=0.80, top=0.85, bottom=0.13)
    ax.axhline(1.0, color="#999999", linewidth=0.8, zorder=1)
    line_per_planner(ax, rows, xcol, "speedup")
    xs = uniq(r[xcol] for r in rows)
    if log2:
        log2_axis(ax, xs)
    else:
        ax.set_xticks(xs)
        ax.set_xticklabels([fmt_num(x) for x in xs])
    ax.set_xlabel(xlabel)
    ax.set_ylabel("speedup over no replication (×)")
    decorate(fig, ax, meta, default_title)
    return fig


def grouped_bars(ax, groups, series, value, colour_of, strong=None, log=False, label_of=str):
    """Bars for each series side by side within each group; value(group, series) -> y or None."""
    n = max(len(series), 1)
    width = 0.8 / n
    handles = []
    for i, s in enumerate(series):
        xs, ys = [], []
        for g_index, g in enumerate(groups):
            y = value(g, s)
            if y is None or (log and y <= 0):
                continue
            xs.append(g_index - 0.4 + width * (i + 0.5))
            ys.append(y)
        if not xs:
            continue  # nothing to draw (e.g. only zeros on a log axis): keep it off the legend
        is_strong = s == strong
        h = ax.bar(xs, ys, width=width * 0.95, color=colour_of(s, i), label=label_of(s),
                   edgecolor="black" if is_strong else "none", linewidth=1.2 if is_strong else 0,
                   zorder=5 if is_strong else 3)
        handles.append(h)
    if log:
        ax.set_yscale("log")
    return handles


def plot_table1(plt, rows, meta):
    eps = uniq(r["ep"] for r in rows)
    # none moves nothing, so its weighted cost is 0 by definition: it stays in the table only.
    planners = [p for p in ordered([r["planner"] for r in rows], PLANNER_ORDER) if p != "none"]
    fig, axes = plt.subplots(1, max(len(eps), 1), figsize=FIGSIZE, squeeze=False)
    fig.subplots_adjust(left=0.09, right=0.98, top=0.83, bottom=0.27, wspace=0.25)
    colour = {p: planner_style(p, i)[0] for i, p in enumerate(planners)}
    handles = paper_handle = None
    for ax, ep in zip(axes[0], eps):
        sub = [r for r in rows if r["ep"] == ep]
        inits = uniq(r["initial_pct"] for r in sub)
        by = {(r["initial_pct"], r["planner"]): r for r in sub}

        def value(g, p, key="weighted_cost"):
            r = by.get((g, p))
            return r[key] if r else None

        handles = grouped_bars(ax, inits, planners, value, lambda p, i: colour[p], strong="taot")
        # The paper's reported cost, where it reported one, as a black tick on the same bar.
        width = 0.8 / max(len(planners), 1)
        px, py = [], []
        for g_index, g in enumerate(inits):
            for i, p in enumerate(planners):
                v = value(g, p, "paper_weighted_cost")
                if v is not None:
                    px.append(g_index - 0.4 + width * (i + 0.5))
                    py.append(v)
        if px:
            (paper_handle,) = ax.plot(px, py, linestyle="none", marker="_", markersize=9,
                                      markeredgewidth=2.2, color="black", zorder=12,
                                      label="paper's reported value")
        ax.set_xticks(range(len(inits)))
        ax.set_xticklabels([f"{fmt_num(g)}%" for g in inits])
        ax.set_xlabel("initial imbalance (%)")
        ax.set_title(f"EP{fmt_num(ep)}", fontsize=10)
        ax.grid(True, axis="y", alpha=0.3)
        ax.set_axisbelow(True)
    axes[0][0].set_ylabel("weighted cost (intra + λ·inter transfers)")
    labels = list(planners)
    hs = list(handles or [])
    if paper_handle is not None:
        hs.append(paper_handle)
        labels.append("paper's reported value")
    fig.legend(hs, labels, loc="lower center", ncol=min(len(labels), 4), fontsize=8,
               frameon=False, bbox_to_anchor=(0.5, 0.0))
    decorate(fig, None, meta, "Table 1: weighted cost of the replicas per planner")
    return fig


def plot_overhead(plt, rows, meta):
    eps = uniq(r["ep"] for r in rows)
    planners = ordered([r["planner"] for r in rows], PLANNER_ORDER)
    by = {(r["ep"], r["planner"]): r["overhead_pct"] for r in rows}
    fig, ax = plt.subplots(figsize=FIGSIZE)
    fig.subplots_adjust(left=0.09, right=0.80, top=0.85, bottom=0.13)
    grouped_bars(ax, eps, planners, lambda g, p: by.get((g, p)),
                 lambda p, i: planner_style(p, i)[0], strong="taot", log=True)
    ax.set_xticks(range(len(eps)))
    ax.set_xticklabels([f"EP{fmt_num(e)}" for e in eps])
    ax.set_xlabel("expert-parallel size")
    ax.set_ylabel("planning overhead (% of forward time, log)")
    side_legend(ax, title="planner")
    decorate(fig, ax, meta, "Planner time on the critical path vs forward time")
    ax.grid(True, axis="y", which="both", alpha=0.2)
    return fig


def plot_modes(plt, rows, meta):
    eps = uniq(r["ep"] for r in rows)
    modes = ordered([r["mode"] for r in rows], MODE_ORDER)
    by = {(r["ep"], r["mode"]): r["step_time_ms"] for r in rows}
    fig, ax = plt.subplots(figsize=FIGSIZE)
    fig.subplots_adjust(left=0.09, right=0.80, top=0.85, bottom=0.13)
    grouped_bars(ax, eps, modes, lambda g, m: by.get((g, m)),
                 lambda m, i: MODE_COLOUR.get(m, EXTRA_COLOURS[i % len(EXTRA_COLOURS)]),
                 label_of=lambda m: "none (no replication)" if m == "none" else m)
    ax.set_xticks(range(len(eps)))
    ax.set_xticklabels([f"EP{fmt_num(e)}" for e in eps])
    ax.set_xlabel("expert-parallel size")
    ax.set_ylabel("step time (ms)")
    side_legend(ax, title="replica mode (taot)")
    decorate(fig, ax, meta, "Step time per replica mode")
    ax.xaxis.grid(False)
    return fig


# The auto variants of the frontier: searching at every microbatch, or once per step.
AUTO_MARKERS = {"auto": "*", "auto-step": "P"}


def plot_frontier(plt, rows, meta):
    scenarios = []
    for r in rows:
        if r["scenario"] not in scenarios:
            scenarios.append(r["scenario"])
    fig, ax = plt.subplots(figsize=FIGSIZE)
    fig.subplots_adjust(left=0.09, right=0.74, top=0.85, bottom=0.13)
    ax.axhline(1.0, color="#999999", linewidth=0.8, zorder=1)
    cmap = ("#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bf9000",
            "#7f7f7f", "#393b79", "#637939")
    drew_auto = set()
    all_x = set()
    for i, s in enumerate(scenarios):
        colour = cmap[i % len(cmap)]
        fixed = sorted((r["target"], r["step_time_ms"]) for r in rows
                       if r["scenario"] == s and isinstance(r["target"], float)
                       and r["step_time_ms"] is not None)
        if not fixed:
            continue
        best = min(y for _, y in fixed)
        all_x.update(x for x, _ in fixed)
        ax.plot([x for x, _ in fixed], [y / best for _, y in fixed], marker="o", markersize=4,
                color=colour, linewidth=1.6, label=s, zorder=3)
        for r in rows:
            if (r["scenario"] == s and r["target"] in AUTO_MARKERS and r["step_time_ms"] is not None
                    and r["chosen_target_pct"] is not None):
                ax.plot([r["chosen_target_pct"]], [r["step_time_ms"] / best],
                        marker=AUTO_MARKERS[r["target"]], markersize=13, color=colour,
                        markeredgecolor="black", markeredgewidth=0.8, linestyle="none", zorder=10)
                drew_auto.add(r["target"])
    handles, labels = ax.get_legend_handles_labels()
    from matplotlib.lines import Line2D
    for name, marker in AUTO_MARKERS.items():
        if name in drew_auto:
            handles.append(Line2D([], [], marker=marker, markersize=11, color="white",
                                  markerfacecolor="#cccccc", markeredgecolor="black",
                                  linestyle="none"))
            labels.append(f"{name} (at its mean\nchosen target)")
    side_legend(ax, handles, labels, title="scenario")
    if all_x:
        ax.set_xticks(sorted(all_x))
        ax.set_xticklabels([fmt_num(x) for x in sorted(all_x)])
    ax.set_xlabel("target residual imbalance (%)")
    ax.set_ylabel("step time / best fixed target's (×)")
    decorate(fig, ax, meta, "Step time vs taot's target residual imbalance")
    return fig


def draw(experiment, rows, meta):
    plt = setup_matplotlib()
    if experiment == "table1":
        fig = plot_table1(plt, rows, meta)
    elif experiment == "imbalance":
        fig = speedup_figure(plt, rows, meta, "initial_pct", "initial imbalance (%)",
                             "Speedup vs initial imbalance", log2=False)
    elif experiment == "scale":
        fig = speedup_figure(plt, rows, meta, "ep", "expert-parallel size (GPUs, log2)",
                             "Speedup vs expert-parallel size", log2=True)
    elif experiment == "slots":
        fig = speedup_figure(plt, rows, meta, "slots", "replica slots per GPU K (log2)",
                             "Speedup vs replica slots per GPU", log2=True)
    elif experiment == "overhead":
        fig = plot_overhead(plt, rows, meta)
    elif experiment == "modes":
        fig = plot_modes(plt, rows, meta)
    else:
        fig = plot_frontier(plt, rows, meta)
    return plt, fig


def main(argv):
    if len(argv) != 4 or argv[1] in ("-h", "--help"):
        print(f"usage: {os.path.basename(argv[0])} EXPERIMENT CSV PNG\n"
              f"  EXPERIMENT: {', '.join(SCHEMAS)}", file=sys.stderr)
        return 2
    experiment, csv_path, png_path = argv[1:]
    try:
        _, rows = read_table(csv_path, experiment)
    except DataError as e:
        print(f"plot.py: {e}", file=sys.stderr)
        return 2
    meta = read_meta(csv_path)
    plt, fig = draw(experiment, rows, meta)
    os.makedirs(os.path.dirname(png_path) or ".", exist_ok=True)
    # bbox_inches="tight" keeps long legend labels inside the image.
    fig.savefig(png_path, dpi=DPI, metadata={"Software": None}, bbox_inches="tight",
                pad_inches=0.15)
    plt.close(fig)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
