#!/bin/sh
# test-audio.sh - runs samples/granular and samples/sfpiece and checks the WAV
# files they write, in TAP (one test point per check):
#  - the same seed gives a byte-identical file at SF_THREADS=1, 2 and 4
#    (grains and clouds are summed in a fixed order), another seed another;
#  - every header field, read here (RIFF/WAVE, fmt: PCM, 2 channels,
#    44100 Hz, 176400 bytes/s, align 4, 16 bits; data and RIFF sizes that
#    match the frame count and the file size), and the data is not silence;
#  - `sox --i` reads each file and reports 2 channels, 44100 Hz and the exact
#    number of frames (SKIP, said so, when sox is not installed);
#  - sfpiece writes sfpiece.wav in the current directory by default, prints
#    one summary line, nothing on stderr when it is not a terminal;
#  - bad options are usage errors (exit status 2).
# The pieces are short (2 s; sfpiece 1.5 s + a 0.5 s reverb tail), so the
# script takes well under a second plain and a few seconds under
# ThreadSanitizer, where it runs unchanged.
#
#  - samples/reverb -c: its pipeline bit-identical to its plain loop, the
#    same checksum at SF_THREADS=1 and 2, and a valid WAV with -o.
# Run by `make check` from the build directory; GRANULAR, SFPIECE and
# REVERB override the binaries.
set -u
granular=${GRANULAR:-./samples/granular}
sfpiece=${SFPIECE:-./samples/sfpiece}
reverb=${REVERB:-./samples/reverb}
case $granular in /*) ;; *) granular=$(pwd)/$granular ;; esac
case $sfpiece in /*) ;; *) sfpiece=$(pwd)/$sfpiece ;; esac
case $reverb in /*) ;; *) reverb=$(pwd)/$reverb ;; esac
tmp=$(mktemp -d "${TMPDIR:-/tmp}/audio-test.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT

for b in "$granular" "$sfpiece" "$reverb"; do
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
skip() {
    n=$((n + 1))
    echo "ok $n - $1 # SKIP $2"
}

u32() { od --endian=little -An -tu4 -j "$2" -N4 "$1" | tr -d ' '; }
u16() { od --endian=little -An -tu2 -j "$2" -N2 "$1" | tr -d ' '; }
tag() { dd if="$1" bs=1 skip="$2" count=4 2>/dev/null; }

# header FILE FRAMES: every field of a 44.1 kHz stereo 16-bit PCM file of
# FRAMES frames; what differs goes to $tmp/why.
header() {
    f=$1 frames=$2
    size=$(wc -c <"$f" | tr -d ' ')
    data=$((frames * 4))
    : >"$tmp/why"
    check() { [ "$2" = "$3" ] || echo "$1: $2, want $3" >>"$tmp/why"; }
    check "chunk id" "$(tag "$f" 0)" RIFF
    check "RIFF size" "$(u32 "$f" 4)" $((36 + data))
    check "format" "$(tag "$f" 8)" WAVE
    check "fmt id" "$(tag "$f" 12)" "fmt "
    check "fmt size" "$(u32 "$f" 16)" 16
    check "audio format" "$(u16 "$f" 20)" 1
    check "channels" "$(u16 "$f" 22)" 2
    check "sample rate" "$(u32 "$f" 24)" 44100
    check "byte rate" "$(u32 "$f" 28)" 176400
    check "block align" "$(u16 "$f" 32)" 4
    check "bits per sample" "$(u16 "$f" 34)" 16
    check "data id" "$(tag "$f" 36)" data
    check "data size" "$(u32 "$f" 40)" "$data"
    check "file size" "$size" $((44 + data))
    # Not silence: the data differs from as many zero bytes.
    if head -c "$size" /dev/zero | tail -c "$data" | cmp -s - "$f" -i 0:44 2>/dev/null; then
        echo "the data is all zeros" >>"$tmp/why"
    fi
    [ ! -s "$tmp/why" ]
}

# soxinfo FILE FRAMES: sox --i agrees.
soxinfo() {
    sox --i "$1" >"$tmp/why" 2>&1 &&
        grep -q '^Channels *: 2$' "$tmp/why" &&
        grep -q '^Sample Rate *: 44100$' "$tmp/why" &&
        grep -q "^Duration *: .* = $2 samples" "$tmp/why"
}

have_sox=no
command -v sox >/dev/null 2>&1 && have_sox=yes

echo "1..18"

# granular: 2 s, seed 7, at 1, 2 and 4 threads.
frames=88200
status=0
for t in 1 2 4; do
    SF_THREADS=$t "$granular" -s 2 -r 7 -o "$tmp/g$t.wav" >"$tmp/out$t" 2>"$tmp/err$t" || status=$?
done
[ "$status" = 0 ] && [ ! -s "$tmp/err1" ] && [ ! -s "$tmp/err2" ] && [ ! -s "$tmp/err4" ] &&
    grep -q '^granular: 2.0 s of 44.1 kHz stereo, [0-9]* grains in [0-9]* clouds (seed 7), rendered in .* at SF_THREADS=1 -> ' "$tmp/out1"
point $? "granular -s 2 -r 7 runs at SF_THREADS=1, 2, 4 and prints its summary line" "$tmp/out1"
cmp "$tmp/g1.wav" "$tmp/g2.wav" >"$tmp/why" 2>&1
point $? "granular: SF_THREADS=2 writes the same file as 1, byte for byte" "$tmp/why"
cmp "$tmp/g1.wav" "$tmp/g4.wav" >"$tmp/why" 2>&1
point $? "granular: SF_THREADS=4 writes the same file as 1, byte for byte" "$tmp/why"
SF_THREADS=2 "$granular" -q -s 2 -r 8 -o "$tmp/g8.wav" && ! cmp -s "$tmp/g1.wav" "$tmp/g8.wav"
point $? "granular: another seed, another file"
header "$tmp/g1.wav" $frames
point $? "granular: every header field right for $frames frames, data not silent" "$tmp/why"
if [ $have_sox = yes ]; then
    soxinfo "$tmp/g1.wav" $frames
    point $? "granular: sox --i reads 2 channels, 44100 Hz, $frames samples" "$tmp/why"
else
    skip "granular: sox --i" "sox is not installed"
fi

# sfpiece: 1.5 s piece + a 0.5 s impulse response: 66150 + 22050 - 1 frames.
frames=88199
mkdir "$tmp/cwd"
(cd "$tmp/cwd" && SF_THREADS=1 "$sfpiece" -s 1.5 -i 0.5 -r 3 >"$tmp/pout1" 2>"$tmp/perr1")
status=$?
[ "$status" = 0 ] && [ -f "$tmp/cwd/sfpiece.wav" ] && [ ! -s "$tmp/perr1" ] &&
    [ "$(wc -l <"$tmp/pout1" | tr -d ' ')" = 1 ] &&
    grep -q '^sfpiece: sfpiece.wav: 2.00 s of 44.1 kHz stereo (a 1.50 s granular piece, [0-9]* grains in [0-9]* clouds, seed 3, through a 0.50 s convolution reverb) in .* s at SF_THREADS=1, [0-9]* tasks$' "$tmp/pout1"
point $? "sfpiece writes sfpiece.wav in the current directory, one summary line, a quiet stderr" "$tmp/pout1"
SF_THREADS=2 "$sfpiece" -s 1.5 -i 0.5 -r 3 -o "$tmp/p2.wav" >"$tmp/pout2" 2>"$tmp/perr2" &&
    [ ! -s "$tmp/perr2" ] && cmp "$tmp/cwd/sfpiece.wav" "$tmp/p2.wav" >"$tmp/why" 2>&1
point $? "sfpiece: SF_THREADS=2 writes the same file as 1, byte for byte" "$tmp/why"
SF_THREADS=4 "$sfpiece" -q -s 1.5 -i 0.5 -r 3 -o "$tmp/p4.wav" >"$tmp/pout4" 2>&1 &&
    [ ! -s "$tmp/pout4" ] && cmp "$tmp/cwd/sfpiece.wav" "$tmp/p4.wav" >"$tmp/why" 2>&1
point $? "sfpiece -q: SF_THREADS=4 the same file, nothing printed" "$tmp/why"
header "$tmp/p2.wav" $frames
point $? "sfpiece: every header field right for $frames frames, data not silent" "$tmp/why"
if [ $have_sox = yes ]; then
    soxinfo "$tmp/p2.wav" $frames
    point $? "sfpiece: sox --i reads 2 channels, 44100 Hz, $frames samples" "$tmp/why"
else
    skip "sfpiece: sox --i" "sox is not installed"
fi

# reverb: 2 s * a 0.5 s impulse response: 88200 + 22050 - 1 frames.
frames=110249
status=0
for t in 1 2; do
    SF_THREADS=$t "$reverb" -s 2 -i 0.5 -c -o "$tmp/r$t.wav" >"$tmp/rout$t" 2>"$tmp/rerr$t" ||
        status=$?
done
sum1=$(sed -n 's/.*output checksum \([0-9a-f]*\)$/\1/p' "$tmp/rout1")
sum2=$(sed -n 's/.*output checksum \([0-9a-f]*\)$/\1/p' "$tmp/rout2")
[ "$status" = 0 ] && [ -n "$sum1" ] && [ "$sum1" = "$sum2" ] &&
    grep -q '^reverb: sequential (no libsf) .* s; outputs bit-identical$' "$tmp/rout1" &&
    grep -q '^reverb: sequential (no libsf) .* s; outputs bit-identical$' "$tmp/rout2" &&
    [ ! -s "$tmp/rerr1" ] && [ ! -s "$tmp/rerr2" ] && cmp -s "$tmp/r1.wav" "$tmp/r2.wav"
point $? "reverb -c at SF_THREADS=1 and 2: bit-identical to the plain loop, the same checksum and file" "$tmp/rout2"
header "$tmp/r1.wav" $frames && { [ $have_sox = no ] || soxinfo "$tmp/r1.wav" $frames; }
point $? "reverb -o: every header field right for $frames frames$([ $have_sox = yes ] && echo ', and sox --i agrees' || echo ' (sox not installed: its check not run)')" "$tmp/why"

# Bad usage.
bad=0
for args in "-s 0" "-s x" "-r -1" "extra"; do
    "$granular" $args -o "$tmp/bad.wav" >/dev/null 2>"$tmp/why"
    [ $? = 2 ] && grep -q '^granular: usage' "$tmp/why" && [ ! -f "$tmp/bad.wav" ] || bad=1
done
point $bad "granular: -s 0, -s x, -r -1, an extra argument are usage errors (exit 2, no file)" "$tmp/why"
"$sfpiece" -i 0 -o "$tmp/bad.wav" >/dev/null 2>"$tmp/why"
[ $? = 2 ] && grep -q '^sfpiece: usage' "$tmp/why" && [ ! -f "$tmp/bad.wav" ]
point $? "sfpiece: -i 0 is a usage error" "$tmp/why"
"$sfpiece" -s 1 -o "$tmp/no/such/dir.wav" >/dev/null 2>"$tmp/why"
[ $? = 1 ] && grep -q "^sfpiece: $tmp/no/such/dir.wav: No such file or directory" "$tmp/why"
point $? "sfpiece: an output path that cannot be created fails with its name (exit 1)" "$tmp/why"
"$granular" -s 1 -o "$tmp/no/such/dir.wav" >/dev/null 2>"$tmp/why"
[ $? = 1 ] && grep -q "^granular: $tmp/no/such/dir.wav: No such file or directory" "$tmp/why"
point $? "granular: an output path that cannot be created fails with its name (exit 1)" "$tmp/why"
bad=0
for prog in "$granular" "$sfpiece" "$reverb"; do
    name=${prog##*/}
    "$prog" -h >"$tmp/help" 2>"$tmp/why"
    [ $? = 0 ] && grep -q "^$name: usage: $name " "$tmp/help" && [ ! -s "$tmp/why" ] || bad=1
done
point $bad "granular, sfpiece, reverb -h: the usage line on stdout, exit 0" "$tmp/why"
exit 0
