# tools/bench/lace.sh - sourced by light-run and callgrind-run: the Lace
# peer (bench_lace) of a build directory, from LACE_DIR.
#
# bench_lace is built when configure's LACE_DIR names a CMake build of Lace
# v1.4.2 (configure.ac). LACE_DIR in the environment wins over the one a
# build was configured with: lace_configure configures the build again with
# its own arguments and that LACE_DIR.

# lace_configure TOP BUILD LOG: BUILD configured with $LACE_DIR (when set).
# Prints what it does on stderr; returns 1 when configure fails.
lace_configure() {
    local top=$1 build=$2 log=$3 want have
    [ -n "${LACE_DIR:-}" ] || return 0
    want=$(cd "$LACE_DIR" 2>/dev/null && pwd) || { echo "LACE_DIR=$LACE_DIR is no directory" >&2; return 1; }
    have=$(sed -n 's/^LACE_DIR = //p' "$build/Makefile" | head -1)
    [ "$have" != "$want" ] || return 0
    echo "build: configuring $build again with LACE_DIR=$want ..." >&2
    (cd "$build" && eval "set -- $(./config.status --config)" &&
        "$top/configure" "$@" LACE_DIR="$want") >>"$log" 2>&1 ||
        { echo "configure with LACE_DIR=$want failed in $build (see $log)" >&2; return 1; }
}

# lace_why_not BUILD: why BUILD has no bench_lace, one line.
lace_why_not() {
    local have
    have=$(sed -n 's/^LACE_DIR = //p' "$1/Makefile" 2>/dev/null | head -1)
    if [ -z "$have" ] && [ -z "${LACE_DIR:-}" ]; then
        echo "LACE_DIR not set"
    else
        echo "not built in $1 (LACE_DIR=${have:-$LACE_DIR}; see its config.log)"
    fi
}
