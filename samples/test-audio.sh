#!/bin/sh
# test-audio.sh - runs samples/granular, samples/sfpiece and samples/reverb
# and checks the sound files they write (libsndfile's), in TAP (one test
# point per check):
#  - the same seed gives a byte-identical file at SF_THREADS=1, 2 and 4
#    (grains and clouds are summed in a fixed order), another seed another;
#  - every header field, read here (RIFF/WAVE, fmt: PCM, 2 channels,
#    44100 Hz, 176400 bytes/s, align 4, 16 bits; data and RIFF sizes that
#    match the frame count and the file size), and the data is not silence;
#  - `sox --i` reads each file and reports 2 channels, 44100 Hz and the exact
#    number of frames (SKIP, said so, when sox is not installed);
#  - sfpiece writes sfpiece.wav in the current directory by default, prints
#    one summary line, nothing on stderr when it is not a terminal;
#  - bad options are usage errors (exit status 2);
#  - an input sound (-f IN): sox makes a 0.5 s mono WAV at 22050 Hz and a
#    0.75 s stereo 24-bit FLAC at 48000 Hz; each sample reads each (the
#    granular ones byte-identical at SF_THREADS=1 and 2 and not their
#    oscillator file), and sox --i reads back 2 channels at 44100 Hz and the
#    exact frame count (the input resampled: 11025 frames at 22050 Hz are
#    22050 at 44100), in the format of -o's extension (.flac, .aiff);
#  - a missing input, one that is not a sound, a directory, and an output
#    extension libsndfile has no format for: exit status 1, one line on
#    stderr naming the file, nothing on stdout, no output file.
# The points that need sox SKIP, said so, without it.
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

echo "1..29"

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

# Input sounds.
bad=0
for prog in "$granular" "$sfpiece" "$reverb"; do
    "$prog" -h | grep -q " \[-f IN\] " || bad=1
done
point $bad "granular, sfpiece, reverb -h: the usage line shows -f IN"

# soxfile FILE CHANNELS RATE FRAMES [ENCODING]: sox --i reads FILE as that.
soxfile() {
    sox --i "$1" >"$tmp/why" 2>&1 &&
        grep -q "^Channels *: $2\$" "$tmp/why" &&
        grep -q "^Sample Rate *: $3\$" "$tmp/why" &&
        grep -q "^Duration *: .* = $4 samples" "$tmp/why" &&
        { [ $# -lt 5 ] || grep -q "^Sample Encoding *: $5\$" "$tmp/why"; }
}

# errors NAME PROG ARGS...: exit 1, one stderr line "NAME: ...", no stdout,
# no output file (every case below names $tmp/bad-out.* as its output).
errors() {
    name=$1
    shift
    rm -f "$tmp"/bad-out.*
    "$@" >"$tmp/eout" 2>"$tmp/why"
    st=$?
    [ $st = 1 ] && [ ! -s "$tmp/eout" ] && [ "$(wc -l <"$tmp/why" | tr -d ' ')" = 1 ] &&
        grep -q "^$name: $tmp/" "$tmp/why" && ! ls "$tmp"/bad-out.* >/dev/null 2>&1 ||
        { echo "exit status $st" >>"$tmp/why"; return 1; }
}

# Bad inputs: one line, exit 1, no output file, whatever the sample.
echo "not a sound" >"$tmp/junk.wav"
mkdir "$tmp/dir.wav"
for prog in "$granular" "$sfpiece" "$reverb"; do
    name=${prog##*/}
    bad=0
    : >"$tmp/whys"
    errors "$name" "$prog" -s 1 -f "$tmp/none.wav" -o "$tmp/bad-out.wav" &&
        grep -q "^$name: $tmp/none.wav: No such file or directory$" "$tmp/why" || bad=1
    cat "$tmp/why" >>"$tmp/whys"
    errors "$name" "$prog" -s 1 -f "$tmp/junk.wav" -o "$tmp/bad-out.wav" &&
        grep -q "^$name: $tmp/junk.wav: ." "$tmp/why" || bad=1
    cat "$tmp/why" >>"$tmp/whys"
    errors "$name" "$prog" -s 1 -f "$tmp/dir.wav" -o "$tmp/bad-out.wav" &&
        grep -q "^$name: $tmp/dir.wav: Is a directory$" "$tmp/why" || bad=1
    cat "$tmp/why" >>"$tmp/whys"
    point $bad "$name: a missing input, one that is not a sound, a directory: one stderr line each, exit 1, no file" "$tmp/whys"
done
bad=0
: >"$tmp/whys"
for prog in "$granular" "$sfpiece" "$reverb"; do
    name=${prog##*/}
    errors "$name" "$prog" -s 1 -o "$tmp/bad-out.xyz" &&
        grep -q "^$name: $tmp/bad-out.xyz: libsndfile writes no format with the extension .xyz$" "$tmp/why" ||
        bad=1
    cat "$tmp/why" >>"$tmp/whys"
done
point $bad "granular, sfpiece, reverb -o bad-out.xyz: no format for .xyz, one stderr line, exit 1, no file" "$tmp/whys"

if [ $have_sox = no ]; then
    for title in "sox makes the inputs" "granular -f in.wav" "granular -f in.flac -o .flac" \
        "sfpiece -f in.flac" "reverb -f in.wav -c" "reverb -f in.flac -s 0.25 -o .aiff"; do
        skip "$title" "sox is not installed"
    done
    exit 0
fi

sox -n -r 22050 -c 1 "$tmp/in.wav" synth 0.5 sine 440 >"$tmp/why" 2>&1 &&
    sox -n -r 48000 -c 2 -b 24 "$tmp/in.flac" synth 0.75 pluck 220 pluck 330 >>"$tmp/why" 2>&1 &&
    soxfile "$tmp/in.wav" 1 22050 11025 && soxfile "$tmp/in.flac" 2 48000 36000
point $? "sox makes the inputs: 0.5 s mono at 22050 Hz (.wav), 0.75 s stereo 24-bit at 48000 Hz (.flac)" "$tmp/why"

# granular: 1 s, seed 7, its grains of each input.
frames=44100
"$granular" -q -s 1 -r 7 -o "$tmp/gosc.wav" &&
    SF_THREADS=1 "$granular" -s 1 -r 7 -f "$tmp/in.wav" -o "$tmp/gw1.wav" >"$tmp/out" 2>"$tmp/err" &&
    SF_THREADS=2 "$granular" -q -s 1 -r 7 -f "$tmp/in.wav" -o "$tmp/gw2.wav" &&
    [ ! -s "$tmp/err" ] &&
    grep -q "^granular: 1.0 s of 44.1 kHz stereo, [0-9]* grains in [0-9]* clouds (seed 7), grains of $tmp/in.wav, rendered in " "$tmp/out" &&
    cmp "$tmp/gw1.wav" "$tmp/gw2.wav" >"$tmp/why" 2>&1 && ! cmp -s "$tmp/gw1.wav" "$tmp/gosc.wav" &&
    header "$tmp/gw1.wav" $frames && soxfile "$tmp/gw1.wav" 2 44100 $frames
point $? "granular -f in.wav: a $frames-frame WAV, the same at SF_THREADS=1 and 2, not the oscillators' file" "$tmp/why"
SF_THREADS=2 "$granular" -q -s 1 -r 7 -f "$tmp/in.flac" -o "$tmp/gf.flac" 2>"$tmp/why" &&
    [ ! -s "$tmp/why" ] && soxfile "$tmp/gf.flac" 2 44100 $frames "16-bit FLAC"
point $? "granular -f in.flac -o gf.flac: a 16-bit stereo FLAC at 44100 Hz of $frames frames" "$tmp/why"

# sfpiece: a 1 s piece + a 0.5 s impulse response: 44100 + 22050 - 1 frames.
frames=66149
SF_THREADS=2 "$sfpiece" -s 1 -i 0.5 -r 3 -f "$tmp/in.flac" -o "$tmp/pf.wav" >"$tmp/out" 2>"$tmp/err" &&
    [ ! -s "$tmp/err" ] && grep -q ", grains of $tmp/in.flac, through a 0.50 s convolution reverb)" "$tmp/out" &&
    header "$tmp/pf.wav" $frames && soxfile "$tmp/pf.wav" 2 44100 $frames
point $? "sfpiece -f in.flac: a $frames-frame WAV, every header field right" "$tmp/why"

# reverb: the 22050 frames in.wav becomes at 44.1 kHz * 0.5 s: 44099 frames.
frames=44099
SF_THREADS=2 "$reverb" -i 0.5 -c -f "$tmp/in.wav" -o "$tmp/rw.wav" >"$tmp/out" 2>"$tmp/err" &&
    [ ! -s "$tmp/err" ] &&
    grep -q "^reverb: 0.5 s of stereo at 44.1 kHz from $tmp/in.wav \* a 0.50 s impulse response" "$tmp/out" &&
    grep -q '^reverb: sequential (no libsf) .* s; outputs bit-identical$' "$tmp/out" &&
    header "$tmp/rw.wav" $frames && soxfile "$tmp/rw.wav" 2 44100 $frames
point $? "reverb -f in.wav -c: bit-identical to the plain loop, a $frames-frame WAV" "$tmp/out"
# -s 0.25 reads the first 11025 frames (at 44.1 kHz) of in.flac: 33074 frames.
frames=33074
"$reverb" -q -s 0.25 -i 0.5 -f "$tmp/in.flac" -o "$tmp/rf.aiff" >"$tmp/out" 2>"$tmp/err" &&
    [ ! -s "$tmp/err" ] && soxfile "$tmp/rf.aiff" 2 44100 $frames &&
    grep -q "^Precision *: 16-bit$" "$tmp/why" && [ "$(head -c 4 "$tmp/rf.aiff")" = FORM ]
point $? "reverb -s 0.25 -f in.flac -o rf.aiff: the first 0.25 s, a 16-bit AIFF of $frames frames" "$tmp/why"

exit 0
