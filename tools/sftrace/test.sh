#!/bin/sh
# test.sh - checks sftrace against a hand-written trace whose summary,
# sorted order, timeline and schedule summary were worked out by hand
# (sample.expected), and against broken traces that must be rejected with
# the right line numbers; checks --counts (sample.counts, counted by hand)
# and --untimed on the same trace; and checks that the tables of
# docs/trace-format.md are exactly what sftrace --events prints from
# runtime/trace_format.h. The sample parks: the main thread's get parks its
# own stack and steals on fiber 1, and the worker's get parks a fiber with
# two tasks open on it, helps on fiber 1 and goes back to sleep on fiber 0
# (the busy time counts the parked task once).
#
# The Chrome JSON trace: the schedule summary of a hand-written one
# (sample.json, summary worked out by hand in sample.json.expected; its
# worker parks as the text sample's does, with the helped task on a fiber
# track of its own), the same without its closing bracket, errors for bad
# JSON and for text-only options; the SVG of both formats (well-formed XML
# by xmllint when it is installed, else by a structural check; one row per
# thread; the legend; the hatched parked stretch, the park and resume
# markers and the fiber lanes' labels, element by element, worked out by
# hand from svg.c's layout); --png without rsvg-convert (a one-line error,
# no file) and with it (a real PNG; SKIP when rsvg-convert is not installed
# - tools/deps installs it).
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
    run "--timeline --width 25" --timeline --width 25 <"$dir/sample.trace"
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
echo "1..14"
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

point "summary, --sorted, --timeline, --check and errors match sample.expected" \
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
sftrace: <stdin>: byte 32: an event without a one-letter ph and a tid of a thread 0 to 65535 (fiber << 17 | thread, fiber 0 to 64)
exit 1
== --sorted on JSON
sftrace: <stdin> is a Chrome JSON trace: only --schedule (or --summary), --svg and --png read it
exit 2
== --check on JSON
sftrace: <stdin> is a Chrome JSON trace: only --schedule (or --summary), --svg and --png read it
exit 2
EOW
point "bad JSON (json-c's reason) and text-only options are refused with the byte" "$want" "$out"

# svg_ok FILE ROWS NAMES...: well-formed, ROWS rows, each name, the legend.
svg_ok() {
    f=$1
    rows=$2
    shift 2
    if command -v xmllint >/dev/null 2>&1; then
        xmllint --noout "$f" 2>&1 || return 1
    else
        # no XML parser: the document's frame, and as many closing tags
        # of the elements sftrace nests as opening ones
        head -n 1 "$f" | grep -q '^<?xml version="1.0"' || return 1
        tail -n 1 "$f" | grep -qx '</svg>' || return 1
        [ "$(grep -c '<g ' "$f")" = "$(grep -c '</g>' "$f")" ] || return 1
    fi
    [ "$(grep -c '<g class="row"' "$f")" = "$rows" ] || { echo "not $rows rows"; return 1; }
    grep -q '<g class="legend">' "$f" || { echo "no legend"; return 1; }
    for name in "$@"; do
        grep -q "font-weight=\"bold\">$name</text>" "$f" || { echo "no row $name"; return 1; }
    done
    for kind in inline wait-inlined pool stolen drained batch-wait asleep idle parked park resume; do
        grep -q ">$kind: " "$f" || { echo "no legend entry $kind"; return 1; }
    done
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

svg=$out.svg
png=$out.png
trap 'rm -f "$out" "$want" "$svg" "$png" "$want.diff"' EXIT
point_ok "--svg alone writes the picture and prints nothing" \
    sh -c '"$1" --svg "$2" <"$3" >"$4" && [ -s "$2" ] && [ ! -s "$4" ]' sh "$sftrace" "$svg" \
    "$dir/sample.json" "$out"
svg_json_ok() { "$sftrace" --svg "$svg" <"$dir/sample.json" && svg_ok "$svg" 3 main "worker 1" "thread 2"; }
point_ok "the JSON trace's SVG has rows main, worker 1, thread 2 and the legend" svg_json_ok
svg_text_ok() { "$sftrace" --svg "$svg" <"$dir/sample.trace" && svg_ok "$svg" 2 main "worker 1"; }
point_ok "the text trace's SVG has rows main, worker 1 and the legend" svg_text_ok

# What the rows draw of fibers: lane labels, hatched parked stretches (class
# k8) and markers, in the order drawn (a row's labels, its slices, its
# markers); the legend's are left out. Both samples span 0..125 us over
# svg.c's 1000 pixels from x=150: x = 150 + 8 * us. The y come from the
# layout: rows from y=64, in a row 3 pixels of padding, then per lane its
# 8-pixel marker strip (a marker 1 below its top) and its 7-pixel bands,
# then the sleep band; a row's height is its lanes, 5 + 2 for the sleep
# band and 3 of padding. A thread that never switched fibers has one lane
# and no strip (the JSON main row: 2 bands, 27 high).
fiber_parts() {
    grep -E '^<(rect class="k8"|path class="(park|resume)")|>fibers? [0-9]+\+?</text>$' "$1" |
        grep -v '<text x="[0-9]*" y="[0-9.]*">' | sed 's/^<text .*>\(fibers* [0-9]*+*\)<\/text>$/label \1/'
}
"$sftrace" --svg "$svg" <"$dir/sample.json" && fiber_parts "$svg" >"$out" 2>&1
cat >"$want" <<'EOW'
label fiber 0
label fiber 1
<rect class="k8" x="478.0" y="102.0" width="80.0" height="13"/>
<path class="park" d="M478.0 95.0m-2.5 0h2v6h-2zm3 0h2v6h-2z"/>
<path class="resume" d="M478.0 117.0l5.5 3l-5.5 3z"/>
<path class="resume" d="M558.0 95.0l5.5 3l-5.5 3z"/>
EOW
point "the JSON trace's SVG: the worker's fiber lanes, its parked stretch and markers" \
    "$want" "$out"

"$sftrace" --svg "$svg" <"$dir/sample.trace" && fiber_parts "$svg" >"$out" 2>&1
cat >"$want" <<'EOW'
label fiber 0
label fiber 1
<path class="park" d="M334.0 68.0m-2.5 0h2v6h-2zm3 0h2v6h-2z"/>
<path class="resume" d="M334.0 83.0l5.5 3l-5.5 3z"/>
<path class="resume" d="M630.0 68.0l5.5 3l-5.5 3z"/>
label fiber 0
label fiber 1
<rect class="k8" x="478.0" y="125.0" width="80.0" height="13"/>
<path class="park" d="M478.0 118.0m-2.5 0h2v6h-2zm3 0h2v6h-2z"/>
<path class="resume" d="M478.0 140.0l5.5 3l-5.5 3z"/>
<path class="resume" d="M558.0 118.0l5.5 3l-5.5 3z"/>
EOW
point "the text trace's SVG: both threads' fiber lanes, parked stretch and markers" \
    "$want" "$out"

# Without rsvg-convert on PATH: one line, exit 1, no file.
no_rsvg() {
    rm -f "$png"
    msg=$(PATH=/nonexistent "$sftrace" --png "$png" <"$dir/sample.json" 2>&1)
    rc=$?
    [ $rc = 1 ] && [ ! -e "$png" ] &&
        [ "$msg" = "sftrace: --png needs rsvg-convert (Debian: apt-get install librsvg2-bin), which is not on PATH; no PNG written" ] ||
        { echo "exit $rc: $msg"; return 1; }
}
point_ok "--png without rsvg-convert says so and writes nothing" no_rsvg

n=$((n + 1))
if command -v rsvg-convert >/dev/null 2>&1; then
    rm -f "$png"
    if "$sftrace" --png "$png" <"$dir/sample.json" >"$want.diff" 2>&1 &&
        [ "$(head -c 8 "$png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ]; then
        echo "ok $n - --png writes a PNG through rsvg-convert"
    else
        echo "not ok $n - --png writes a PNG through rsvg-convert"
        sed 's/^/# /' "$want.diff"
    fi
else
    echo "ok $n - --png writes a PNG through rsvg-convert # SKIP rsvg-convert is not installed (tools/deps installs librsvg2-bin)"
fi
rm -f "$want.diff"
exit 0
