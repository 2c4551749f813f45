#!/bin/sh
# tools/check-layers-test.sh - tools/check-layers catches what it is for.
# Each case copies runtime/ and ARCHITECTURE.md into a temporary directory,
# plants one violation there and runs `tools/check-layers --sources` with
# srcdir pointing at the copy: the source checks need no objects, so the
# copy needs no build (check 4, on the objects, is the build's own and is
# skipped). A case passes when exactly the check it aims at says "not ok",
# every other says "ok", and a diagnostic names the planted file or name.
# The unplanted copy must pass every check. Reports in TAP; run by make
# check ($srcdir: the source tree), or by hand from the source tree.
set -u
srcdir=${srcdir:-.}
check=$srcdir/tools/check-layers
tmp=$(mktemp -d "${TMPDIR:-/tmp}/check-layers-test.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/base" && cp -R "$srcdir/runtime" "$srcdir/ARCHITECTURE.md" "$tmp/base/" || {
    echo "Bail out! cannot copy the sources from $srcdir"
    exit 99
}
n=0
# fresh: a new copy of the sources in $tmp/case.
fresh() {
    rm -rf "$tmp/case" && cp -R "$tmp/base" "$tmp/case"
}
# expect TITLE POINT NEEDLE: runs the check on $tmp/case; ok when point
# POINT alone is "not ok" (POINT 0: none) and, for a POINT, one of its
# diagnostics holds NEEDLE.
expect() {
    n=$((n + 1))
    srcdir="$tmp/case" "$check" --sources >"$tmp/out" 2>&1
    bad=$(sed -n 's/^not ok \([0-9]*\) .*/\1/p' "$tmp/out" | tr '\n' ' ')
    oks=$(grep -c '^ok ' "$tmp/out")
    if [ "$2" = 0 ]; then
        if [ -z "$bad" ] && [ "$oks" -eq 7 ]; then
            echo "ok $n - $1"
            return
        fi
    elif [ "$bad" = "$2 " ] && [ "$oks" -eq 6 ] &&
        awk -v p="$2" '/^(not )?ok / { on = ($0 ~ "^not ok " p " ") } on && /^# /' "$tmp/out" |
        grep -qF -- "$3"; then
        echo "ok $n - $1"
        return
    fi
    echo "not ok $n - $1"
    sed 's/^/# /' "$tmp/out"
}
# plant FILE TEXT: adds the line TEXT after FILE's first #include (FILE
# from runtime/).
plant() {
    awk -v t="$2" '{ print } !done && /^#include/ { print t; done = 1 }' \
        "$tmp/case/runtime/$1" >"$tmp/planted" && mv "$tmp/planted" "$tmp/case/runtime/$1"
}

echo "1..13"
fresh
expect "the sources as they are pass every check" 0

# One include upward from each folder: the next layer's header; from the top
# layer, a unit of its own layer that LAYERS does not give it.
for spec in platform/debug.c:future/future.h future/claim.c:queue/pending.h \
    queue/pending.c:registry/registry.h registry/cancel.c:sched/thread.h \
    sched/batch.c:api/lifecycle.h api/stats.c:api/promise.h; do
    file=${spec%%:*}
    inc=${spec#*:}
    fresh
    plant "$file" "#include \"$inc\""
    expect "$file including $inc is not ok 3" 3 "runtime/$file (layer"
done

# runtime/mpi/ (libsf-mpi) is outside the layers but may include only the
# public headers; its own statics may repeat the runtime's names.
fresh
plant mpi/sf_mpi.c '#include "sched/get.h"'
expect "mpi/sf_mpi.c including sched/get.h is not ok 3" 3 "runtime/mpi/sf_mpi.c: includes \"sched/get.h\""
fresh
plant mpi/sf_mpi.c "static void take_grain(void) { }"
expect "mpi/sf_mpi.c with a static take_grain passes" 0

fresh
mv "$tmp/case/runtime/queue/pending.c" "$tmp/case/runtime/sched/pending.c"
expect "queue/pending.c moved into sched/ is not ok 2" 2 "runtime/sched/pending.c: unit pending is of layer 2"

fresh
plant sched/hang.c "static void take_grain(void) { }"
expect "a second static take_grain (parfor.c's) is not ok 6" 6 "take_grain is defined in api/parfor.c sched/hang.c"

fresh
plant sched/pool.c "void sf__pool_visit(void (*visitor)(int));"
expect "an unlisted function pointer in pool.c is not ok 5" 5 "runtime/sched/pool.c: function pointer visitor"

fresh
sed 's/^| 2 queue | /| 2 queues | /' "$tmp/base/ARCHITECTURE.md" >"$tmp/case/ARCHITECTURE.md"
expect "ARCHITECTURE.md's table unlike LAYERS is not ok 7" 7 "+| 2 queues | "
exit 0
