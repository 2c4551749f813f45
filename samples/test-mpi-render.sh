#!/bin/sh
# test-mpi-render.sh - runs samples/mpi-render (the granular piece low-pass
# filtered over MPI ranks, every message a libsf future) and checks what it
# writes, in TAP:
#  - started without mpiexec (one rank): exit 0, one summary line naming 33
#    blocks of 4096 frames over 1 rank, a 16-bit stereo 44.1 kHz WAV of
#    exactly 3 s (132,300 frames: 44 header bytes + 4 per frame), not
#    silence (its data is not all zero bytes) and not the unfiltered piece
#    (samples/granular's file of the same seed and length);
#  - under mpiexec at -np 1, 2 and 4 (4 oversubscribed), and at -np 2 with
#    SF_THREADS=1: the same file byte for byte, the summary naming the ranks;
#  - errors: -s 0, an unknown option and an extra argument exit 2 with the
#    usage line on stderr, at -np 2 too (one line: rank 0's; no rank starts
#    MPI for a usage error); -h exits 0 with it on stdout; an output it cannot
#    create exits 1 with one stderr line naming it, alone and at -np 2 (every
#    rank stops: rank 0 broadcasts that there is nothing to do).
# Every mpiexec runs under `timeout` (MPI_RENDER_TIMEOUT seconds, default
# 60), so a hang fails its point instead of stalling make check. The piece is
# 3 s; MPI's start is most of the time: some 12 s plain on two busy cores,
# 45 s under AddressSanitizer (its slow unwinder, below). Registered by
# samples/local.mk only when configure found MPI, mpiexec and libsndfile. Run by `make check` from the build directory; MPI_RENDER and
# GRANULAR override the binaries, MPIEXEC the launcher.
set -u
render=${MPI_RENDER:-./samples/mpi-render}
granular=${GRANULAR:-./samples/granular}
mpiexec=${MPIEXEC:-mpiexec}
limit=${MPI_RENDER_TIMEOUT:-60}
case $render in /*) ;; *) render=$(pwd)/$render ;; esac
case $granular in /*) ;; *) granular=$(pwd)/$granular ;; esac
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mpi-render-test.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
# Open MPI as tests/test-mpi.sh runs it, and LSan's suppressions.
srcdir=${srcdir:-.}
. "$srcdir/tests/mpi-env.sh"
run_np() { # run_np N ARGS...: mpi-render under mpiexec -np N
    np=$1
    shift
    timeout -k 5 "$limit" "$mpiexec" --allow-run-as-root --oversubscribe -np "$np" "$render" "$@"
}

for b in "$render" "$granular"; do
    if [ ! -x "$b" ]; then
        echo "Bail out! $b is not built"
        exit 99
    fi
done

n=0
point() { # point STATUS TITLE [DETAIL FILE]
    n=$((n + 1))
    if [ "$1" = 0 ]; then
        echo "ok $n - $2"
    else
        echo "not ok $n - $2"
        if [ $# -ge 3 ] && [ -f "$3" ]; then
            sed 's/^/#   /' "$3"
        fi
    fi
}
# summary FILE RANKS: the one stdout line.
summary() {
    [ "$(wc -l <"$1" | tr -d ' ')" = 1 ] &&
        grep -Eq "^mpi-render: .*: 3\.00 s of 44\.1 kHz stereo \(seed 1\), 33 blocks of 4096 frames over $2 ranks? in [0-9.]+ s, [0-9.]+ blocks/s, SF_THREADS=[0-9]+\$" "$1"
}

echo "1..13"

# One rank, no mpiexec (a singleton MPI process).
timeout -k 5 "$limit" "$render" -s 3 -o "$tmp/alone.wav" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc = 0 ] && summary "$tmp/out" 1 && [ ! -s "$tmp/err" ]
ok=$?
{ echo "exit status $rc"; cat "$tmp/out"; } >>"$tmp/err"
point $ok "without mpiexec: exit 0, one summary line (33 blocks over 1 rank)" "$tmp/err"

size=$(wc -c <"$tmp/alone.wav" 2>/dev/null | tr -d ' ')
[ "${size:-0}" = $((44 + 4 * 132300)) ] &&
    [ "$(head -c 4 "$tmp/alone.wav")" = RIFF ] &&
    [ -n "$(tail -c +45 "$tmp/alone.wav" | tr -d '\000' | head -c 1)" ]
point $? "a 3 s 16-bit stereo WAV (${size:-no} bytes), not silence"

timeout -k 5 "$limit" "$granular" -s 3 -q -o "$tmp/dry.wav" >/dev/null 2>&1 &&
    ! cmp -s "$tmp/dry.wav" "$tmp/alone.wav"
point $? "not the unfiltered piece (samples/granular -s 3)"

# The same file at every rank count.
for np in 1 2 4; do
    run_np $np -s 3 -o "$tmp/np$np.wav" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ $rc = 0 ] && summary "$tmp/out" $np && cmp "$tmp/alone.wav" "$tmp/np$np.wav" >>"$tmp/err" 2>&1
    ok=$?
    { echo "exit status $rc"; cat "$tmp/out"; } >>"$tmp/err"
    point $ok "mpiexec -np $np: exit 0, the summary, the same file byte for byte" "$tmp/err"
done
SF_THREADS=1 run_np 2 -s 3 -q -o "$tmp/t1.wav" >"$tmp/out" 2>&1 &&
    [ ! -s "$tmp/out" ] && cmp "$tmp/alone.wav" "$tmp/t1.wav" >>"$tmp/out" 2>&1
point $? "mpiexec -np 2 at SF_THREADS=1 -q: no output, the same file" "$tmp/out"

# Usage.
ok=0
for args in "-s 0" "-x" "-q extra"; do
    # shellcheck disable=SC2086
    timeout -k 5 "$limit" "$render" $args -o "$tmp/bad.wav" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    if [ $rc != 2 ] || [ -s "$tmp/out" ] || ! grep -q '^mpi-render: usage: ' "$tmp/err" || [ -e "$tmp/bad.wav" ]; then
        echo "$args: exit status $rc" >>"$tmp/why"
        ok=1
    fi
done
point $ok "-s 0, an unknown option, an extra argument: exit 2, the usage line, no file" "$tmp/why"
run_np 2 -s 0 >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc = 2 ] && [ ! -s "$tmp/out" ] && [ "$(grep -c '^mpi-render: usage: ' "$tmp/err")" = 1 ]
ok=$?
echo "exit status $rc" >>"$tmp/err"
point $ok "-s 0 at -np 2: exit 2, one usage line (rank 0's)" "$tmp/err"
timeout -k 5 "$limit" "$render" -h >"$tmp/out" 2>"$tmp/err" &&
    grep -q '^mpi-render: usage: ' "$tmp/out" && [ ! -s "$tmp/err" ]
point $? "-h: exit 0, the usage line on stdout"

# An output it cannot create: one line, exit 1, alone and with ranks.
timeout -k 5 "$limit" "$render" -s 3 -o "$tmp/no/such/dir.wav" >"$tmp/out" 2>"$tmp/err"
rc=$?
echo "exit status $rc" >>"$tmp/err"
[ $rc = 1 ] && [ ! -s "$tmp/out" ] && [ "$(wc -l <"$tmp/err" | tr -d ' ')" = 2 ] &&
    grep -q "^mpi-render: $tmp/no/such/dir.wav: " "$tmp/err"
point $? "an output it cannot create: exit 1, one stderr line naming it" "$tmp/err"
run_np 2 -s 3 -o "$tmp/no/such/dir.wav" >"$tmp/out" 2>"$tmp/err"
rc=$?
echo "exit status $rc" >>"$tmp/err"
[ $rc != 0 ] && [ $rc != 124 ] && [ ! -s "$tmp/out" ] &&
    grep -q "^mpi-render: $tmp/no/such/dir.wav: " "$tmp/err"
point $? "the same at -np 2: every rank stops, no hang, exit status not 0" "$tmp/err"

# No hang in 100 runs (the pipeline shape whose polling from inside tasks
# hung a prototype in 2 of 4 runs): separate mpiexec jobs of a short piece,
# at 2 and 4 ranks in turn, each progress mode in turn, every file the
# same. Under AddressSanitizer, whose MPI start takes seconds, 10 runs
# (MPI_RENDER_RUNS overrides either).
real=$(dirname "$render")/.libs/$(basename "$render")
[ -f "$real" ] || real=$render
runs=100
grep -q __asan_init "$real" 2>/dev/null && runs=10
runs=${MPI_RENDER_RUNS:-$runs}
timeout -k 5 "$limit" "$render" -s 0.5 -q -o "$tmp/short.wav" >"$tmp/why" 2>&1
bad=$?
i=0
while [ $i -lt "$runs" ] && [ $bad = 0 ]; do
    np=$((2 + 2 * (i % 2)))
    mode=$(echo "auto hook thread" | cut -d' ' -f$((i % 3 + 1)))
    SF_MPI_PROGRESS=$mode run_np $np -s 0.5 -q -o "$tmp/rep.wav" >>"$tmp/why" 2>&1 &&
        cmp "$tmp/short.wav" "$tmp/rep.wav" >>"$tmp/why" 2>&1
    rc=$?
    [ $rc = 0 ] || { echo "run $i (-np $np, $mode): exit status $rc" >>"$tmp/why"; bad=1; }
    i=$((i + 1))
done
point $bad "$runs runs at -np 2 and 4, each progress mode: no hang, the same file every time" "$tmp/why"
