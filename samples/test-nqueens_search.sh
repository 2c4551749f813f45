#!/bin/sh
# test-nqueens_search.sh - runs samples/nqueens_search and checks what it
# prints. At SF_THREADS=1 nothing runs before it is got, so the whole output
# is fixed and compared with the one below, worked out by hand: for n = 8
# the branches (0,2) and (0,3) of the first two rows hold no solution and
# fail, the parent handles both, branch (0,4) holds the first solution,
# 0 4 7 5 2 6 1 3, and the 39 later branches are cancelled before they
# start. At SF_THREADS=2 and 4 the split of the cancelled branches depends
# on the schedule: there the fixed lines must be the same and the counts
# must add up. n = 3 has no solution: both branches fail, then the parent.
#
# Run by `make check` from the build directory. NQUEENS_SEARCH overrides the
# binary. Reports in TAP, one test point per run.
set -u
bin=${NQUEENS_SEARCH:-./samples/nqueens_search}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nqueens-test.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT

if [ ! -x "$bin" ]; then
    echo "Bail out! $bin is not built"
    exit 99
fi

cat >"$tmp/want8" <<'EOF'
n-queens, n = 8
branch 1 failed (ENOENT: no solution with the first queens at columns 0 and 2); the search goes on
branch 2 failed (ENOENT: no solution with the first queens at columns 0 and 3); the search goes on
first solution, from branch 3 of 42: 0 4 7 5 2 6 1 3
 Q . . . . . . .
 . . . . Q . . .
 . . . . . . . Q
 . . . . . Q . .
 . . Q . . . . .
 . . . . . . Q .
 . Q . . . . . .
 . . . Q . . . .
solution valid: yes
branches: 2 failed and handled, 1 won, 39 cancelled
cancelled: 39 before they started, 0 while running, 0 finished anyway, 0 already done
EOF

cat >"$tmp/want3" <<'EOF'
n-queens, n = 3
branch 1 failed (ENOENT: no solution with the first queens at columns 0 and 2); the search goes on
branch 2 failed (ENOENT: no solution with the first queens at columns 2 and 0); the search goes on
no solution: all 2 branches failed: no way to place 3 queens
EOF

n=0
# run THREADS ARGS...: the sample's stdout in $tmp/out, stderr in $tmp/err,
# exit status in $status.
run() {
    threads=$1
    shift
    SF_THREADS=$threads "$bin" "$@" >"$tmp/out" 2>"$tmp/err"
    status=$?
}

# point OK TITLE: one test point; a failed one shows the run's output.
point() {
    n=$((n + 1))
    if [ "$1" = 0 ]; then
        echo "ok $n - $2"
    else
        echo "not ok $n - $2"
        echo "# exit status $status; stdout:"
        sed 's/^/#   /' "$tmp/out"
        echo "# stderr:"
        sed 's/^/#   /' "$tmp/err"
    fi
}

# The counts of the last two lines add up: failed + 1 + cancelled is the
# number of branches, and the four kinds of cancelled add up to cancelled.
counts_add_up() {
    awk '
        /^first solution, from branch [0-9]+ of [0-9]+:/ { won = $5; total = $7 + 0 }
        /^branches: / { failed = $2; cancelled = $8 }
        /^cancelled: / { split($0, f, /[^0-9]+/); kinds = f[2] + f[3] + f[4] + f[5] }
        END {
            ok = total > 0 && failed == won - 1 && failed + 1 + cancelled == total &&
                 kinds == cancelled
            exit ok ? 0 : 1
        }' "$tmp/out"
}

echo "1..7"

run 1
cmp -s "$tmp/want8" "$tmp/out" && [ "$status" = 0 ] && [ ! -s "$tmp/err" ]
point $? "SF_THREADS=1, n = 8 (the default): the output worked out by hand"

for threads in 2 4; do
    run "$threads" 8
    grep -v '^cancelled: ' "$tmp/out" >"$tmp/fixed"
    grep -v '^cancelled: ' "$tmp/want8" >"$tmp/fixed-want"
    cmp -s "$tmp/fixed-want" "$tmp/fixed" && counts_add_up && [ "$status" = 0 ] &&
        [ ! -s "$tmp/err" ]
    point $? "SF_THREADS=$threads, n = 8: the same solution and failures, the counts add up"
done

run 2 12
grep -q '^solution valid: yes$' "$tmp/out" && counts_add_up && [ "$status" = 0 ] &&
    [ ! -s "$tmp/err" ]
point $? "SF_THREADS=2, n = 12: a valid solution, the counts add up"

run 1 3
cmp -s "$tmp/want3" "$tmp/out" && [ "$status" = 0 ] && [ ! -s "$tmp/err" ]
point $? "SF_THREADS=1, n = 3: every branch fails, then the parent; handled in main"

run 2 3
cmp -s "$tmp/want3" "$tmp/out" && [ "$status" = 0 ] && [ ! -s "$tmp/err" ]
point $? "SF_THREADS=2, n = 3: the same"

run 1 0
[ "$status" = 2 ] && grep -q '^nqueens_search: .*usage' "$tmp/err"
point $? "n = 0: a usage error, exit status 2"
exit 0
