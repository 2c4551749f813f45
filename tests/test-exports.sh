#!/bin/sh
# The exports of the libsf.so just built are exactly sf.h's calls, each at
# version LIBSF_1 (runtime/libsf.sym): no internal sf__ name or helper
# escapes -fvisibility=hidden, no call of sf.h is missing from the library,
# and a program linked now keeps binding to LIBSF_1 after a later ABI change.
# TAP; run by make check from the build directory.
set -u
srcdir=${srcdir:-.}
so=.libs/libsf.so
tmp=$(mktemp -d "${TMPDIR:-/tmp}/test-exports.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
echo "1..3"
if [ ! -f "$so" ]; then
    echo "Bail out! no $so here: run it from the build directory after make (shared libraries on)"
    exit 0
fi
# sf.h's calls: every `SF_EXPORT type name(` declaration, the name alone.
sed -n 's/^SF_EXPORT[^(]*[ *]\(sf_[a-z0-9_]*\)(.*/\1/p' "$srcdir/include/sf.h" | sort -u >"$tmp/header"
# The library's: defined dynamic symbols (not the version definitions).
objdump -T "$so" | awk '$2 == "g" && $3 != "*UND*" && $NF != $(NF-1) && $NF ~ /^sf/ { print $(NF-1), $NF }' |
    sort -u >"$tmp/dyn"
awk '{ print $2 }' "$tmp/dyn" | sort -u >"$tmp/lib"

if [ "$(wc -l <"$tmp/header")" -gt 0 ] && cmp -s "$tmp/header" "$tmp/lib"; then
    echo "ok 1 - libsf.so exports exactly the $(wc -l <"$tmp/header") calls sf.h declares"
else
    echo "not ok 1 - libsf.so's exports differ from sf.h's calls (< sf.h, > libsf.so)"
    diff "$tmp/header" "$tmp/lib" | sed 's/^/# /'
fi
if [ -s "$tmp/dyn" ] && ! awk '$1 != "LIBSF_1"' "$tmp/dyn" | grep -q .; then
    echo "ok 2 - every export has the version LIBSF_1"
else
    echo "not ok 2 - exports without the version LIBSF_1"
    awk '$1 != "LIBSF_1"' "$tmp/dyn" | sed 's/^/# /'
fi
# No other global function or object: only sf_ names and the version node.
objdump -T "$so" | awk '$2 == "g" && $3 != "*UND*" && $NF !~ /^sf_/ && $NF != "LIBSF_1"' >"$tmp/other"
if [ ! -s "$tmp/other" ]; then
    echo "ok 3 - nothing but sf_ calls is exported"
else
    echo "not ok 3 - libsf.so exports names that are not sf_ calls"
    sed 's/^/# /' "$tmp/other"
fi
