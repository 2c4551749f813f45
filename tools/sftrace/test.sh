#!/bin/sh
# test.sh - checks sftrace against a hand-written trace whose summary,
# sorted order and timeline were worked out by hand (sample.expected), and
# against broken traces that must be rejected with the right line numbers;
# checks --counts (sample.counts, counted by hand) and --untimed on the same
# trace; and checks that the tables of docs/trace-format.md are exactly what
# sftrace --events prints from runtime/trace_format.h.
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
echo "1..4"
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
rm -f "$want.diff"
exit 0
