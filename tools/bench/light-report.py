#!/usr/bin/env python3
"""light-report.py RAW OUT.md - the table of tools/bench/light-run.

RAW holds `meta<TAB>key<TAB>value` lines and `run<TAB>key=value...` lines,
one a run (light-run's one_run). Writes OUT.md: the medians, ns per task,
the ratios and issue #35's targets, each PASS or MISS.
"""
import statistics
import sys

PROGRAMS = ["seq", "libsf", "libsf-task", "libsf-light", "lace"]
LABEL = {
    "seq": "sequential",
    "libsf": "libsf `sf_do`/`sf_get`",
    "libsf-task": "libsf `sf_task_do`/`sf_task_get`",
    "libsf-light": "libsf light `SF_SPAWN`/`SF_SYNC`",
    "lace": "Lace `SPAWN`/`SYNC`",
}
LIGHT, LACE, SEQ = "libsf-light", "lace", "seq"


def load(path):
    meta, runs = {}, []
    with open(path) as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if parts[0] == "meta" and len(parts) >= 3:
                meta.setdefault(parts[1], []).append(parts[2])
            elif parts[0] == "run":
                runs.append(dict(p.split("=", 1) for p in parts[1:] if "=" in p))
    return meta, runs


def main():
    raw, out = sys.argv[1], sys.argv[2]
    meta, runs = load(raw)
    m1 = lambda k, d="": meta.get(k, [d])[0]  # noqa: E731
    cells = {}
    order = []
    for r in runs:
        key = (r["wl"], int(r["threads"]), r["rt"])
        cells.setdefault(key, []).append(r)
        if r["wl"] not in order:
            order.append(r["wl"])
    threads = [int(t) for t in m1("threads", "1 2").split()]

    def ok(key):
        return [r for r in cells.get(key, []) if r.get("status") == "ok"]

    def med(w, t, rt):
        v = [float(r["seconds"]) for r in ok((w, t, rt))]
        return statistics.median(v) if v else None

    def tasks(w, t, rt):
        """The tasks of the (lower) median run: knapsack's depend on the schedule."""
        v = sorted(ok((w, t, rt)), key=lambda r: float(r["seconds"]))
        return int(v[(len(v) - 1) // 2]["tasks"]) if v else None

    def ns_task(w, t, rt):
        s, q, n = med(w, t, rt), med(w, 1, SEQ), tasks(w, t, rt)
        if s is None or q is None or not n:
            return None
        return (s * t - q) * 1e9 / n

    def ratio(a, b):
        return a / b if a is not None and b else None

    lace_runs = [r for r in runs if r["rt"] == LACE and "lace_commit" in r]
    L = []
    P = L.append
    P("# Light tasks against Lace (`light-run`)")
    P("")
    P("- date: %s; libsf commit %s" % (m1("date"), m1("commit")))
    P("- build: %s" % m1("build"))
    P("- machine: %s; %s" % (m1("machine"), m1("load")))
    if lace_runs:
        r = lace_runs[0]
        P("- Lace: version %s, commit %s (`bench_lace`: Lace's workers = threads; the "
          "main thread waits in `RUN`)" % (r.get("lace_version"), r.get("lace_commit")))
    for why in meta.get("not_run", []):
        P("- NOT RUN: %s" % why)
    P("- %s repetitions, programs interleaved within each; %s of runs"
      % (m1("reps"), m1("elapsed")))
    P("- sizes (`tools/bench/run`'s full ones): %s" % "; ".join(
        "`%s`" % m1("size_" + w) for w in order))
    if float(m1("foreign_pct", "0")) > 5:
        P("")
        P("**Warning**: other processes took %s%% of the CPUs during the runs: the times "
          "are inflated and noisy (compare *min s*)." % m1("foreign_pct"))
    P("")
    P("*median s*: the median wall time of the workload inside its process (runtime "
      "started and warmed up first). *ns/task*: (median s x threads - sequential "
      "median s) / tasks, the core time a task costs beyond the work, as in "
      "`results/latest.md`; knapsack's tasks are its median run's own. *runs*: "
      "successful / attempted; *min s*: the fastest run, the least disturbed by other "
      "processes. The ratios and targets use the medians.")
    P("")
    P("| workload | threads | program | median s | ns/task | min s | runs |")
    P("|---|---:|---|---:|---:|---:|---|")
    for w in order:
        rows = [(1, SEQ)] + [(t, rt) for t in threads for rt in PROGRAMS[1:]]
        for t, rt in rows:
            c = cells.get((w, t, rt))
            if not c:
                continue
            s = med(w, t, rt)
            n = ns_task(w, t, rt) if rt != SEQ else None
            lo = min((float(r["seconds"]) for r in ok((w, t, rt))), default=None)
            P("| %s | %d | %s | %s | %s | %s | %d/%d |" % (
                w, t, LABEL[rt], "%.4f" % s if s is not None else "-",
                "%.1f" % n if n is not None else "-", "%.4f" % lo if lo is not None else "-",
                len(ok((w, t, rt))), len(c)))
    P("")
    P("Ratios of median times (*light* = libsf light tasks; *sf_do*, *sf_task* = libsf's "
      "other APIs; lower is better for light in the first two):")
    P("")
    P("| workload | threads | light/Lace | light/sequential | sf_do/light | sf_task/light |")
    P("|---|---:|---:|---:|---:|---:|")
    f2 = lambda x: "%.2f" % x if x is not None else "-"  # noqa: E731
    for w in order:
        for t in threads:
            li = med(w, t, LIGHT)
            P("| %s | %d | %s | %s | %s | %s |" % (
                w, t, f2(ratio(li, med(w, t, LACE))), f2(ratio(li, med(w, 1, SEQ))),
                f2(ratio(med(w, t, "libsf"), li)), f2(ratio(med(w, t, "libsf-task"), li))))
    P("")

    # Issue #35's targets.
    goals = []

    def goal(name, w, t, value, limit, unit=""):
        if value is None:
            goals.append((name, w, t, "-", "NOT MEASURED"))
        else:
            goals.append((name, w, t, ("%.2f" % value) + unit, "PASS" if value <= limit else "MISS"))

    for w in order:
        for t in threads:
            if t in (1, 2):
                goal("light/Lace <= 1.5", w, t, ratio(med(w, t, LIGHT), med(w, t, LACE)), 1.5)
    if 1 in threads:
        for w in order:
            goal("light <= 1.3 x sequential", w, 1, ratio(med(w, 1, LIGHT), med(w, 1, SEQ)), 1.3)
    if 2 in threads:
        for w in ("uts-t1", "uts-t3"):
            if w in order:
                goal("light <= 0.65 x sequential", w, 2,
                     ratio(med(w, 2, LIGHT), med(w, 1, SEQ)), 0.65)
    if "fib" in order:
        for t in threads:
            if t in (1, 2):
                goal("light <= 2 ns a task", "fib", t, ns_task("fib", t, LIGHT), 2.0, " ns")
    passed = sum(1 for g in goals if g[4] == "PASS")
    P("Targets (issue #35): %d of %d PASS." % (passed, len(goals)))
    P("")
    P("| target | workload | threads | value | result |")
    P("|---|---|---:|---:|---|")
    for g in goals:
        P("| %s | %s | %d | %s | %s |" % g)
    with open(out, "w") as f:
        f.write("\n".join(L) + "\n")


if __name__ == "__main__":
    main()
