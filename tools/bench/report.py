#!/usr/bin/env python3
"""report.py - turns the raw results of tools/bench/run into the Markdown
table, the goals section and the SVG chart of the ratios to oneTBB. Needs a
python3 that imports matplotlib (Debian's python3-matplotlib; `run` picks one).

    report.py RAW.tsv META.txt OUT.md OUT.svg

RAW.tsv: one line per run, tab-separated key=value fields, written by `run`:
    rep wl rt threads rc status [seconds tasks maxrss_kb check sf_* ...]
META.txt: key=value lines (machine, compilers, sizes, build notes, memory).
The Markdown goes to OUT.md and to stdout.
"""
import math
import statistics
import os
import sys

RUNTIME_ORDER = ["seq", "libsf", "libsf-task", "onetbb", "gomp", "llomp"]
RUNTIME_LABEL = {
    "seq": "sequential",
    "libsf": "libsf",
    "libsf-task": "libsf sf_task",
    "onetbb": "oneTBB",
    "gomp": "OpenMP (gcc/libgomp)",
    "llomp": "OpenMP (clang/libomp)",
    "ideal": "ideal (seq / threads)",
    "libsf-pair": "two libsf @1 processes at once",
}
COLORS = {"libsf": "#d62728", "libsf-task": "#ff9896", "gomp": "#1f77b4", "llomp": "#2ca02c", "onetbb": "#7f7f7f"}
WORKLOAD_ORDER = ["fib", "tput-a", "tput-b", "uneven", "for-uneven", "for-uneven-s", "for-skew",
                  "for-skew-s", "nqueens", "meh-chain", "meh-tree", "uts-t1", "uts-t3", "cilksort",
                  "matmul", "knapsack", "pi", "pi-peers", "pipe", "latency", "reduce-sum",
                  "reduce-hist"]
# Parallel loops: the same loop, each runtime's loop construct; the -s rows
# use the other flavour (see tools/bench/README.md). Ideal = sequential/threads.
LOOP_WORKLOADS = ("for-uneven", "for-uneven-s", "for-skew", "for-skew-s", "reduce-sum",
                  "reduce-hist")
# Speculative work: the tasks a run makes depend on its schedule (knapsack's
# pruning depends on when the best value is found), so task counts may differ
# between runs and runtimes; tasks and ns/task are those of the median run.
SPECULATIVE_WORKLOADS = ("knapsack",)
# Fine-grained fork-join workloads, a few ns of work a task: with sf_task at
# 1 thread each should be within 1.2 x its sequential elision (the same
# recursion with plain calls), i.e. a task costs little more than a call.
FINE_GRAINED_WORKLOADS = ("knapsack", "uts-t1", "uts-t3", "nqueens", "pi")
# Workloads with parallelism whose libsf time at 2 threads should be at most
# 0.55 x its own 1-thread time.
SCALING_WORKLOADS = ("fib", "nqueens", "uts-t1", "uts-t3", "cilksort", "matmul")
# The machine ceiling of a 2-thread run: `run` times two libsf processes at 1
# thread at once (runtime libsf-pair, recorded at 2 threads, the slower of
# the two). Two cores that share nothing do 2 x the work in that time, so
# the best a 2-thread run of the same work can do is half of it: as a ratio
# to libsf @1, pair / (2 x single). 0.50 on a machine whose cores do not slow
# each other down; more where they do (a VM's vCPUs on a shared host).
PAIR_RUNTIME = "libsf-pair"
# The fork-join goals (per-task cost, scaling, the UTS trees) are checked for
# both of libsf's APIs: sf_do/sf_get futures and sf_task (caller storage).
FORK_JOIN_RUNTIMES = ("libsf", "libsf-task")
# The pipeline of futures handed between the program's threads (libsf and
# sequential only): a run whose plain gets failed (EDEADLK) still completes,
# counting them (pipe_failed_gets) and the items they lost (pipe_lost). Such
# a run is no failed run - its time is real and every other value was
# checked - but the failures show in the table's *runs* cell, in a section
# of their own and in the goal "pipe: 0 failed gets".
PIPE_WORKLOAD = "pipe"
# When a get returns after its thread helped with a long task (libsf @2
# only): its RESULT line's medians are the measurement, not its time, so it
# has no table row of the workload; its rows are a section of their own.
# A variant's fields are lat_<name>_us and lat_<name>_raced, "-" read as "_".
LATENCY_WORKLOAD = "latency"
LATENCY_VARIANTS = (("busy", "G's get; L computes"),
                    ("blocked", "G's get; L blocks in a get of B"),
                    ("blocked-plain", "the main thread's own get; L blocks in a get of B"))


def parse_kv(line):
    d = {}
    for f in line.rstrip("\n").split("\t"):
        if "=" in f:
            k, v = f.split("=", 1)
            d[k] = v
    return d


def load(raw_path, meta_path):
    runs = []
    with open(raw_path) as f:
        for line in f:
            if line.strip():
                runs.append(parse_kv(line))
    meta = {}
    order = []
    with open(meta_path) as f:
        for line in f:
            line = line.rstrip("\n")
            if "=" in line:
                k, v = line.split("=", 1)
                if k not in meta:
                    order.append(k)
                meta[k] = v
    return runs, meta, order


class Cell:
    """All runs of one (workload, threads, runtime)."""

    def __init__(self):
        self.ok = []  # dicts of successful runs
        self.bad = []  # (status, rc)

    @property
    def attempted(self):
        return len(self.ok) + len(self.bad)

    def median(self, key="seconds"):
        vals = [float(r[key]) for r in self.ok if key in r]
        return statistics.median(vals) if vals else None

    def median_run(self):
        """The successful run whose time is the (lower) median."""
        if not self.ok:
            return None
        s = sorted(self.ok, key=lambda r: float(r["seconds"]))
        return s[(len(s) - 1) // 2]

    def tasks(self):
        """Tasks of the median run (the same in every run but for
        SPECULATIVE_WORKLOADS)."""
        r = self.median_run()
        if r is not None and "tasks" in r:
            return int(r["tasks"])
        for r in self.ok:
            if "tasks" in r:
                return int(r["tasks"])
        return None

    def status(self):
        if not self.bad:
            st = "%d/%d" % (len(self.ok), self.attempted)
        else:
            kinds = sorted(set(b[0] for b in self.bad))
            st = "%d/%d %s" % (len(self.ok), self.attempted, ",".join(kinds))
        failed = sum(self.failed_gets())
        if failed:
            st += ", %d failed gets" % failed
        return st

    def failed_gets(self):
        """Failed gets of each successful run that counts them (pipe), else []."""
        return [int(r["pipe_failed_gets"]) for r in self.ok if "pipe_failed_gets" in r]


def fmt_s(x):
    if x is None:
        return "-"
    if x >= 10:
        return "%.2f" % x
    if x >= 0.1:
        return "%.3f" % x
    return "%.4f" % x


def fmt_r(x):
    if x is None:
        return "-"
    if x >= 100:
        return "%.0f" % x
    if x >= 10:
        return "%.1f" % x
    return "%.2f" % x


def fmt_ns(x):
    if x is None:
        return "-"
    if abs(x) >= 1000:
        return "%.0f" % x
    return "%.1f" % x


def main():
    raw_path, meta_path, md_path, svg_path = sys.argv[1:5]
    runs, meta, meta_order = load(raw_path, meta_path)

    cells = {}
    for r in runs:
        key = (r["wl"], int(r["threads"]), r["rt"])
        c = cells.setdefault(key, Cell())
        if r.get("status") == "ok":
            c.ok.append(r)
        else:
            c.bad.append((r.get("status", "?"), r.get("rc", "?")))

    workloads = [w for w in WORKLOAD_ORDER if any(k[0] == w for k in cells)]
    workloads += sorted(set(k[0] for k in cells) - set(workloads))
    threads_all = sorted(set(k[1] for k in cells if k[2] != "seq"))
    runtimes = [rt for rt in RUNTIME_ORDER if any(k[2] == rt for k in cells)]

    def med(w, t, rt):
        c = cells.get((w, t, rt))
        return c.median() if c else None

    def seq_time(w):
        return med(w, 1, "seq")

    def seq_rss(w):
        c = cells.get((w, 1, "seq"))
        return c.median("maxrss_kb") if c else None

    def ceiling(w):
        """(pair time, libsf @1 time, ceiling ratio), or None (PAIR_RUNTIME)."""
        p, one = med(w, 2, PAIR_RUNTIME), med(w, 1, "libsf")
        return (p, one, p / (2 * one)) if p is not None and one else None

    out = []
    P = out.append
    P("# libsf benchmarks")
    P("")
    P("- date: %s" % meta.get("date", "?"))
    P("- mode: %s, %s repetitions per cell, runtimes interleaved per repetition"
      % (meta.get("mode", "?"), meta.get("reps", "?")))
    P("- machine: `%s`" % meta.get("uname", "?"))
    P("- CPU: %s (%s online CPUs)" % (meta.get("cpu", "?"), meta.get("nproc", "?")))
    for k in ("gcc", "clang", "g++"):
        if k in meta:
            P("- %s: %s" % (k, meta[k]))
    for k in meta_order:
        if k.startswith("peer_"):
            P("- %s: %s" % (k[5:], meta[k]))
    if "libsf_build" in meta:
        P("- libsf build: %s" % meta["libsf_build"])
    if "calib" in meta:
        P("- calibration: %s" % meta["calib"])
    if "load" in meta:
        P("- machine load: %s" % meta["load"])
    P("")
    P("Sizes:")
    P("")
    for k in meta_order:
        if k.startswith("size_"):
            P("- `%s`: %s" % (k[5:], meta[k]))
    P("")
    P("Times are the median wall time of the workload inside the process (runtime "
      "started and warmed up first). *vs seq* = time / sequential time; *vs oneTBB* = "
      "time / oneTBB's time at the same thread count; *ns/task* = (time x threads - "
      "sequential time) / tasks, the core time each task costs beyond the work; "
      "*peak RSS* = getrusage ru_maxrss; *runs* = successful / attempted. "
      "Speculative workloads (%s) make as many tasks as their schedule leads them to: "
      "their *ns/task* uses the median run's own count." % ", ".join(SPECULATIVE_WORKLOADS))
    P("")
    P("| workload | threads | runtime | median s | vs seq | vs oneTBB | ns/task | "
      "peak RSS MB | RSS vs seq | runs |")
    P("|---|---:|---|---:|---:|---:|---:|---:|---:|---|")
    chart = []  # (label, runtime, ratio)
    for w in workloads:
        if w == LATENCY_WORKLOAD:  # its own section below
            continue
        st = seq_time(w)
        srss = seq_rss(w)
        c = cells.get((w, 1, "seq"))
        if c:
            rss = c.median("maxrss_kb")
            P("| %s | 1 | %s | %s | 1.00 | %s | - | %s | 1.00 | %s |" % (
                w, RUNTIME_LABEL["seq"], fmt_s(st),
                fmt_r(st / med(w, 1, "onetbb")) if st and med(w, 1, "onetbb") else "-",
                "%.1f" % (rss / 1024) if rss else "-", c.status()))
        for t in threads_all:
            tbb = med(w, t, "onetbb")
            if (w == "uneven" or w in LOOP_WORKLOADS) and st:
                ideal = st / t
                P("| %s | %d | %s | %s | %s | %s | - | - | - | - |" % (
                    w, t, RUNTIME_LABEL["ideal"], fmt_s(ideal), fmt_r(ideal / st),
                    fmt_r(ideal / tbb) if tbb else "-"))
            for rt in runtimes:
                if rt == "seq":
                    continue
                c = cells.get((w, t, rt))
                if not c:
                    continue
                m = c.median()
                tasks = c.tasks()
                rss = c.median("maxrss_kb")
                vs_seq = m / st if (m is not None and st) else None
                vs_tbb = m / tbb if (m is not None and tbb) else None
                ns = ((m * t - st) / tasks * 1e9) if (m is not None and st and tasks) else None
                P("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                    w, t, RUNTIME_LABEL.get(rt, rt), fmt_s(m), fmt_r(vs_seq), fmt_r(vs_tbb),
                    fmt_ns(ns), "%.1f" % (rss / 1024) if rss else "-",
                    fmt_r(rss / srss) if (rss and srss) else "-", c.status()))
                if rt != "onetbb" and vs_tbb is not None:
                    chart.append(("%s @%d" % (w, t), rt, vs_tbb))
    P("")

    # Task-count consistency: every runtime must make the same number of tasks
    # (but for speculative work, whose tasks depend on the schedule).
    for w in workloads:
        if w in SPECULATIVE_WORKLOADS:
            continue
        counts = set()
        for (ww, t, rt), c in cells.items():
            if ww == w and c.tasks() is not None:
                counts.add(c.tasks())
        if len(counts) > 1:
            P("**Warning**: `%s` task counts differ between runtimes: %s" % (
                w, ", ".join(str(x) for x in sorted(counts))))
            P("")

    # libsf scheduler counters of the median run.
    sf_rows = []
    for w in workloads:
        for t in threads_all:
            c = cells.get((w, t, "libsf"))
            r = c.median_run() if c else None
            if r and "sf_created" in r:
                sf_rows.append((w, t, r))
    if sf_rows:
        P("libsf scheduler counters (sf_stats of the median run, workload only):")
        P("")
        P("| workload | threads | created | inline | pool | stolen | discarded | "
          "blocked gets | sleeps | peak busy |")
        P("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for w, t, r in sf_rows:
            P("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                w, t, r.get("sf_created"), r.get("sf_inline"), r.get("sf_pool"),
                r.get("sf_stolen"), r.get("sf_discarded"), r.get("sf_blocked"),
                r.get("sf_sleeps"), r.get("sf_peak_busy")))
        P("")

    # Memory.
    mem_b = meta.get("mem_bytes_per_future")
    P("Memory: %s" % (
        "%s bytes per live pending future (%s futures made with sf_do, none got; "
        "RSS from /proc/self/statm before/after; %s)" % (
            mem_b, meta.get("mem_futures", "?"), meta.get("mem_detail", ""))
        if mem_b else "bytes per pending future not measured (%s)" %
        meta.get("mem_error", "libsf not built")))
    P("")

    # Cross-thread gets.
    def xget_table(prefix):
        P("| owner | median us | p90 us |")
        P("|---|---:|---:|")
        for owner in ("busy", "asleep"):
            P("| %s | %s | %s |" % (owner, meta.get("%s%s_median_us" % (prefix, owner), "-"),
                                     meta.get("%s%s_p90_us" % (prefix, owner), "-")))
        P("")

    xb, xa = meta.get("xget_busy_median_us"), meta.get("xget_asleep_median_us")
    if xb or xa:
        P("Cross-thread get (tools/bench/src/xget_sf.c, SF_THREADS=2): a thread gets a future "
          "another thread queued and never got, while that thread computes or sleeps; the get "
          "alone is timed, its task returns at once. Median / p90 of %s gets:" %
          meta.get("xget_busy_rounds", "?"))
        P("")
        xget_table("xget_")
        if meta.get("xget_queued_busy_rounds") or meta.get("xget_queued_asleep_rounds"):
            P("The same with %s futures queued before the first get (`xget_sf queued=20000`): "
              "the consumer gets them all, in order, while their owner computes or sleeps; every "
              "get counted:" % meta.get("xget_queued_busy_rounds", "?"))
            P("")
            xget_table("xget_queued_")

    # The pipeline's failed gets, run by run.
    pipe_cells = [(t, cells[(PIPE_WORKLOAD, t, "libsf")]) for t in threads_all
                  if (PIPE_WORKLOAD, t, "libsf") in cells]
    if pipe_cells:
        P("Pipeline (`pipe`, libsf): plain gets that failed with EDEADLK, run by run. A run "
          "with failed gets completes and counts as a successful run: the item whose get failed "
          "is lost (counted; its later stages pass the failure on) and every other value is "
          "checked exactly.")
        P("")
        P("| threads | median s | runs | failed gets per run | items lost per run |")
        P("|---:|---:|---|---|---|")
        for t, c in pipe_cells:
            P("| %d | %s | %s | %s | %s |" % (
                t, fmt_s(c.median()), c.status(),
                ", ".join(str(x) for x in c.failed_gets()) or "-",
                ", ".join(r.get("pipe_lost", "?") for r in c.ok) or "-"))
        P("")

    # Get latency: medians of the runs' medians, per variant.
    lat = cells.get((LATENCY_WORKLOAD, 2, "libsf"))
    if lat:
        P("Get latency (`latency`, libsf @2): a get of a short task S (~50 us) that the pool's "
          "worker runs, while a long task L is pending in the getter's thread: the get finds S "
          "running and helps by running L on another fiber. Timed: from S's end to the get's "
          "return, the median of a run's rounds (raced rounds, where L had not started when S "
          "ended, left out); *median us* is the median of the runs' medians, *L us* L's median "
          "length in the busy variant. The getter is G, a task the main thread runs inline, in "
          "busy and blocked, and the main thread's own get (plain code) in blocked-plain; in "
          "the blocked variants L gets a future B that another thread runs until L's length "
          "after S's end. busy: bounded by L, which the getter's thread is running and cannot "
          "interrupt (about L us). blocked: L's get parks, and G's get returns once S is done, "
          "at its thread's next scheduling point (far below L us). blocked-plain: a get called "
          "outside any task returns only after the work its thread took on, L included (about "
          "L us; docs/waiting.md, When a get returns). Runs: %s." % lat.status())
        P("")
        P("| variant | median us | per run | L us | raced rounds |")
        P("|---|---:|---|---:|---|")
        lens = [float(r["lat_long_us"]) for r in lat.ok if "lat_long_us" in r]
        for v, what in LATENCY_VARIANTS:
            key = v.replace("-", "_")
            vals = [float(r["lat_%s_us" % key]) for r in lat.ok
                    if float(r.get("lat_%s_us" % key, -1)) >= 0]
            P("| %s (%s) | %s | %s | %s | %s |" % (
                v, what, "%.0f" % statistics.median(vals) if vals else "-",
                ", ".join("%.0f" % x for x in vals) or "-",
                "%.0f" % statistics.median(lens) if lens else "-",
                ", ".join(r.get("lat_%s_raced" % key, "?") for r in lat.ok) or "-"))
        P("")

    # Failures.
    fails = [(k, c) for k, c in sorted(cells.items()) if c.bad]
    if fails:
        P("Failed runs:")
        P("")
        for (w, t, rt), c in fails:
            P("- %s %s @%d threads: %s" % (RUNTIME_LABEL.get(rt, rt), w, t, ", ".join(
                "%s (rc %s)" % b for b in c.bad)))
        P("")
    for k in meta_order:
        if k.startswith("warning"):
            P("**Warning**: %s" % meta[k])
            P("")

    # The machine's own ceiling for 2 threads.
    ceil_rows = [(w, ceiling(w)) for w in SCALING_WORKLOADS if ceiling(w)]
    if ceil_rows:
        P("Machine ceiling at 2 threads: two libsf processes at 1 thread run at once, "
          "sharing nothing, in every repetition; *ceiling* = (the slower one's median time / "
          "2) / libsf @1's median, the best ratio @2/@1 a 2-thread run of the same work can "
          "reach on this machine (0.50 where two busy cores do not slow each other down).")
        P("")
        P("| workload | libsf @1 s | two at once s | ceiling |")
        P("|---|---:|---:|---:|")
        for w, (p, one, r) in ceil_rows:
            P("| %s | %s | %s | %.3f |" % (w, fmt_s(one), fmt_s(p), r))
        P("")

    # Goals.
    P("## Goals")
    P("")
    goals = []

    def goal(name, ok, detail):
        goals.append((name, ok, detail))

    def ratio_str(a, b):
        return "%s s / %s s = %.3f" % (fmt_s(a), fmt_s(b), a / b)

    sf = lambda w, t: med(w, t, "libsf")  # noqa: E731
    tb = lambda w, t: med(w, t, "onetbb")  # noqa: E731

    def missing(*vals):
        return any(v is None for v in vals)

    def complete(w, t, rt):
        c = cells.get((w, t, rt))
        return c is not None and c.ok and not c.bad

    # fib at 2 threads vs oneTBB and both OpenMPs.
    a, b = sf("fib", 2), tb("fib", 2)
    if missing(a, b) or not complete("fib", 2, "libsf"):
        goal("fib @2: libsf <= 0.25 x oneTBB", None, "not measured (libsf %s, oneTBB %s)"
             % (fmt_s(a), fmt_s(b)))
    else:
        goal("fib @2: libsf <= 0.25 x oneTBB", a <= 0.25 * b, "libsf/oneTBB " + ratio_str(a, b))
    for rt in ("gomp", "llomp"):
        o = med("fib", 2, rt)
        name = "fib @2: libsf faster than %s" % RUNTIME_LABEL[rt]
        if missing(a, o) or not complete("fib", 2, "libsf"):
            goal(name, None, "not measured (libsf %s, %s %s)" % (fmt_s(a), rt, fmt_s(o)))
        else:
            goal(name, a < o, "libsf/%s %s" % (rt, ratio_str(a, o)))
    # fib at 1 thread: overhead per task (the table gives every workload's).
    for rt in FORK_JOIN_RUNTIMES:
        name = "fib @1: %s <= 4 ns/task over sequential" % RUNTIME_LABEL[rt]
        a, s = med("fib", 1, rt), seq_time("fib")
        c = cells.get(("fib", 1, rt))
        if missing(a, s) or not c or not c.tasks():
            goal(name, None, "not measured")
            continue
        ns = (a - s) / c.tasks() * 1e9
        goal(name, ns <= 4, "(%s s - %s s) / %d tasks = %.1f ns" % (fmt_s(a), fmt_s(s), c.tasks(), ns))
    # nqueens and throughput at 2 threads vs oneTBB.
    for w in ("nqueens", "tput-a", "tput-b"):
        a, b = sf(w, 2), tb(w, 2)
        name = "%s @2: libsf <= 0.85 x oneTBB" % w
        if missing(a, b) or not complete(w, 2, "libsf"):
            goal(name, None, "not measured (libsf %s, oneTBB %s)" % (fmt_s(a), fmt_s(b)))
        else:
            goal(name, a <= 0.85 * b, "libsf/oneTBB " + ratio_str(a, b))
    a, s = sf("nqueens", 2), seq_time("nqueens")
    if missing(a, s) or not complete("nqueens", 2, "libsf"):
        goal("nqueens @2: libsf within 10% of sequential/2", None, "not measured")
    else:
        goal("nqueens @2: libsf within 10% of sequential/2", a <= 1.1 * s / 2,
             "libsf/(seq/2) = %s s / %s s = %.3f" % (fmt_s(a), fmt_s(s / 2), a / (s / 2)))
    # uneven batch: within 10% of ideal at every thread count.
    s = seq_time("uneven")
    for t in threads_all:
        a = sf("uneven", t)
        name = "uneven @%d: libsf within 10%% of ideal" % t
        if missing(a, s) or not complete("uneven", t, "libsf"):
            goal(name, None, "not measured")
        else:
            goal(name, a <= 1.1 * s / t, "libsf/ideal = %s s / %s s = %.3f"
                 % (fmt_s(a), fmt_s(s / t), a / (s / t)))
    # parallel loops at 2 threads: libsf within 5% of ideal, and within 5% of
    # the best peer flavour of the same loop (both partitioners / schedules).
    for shape in ("for-uneven", "for-skew"):
        s = seq_time(shape)
        for w in (shape, shape + "-s"):
            a = sf(w, 2)
            name = "%s @2: libsf within 5%% of ideal" % w
            if missing(a, s) or not complete(w, 2, "libsf"):
                goal(name, None, "not measured")
            else:
                goal(name, a <= 1.05 * s / 2, "libsf/ideal = %s s / %s s = %.3f"
                     % (fmt_s(a), fmt_s(s / 2), a / (s / 2)))
        a = sf(shape, 2)
        peers = [(med(w, 2, rt), "%s %s" % (RUNTIME_LABEL[rt], w))
                 for w in (shape, shape + "-s") for rt in ("onetbb", "gomp", "llomp")]
        peers = [p for p in peers if p[0] is not None]
        name = "%s @2: libsf sf_for <= 1.05 x the best peer" % shape
        if a is None or not peers:
            goal(name, None, "not measured")
        else:
            best = min(peers)
            goal(name, a <= 1.05 * best[0], "libsf %s s, best %s %s s: %.3f"
                 % (fmt_s(a), best[1], fmt_s(best[0]), a / best[0]))
    # meh: completes everywhere, and <= 1.2 x sequential at 1 thread.
    for w in ("meh-chain", "meh-tree"):
        cs = [(t, cells.get((w, t, "libsf"))) for t in threads_all]
        cs = [(t, c) for t, c in cs if c]
        if not cs:
            goal("%s: libsf completes" % w, None, "not measured")
        else:
            bad = [(t, c.status()) for t, c in cs if c.bad or not c.ok]
            goal("%s: libsf completes" % w, not bad,
                 "all runs ok at %s threads" % ",".join(str(t) for t, _ in cs) if not bad
                 else "; ".join("@%d: %s" % b for b in bad))
        a, s = sf(w, 1), seq_time(w)
        name = "%s @1: libsf <= 1.2 x sequential" % w
        if missing(a, s):
            goal(name, None, "not measured")
        else:
            goal(name, a <= 1.2 * s, "libsf/seq " + ratio_str(a, s))
    # Fine-grained programs at 1 thread: sf_task within 1.2 x the sequential elision.
    for w in FINE_GRAINED_WORKLOADS:
        a, s = med(w, 1, "libsf-task"), seq_time(w)
        name = "%s @1: %s <= 1.2 x sequential" % (w, RUNTIME_LABEL["libsf-task"])
        if missing(a, s) or not complete(w, 1, "libsf-task"):
            goal(name, None, "not measured (%s, seq %s)" % (fmt_s(a), fmt_s(s)))
        else:
            goal(name, a <= 1.2 * s, "sf_task/seq " + ratio_str(a, s))
    # The fork-join runtimes that ran at all (libsf-task may be left out).
    ran_fj = [rt for rt in FORK_JOIN_RUNTIMES if any(k[2] == rt for k in cells)]
    # Workloads with parallelism: libsf at 2 threads <= 0.55 x its own 1 thread.
    for rt in ran_fj:
        lab = RUNTIME_LABEL[rt]
        for w in SCALING_WORKLOADS:
            a, b = med(w, 2, rt), med(w, 1, rt)
            name = "%s @2: %s <= 0.55 x %s @1" % (w, lab, lab)
            if missing(a, b) or not complete(w, 2, rt) or not complete(w, 1, rt):
                goal(name, None, "not measured (@2 %s, @1 %s)" % (fmt_s(a), fmt_s(b)))
            else:
                cl = ceiling(w)
                goal(name, a <= 0.55 * b, "@2/@1 " + ratio_str(a, b) +
                     ("; machine ceiling %.3f" % cl[2] if cl else ""))
    # UTS trees at 2 threads: against sequential and oneTBB.
    for rt in ran_fj:
        lab = RUNTIME_LABEL[rt]
        for w in ("uts-t1", "uts-t3"):
            a, s, b = med(w, 2, rt), seq_time(w), tb(w, 2)
            name = "%s @2: %s <= 0.65 x sequential" % (w, lab)
            if missing(a, s) or not complete(w, 2, rt):
                goal(name, None, "not measured (%s, seq %s)" % (fmt_s(a), fmt_s(s)))
            else:
                goal(name, a <= 0.65 * s, "%s/seq %s" % (lab, ratio_str(a, s)))
            name = "%s @2: %s <= 0.25 x oneTBB" % (w, lab)
            if missing(a, b) or not complete(w, 2, rt):
                goal(name, None, "not measured (%s, oneTBB %s)" % (fmt_s(a), fmt_s(b)))
            else:
                goal(name, a <= 0.25 * b, "%s/oneTBB %s" % (lab, ratio_str(a, b)))
    # the pipeline: no plain get fails.
    name = "pipe: 0 failed gets"
    if not pipe_cells:
        goal(name, None, "not measured")
    else:
        parts, total, bad = [], 0, []
        for t, c in pipe_cells:
            fg = c.failed_gets()
            total += sum(fg)
            parts.append("@%d: %d in %d of %d runs" % (t, sum(fg), sum(1 for x in fg if x),
                                                       len(fg)))
            if c.bad or not c.ok:
                bad.append("@%d: %s" % (t, c.status()))
        goal(name, total == 0 and not bad, "; ".join(parts) +
             ("; failed runs %s" % ", ".join(bad) if bad else ""))
    # memory per pending future.
    if mem_b:
        goal("<= 64 bytes per pending future", float(mem_b) <= 64, "%s bytes" % mem_b)
    else:
        goal("<= 64 bytes per pending future", None, "not measured")
    # cross-thread get with the owner busy.
    xb = meta.get("xget_busy_median_us")
    if xb:
        goal("cross-thread get, owner busy: <= 1 us", float(xb) <= 1.0, "median %s us" % xb)
    else:
        goal("cross-thread get, owner busy: <= 1 us", None, "not measured")
    xq = meta.get("xget_queued_busy_median_us")
    qname = "cross-thread get of 20,000 futures queued first, owner busy: <= 1 us"
    if xq:
        goal(qname, float(xq) <= 1.0, "median %s us" % xq)
    else:
        goal(qname, None, "not measured")
    # peak RSS vs sequential, for both APIs (libsf-task runs no loops).
    for w in workloads:
        if w == LATENCY_WORKLOAD:  # no sequential program to compare with
            continue
        srss = seq_rss(w)
        worst = None
        for t in threads_all:
            for rt in FORK_JOIN_RUNTIMES:
                c = cells.get((w, t, rt))
                r = c.median("maxrss_kb") if c else None
                if r is not None and (worst is None or r > worst[1]):
                    worst = (t, r, RUNTIME_LABEL[rt])
        name = "%s: libsf peak RSS <= 2 x sequential + 16 MB" % w
        if worst is None or srss is None:
            goal(name, None, "not measured")
        else:
            limit = 2 * srss + 16 * 1024
            goal(name, worst[1] <= limit, "worst %.1f MB (%s @%d threads), limit %.1f MB "
                 "(sequential %.1f MB)" % (worst[1] / 1024, worst[2], worst[0], limit / 1024,
                                           srss / 1024))

    P("| goal | result | numbers |")
    P("|---|---|---|")
    for name, ok, detail in goals:
        P("| %s | %s | %s |" % (name, "MET" if ok else ("MISSED" if ok is False else "NOT MEASURED"),
                                detail))
    met = sum(1 for g in goals if g[1])
    missed = sum(1 for g in goals if g[1] is False)
    unk = sum(1 for g in goals if g[1] is None)
    P("")
    P("%d met, %d missed, %d not measured." % (met, missed, unk))
    P("")
    P("Chart of the ratios to oneTBB: `%s` next to this file." % os.path.basename(svg_path))
    # A developer's explanation of the misses, kept beside the results:
    # misses.md for latest.md, NAME-misses.md for a run named NAME (run
    # --name), so that one machine's explanations never land under another's.
    name = os.path.basename(md_path)[:-len(".md")] if md_path.endswith(".md") else md_path
    misses = os.path.join(os.path.dirname(md_path),
                          "misses.md" if name == "latest" else name + "-misses.md")
    if os.path.exists(misses):
        P("")
        P("## Why the misses")
        P("")
        with open(misses) as f:
            out.extend(f.read().rstrip("\n").split("\n"))

    text = "\n".join(out) + "\n"
    with open(md_path, "w") as f:
        f.write(text)
    sys.stdout.write(text)
    write_chart(svg_path, chart, meta)


def write_chart(path, chart, meta):
    """Horizontal bars of time / oneTBB time on a log2 axis, one group of
    bars per workload and thread count; 1.0 = oneTBB, left of it = faster."""
    try:
        import matplotlib
    except ImportError:
        sys.exit("report.py: %s cannot import matplotlib: %s not drawn (Debian's "
                 "/usr/bin/python3 with python3-matplotlib can)" % (sys.executable, path))
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FixedLocator, NullLocator

    # The same file from the same data: no date in it, fixed element ids,
    # text kept as text.
    matplotlib.rcParams["svg.hashsalt"] = "libsf-bench"
    matplotlib.rcParams["svg.fonttype"] = "none"
    matplotlib.rcParams["font.size"] = 8

    vals = [v for _, _, v in chart if v > 0]
    lo_e = max(math.floor(math.log2(min([0.25] + vals))), -8)
    hi_e = min(math.ceil(math.log2(max([4.0] + vals))), 8)
    lo, hi = 2.0 ** lo_e, 2.0 ** hi_e

    # One row per bar, top-down, with a gap between groups; a group's label
    # sits at the middle of its bars.
    ys, mids, y = [], {}, 0.0
    for i, (label, _, _) in enumerate(chart):
        if i and chart[i - 1][0] != label:
            y += 0.6
        ys.append(y)
        mids.setdefault(label, []).append(y)
        y += 1

    fig, ax = plt.subplots(figsize=(8.2, 0.6 + 0.15 * max(y, 1)))
    for (label, rt, v), yy in zip(chart, ys):
        vc = min(max(v, lo), hi)
        ax.barh(yy, vc - 1.0, left=1.0, height=0.85, color=COLORS.get(rt, "#999999"),
                label=RUNTIME_LABEL.get(rt, rt))
        ax.text(max(vc, 1.0) * 2 ** ((hi_e - lo_e) / 150), yy, "%.2f" % v, va="center",
                fontsize=6.5, color="#222222")
    ax.set_xscale("log", base=2)
    ax.set_xlim(lo, hi)
    ticks = [2.0 ** e for e in range(lo_e, hi_e + 1)]
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticklabels(["%g" % t if t >= 1 else "1/%d" % round(1 / t) for t in ticks])
    ax.grid(axis="x", color="#dddddd", linewidth=0.8)
    ax.set_axisbelow(True)
    ax.axvline(1.0, color="black", linewidth=1.2)
    ax.set_yticks([sum(v) / len(v) for v in mids.values()])
    ax.set_yticklabels(list(mids))
    ax.tick_params(axis="y", length=0)
    ax.set_ylim(max(y, 1) - 0.4, -0.6)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    # Titles a fixed distance above the bars, whatever the figure's height.
    ax.annotate("libsf and OpenMP: time / oneTBB time (log scale; left of 1 = faster than "
                "oneTBB)", xy=(0, 1), xycoords="axes fraction", xytext=(0, 20),
                textcoords="offset points", fontsize=10, fontweight="bold")
    ax.annotate("%s; %s; %s reps" % (meta.get("date", ""), meta.get("cpu", ""),
                                     meta.get("reps", "")), xy=(0, 1), xycoords="axes fraction",
                xytext=(0, 6), textcoords="offset points", color="#555555")
    # One legend entry per runtime drawn, in the report's order.
    handles = dict(zip(*reversed(ax.get_legend_handles_labels())))
    order = [RUNTIME_LABEL[rt] for rt in RUNTIME_ORDER if RUNTIME_LABEL[rt] in handles]
    ax.legend([handles[k] for k in order], order, loc="upper center",
              bbox_to_anchor=(0.5, -0.6 / max(y, 1) - 0.02), ncol=len(order), frameon=False)
    fig.savefig(path, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)


if __name__ == "__main__":
    main()
