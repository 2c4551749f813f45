#!/bin/sh
# test-mandelbrot.sh - runs samples/mandelbrot, a skewed sf_for, at
# SF_THREADS=1, 2 and 4 and checks that the image is the same: each row is
# one body call, so the iteration counts, and the checksum over them, cannot
# depend on the schedule; at SF_THREADS=1 the caller runs every row in order,
# which makes it the reference. At 2 and 4 threads the summary must say that
# rows ran on more than one thread (the worker stole rows). -o must write a
# PGM of the right size.
#
# Run by `make check` from the build directory. Reports in TAP.
set -u
bin=${MANDELBROT:-./samples/mandelbrot}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mandelbrot-test.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
if [ ! -x "$bin" ]; then
    echo "Bail out! $bin is not built"
    exit 99
fi
echo "1..5"
SF_THREADS=1 "$bin" 320 240 3000 >"$tmp/ref" 2>"$tmp/ref.err"
if grep -q "^mandelbrot 320x240 maxiter 3000: [0-9]* points inside, checksum [0-9a-f]*$" "$tmp/ref" &&
    grep -q "rows ran on 1 thread$" "$tmp/ref.err"; then
    echo "ok 1 - SF_THREADS=1: one thread ran every row: $(cat "$tmp/ref")"
else
    echo "not ok 1 - SF_THREADS=1: $(cat "$tmp/ref" "$tmp/ref.err")"
fi
n=2
for t in 2 4; do
    SF_THREADS=$t "$bin" 320 240 3000 >"$tmp/out" 2>"$tmp/err"
    ran=$(sed -n 's/.*rows ran on \([0-9]*\) thread.*/\1/p' "$tmp/err")
    if cmp -s "$tmp/ref" "$tmp/out" && [ "${ran:-0}" -ge 2 ]; then
        echo "ok $n - SF_THREADS=$t: the same image, rows ran on $ran threads"
    else
        echo "not ok $n - SF_THREADS=$t: $(cat "$tmp/out" "$tmp/err")"
    fi
    n=$((n + 1))
done
SF_THREADS=2 "$bin" 100 60 500 -o "$tmp/m.pgm" >/dev/null 2>&1
size=$(wc -c <"$tmp/m.pgm" 2>/dev/null || echo 0)
hdr=$(head -c 14 "$tmp/m.pgm" 2>/dev/null | tr '\n' ' ')
if [ "$size" -eq $((14 + 100 * 60)) ] && [ "$hdr" = "P5 100 60 255 " ]; then
    echo "ok 4 - -o writes a 100x60 PGM"
else
    echo "not ok 4 - -o wrote $size bytes, header '$hdr'"
fi
if "$bin" 0 >/dev/null 2>"$tmp/bad"; then
    echo "not ok 5 - a width of 0 was accepted"
else
    echo "ok 5 - a bad width is refused: $(cat "$tmp/bad")"
fi
