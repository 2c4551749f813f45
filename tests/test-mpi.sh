#!/bin/sh
# libsf-mpi's tests (tests/test_mpi.c, tests/test_mpi_single.c) under
# mpiexec, and its exports. Registered by tests/local.mk when configure
# found MPI and mpiexec (MPIEXEC, from the environment make check gives).
# Each run is under timeout(1): a hang fails its run instead of stalling the
# suite. Rank 0 of each run writes its TAP to a file; this script renumbers
# those points into its own TAP, each named with its run, and adds one
# point per run for the exit of every rank (a failure on another rank shows
# there, with its stderr).
#   test_mpi at 2 ranks and at 4 ranks (its tests run in every progress
#     mode; its `repeated` test is the "no hang in 100 runs": 100 rounds of
#     start, a pipeline and stop in one run);
#   test_mpi_single at 1 rank: ENOTSUP for an MPI without
#     MPI_THREAD_MULTIPLE.
# SF_MPI_ROUNDS overrides the 100 rounds (the sanitizer builds keep 100).
set -u
MPIEXEC=${MPIEXEC:-mpiexec}
srcdir=${srcdir:-.}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/test-mpi.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT

. "$srcdir/tests/mpi-env.sh" # Open MPI's settings, LSan's suppressions
# Two libsf threads per rank: up to four ranks share two cores.
export SF_THREADS=2

n=0
# run NAME NP SECONDS PROGRAM: one run, its points and its exit's.
run() {
    name=$1 np=$2 secs=$3 prog=$4
    : >"$tmp/tap"
    rm -f "$tmp"/log.*
    t0=$(date +%s)
    SF_MPI_TAP=$tmp/tap SF_MPI_LOG=$tmp/log timeout -k 5 "$secs" "$MPIEXEC" --allow-run-as-root \
        --oversubscribe -np "$np" "$prog" >"$tmp/out" 2>&1
    rc=$?
    t1=$(date +%s)
    # Rank 0's points, renumbered and named with the run.
    while IFS= read -r line; do
        case $line in
        "ok "* | "not ok "*)
            n=$((n + 1))
            echo "$line" | sed -e "s/^\(not \)\{0,1\}ok [0-9]* - /\1ok $n - $name: /"
            ;;
        "#"*) echo "$line" ;;
        esac
    done <"$tmp/tap"
    n=$((n + 1))
    if [ "$rc" -eq 0 ]; then
        echo "ok $n - $name: every rank exited 0 ($((t1 - t0)) s)"
    else
        what="exit status $rc"
        [ "$rc" -eq 124 ] && what="timed out after $secs s"
        echo "not ok $n - $name: $what"
        # Each rank's failed tests (its Check log), then mpiexec's output.
        cat "$tmp"/log.* 2>/dev/null | grep -v ':P:\|^Running suite\|^Results for\|^100%' | sed 's/^/# /'
        tail -40 "$tmp/out" | sed 's/^/# /'
    fi
}

run "test_mpi -np 2" 2 150 tests/test_mpi
run "test_mpi -np 4" 4 150 tests/test_mpi
run "test_mpi_single -np 1" 1 60 tests/test_mpi_single

# The exports: sf_mpi.h's calls, each at LIBSF_MPI_1, and nothing else.
so=.libs/libsf-mpi.so
n=$((n + 1))
if [ -f "$so" ]; then
    sed -n 's/^[a-z_ ]*[ *]\(sf_mpi_[a-z_]*\)(.*/\1/p' "$srcdir/include/sf_mpi.h" | sort -u >"$tmp/header"
    objdump -T "$so" | awk '$2 == "g" && $3 != "*UND*" { print $(NF-1), $NF }' | sort -u >"$tmp/dyn"
    awk '$2 != "LIBSF_MPI_1" { print $1 " " $2 }' "$tmp/dyn" | sed 's/^LIBSF_MPI_1 //' >"$tmp/lib"
    if [ -s "$tmp/header" ] && cmp -s "$tmp/header" "$tmp/lib"; then
        echo "ok $n - libsf-mpi.so exports exactly the $(wc -l <"$tmp/header") calls of sf_mpi.h, at LIBSF_MPI_1"
    else
        echo "not ok $n - libsf-mpi.so's exports differ from sf_mpi.h's calls (< sf_mpi.h, > libsf-mpi.so)"
        diff "$tmp/header" "$tmp/lib" | sed 's/^/# /'
    fi
else
    echo "not ok $n - no $so (shared libraries off?)"
fi
echo "1..$n"
