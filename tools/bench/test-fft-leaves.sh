#!/bin/sh
# test-fft-leaves.sh - make check's run of `bench_fft check`: the FFT over
# FFTW leaves (tools/bench/src/fft_leaves.c, which bench_fft times and the
# reverb runs on) against FFTW's own plans, 2^1 .. 2^21 points, both signs,
# two cutoffs, 1 and 2 threads, within 1e-12 of the peak. Added to TESTS only
# when configure found FFTW. BENCH_FFT overrides the binary. TAP, one point.
set -u
bin=${BENCH_FFT:-./tools/bench/bench_fft}
if [ ! -x "$bin" ]; then
    echo "Bail out! $bin is not built"
    exit 99
fi
echo "1..1"
out=$("$bin" check 2>&1)
rc=$?
printf '%s\n' "$out" | sed 's/^/# /'
if [ $rc = 0 ] && printf '%s\n' "$out" | grep -q '^FFTW leaves against FFTW: 168 transforms'; then
    echo "ok 1 - bench_fft check: the FFTW-leaf engine matches FFTW"
else
    echo "not ok 1 - bench_fft check exited $rc"
fi
