#!/bin/sh
# test-stream.sh - runs samples/stream (audio from stdin through a pipeline
# of lazy futures per block under a deadline, a WAV to stdout;
# docs/pipelines.md) and checks what it writes, in TAP:
#  - the documented pipeline, `sox -n -t wav - synth 10 pinknoise |
#    samples/stream | sox -t wav - out.wav`: sox reads back 1 channel,
#    48000 Hz, 480000 frames; the summary line names 469 blocks of 1024
#    frames and the default deadline, one block's duration (21.333 ms);
#  - with --deadline-ms 100000 (no block misses it) the file is the same,
#    byte for byte, at SF_THREADS=1, 2 and 4, no block is late, and it is
#    not the input (filtered); written to a regular file every header field
#    is exact, and written to a pipe the samples are the same;
#  - --deadline-ms 0 at SF_THREADS=1 and 4: every block is late (the main
#    thread reaches each after its deadline, nothing has run it, and a lazy
#    pipeline runs only when got), the file still has every frame, the
#    same at both (the dry input, delayed by the filter's delay);
#  - hostile inputs: a WAV of no frames (a valid WAV of none), one frame,
#    a length not a multiple of the block (-b 64), mono and stereo, 8000,
#    22050 and 48000 Hz (the output keeps the rate), 24-bit FLAC;
#  - errors: an empty stdin, junk, 3 channels: exit 1, one stderr line,
#    nothing on stdout; bad options: exit 2, the usage line; -h: exit 0;
#  - 10,000 blocks of 64 frames through SF_THREADS=4: every block, none
#    late, the same file as at SF_THREADS=1; and with --deadline-ms 0.02,
#    which some blocks miss (pipelines cancelled while they run), every
#    frame still written.
# Every input comes from sox (-R: the same noise every run); without sox
# the points SKIP, said so. About a second plain, a few seconds under
# ThreadSanitizer. Run by `make check` from the build directory; STREAM
# overrides the binary.
set -u
stream=${STREAM:-./samples/stream}
case $stream in /*) ;; *) stream=$(pwd)/$stream ;; esac
tmp=$(mktemp -d "${TMPDIR:-/tmp}/stream-test.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT

if [ ! -x "$stream" ]; then
    echo "Bail out! $stream is not built"
    exit 99
fi

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

plan=17
echo "1..$plan"
if ! command -v sox >/dev/null 2>&1; then
    while [ $n -lt $plan ]; do
        n=$((n + 1))
        echo "ok $n - stream # SKIP sox is not installed"
    done
    exit 0
fi

# soxfile FILE CHANNELS RATE FRAMES: sox --i reads FILE as that.
soxfile() {
    sox --i "$1" >"$tmp/why" 2>&1 &&
        grep -q "^Channels *: $2\$" "$tmp/why" &&
        grep -q "^Sample Rate *: $3\$" "$tmp/why" &&
        grep -q "^Duration *: .* = $4 samples" "$tmp/why"
}
# summary FILE BLOCKS FRAMES FRAMES_TOTAL LAYOUT RATE LATE DEADLINE THREADS:
# the one stderr line, exactly (LATE and DEADLINE may be patterns).
summary() {
    [ "$(wc -l <"$1" | tr -d ' ')" = 1 ] &&
        grep -Eq "^stream: $2 blocks of $3 frames \($4 frames, $5, $6 Hz\), $7 late \(written dry\), worst lateness [0-9]+\.[0-9]{3} ms, deadline $8 ms, SF_THREADS=$9\$" "$1"
}
# data FILE: its samples as raw bytes (the header read by sox).
data() { sox "$1" -t raw - 2>/dev/null; }

# The documented pipeline (random pink noise: sox's default seed).
sox -n -t wav - synth 10 pinknoise 2>/dev/null | "$stream" 2>"$tmp/err" |
    sox -t wav - "$tmp/out.wav" 2>/dev/null &&
    soxfile "$tmp/out.wav" 1 48000 480000 &&
    summary "$tmp/err" 469 1024 480000 mono 48000 '[0-9]+' 21.333 '[0-9]+'
point $? "sox synth 10 pinknoise | stream | sox: 1 channel, 48000 Hz, 480000 frames, the summary line" "$tmp/err"

# Stereo 44.1 kHz, 2 s (86 full blocks and 136 frames): the same file at
# 1, 2 and 4 threads.
sox -R -n -r 44100 -c 2 "$tmp/in.wav" synth 2 pinknoise >"$tmp/why" 2>&1 &&
    soxfile "$tmp/in.wav" 2 44100 88200
point $? "sox makes the input: 2 s of stereo pink noise at 44100 Hz" "$tmp/why"
status=0
for t in 1 2 4; do
    SF_THREADS=$t "$stream" --deadline-ms 100000 <"$tmp/in.wav" >"$tmp/g$t.wav" 2>"$tmp/gerr$t" &&
        summary "$tmp/gerr$t" 87 1024 88200 stereo 44100 0 100000.000 $t ||
        { status=1; cat "$tmp/gerr$t" >>"$tmp/whys"; }
done
point $status "--deadline-ms 100000 at SF_THREADS=1, 2, 4: 87 blocks, none late" "$tmp/whys"
cmp "$tmp/g1.wav" "$tmp/g2.wav" >"$tmp/why" 2>&1 && cmp "$tmp/g1.wav" "$tmp/g4.wav" >>"$tmp/why" 2>&1
point $? "--deadline-ms 100000: the same file at SF_THREADS=1, 2 and 4, byte for byte" "$tmp/why"
# A regular file: libsndfile's WAV, sizes exact (44-byte header, 4 bytes a
# frame); not the input.
size=$(wc -c <"$tmp/g1.wav" | tr -d ' ')
soxfile "$tmp/g1.wav" 2 44100 88200 && [ "$size" = $((44 + 88200 * 4)) ] &&
    ! cmp -s "$tmp/g1.wav" "$tmp/in.wav" && [ "$(od -An -tu4 -j40 -N4 "$tmp/g1.wav" | tr -d ' ')" = 352800 ]
point $? "a regular file: a 16-bit WAV, 2 channels, 44100 Hz, 88200 frames, exact sizes, not the input" "$tmp/why"
# A pipe: the same samples after a header of unknown length.
SF_THREADS=2 "$stream" --deadline-ms 100000 <"$tmp/in.wav" 2>/dev/null | cat >"$tmp/p.wav" &&
    tail -c +45 "$tmp/p.wav" >"$tmp/p.raw" && tail -c +45 "$tmp/g1.wav" >"$tmp/g.raw" &&
    cmp "$tmp/p.raw" "$tmp/g.raw" >"$tmp/why" 2>&1 &&
    [ "$(od -An -tu4 -j4 -N4 "$tmp/p.wav" | tr -d ' ')" = 4294967295 ] &&
    data "$tmp/p.wav" | cmp - "$tmp/g.raw" >>"$tmp/why" 2>&1
point $? "a pipe: the header says unknown length, the samples are the file's, sox reads them" "$tmp/why"

# --deadline-ms 0: every block late, written dry, every frame there.
status=0
: >"$tmp/whys"
for t in 1 4; do
    SF_THREADS=$t "$stream" --deadline-ms 0 <"$tmp/in.wav" >"$tmp/z$t.wav" 2>"$tmp/zerr$t" &&
        summary "$tmp/zerr$t" 87 1024 88200 stereo 44100 87 0.000 $t &&
        soxfile "$tmp/z$t.wav" 2 44100 88200 || { status=1; cat "$tmp/zerr$t" "$tmp/why" >>"$tmp/whys"; }
done
point $status "--deadline-ms 0 at SF_THREADS=1 and 4: 87 of 87 blocks late, a full-length WAV" "$tmp/whys"
# Dry: the same at 1 and 4 threads, not the filtered file.
cmp "$tmp/z1.wav" "$tmp/z4.wav" >"$tmp/why" 2>&1 && ! cmp -s "$tmp/z1.wav" "$tmp/g1.wav"
point $? "--deadline-ms 0: the dry file, the same at SF_THREADS=1 and 4, not the filtered one" "$tmp/why"

# Hostile inputs.
sox -n -t wav - trim 0 0 2>/dev/null | "$stream" >"$tmp/e.wav" 2>"$tmp/err" &&
    summary "$tmp/err" 0 1024 0 mono 48000 0 21.333 '[0-9]+' && [ "$(wc -c <"$tmp/e.wav" | tr -d ' ')" = 44 ] &&
    sox --i "$tmp/e.wav" >"$tmp/why" 2>&1 && grep -q '^Channels *: 1$' "$tmp/why" &&
    grep -q '^Sample Rate *: 48000$' "$tmp/why" && sox "$tmp/e.wav" -n stat >>"$tmp/why" 2>&1 &&
    grep -q '^Samples read: *0$' "$tmp/why" && cat "$tmp/why" >>"$tmp/err"
point $? "a WAV of no frames from a pipe: a valid 44-byte WAV of none (sox reads it), 0 blocks" "$tmp/err"
sox -n -r 8000 -c 1 -t raw -e signed -b 16 - synth 0.01 sine 300 2>/dev/null | head -c 2 |
    sox -t raw -r 8000 -e signed -b 16 -c 1 - "$tmp/one.wav" 2>/dev/null &&
    "$stream" <"$tmp/one.wav" >"$tmp/one-out.wav" 2>"$tmp/err" &&
    summary "$tmp/err" 1 1024 1 mono 8000 0 128.000 '[0-9]+' && soxfile "$tmp/one-out.wav" 1 8000 1
point $? "one frame of mono at 8000 Hz: one frame out, at 8000 Hz" "$tmp/err"
sox -R -n -r 22050 -c 1 -t wav - synth 0.5 pinknoise 2>/dev/null | "$stream" -b 64 >"$tmp/m.wav" 2>"$tmp/err" &&
    summary "$tmp/err" 173 64 11025 mono 22050 '[0-9]+' 2.902 '[0-9]+' && soxfile "$tmp/m.wav" 1 22050 11025
point $? "-b 64, 0.5 s of mono at 22050 Hz from a pipe (not a multiple of 64): 11025 frames, 173 blocks" "$tmp/err"
sox -R -n -r 48000 -c 2 -b 24 "$tmp/in.flac" synth 0.75 pinknoise 2>/dev/null &&
    "$stream" --deadline-ms=100000 <"$tmp/in.flac" >"$tmp/f.wav" 2>"$tmp/err" &&
    summary "$tmp/err" 36 1024 36000 stereo 48000 0 100000.000 '[0-9]+' && soxfile "$tmp/f.wav" 2 48000 36000
point $? "24-bit stereo FLAC at 48000 Hz (a file: libsndfile reads FLAC only from one): 36000 frames of stereo at 48000 Hz" "$tmp/err"

# errors NAME ARGS... <INPUT: exit 1, one stderr line, nothing on stdout.
errors() {
    "$stream" "$@" >"$tmp/eout" 2>"$tmp/why"
    st=$?
    [ $st = 1 ] && [ ! -s "$tmp/eout" ] && [ "$(wc -l <"$tmp/why" | tr -d ' ')" = 1 ] ||
        { echo "exit status $st" >>"$tmp/why"; return 1; }
}
bad=0
: >"$tmp/whys"
errors </dev/null && grep -q '^stream: stdin: Format not recognised$' "$tmp/why" || bad=1
cat "$tmp/why" >>"$tmp/whys"
echo "not a sound" | errors && grep -q '^stream: stdin: .' "$tmp/why" || bad=1
cat "$tmp/why" >>"$tmp/whys"
sox -n -c 3 -t wav - synth 0.1 sine 300 2>/dev/null | errors &&
    grep -q '^stream: stdin: 3 channels: stream reads mono or stereo$' "$tmp/why" || bad=1
cat "$tmp/why" >>"$tmp/whys"
point $bad "an empty stdin, junk, 3 channels: one stderr line each, exit 1, nothing on stdout" "$tmp/whys"
bad=0
: >"$tmp/whys"
for args in "-b 100" "-b 8" "-b x" "-b" "--deadline-ms -1" "--deadline-ms x" "--deadline-ms" "extra"; do
    "$stream" $args <"$tmp/in.wav" >"$tmp/eout" 2>"$tmp/why"
    st=$?
    [ $st = 2 ] && [ ! -s "$tmp/eout" ] && [ "$(wc -l <"$tmp/why" | tr -d ' ')" = 1 ] &&
        grep -q '^stream: usage: stream ' "$tmp/why" || { bad=1; echo "$args: exit $st" >>"$tmp/whys"; }
done
point $bad "-b 100, -b 8, -b x, -b, --deadline-ms -1, x or nothing, an extra argument: usage errors (exit 2)" "$tmp/whys"
"$stream" -h >"$tmp/help" 2>"$tmp/why" </dev/null && grep -q '^stream: usage: stream ' "$tmp/help" && [ ! -s "$tmp/why" ]
point $? "-h: the usage line on stdout, exit 0" "$tmp/why"

# 10,000 blocks of 64 frames (640000 frames of mono) through 4 threads.
sox -R -n -r 48000 -c 1 "$tmp/big.wav" synth 640000s pinknoise 2>"$tmp/why" &&
    SF_THREADS=4 "$stream" -b 64 --deadline-ms 100000 <"$tmp/big.wav" >"$tmp/b4.wav" 2>"$tmp/err" &&
    summary "$tmp/err" 10000 64 640000 mono 48000 0 100000.000 4 &&
    SF_THREADS=1 "$stream" -b 64 --deadline-ms 100000 <"$tmp/big.wav" >"$tmp/b1.wav" 2>>"$tmp/why" &&
    cmp "$tmp/b1.wav" "$tmp/b4.wav" >>"$tmp/why" 2>&1
point $? "10,000 blocks of 64 frames at SF_THREADS=4: none late, the same file as at SF_THREADS=1" "$tmp/err"
# A deadline some blocks miss and some meet (how many: the machine's): the
# cancellation of pipelines running on workers, under the sanitizers too.
SF_THREADS=4 "$stream" -b 64 --deadline-ms 0.02 <"$tmp/big.wav" >"$tmp/c4.wav" 2>"$tmp/err" &&
    summary "$tmp/err" 10000 64 640000 mono 48000 '[0-9]+' 0.020 4 && soxfile "$tmp/c4.wav" 1 48000 640000
point $? "10,000 blocks of 64 frames, --deadline-ms 0.02 at SF_THREADS=4: every frame written, the late ones counted" "$tmp/err"

exit 0
