#!/bin/sh
# test.sh - checks sftrace against a hand-written trace whose summary,
# sorted order and schedule summary were worked out by hand
# (sample.expected), and against broken traces that must be rejected with
# the right line numbers; checks --counts (sample.counts, counted by hand)
# and --untimed on the same trace; and checks that the tables of
# docs/trace-format.md are exactly what sftrace --events prints from
# runtime/sched/trace_format.h. The sample parks: the main thread's get parks its
# own stack and steals on fiber 1, and the worker's get parks a fiber with
# two tasks open on it, helps on fiber 1 and goes back to sleep on fiber 0
# (the busy time counts the parked task once).
#
# The Chrome JSON trace: the schedule summary of a hand-written one
# (sample.json, summary worked out by hand in sample.json.expected; its
# worker parks as the text sample's does, with the helped task on a fiber
# track of its own), the same without its closing bracket, errors for bad
# JSON (json-c's reason, at the byte) and for text-only options.
#
# Waits (waits.trace, waits.json): a task asleep in a get and one that naps
# (a wait of no one task), timeouts, promises set from a task and from
# outside: busy and self time without the sleeps, the marks of the picture
# (waits.expected, waits.json.expected).
#
# The picture: the schedule model of both samples as --json writes it
# (sample.schedule, sample.json.schedule: every slice with its depth and
# fiber, the parked stretch, the park and resume marks, worked out by hand);
# --png without matplotlib (one line, exit 1, no file); with it, a PNG of
# each format of trace, an SVG with a row per thread and the legend, and a
# PDF (SKIP without matplotlib; tools/deps installs it).
#
# Run by `make check` from the build directory; automake exports srcdir, so
# the data is found from a VPATH build too. SFTRACE overrides the binary.
# Everything goes through stdin so that no path appears in the output.
set -u
srcdir=${srcdir:-.}
sftrace=${SFTRACE:-./tools/sftrace/sftrace}
dir=$srcdir/tools/sftrace
docs=$srcdir/docs/trace-format.md
out=$(mktemp "${TMPDIR:-/tmp}/sftrace-test.XXXXXX") || exit 99
want=$(mktemp "${TMPDIR:-/tmp}/sftrace-test.XXXXXX") || exit 99
trap 'rm -f "$out" "$want"' EXIT

if [ ! -x "$sftrace" ]; then
    echo "test.sh: $sftrace is not built" >&2
    exit 99 # a hard error, not a test failure
fi

# run TITLE ARGS...: one section of output, stderr and exit status included
run() {
    title=$1
    shift
    echo "== $title"
    "$sftrace" "$@" 2>&1
    echo "exit $?"
}

# A trace with a malformed line of every kind sftrace knows; it reports the
# first ten and gives up.
malformed() {
    printf 'Thread\tQueue\tAsleep\tTime\tMessage...\n'
    printf '0\t0\t0\t0.000\tInit\tthreads=1\tworkers=0\n'
    printf '\n'
    printf '0\t0\t0\t1.5\tIdle\n'
    printf '0\t0\t0\t1.500\tFoo\n'
    printf '0\t0\t0\t1.500\tFStart\t0.1\tfast\n'
    printf '0\t0\t0\t1.500\tFStart\t0.1\n'
    printf '01\t0\t0\t1.500\tIdle\n'
    printf '0\t0\t0\t1.500\tDo\t0.x\n'
    printf '0\t0\t0\t1.500\tIdle\t\n'
    printf '0\t0\t0\t1.500\tShutdown\tdrained=-1\n'
    printf '0\t0\t0\t1.500\tIdle\r\n'
    printf '0\t0\t0\t1.500\tTake\t0.1\t\n'
}

# Well-formed lines that contradict each other.
inconsistent() {
    printf 'Thread\tQueue\tAsleep\tTime\tMessage...\n'
    printf '0\t0\t0\t0.000\tInit\tthreads=2\tworkers=2\n'
    printf '0\t1\t0\t0.010\tDo\t0.1\n'
    printf '0\t1\t0\t0.011\tDo\t0.1\n'
    printf '1\t0\t0\t0.009\tTake\t0.1\t0\n'
    printf '1\t0\t0\t0.012\tFStart\t0.2\tpool\n'
    printf '1\t0\t0\t0.013\tFDone\t0.1\n'
    printf '0\t0\t0\t0.014\tGStart\t0.1\n'
    printf '0\t0\t0\t0.015\tSleep\t0.1\n'
    printf '0\t0\t0\t0.016\tGet\t0.1\n'
    printf '0\t1\t0\t0.020\tShutdown\tdrained=1\n'
    printf '1\t0\t0\t0.008\tIdle\n'
}

{
    run "summary" <"$dir/sample.trace"
    run "--sorted" --sorted <"$dir/sample.trace"
    run "--check" --check - <"$dir/sample.trace"
    run "--schedule" --schedule <"$dir/sample.trace"
    run "header only" <<EOH
$(printf 'Thread\tQueue\tAsleep\tTime\tMessage...')
EOH
    run "empty input" </dev/null
    malformed | run "malformed"
    inconsistent | run "inconsistent --check" --check
    inconsistent | run "inconsistent, summary"
    run "bad option" --frobnicate </dev/null
} >"$out"

# TAP: one test point per comparison; the driver counts them (Makefile.am).
echo "1..27"
n=0
# point TITLE WANT GOT: ok if the files are equal, else not ok with the diff.
point() {
    n=$((n + 1))
    if diff -u "$2" "$3" >"$want.diff"; then
        echo "ok $n - $1"
    else
        echo "not ok $n - $1"
        sed 's/^/# /' "$want.diff"
    fi
}

# point_ok TITLE COMMAND...: ok when the command succeeds.
point_ok() {
    n=$((n + 1))
    title=$1
    shift
    if "$@" >"$want.diff" 2>&1; then
        echo "ok $n - $title"
    else
        echo "not ok $n - $title"
        sed 's/^/# /' "$want.diff"
    fi
}

point "summary, --sorted, --check, --schedule and errors match sample.expected" \
    "$dir/sample.expected" "$out"

"$sftrace" --counts <"$dir/sample.trace" >"$out" 2>&1
point "--counts matches sample.counts" "$dir/sample.counts" "$out"

# --untimed is --sorted less its fourth column, Time
"$sftrace" --sorted <"$dir/sample.trace" | cut -f1-3,5- >"$want"
"$sftrace" --untimed <"$dir/sample.trace" >"$out" 2>&1
point "--untimed is --sorted without Time" "$want" "$out"

# The docs' tables, between the two marker lines, are --events byte for byte;
# when they differ, replace them with the output of sftrace --events.
sed -n '/^<!-- begin sftrace events table -->$/,/^<!-- end sftrace events table -->$/p' \
    "$docs" | sed '1d;$d' >"$want"
"$sftrace" --events >"$out" 2>&1
point "the tables of docs/trace-format.md are sftrace --events" "$want" "$out"

# ---- the Chrome JSON trace ----
"$sftrace" <"$dir/sample.json" >"$out" 2>&1
point "the JSON summary matches sample.json.expected" "$dir/sample.json.expected" "$out"

sed '$d' "$dir/sample.json" | "$sftrace" >"$out" 2>&1
point "a JSON trace without its closing ] reads the same" "$dir/sample.json.expected" "$out"

{
    printf '[{"ph":"B","tid":0,"ts":1,}]' | run "trailing comma"
    printf '[{"ph":"E","tid":0,"ts":1}]' | run "E without B"
    printf '[{"ph":"i","tid":0,"ts":01}]' | run "leading zero"
    printf '[{"ph":"i","tid":0,"ts":1}] x' | run "text after the array"
    printf '[{"ph":"i","tid":0,"ts":1}\n,{"ph":"i"' | run "cut inside an event"
    printf '[{"ph":"i","tid":8519680,"ts":1}]' | run "fiber 65"
    run "--sorted on JSON" --sorted <"$dir/sample.json"
    run "--check on JSON" --check <"$dir/sample.json"
    printf '[{"ph":"B","tid":0,"ts":1,"name":"f","cat":"task","args":{"task":"0.0"}}]' |
        run "a task slice of no kind"
    printf '[{"ph":"B","tid":0,"ts":1,"name":"f","cat":"task","args":{"task":"0.0","kind":"x"}}]' |
        run "a named task slice of an unknown kind"
    printf '[{"ph":"B","tid":0,"ts":1,"name":"","cat":"task","args":{"task":"0.0","kind":"pool"}}]' |
        run "a task slice without a name"
} >"$out"
cat >"$want" <<'EOW'
== trailing comma
sftrace: <stdin>: byte 26: unexpected character
exit 1
== E without B
sftrace: <stdin>: byte 26: an E event with no open slice on its track
exit 1
== leading zero
sftrace: <stdin>: byte 26: number expected
exit 1
== text after the array
sftrace: <stdin>: byte 28: text after the closing ']'
exit 1
== cut inside an event
sftrace: <stdin>: byte 37: the input ends inside an event
exit 1
== fiber 65
sftrace: <stdin>: byte 32: event 1: tid 8519680 is not a track id: fiber << 17 | thread, fiber 0 to 64, thread 0 to 65535
exit 1
== --sorted on JSON
sftrace: <stdin> is a Chrome JSON trace: only --schedule (or --summary), --profile, --json and the pictures read it
exit 2
== --check on JSON
sftrace: <stdin> is a Chrome JSON trace: only --schedule (or --summary), --profile, --json and the pictures read it
exit 2
== a task slice of no kind
sftrace: <stdin>: byte 72: a task slice of an unknown kind
exit 1
== a named task slice of an unknown kind
sftrace: <stdin>: byte 83: a task slice of an unknown kind
exit 1
== a task slice without a name
sftrace: <stdin>: byte 85: a task slice without a name
exit 1
EOW
point "bad JSON (json-c's reason) and text-only options are refused with the byte" "$want" "$out"

# Every number the model takes from a JSON event is range-checked before it
# becomes an integer: json-c reads NaN, Infinity and 1e400 (infinity) even in
# strict mode and saturates integers past 64 bits, and a cast of any of them
# (or of -1 to an unsigned) is undefined. Each is an error that names the
# event and the field, with the value as the trace spells it; none is read
# as thread 0 or a default.
init() { printf '[{"ph":"i","tid":0,"ts":1,"name":"init","args":{"threads":%s}}]' "$1"; }
inst() { printf '[{"ph":"i","tid":0,"ts":1,"name":"x"}\n,{"ph":"i","tid":%s,"ts":%s,"name":"x"}]' "$1" "$2"; }
{
    init -1 | run "threads -1"
    init 1e300 | run "threads 1e300"
    init 0 | run "threads 0"
    init 99999999999999999999 | run "threads past 64 bits"
    inst NaN 2 | run "tid NaN"
    inst 1e300 2 | run "tid 1e300"
    inst -1 2 | run "tid -1"
    inst 2.5 2 | run "tid 2.5"
    inst 65536 2 | run "thread 65536"
    inst 0 NaN | run "ts NaN"
    inst 0 Infinity | run "ts Infinity"
    inst 0 -Infinity | run "ts -Infinity"
    inst 0 1e400 | run "ts 1e400"
    inst 0 -1 | run "ts -1"
    printf '[{"ph":"B","tid":0,"ts":1,"name":"f","cat":"task","args":{"task":"-1.2","kind":"pool"}}]' |
        run "task -1.2"
    printf '[{"ph":"B","tid":0,"ts":1,"name":"f","cat":"task","args":{"task":"0.140737488355328","kind":"pool"}}]' |
        run "task sequence 2^47"
} >"$out"
cat >"$want" <<'EOW'
== threads -1
sftrace: <stdin>: byte 62: event 1: args.threads -1 is not a thread count 1 to 1024
exit 1
== threads 1e300
sftrace: <stdin>: byte 65: event 1: args.threads 1e300 is not a thread count 1 to 1024
exit 1
== threads 0
sftrace: <stdin>: byte 61: event 1: args.threads 0 is not a thread count 1 to 1024
exit 1
== threads past 64 bits
sftrace: <stdin>: byte 80: event 1: args.threads 18446744073709551615 is not a thread count 1 to 1024
exit 1
== tid NaN
sftrace: <stdin>: byte 77: event 2: tid NaN is not a track id: fiber << 17 | thread, fiber 0 to 64, thread 0 to 65535
exit 1
== tid 1e300
sftrace: <stdin>: byte 79: event 2: tid 1e300 is not a track id: fiber << 17 | thread, fiber 0 to 64, thread 0 to 65535
exit 1
== tid -1
sftrace: <stdin>: byte 76: event 2: tid -1 is not a track id: fiber << 17 | thread, fiber 0 to 64, thread 0 to 65535
exit 1
== tid 2.5
sftrace: <stdin>: byte 77: event 2: tid 2.5 is not a track id: fiber << 17 | thread, fiber 0 to 64, thread 0 to 65535
exit 1
== thread 65536
sftrace: <stdin>: byte 79: event 2: tid 65536 is not a track id: fiber << 17 | thread, fiber 0 to 64, thread 0 to 65535
exit 1
== ts NaN
sftrace: <stdin>: byte 77: event 2: ts NaN is not a time in microseconds 0 to 1e14 (about 3 years)
exit 1
== ts Infinity
sftrace: <stdin>: byte 82: event 2: ts Infinity is not a time in microseconds 0 to 1e14 (about 3 years)
exit 1
== ts -Infinity
sftrace: <stdin>: byte 83: event 2: ts -Infinity is not a time in microseconds 0 to 1e14 (about 3 years)
exit 1
== ts 1e400
sftrace: <stdin>: byte 79: event 2: ts 1e400 is not a time in microseconds 0 to 1e14 (about 3 years)
exit 1
== ts -1
sftrace: <stdin>: byte 76: event 2: ts -1 is not a time in microseconds 0 to 1e14 (about 3 years)
exit 1
== task -1.2
sftrace: <stdin>: byte 87: event 1: args.task "-1.2" is not a task name T.N (T 0 to 131071, N below 2^47)
exit 1
== task sequence 2^47
sftrace: <stdin>: byte 100: event 1: args.task "0.140737488355328" is not a task name T.N (T 0 to 131071, N below 2^47)
exit 1
EOW
point "out-of-range and non-finite JSON numbers are refused, naming the event and field" "$want" "$out"

# Thread ids that ascend, 0 to 65535, one event each, in both formats: the
# per-thread arrays grow by doubling (they grew by one thread at a time: a
# copy per thread, minutes under ASan). Made here, about 4 MB in all.
many_json() {
    awk 'BEGIN { print "["; for (i = 0; i < 65536; i++)
        printf "%s{\"ph\":\"i\",\"tid\":%d,\"ts\":%d,\"name\":\"idle\"}\n", i ? "," : "", i, i; print "]" }' |
        "$sftrace" >"$want.many" 2>&1 &&
        grep -qx 'trace: <stdin>, 65536 threads, span 0.000 .. 65.535 ms (65.535 ms)' "$want.many" &&
        grep -q '^ 65535 thread 65535 ' "$want.many" || { head -3 "$want.many"; return 1; }
}
point_ok "65,536 ascending thread ids of a JSON trace are read" many_json
many_text() {
    { printf 'Thread\tQueue\tAsleep\tTime\tMessage...\n'
      awk 'BEGIN { for (i = 0; i < 65536; i++) printf "%d\t0\t0\t%d.%03d\tIdle\n", i, i / 1000, i % 1000 }'
    } | "$sftrace" --schedule >"$want.many" 2>&1 &&
        grep -q '^trace: <stdin>, 65536 threads, span 0.000 .. 65.535 ms' "$want.many" &&
        grep -q '^ 65535 worker 65535 ' "$want.many" || { head -3 "$want.many"; return 1; }
}
point_ok "65,536 ascending thread ids of a text trace are read" many_text

# --json is JSON: no NaN or Infinity (json-c would write them for a
# non-finite double), here on both samples and on a trace at the edge of
# the times taken (0 and 1e14 us, the largest spans and sums). Each line is
# parsed by python's json, which refuses NaN with parse_constant, when a
# python3 is there; the token check holds without it.
json_valid() {
    {
        "$sftrace" --json - <"$dir/sample.trace" && "$sftrace" --json - <"$dir/sample.json" &&
            printf '[{"ph":"B","tid":0,"ts":0,"cat":"task","name":"f","args":{"task":"0.0","kind":"pool"}}\n,{"ph":"i","tid":1,"ts":0,"name":"idle"}\n,{"ph":"E","tid":0,"ts":1e14}]' |
            "$sftrace" --json -
    } >"$want.json" || return 1
    [ "$(wc -l <"$want.json")" -gt 40 ] || { echo "too few lines"; return 1; }
    ! grep -nE '[:,[] *-?(NaN|Infinity|nan|inf)' "$want.json" || return 1
    if command -v python3 >/dev/null; then
        python3 -c 'import json, sys
def bad(c): raise ValueError(c)
for n, l in enumerate(sys.stdin, 1):
    try: json.loads(l, parse_constant=bad)
    except ValueError as e: sys.exit("line %d: %s" % (n, e))' <"$want.json" || return 1
    fi
}
point_ok "--json writes valid JSON, no NaN or Infinity" json_valid
rm -f "$want.many" "$want.json"

# ---- the profile by function ----
# Worked out by hand from the samples' slices (sample.json names them fft,
# mix and synth; the text trace names no function). Span 125 us; the JSON
# trace has 3 threads (375 us of thread time), the text trace 2 (250 us).
# JSON: fft = main's 0.1 (25-60) with its nested fft 0.3 (33-50), counted
# once in total (35), self 35-17 = 18 and 17; the worker's 1.0 (34-80):
# total 46, self 46 less its fiber's parked 41-51 and its get's sleep 52-61
# = 27: 3 tasks, total 81, self 62 (16.5%). mix = the worker's 0.0
# (23-90), self 67-46 = 21, and main's drained 0.4 (101-120), 19: 2 tasks,
# total 86, self 40 (10.7%). synth = the worker's fiber-1 1.1 (42-50) and
# thread 2's 0.5 (40-48): 2 tasks, 16, 16 (4.3%). All: 7 tasks, self 118
# (31.5%). The discard instant at 121 and main's sleeps from 62 on, in no
# task, change nothing. Text: the same slices less thread 2's, main's 0.1
# and 0.3 on its fiber 1, all one unnamed function: 6 tasks, total
# 35+19+67+8 = 129 (nested ones inside), self 18+17+19+21+27+8 = 110
# (44.0%).
"$sftrace" --profile <"$dir/sample.json" >"$out" 2>&1
point "--profile of the JSON trace matches sample.json.profile" "$dir/sample.json.profile" "$out"
"$sftrace" --profile <"$dir/sample.trace" >"$out" 2>&1
point "--profile of the text trace matches sample.profile" "$dir/sample.profile" "$out"

# ---- waits: sleeps inside tasks, naps, promises set, timeouts ----
# waits.trace and waits.json, worked out by hand (waits.expected,
# waits.json.expected): main runs task 0.0 (15-310, "stage" in the JSON),
# whose get of promise p sleeps 18-301 until a plain thread sets p at 300
# (Thread 131071: a mark of no thread, no row); the worker runs 0.1
# (21-140, "reader"), which naps 30-130 (sf_wait_any, say). Busy and self
# time leave the sleeps out: main 295-283 = 12, the worker 119-100 = 19,
# 31 in all (3.9% of 2 x 400). Then main's timed get of promise q sleeps
# 322-332 and times out at 333, a batch wait naps 340-350 and times out at
# 351 (Batch Timeout), and main sets q at 360: asleep 283+10+10 = 303, 2
# timeouts and 1 set on main's row, 1 set from outside.
{
    run "--check" --check - <"$dir/waits.trace"
    run "summary" <"$dir/waits.trace"
    run "--schedule" --schedule <"$dir/waits.trace"
    run "--profile" --profile <"$dir/waits.trace"
    run "--json" --json - <"$dir/waits.trace"
} >"$out" 2>&1
point "sleeps, naps, sets and timeouts of waits.trace match waits.expected" \
    "$dir/waits.expected" "$out"
{
    run "--schedule" <"$dir/waits.json"
    run "--profile" --profile <"$dir/waits.json"
    run "--json" --json - <"$dir/waits.json"
} >"$out" 2>&1
point "sleeps, naps, sets and timeouts of waits.json match waits.json.expected" \
    "$dir/waits.json.expected" "$out"

# ---- the schedule as JSON Lines, and the picture drawn from it ----
# The model of both samples, line by line, as worked out by hand from their
# events: slices with their depth on their fiber, the worker's parked
# stretch (fiber 0 with two tasks open while fiber 1 helps), idle spells to
# the next event, park and resume marks.
"$sftrace" --json - <"$dir/sample.trace" >"$out" 2>&1
point "--json of the text trace matches sample.schedule" "$dir/sample.schedule" "$out"
"$sftrace" --json - <"$dir/sample.json" >"$out" 2>&1
point "--json of the JSON trace matches sample.json.schedule" "$dir/sample.json.schedule" "$out"

# A cancelled tree (cancelled.trace): a worker takes a task and finds it
# cancelled (its Discard answers the Take), the owner's gets discard the
# others, and a Get of one already discarded sees it done; --check accepts
# it. A Take answered by the Discard of another task is still a problem.
cancelled_ok() {
    "$sftrace" --check - <"$dir/cancelled.trace"
}
point_ok "a cancelled tree's trace passes --check" cancelled_ok
cancelled_late_discard() { # the worker idles between its Take and the Discard
    awk -F '\t' -v OFS='\t' 'NR == 14 { $5 = "Idle"; NF = 5 } NR == 15 { $5 = "Discard"; $6 = "0.3" }
        { print }' "$dir/cancelled.trace" | "$sftrace" --check - 2>&1 |
        grep -q ':13: Take 0.3 is not followed by its FStart on thread 1$'
}
point_ok "a Take not answered at once by its FStart or Discard fails --check" cancelled_late_discard

pic=$out.pic
fake=$out.fake
trap 'rm -rf "$out" "$want" "$pic" "$fake" "$want.diff"' EXIT

# Without matplotlib (a python3 that cannot import it: a matplotlib package
# that raises ImportError, first on the path): one line, exit 1, no file.
mkdir -p "$fake/matplotlib" || exit 99
echo 'raise ImportError("not here")' >"$fake/matplotlib/__init__.py"
no_matplotlib() {
    rm -f "$pic"
    msg=$(PYTHONPATH=$fake "$sftrace" --png "$pic" <"$dir/sample.json" 2>&1)
    rc=$?
    [ $rc = 1 ] && [ ! -e "$pic" ] && [ "$(printf '%s\n' "$msg" | wc -l)" = 1 ] &&
        case $msg in "sftrace: the picture needs matplotlib, which "*"cannot import (Debian: apt-get install python3-matplotlib); no picture written") ;; *) false ;; esac ||
        { echo "exit $rc: $msg"; return 1; }
}
point_ok "--png without matplotlib says so in one line and writes nothing" no_matplotlib

# Which sftrace-plot runs: found from sftrace's own file, so that an install
# under a new --prefix, or a moved one, runs its own. sftrace copied into
# P/bin and a stand-in sftrace-plot into P/libexec/libsf (what `make
# install` makes): --plot-path names it, run by its path and by PATH; after
# P is moved, --png runs the stand-in at its new place (no matplotlib
# needed). The build tree's rule (next to sftrace) is what every --png test
# here uses.
plot_layout() {
    p=$fake.P
    rm -rf "$p" "$fake.Q"
    mkdir -p "$p/bin" "$p/libexec/libsf" && cp "$sftrace" "$p/bin/sftrace" || return 1
    printf '#!/bin/sh\ncat >/dev/null\necho "stand-in sftrace-plot $*"\n' >"$p/libexec/libsf/sftrace-plot"
    chmod +x "$p/libexec/libsf/sftrace-plot"
    real=$(cd "$p" && pwd -P) || return 1 # /proc/self/exe has no symbolic links
    got=$("$p/bin/sftrace" --plot-path)
    [ "$got" = "$real/bin/../libexec/libsf/sftrace-plot" ] || { echo "by path: $got"; return 1; }
    got=$(PATH="$p/bin:$PATH" sftrace --plot-path)
    [ "$got" = "$real/bin/../libexec/libsf/sftrace-plot" ] || { echo "by PATH: $got"; return 1; }
    mv "$p" "$fake.Q" || return 1
    got=$("$fake.Q/bin/sftrace" --png "$pic" <"$dir/sample.json" 2>&1)
    [ "$got" = "stand-in sftrace-plot --png $pic" ] || { echo "moved: $got"; return 1; }
    rm -rf "$fake.Q"
}
point_ok "sftrace runs the sftrace-plot of its own install, moved or not" plot_layout

# With it (tools/deps installs python3-matplotlib): each format's file, and
# nothing on stdout when a picture is all that is asked.
have_mpl=yes
if ! "$sftrace" --png "$pic" <"$dir/sample.json" >"$want.diff" 2>&1 &&
    grep -q "^sftrace: the picture needs matplotlib" "$want.diff"; then
    have_mpl=
fi
# magic FILE HEX: the file starts with those bytes.
magic() { [ "$(head -c $(($(printf %s "$2" | wc -c) / 2)) "$1" | od -An -tx1 | tr -d ' \n')" = "$2" ]; }
png_ok() {
    rm -f "$pic"
    "$sftrace" --png "$pic" <"$dir/$1" >"$out" && [ ! -s "$out" ] && magic "$pic" 89504e470d0a1a0a
}
svg_ok() {
    rm -f "$pic"
    "$sftrace" --svg "$pic" <"$dir/sample.json" >"$out" && [ ! -s "$out" ] &&
        grep -q '<svg' "$pic" && tail -n 1 "$pic" | grep -qx '</svg>' || return 1
    # text stays text (svg.fonttype none): a row per thread, the legend
    for s in '>main<' '>worker 1<' '>thread 2<' '>libsf schedule: &lt;stdin&gt;<' \
        '>parked: tasks of a fiber its get parked (hatched)<' '>resume: the thread goes on with this fiber<' \
        '>task functions, by time in their tasks<' '>fft<' '>mix<' '>synth<' \
        '>the strip under a task: inline: a get ran its own task<'; do
        grep -q "$s" "$pic" || { echo "no $s"; return 1; }
    done
    # coloured by function: fft (most time) gets the first colour, mix the
    # second, synth the third; the kinds' strips keep theirs (pool, drained)
    for c in 393b79 637939 8c6d31 f28e2b 9c755f; do
        grep -q "fill: #$c" "$pic" || { echo "no fill #$c"; return 1; }
    done
}
# Twelve functions, function N with N us in one task: the ten with the
# most time get colours, f01 and f02 are "other".
svg_other_ok() {
    rm -f "$pic"
    {
        echo '[{"ph":"M","pid":1,"tid":0,"name":"thread_name","args":{"name":"main"}}'
        t=0
        for f in 01 02 03 04 05 06 07 08 09 10 11 12; do
            printf ',{"ph":"B","pid":1,"tid":0,"ts":%d,"name":"f%s","cat":"task","args":{"task":"0.%d","kind":"inline","depth":0}}\n' $t $f $t
            t=$((t + ${f#0}))
            printf ',{"ph":"E","pid":1,"tid":0,"ts":%d}\n' $t
        done
        echo ']'
    } | "$sftrace" --svg "$pic" >"$out" && [ ! -s "$out" ] || return 1
    for s in '>f12<' '>f03<' '>other (2 functions)<'; do
        grep -q "$s" "$pic" || { echo "no $s"; return 1; }
    done
    ! grep -q '>f02<' "$pic" || { echo "f02 has a colour of its own"; return 1; }
    grep -q 'fill: #c7c7c7' "$pic" || { echo "no grey"; return 1; }
}
# The marks of waits.json: a promise set and two timeouts on main's row, a
# promise set from outside as a line, each with its legend.
svg_marks_ok() {
    rm -f "$pic"
    "$sftrace" --svg "$pic" <"$dir/waits.json" >"$out" && [ ! -s "$out" ] || return 1
    for s in '>set: the thread completed a promise<' '>timeout: a timed wait gave up at its deadline<' \
        '>set from outside libsf: a promise completed by a plain thread (dotted)<' \
        '2 promises set, 2 timeouts'; do
        grep -q "$s" "$pic" || { echo "no $s"; return 1; }
    done
    for c in 2e7d32 c62828; do
        grep -q "#$c" "$pic" || { echo "no colour #$c"; return 1; }
    done
}
pdf_ok() {
    rm -f "$pic"
    "$sftrace" --pdf "$pic" <"$dir/sample.json" >"$out" && [ ! -s "$out" ] && magic "$pic" 255044462d
}
for t in "png_ok sample.json:--png of the JSON trace writes a PNG and prints nothing" \
    "png_ok sample.trace:--png of the text trace writes a PNG" \
    "svg_ok:--svg writes an SVG with a row per thread and the legends, coloured by function" \
    "svg_other_ok:--svg colours the ten functions with the most time, the rest as other" \
    "svg_marks_ok:--svg marks promises set and timed-out waits" \
    "pdf_ok:--pdf writes a PDF"; do
    if [ -n "$have_mpl" ]; then
        point_ok "${t#*:}" ${t%%:*}
    else
        n=$((n + 1))
        echo "ok $n - ${t#*:} # SKIP matplotlib is not installed (tools/deps installs python3-matplotlib)"
    fi
done
rm -f "$want.diff"
exit 0
