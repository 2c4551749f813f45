#!/bin/sh
# test-jack.sh - runs samples/jack (a JACK client whose process callback
# never waits; the filter a graph of continuations per period;
# docs/pipelines.md) against a private JACK server, and checks, in TAP:
#  - jackd starts with the dummy driver (512 frames at 48000 Hz, no
#    realtime priority, no audio device; a server name of this run's own);
#  - two clients run 4 s each, stereo at SF_THREADS=4 and mono at
#    SF_THREADS=1, both fed by the same program's generator (--generate
#    --to), recording what they read and wrote (--record): each prints its
#    running line and its summary, 375 periods, and exits 0;
#  - what each read is silence, then the test signal's blocks in order from
#    its first (--find-signal; a period the client missed skips one; a
#    block JACK handed over while the generator was still writing it, after
#    an xrun, is neither: at most as many as the xruns reported);
#  - what each wrote is, byte for byte, --offline's output for what it read
#    with the periods it listed late written dry (--late): every block in
#    time is the offline filter's, every late one the dry input; the list
#    has as many periods as the summary's late count; the filtered output
#    is not the dry one. At SF_THREADS=4 not every block is late (so some
#    were filtered); at SF_THREADS=1, where the feeder runs every graph in
#    its waits, a slow build (ThreadSanitizer) may make them all late;
#  - no xrun the clients caused: jackd names neither in an xrun, or only
#    before its callback started, or the client's callbacks never used more
#    than half a period of CPU (the machine's scheduling then: said so; in a
#    ThreadSanitizer build, said and not counted);
#  - a client name taken: the client runs under the server's variant of it;
#  - errors: no server (-s a name nobody uses: exit 1, one line, no server
#    started), --offline of a partial period, a bad
#    --late list, bad options (exit 2, the usage line), -h.
# Without samples/jack (configure found no libjack) or jackd, every point
# SKIPs, saying which. About 10 seconds. Run by `make check` from the build
# directory; JACK_SAMPLE overrides the binary.
set -u
jack=${JACK_SAMPLE:-./samples/jack}
case $jack in /*) ;; *) jack=$(pwd)/$jack ;; esac

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
plan=14
echo "1..$plan"
skip_all() {
    while [ $n -lt $plan ]; do
        n=$((n + 1))
        echo "ok $n - jack # SKIP $1"
    done
    exit 0
}
if [ ! -x "$jack" ]; then
    skip_all "samples/jack is not built: configure found no JACK (apt-get install libjack-jackd2-dev jackd2)"
fi
for cmd in jackd jack_lsp; do
    command -v $cmd >/dev/null 2>&1 ||
        skip_all "$cmd is not installed (apt-get install jackd2)"
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/jack-test.XXXXXX") || exit 99
server=sfjack-test-$$-$(date +%s)
pids=""
cleanup() {
    for pid in $pids; do
        kill "$pid" 2>/dev/null
    done
    wait 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
# No D-Bus audio-device reservation (no device: the dummy driver), and
# every JACK program of this run on this server only.
export JACK_NO_AUDIO_RESERVATION=1
export JACK_DEFAULT_SERVER=$server
# No libjack starts a server of its own (JACK2 does only when asked).
unset JACK_START_SERVER
export JACK_NO_START_SERVER=1

# wait_for SECONDS COMMAND...: until COMMAND succeeds, at most SECONDS.
wait_for() {
    tries=$(($1 * 20))
    shift
    while [ $tries -gt 0 ]; do
        "$@" >/dev/null 2>&1 && return 0
        sleep 0.05
        tries=$((tries - 1))
    done
    return 1
}

# has_port PORT: the server lists it (jack_lsp PORT exits 0 either way).
has_port() { jack_lsp 2>/dev/null | grep -qx "$1"; }

jackd --no-realtime -n "$server" -d dummy -r 48000 -p 512 -C 2 -P 2 >"$tmp/jackd.log" 2>&1 &
jackd_pid=$!
pids="$jackd_pid"
wait_for 20 has_port system:playback_1
point $? "jackd starts: the dummy driver, 512 frames at 48000 Hz, server $server" "$tmp/jackd.log"

# The clients, then the generator once their ports exist.
SF_THREADS=4 "$jack" -n sfjack-a -c 2 -t 4 --record "$tmp/a" >"$tmp/a.stdout" 2>"$tmp/a.err" &
a_pid=$!
SF_THREADS=1 "$jack" -n sfjack-b -c 1 -t 4 --record "$tmp/b" >"$tmp/b.stdout" 2>"$tmp/b.err" &
b_pid=$!
pids="$pids $a_pid $b_pid"
wait_for 20 has_port sfjack-a:in_2 && wait_for 20 has_port sfjack-b:in_1
ports=$?
"$jack" --generate -n sfjack-gen -c 2 -t 20 --to sfjack-a --to sfjack-b 2>"$tmp/gen.err" &
gen_pid=$!
pids="$pids $gen_pid"
# A client name taken: the server's variant of it (JACK2: NAME-01).
"$jack" -n sfjack-a -c 1 -t 0.2 >"$tmp/taken.out" 2>"$tmp/taken.err"
taken=$?
wait $a_pid
a_st=$?
wait $b_pid
b_st=$?
kill -TERM $gen_pid 2>/dev/null
wait $gen_pid
gen_st=$?

# summary FILE NAME CHANNELS THREADS: the running line, then the summary
# (besides libjack's own notices, if any).
summary() {
    grep -v '^jack: libjack: ' "$1" >"$1.own"
    [ "$(wc -l <"$1.own" | tr -d ' ')" = 2 ] &&
        sed -n 1p "$1.own" | grep -Eq "^jack: $2: running, $3 channels? \(in_1.* -> out_1.*\), 512 frames at 48000 Hz, latency 4 periods\$" &&
        sed -n 2p "$1.own" | grep -Eq "^jack: $2: 375 periods of 512 frames at 48000 Hz, [0-9]+ late \(written dry\), [0-9]+ inputs with no graph ready, latency 4 periods, [0-9]+ xruns reported, longest callback [0-9.]+ us \(CPU [0-9.]+ us\), [0-9]+ callbacks over half a period of CPU, SF_THREADS=$4\$"
}
cat "$tmp/a.err" "$tmp/b.err" >"$tmp/why"
echo "exit status $a_st, $b_st; ports up: $ports" >>"$tmp/why"
[ $ports = 0 ] && [ $a_st = 0 ] && [ $b_st = 0 ] && summary "$tmp/a.err" sfjack-a 2 4 &&
    summary "$tmp/b.err" sfjack-b 1 1
point $? "two clients (stereo at SF_THREADS=4, mono at SF_THREADS=1), 4 s each: 375 periods of 512 frames, the running line and the summary, exit 0" "$tmp/why"
echo "exit status $gen_st" >>"$tmp/gen.err"
[ $gen_st = 0 ] && grep -Eq '^jack: sfjack-gen: [0-9]+ frames of the test signal \(2 channels\) at 48000 Hz$' "$tmp/gen.err"
point $? "the generator connects itself to both, plays the test signal, stops on SIGTERM (exit 0, its line)" "$tmp/gen.err"
echo "exit status $taken" >>"$tmp/taken.err"
[ $taken = 0 ] && [ "$(grep -vc '^jack: libjack: ' "$tmp/taken.err")" = 3 ] &&
    grep -Eq '^jack: sfjack-a-?[0-9]+: running, 1 channel ' "$tmp/taken.err" &&
    grep -Eq '^jack: sfjack-a-?[0-9]+: 19 periods of 512 frames' "$tmp/taken.err"
point $? "a client name taken: the client runs under the server's variant of it (19 periods for -t 0.2)" "$tmp/taken.err"

# What each read: silence, then the test signal.
for c in a b; do
    ch=2
    [ $c = b ] && ch=1
    xruns=$(sed -n 's/.* \([0-9]*\) xruns reported.*/\1/p' "$tmp/$c.err")
    "$jack" --find-signal -b 512 -c $ch <"$tmp/$c.in" >"$tmp/$c.find" 2>&1 &&
        grep -Eq '^375 blocks: [0-9]+ silent, then [0-9]+ of the test signal in order from its block [0-9]+ \([0-9]+ skipped\), [0-9]+ other$' "$tmp/$c.find" &&
        [ "$(sed 's/.* then \([0-9]*\) of.*/\1/' "$tmp/$c.find")" -ge 100 ] &&
        [ "$(sed 's/.*, \([0-9]*\) other$/\1/' "$tmp/$c.find")" -le "${xruns:-0}" ]
    echo "xruns reported to sfjack-$c: ${xruns:-none}" >>"$tmp/$c.find"
    point $? "sfjack-$c read silence, then the test signal's blocks in order (at least 100; a block torn by an xrun, no more of them than xruns)" "$tmp/$c.find"
done

# What each wrote: the offline filter's blocks, the late ones dry.
for c in a b; do
    ch=2
    [ $c = b ] && ch=1
    late=$(sed -n 's/.* \([0-9]*\) late (written dry).*/\1/p' "$tmp/$c.err")
    listed=$(wc -l <"$tmp/$c.late" | tr -d ' ')
    {
        echo "late: $late in the summary, $listed listed"
        "$jack" --offline -b 512 -c $ch --late "$tmp/$c.late" <"$tmp/$c.in" >"$tmp/$c.expect" &&
            cmp "$tmp/$c.expect" "$tmp/$c.out"
    } >"$tmp/why" 2>&1 && [ "$late" = "$listed" ] && { [ $c = b ] || [ "$late" -lt 371 ]; }
    point $? "sfjack-$c wrote, byte for byte, --offline's blocks for its input, the $late it listed late dry (as many as its summary says$([ $c = a ] && echo ', not all'))" "$tmp/why"
done
# The filter does something: the filtered output is not the dry one.
"$jack" --offline -b 512 -c 2 <"$tmp/a.in" >"$tmp/a.ref" 2>"$tmp/why" &&
    "$jack" --offline -b 512 -c 2 --dry <"$tmp/a.in" >"$tmp/a.dry" 2>>"$tmp/why" &&
    [ "$(wc -c <"$tmp/a.ref")" = "$(wc -c <"$tmp/a.in")" ] && ! cmp -s "$tmp/a.ref" "$tmp/a.dry"
point $? "--offline: the input's length, and the filtered output differs from --dry's" "$tmp/why"

# No xrun the clients caused. jackd names a client in an xrun when it had
# not finished its callback by the next cycle: "state = Triggered" if it
# had not even started (its thread was not scheduled in time), otherwise it
# was still running (or finished late). Its own doing only if the callback
# took that long on the CPU: the client counts callbacks that used more
# than half a period of CPU time. A ThreadSanitizer build (this build
# directory's CFLAGS) runs the callback's own code many times slower, so its
# CPU time there says nothing of the client: reported, not failed.
tsan=0
grep -q '^CFLAGS = .*-fsanitize=thread' Makefile 2>/dev/null && tsan=1
kill -TERM $jackd_pid 2>/dev/null
wait $jackd_pid 2>/dev/null
: >"$tmp/why"
status=0
for c in a b; do
    grep "XRun: client = sfjack-$c was not finished\|XRun: client sfjack-$c finished after" \
        "$tmp/jackd.log" >"$tmp/named"
    named=$(wc -l <"$tmp/named" | tr -d ' ')
    running=$(grep -vc "state = Triggered" "$tmp/named")
    heavy=$(sed -n 's/.*, \([0-9]*\) callbacks over half a period of CPU.*/\1/p' "$tmp/$c.err")
    cpu=$(sed -n 's/.*longest callback [0-9.]* us (CPU \([0-9.]*\) us).*/\1/p' "$tmp/$c.err")
    if [ "$running" != 0 ] && [ "${heavy:-1}" != 0 ] && [ $tsan = 0 ]; then
        status=1
        echo "sfjack-$c: in its callback at $running xruns; $heavy callbacks over half a period of CPU" >>"$tmp/why"
    elif [ "$running" != 0 ] && [ "${heavy:-1}" != 0 ]; then
        echo "# jackd named sfjack-$c in $running xruns while in its callback; $heavy callbacks used over half a period of CPU (longest $cpu us of 10667): a ThreadSanitizer build, not counted"
    elif [ "$named" != 0 ]; then
        echo "# jackd named sfjack-$c in $named xruns ($running while in its callback); its longest callback used $cpu us of CPU of a 10667 us period: the machine's scheduling, not the client"
    fi
done
point $status "no xrun the clients caused (jackd names neither, or not while one used over half a period of CPU)" "$tmp/why"

# Errors.
"$jack" -s sfjack-nobody-$$ -t 1 >"$tmp/eout" 2>"$tmp/why"
st=$?
echo "exit status $st" >>"$tmp/why"
[ $st = 1 ] && [ ! -s "$tmp/eout" ] && [ "$(wc -l <"$tmp/why" | tr -d ' ')" = 2 ] &&
    grep -q '^jack: cannot reach a JACK server named sfjack-nobody-[0-9]* (status 0x[0-9a-f]*): start jackd, or run under PipeWire as pw-jack samples/jack$' "$tmp/why" &&
    ! jack_lsp -s sfjack-nobody-$$ >/dev/null 2>&1
point $? "no server: exit 1, one line, no server started" "$tmp/why"
bad=0
: >"$tmp/whys"
head -c 1000 "$tmp/a.in" | "$jack" --offline -b 512 -c 2 >"$tmp/eout" 2>"$tmp/why"
[ $? = 1 ] && [ "$(wc -l <"$tmp/why" | tr -d ' ')" = 1 ] &&
    grep -q '^jack: stdin: not a whole number of periods of raw floats (-b, -c)$' "$tmp/why" || bad=1
cat "$tmp/why" >>"$tmp/whys"
printf '7\n3\n' >"$tmp/bad.late"
"$jack" --offline -b 512 -c 2 --late "$tmp/bad.late" <"$tmp/a.in" >"$tmp/eout" 2>"$tmp/why"
[ $? = 1 ] && grep -q "^jack: $tmp/bad.late: not a list of ascending period numbers\$" "$tmp/why" || bad=1
cat "$tmp/why" >>"$tmp/whys"
point $bad "--offline of a partial period, and of a --late list out of order: exit 1, one line" "$tmp/whys"
bad=0
: >"$tmp/whys"
for args in "-c 3" "-l 17" "-t 0" "--record x" "--offline" "--offline -b 100" \
    "--offline -b 256 --dry --late x" "--generate --record x"; do
    "$jack" $args >"$tmp/eout" 2>"$tmp/why" </dev/null
    st=$?
    [ $st = 2 ] && [ ! -s "$tmp/eout" ] && [ "$(wc -l <"$tmp/why" | tr -d ' ')" = 1 ] &&
        grep -q '^jack: usage: jack ' "$tmp/why" || { bad=1; echo "$args: exit $st" >>"$tmp/whys"; }
done
point $bad "bad options (-c 3, -l 17, -t 0, --record without -t, --offline without -b, ...): usage errors (exit 2)" "$tmp/whys"
"$jack" -h >"$tmp/help" 2>"$tmp/why" && grep -q '^jack: usage: jack ' "$tmp/help" && [ ! -s "$tmp/why" ]
point $? "-h: the usage line on stdout, exit 0" "$tmp/why"

exit 0
