#!/usr/bin/python3
"""sftrace-plot - draws a libsf schedule with matplotlib.

Reads on stdin the JSON Lines of `sftrace --json` (sched_write_json in
tools/sftrace/schedule.h) and writes the picture to each file that --png,
--svg and --pdf name ("-": standard output). sftrace runs it for its own
--png, --svg and --pdf; the build writes the python3 that configure found
with matplotlib (SF_PYTHON) into the first line.

Layout: a row per thread, time left to right in ms since the runtime started.
In a row, one band per nesting depth (depth 0 on top; deeper tasks from
MAX_BANDS - 1 on share the last band), each task coloured by its function
(the MAX_FUNCTIONS functions with the most time in tasks each a colour of
their own, the rest grey as "other") over a strip coloured by its kind; a
task of no known function (a text trace) is coloured by its kind alone.
Deeper bands are a little lighter; under them a thin band for sleeps and
idle spells, with a diamond where the thread completed a promise and a cross
where a timed wait of it gave up. A promise completed from outside libsf (a
plain thread, an audio callback) is a dotted line across every row.
A thread that switched fibers (docs/waiting.md) gets a lane per fiber: its
own stack, fiber 0, on top, then fibers 1, 2, ..., from MAX_LANES - 1 on
sharing the last lane. Each lane has its own bands, since tasks nest per
fiber only, under a thin strip for the fiber's marks: a pause sign where a
get parked it, a play sign where the thread went on with it. While a fiber is
parked, the bands of the tasks open on it are hatched, so the solid parts of
a row are what the thread ran.
"""
import json
import sys

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    from matplotlib.path import Path
    from matplotlib.transforms import blended_transform_factory
except ImportError:
    sys.exit("sftrace: the picture needs matplotlib, which %s cannot import "
             "(Debian: apt-get install python3-matplotlib); no picture written"
             % sys.executable)

MAX_BANDS = 8  # per lane
MAX_FUNCTIONS = 10  # functions with a colour of their own; the rest "other"
# The functions' colours: tab20b's, which no kind uses, darker ones first.
FN_COLOURS = ["#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173",
              "#6b6ecf", "#b5cf6b", "#e7ba52", "#d6616b", "#ce6dbd"]
OTHER = "#c7c7c7"
# A task's bar: its function's colour above, its kind's strip below.
FN_PART, KIND_PART = 0.58, 0.27
MAX_LANES = 4  # fibers 0, 1, 2, and 3 and up sharing the last
# Heights in row units: a band, a lane's marker strip, the sleep band, and
# the padding of a row.
BAND, STRIP, SLEEP, PAD = 1.0, 1.1, 0.7, 0.6
INCH_PER_UNIT = 0.11

# The kinds of slices, in sched_kind_name's order, with their colours and
# what the legend says of them.
KINDS = [
    ("inline", "#4e79a7", "inline: a get ran its own task"),
    ("wait-inlined", "#59a14f", "wait-inlined: a blocked get ran its own task"),
    ("pool", "#f28e2b", "pool: taken by an idle worker"),
    ("stolen", "#e15759", "stolen: run by a blocked get, helping"),
    ("drained", "#9c755f", "drained: run by sf_shutdown"),
    ("batch-wait", "#edc948", "batch-wait: run by sf_batch_wait, helping its batch"),
    ("asleep", "#b07aa1", "asleep: a get or a wait with nothing to run"),
    ("idle", "#bab0ac", "idle: a worker with nothing to take"),
]
COLOUR = {name: colour for name, colour, _ in KINDS}
TASK_KINDS = [name for name, _, _ in KINDS[:6]]

# The marks: colours no kind uses. A park is a pause sign, two bars, and a
# resume the play sign, on their fiber's strip; a promise set is a diamond and
# a timeout a cross, on the sleep band.
PAUSE = Path(
    [(-1, -1), (-0.25, -1), (-0.25, 1), (-1, 1), (-1, -1),
     (0.25, -1), (1, -1), (1, 1), (0.25, 1), (0.25, -1)],
    [Path.MOVETO, Path.LINETO, Path.LINETO, Path.LINETO, Path.CLOSEPOLY] * 2)
MARKS = {
    "park": (PAUSE, "#1b1b1b", "park: a get parks the fiber it runs on"),
    "resume": (">", "#0a8f96", "resume: the thread goes on with this fiber"),
    "set": ("D", "#2e7d32", "set: the thread completed a promise"),
    "timeout": ("X", "#c62828", "timeout: a timed wait gave up at its deadline"),
}
FIBER_MARKS = ("park", "resume")
OUTSIDE = "set from outside libsf: a promise completed by a plain thread (dotted)"


def read(stream):
    """The schedule's header line, its threads in the order read, and the
    marks of no thread."""
    head, threads, marks = None, {}, []
    for n, line in enumerate(stream, 1):
        try:
            o = json.loads(line)
            if "schedule" in o:
                head = o
            elif "name" in o:
                threads[o["thread"]] = dict(o, slices=[], marks=[])
            elif "kind" in o:
                threads[o["thread"]]["slices"].append(o)
            elif "thread" in o:
                threads[o["thread"]]["marks"].append(o)
            else:
                marks.append(o)
        except (ValueError, KeyError, TypeError) as e:
            sys.exit("sftrace-plot: line %d of the schedule: %s" % (n, e))
    if head is None:
        sys.exit("sftrace-plot: the schedule has no header line")
    return head, list(threads.values()), marks


def lane_of(fiber):
    return min(fiber, MAX_LANES - 1)


def lay_out(t, row_y):
    """Where a row's parts go: per lane its strip and its bands' tops, the
    sleep band's top, and the row's height."""
    fibers = [s["fiber"] for s in t["slices"]] + [m["fiber"] for m in t["marks"]]
    lanes = lane_of(max(fibers, default=0)) + 1
    fibered = any(m["mark"] in FIBER_MARKS for m in t["marks"]) or max(fibers, default=0) > 0
    deepest = [0] * lanes
    for s in t["slices"]:
        if s["kind"] in TASK_KINDS:
            lane = lane_of(s["fiber"])
            deepest[lane] = max(deepest[lane], s["depth"])
    y = row_y + PAD / 2
    strip, bands = [], []
    for lane in range(lanes):
        strip.append(y)
        if fibered:
            y += STRIP
        n = min(deepest[lane] + 1, MAX_BANDS)
        bands.append([y + b * BAND for b in range(n)])
        y += n * BAND
    return {"fibered": fibered, "strip": strip, "bands": bands, "sleep": y + 0.15,
            "h": y + 0.15 + SLEEP + PAD / 2 - row_y}


def function_colours(threads):
    """The colour of each function named: the MAX_FUNCTIONS with the most
    time in their task slices (ties by name) their own, the others OTHER;
    and that ranking."""
    time = {}
    for t in threads:
        for s in t["slices"]:
            if s["kind"] in TASK_KINDS and "fn" in s:
                time[s["fn"]] = time.get(s["fn"], 0.0) + s["t1"] - s["t0"]
    ranked = sorted(time, key=lambda f: (-time[f], f))
    colours = {f: FN_COLOURS[i] if i < MAX_FUNCTIONS else OTHER for i, f in enumerate(ranked)}
    return colours, ranked


def draw_row(ax, t, L, fn_colour):
    """The slices and marks of thread t, laid out by L."""
    runs = {}  # (y, height, colour, alpha) -> [(x, width)], one collection each
    parked = []
    for s in t["slices"]:
        x, w = s["t0"] / 1000, (s["t1"] - s["t0"]) / 1000
        bands = L["bands"][lane_of(s["fiber"])]
        if s["kind"] == "parked":
            if s["depth"] > 0:
                y1 = bands[min(s["depth"], len(bands)) - 1] + BAND * (FN_PART + KIND_PART)
                parked.append(((x, w), bands[0], y1 - bands[0]))
            continue
        if s["kind"] in TASK_KINDS:
            b = min(s["depth"], len(bands) - 1)
            alpha = 1 - 0.07 * b
            if "fn" in s:
                runs.setdefault((bands[b], BAND * FN_PART, fn_colour[s["fn"]], alpha),
                                []).append((x, w))
                key = (bands[b] + BAND * FN_PART, BAND * KIND_PART, COLOUR[s["kind"]], alpha)
            else:
                key = (bands[b], BAND * (FN_PART + KIND_PART), COLOUR[s["kind"]], alpha)
        else:
            key = (L["sleep"], SLEEP, COLOUR[s["kind"]], 1.0)
        runs.setdefault(key, []).append((x, w))
    for (y, h, colour, alpha), xs in runs.items():
        ax.broken_barh(xs, (y, h), facecolor=colour, alpha=alpha, linewidth=0, zorder=2)
    for xw, y, h in parked:
        ax.broken_barh([xw], (y, h), facecolor="none", edgecolor="white", hatch="////",
                       linewidth=0, zorder=3)
    for kind, (marker, colour, _) in MARKS.items():
        if kind in FIBER_MARKS:
            pts = [(m["t"] / 1000, L["strip"][lane_of(m["fiber"])] + STRIP / 2)
                   for m in t["marks"] if m["mark"] == kind]
        else:
            pts = [(m["t"] / 1000, L["sleep"] + SLEEP / 2) for m in t["marks"] if m["mark"] == kind]
        if pts:
            ax.scatter(*zip(*pts), marker=marker, s=22, color=colour, linewidths=0, zorder=4)


def draw(head, threads, outside):
    fn_colour, ranked = function_colours(threads)
    fn_handles = [Patch(facecolor=fn_colour[f], label=f) for f in ranked[:MAX_FUNCTIONS]]
    if len(ranked) > MAX_FUNCTIONS:
        fn_handles.append(Patch(facecolor=OTHER, label="other (%d functions)"
                                % (len(ranked) - MAX_FUNCTIONS)))
    rows, y = [], 0.0
    for t in threads:
        L = lay_out(t, y)
        rows.append((t, y, L))
        y += L["h"]
    height_units = max(y, 1.0)
    ncol = 3
    fn_rows = (len(fn_handles) + ncol - 1) // ncol
    top_in, width_in = 0.85, 13.0
    # Under the axis: the kinds' and marks' legend (five rows), then the
    # functions'.
    foot_in = 1.7 + (0.35 + 0.19 * fn_rows if fn_handles else 0)
    fig_h = top_in + height_units * INCH_PER_UNIT + foot_in
    fig = plt.figure(figsize=(width_in, fig_h))
    left, right = 0.125, 0.985
    ax = fig.add_axes([left, foot_in / fig_h, right - left, height_units * INCH_PER_UNIT / fig_h])

    begin = min(0.0, head["t_begin"]) / 1000
    end = head["t_end"] / 1000
    span = end - begin if end > begin else 0.001
    ax.set_xlim(begin, begin + span)
    ax.set_ylim(height_units, 0)
    ax.set_yticks([])
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)
    ax.grid(axis="x", color="#dddddd", linewidth=0.8)
    ax.set_axisbelow(True)
    ax.set_xlabel("time since the runtime started (ms)")

    label = blended_transform_factory(ax.transAxes, ax.transData)
    counts = {name: 0 for name, _, _ in KINDS}
    marks = {}
    for r, (t, row_y, L) in enumerate(rows):
        if r % 2 == 0:
            ax.axhspan(row_y, row_y + L["h"], color="#f3f3f3", linewidth=0, zorder=0)
        busy = 100 * t["busy"] / 1000 / span
        ax.text(-0.118, row_y + 0.3, t["name"], transform=label, weight="bold", va="top",
                fontsize=10)
        ax.text(-0.118, row_y + 2.0, "%d tasks, %.0f%% busy" % (t["tasks"], busy),
                transform=label, va="top", fontsize=8, color="#555555")
        if L["fibered"]:
            for lane, strip in enumerate(L["strip"]):
                last = lane == MAX_LANES - 1
                ax.text(-0.004, strip + 0.1, "fiber%s %d%s" % ("s" if last else "", lane,
                                                              "+" if last else ""),
                        transform=label, ha="right", va="top", fontsize=6.5, color="#777777")
                if lane > 0:
                    ax.axhline(strip, color="#d0d0d0", linewidth=0.6, zorder=1)
        draw_row(ax, t, L, fn_colour)
        for s in t["slices"]:
            counts[s["kind"]] = counts.get(s["kind"], 0) + 1
        for m in t["marks"]:
            marks[m["mark"]] = marks.get(m["mark"], 0) + 1
    for m in outside:
        if m["mark"] == "set":
            ax.axvline(m["t"] / 1000, color=MARKS["set"][1], linestyle=":", linewidth=0.9,
                       zorder=1)
    sets = marks.get("set", 0) + sum(1 for m in outside if m["mark"] == "set")

    tasks = sum(counts[k] for k in TASK_KINDS)
    cfg = " (SF_THREADS=%d)" % head["threads_cfg"] if head["threads_cfg"] else ""
    fig.text(0.01, 1 - 0.3 / fig_h, "libsf schedule: %s" % head["schedule"], weight="bold",
             fontsize=14, va="center")
    fig.text(0.01, 1 - 0.62 / fig_h,
             "%d thread%s%s, %d tasks: %s; %d sleeps, %d parks, %d promises set, %d timeouts; "
             "span %.3f ms"
             % (len(rows), "" if len(rows) == 1 else "s", cfg, tasks,
                ", ".join("%d %s" % (counts[k], k) for k in TASK_KINDS),
                counts["asleep"], marks.get("park", 0), sets, marks.get("timeout", 0), span),
             fontsize=9.5, color="#333333", va="center")

    kind_of = "the strip under a task: " if fn_handles else ""
    handles = [Patch(facecolor=colour, label=(kind_of if i == 0 else "") + meaning)
               for i, (_, colour, meaning) in enumerate(KINDS)]
    handles.append(Patch(facecolor=COLOUR["inline"], edgecolor="white", hatch="////",
                         linewidth=0, label="parked: tasks of a fiber its get parked (hatched)"))
    handles += [Line2D([], [], linestyle="none", marker=marker, color=colour, markersize=6,
                       markeredgewidth=0, label=meaning)
                for marker, colour, meaning in MARKS.values()]
    handles.append(Line2D([], [], linestyle=":", color=MARKS["set"][1], linewidth=1.2,
                          label=OUTSIDE))
    fig.legend(handles=handles, loc="lower left", bbox_to_anchor=(0.005, 0.1 / fig_h),
               ncol=ncol, frameon=False, fontsize=8.5, handlelength=1.4, columnspacing=2.5)
    if fn_handles:
        fig.legend(handles=fn_handles, loc="lower left", ncol=ncol, frameon=False,
                   bbox_to_anchor=(0.005, 1.25 / fig_h), fontsize=8.5, handlelength=1.4,
                   columnspacing=2.5, title="task functions, by time in their tasks",
                   title_fontsize=8.5, alignment="left")
    fig.text(0.01, 0.02 / fig_h,
             "nesting: a nested task is drawn one band lower (depths from %d on share the "
             "last); fibers: a lane per fiber of a thread that parked (0: its own stack; "
             "from %d on share the last)" % (MAX_BANDS - 1, MAX_LANES - 1),
             fontsize=8, color="#333333", va="bottom")
    return fig


def main(argv):
    outs, i = [], 1
    while i < len(argv):
        if argv[i] in ("--png", "--svg", "--pdf") and i + 1 < len(argv):
            outs.append((argv[i][2:], argv[i + 1]))
            i += 2
        else:
            sys.exit("usage: sftrace-plot [--png OUT] [--svg OUT] [--pdf OUT] <SCHEDULE.jsonl")
    head, threads, outside = read(sys.stdin)
    # The same input gives the same bytes: no date, fixed ids in the SVG;
    # its text stays text, for the viewer's fonts and for searching.
    matplotlib.rcParams["svg.hashsalt"] = "sftrace"
    matplotlib.rcParams["svg.fonttype"] = "none"
    fig = draw(head, threads, outside)
    meta = {"png": {"Software": None}, "svg": {"Date": None},
            "pdf": {"CreationDate": None, "Producer": None}}
    for fmt, path in outs:
        try:
            fig.savefig(sys.stdout.buffer if path == "-" else path, format=fmt, dpi=100,
                        metadata=meta[fmt])
        except OSError as e:
            sys.exit("sftrace: %s: %s; no picture written" % (path, e.strerror))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
