# samples/local.mk - included by the top Makefile.am (paths are from the top
# directory). The samples are demos and smoke tests of the public API: built
# unless --disable-samples, the audio ones when libsndfile is found; their
# sources are installed as examples (tools/install/local.mk).

if SF_SAMPLES

noinst_PROGRAMS += samples/fib samples/meh samples/nqueens_search samples/mandelbrot samples/batches

samples_fib_SOURCES = samples/fib.c
samples_fib_LDADD = libsf.la

samples_meh_SOURCES = samples/meh.c
samples_meh_LDADD = libsf.la

samples_nqueens_search_SOURCES = samples/nqueens_search.c
samples_nqueens_search_LDADD = libsf.la

samples_mandelbrot_SOURCES = samples/mandelbrot.c
samples_mandelbrot_LDADD = libsf.la

samples_batches_SOURCES = samples/batches.c
samples_batches_LDADD = libsf.la

# make check runs nqueens_search and checks its output: exact where the
# schedule cannot change it (SF_THREADS=1), its invariants elsewhere.
TESTS += samples/test-nqueens_search.sh
EXTRA_DIST += samples/test-nqueens_search.sh

# mandelbrot: the same image at SF_THREADS=1, 2 and 4, rows stolen at 2 and 4.
TESTS += samples/test-mandelbrot.sh
EXTRA_DIST += samples/test-mandelbrot.sh
endif

if SF_AUDIO
# The audio samples (README "Samples"): samples/audio holds the parallel FFT,
# the convolution reverb, the granular synthesis and the sound files
# (libsndfile reads and writes them) that they share, built once into a
# convenience library; libtool passes its libraries on to whatever links it.
noinst_LTLIBRARIES += samples/audio/libsfaudio.la
samples_audio_libsfaudio_la_SOURCES = \
	samples/audio/fft.h samples/audio/fft.c \
	samples/audio/reverb.h samples/audio/reverb.c \
	samples/audio/granular.h samples/audio/granular.c \
	samples/audio/sound.h samples/audio/sound.c
samples_audio_libsfaudio_la_CPPFLAGS = $(AM_CPPFLAGS) $(SNDFILE_CFLAGS)
samples_audio_libsfaudio_la_LIBADD = libsf.la $(SNDFILE_LIBS) -lm

noinst_PROGRAMS += samples/reverb samples/granular samples/sfpiece
samples_sfpiece_SOURCES = samples/sfpiece.c samples/audio/args.h
samples_sfpiece_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/samples
samples_sfpiece_LDADD = samples/audio/libsfaudio.la
samples_granular_SOURCES = samples/granular.c samples/audio/args.h
samples_granular_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/samples
samples_granular_LDADD = samples/audio/libsfaudio.la
samples_reverb_SOURCES = samples/reverb.c samples/audio/args.h
samples_reverb_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/samples
samples_reverb_LDADD = samples/audio/libsfaudio.la

# stream: audio from stdin through a pipeline per block under a deadline
# (promises, timed waits, cancellation; docs/pipelines.md).
noinst_PROGRAMS += samples/stream
samples_stream_SOURCES = samples/stream.c
samples_stream_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/samples
samples_stream_LDADD = samples/audio/libsfaudio.la

# jack: a JACK client whose process callback never waits, the filter a
# graph of continuations per period (docs/pipelines.md); built when
# configure found libjack.
if SF_JACK
noinst_PROGRAMS += samples/jack
samples_jack_SOURCES = samples/jack.c
samples_jack_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/samples $(JACK_CFLAGS)
samples_jack_LDADD = samples/audio/libsfaudio.la $(JACK_LIBS) -lm
endif

# make check: the FFT against FFTW (its cases SKIP without FFTW) and a direct
# DFT; TAP from the program itself.
check_PROGRAMS += samples/audio/test_fft
TESTS += samples/audio/test_fft
samples_audio_test_fft_SOURCES = samples/audio/test_fft.c samples/audio/tap.h
samples_audio_test_fft_CPPFLAGS = $(AM_CPPFLAGS) $(FFTW_CFLAGS)
samples_audio_test_fft_LDADD = samples/audio/libsfaudio.la $(FFTW_LIBS)

# The convolution against a direct computation, bit-identical to the plain
# loop at 1, 2 and 4 threads; failures.
check_PROGRAMS += samples/audio/test_reverb
TESTS += samples/audio/test_reverb
samples_audio_test_reverb_SOURCES = samples/audio/test_reverb.c samples/audio/tap.h
samples_audio_test_reverb_LDADD = samples/audio/libsfaudio.la

# The synthesis: whole == in stretches, bit-identical at 1, 2, 4 threads.
check_PROGRAMS += samples/audio/test_granular
TESTS += samples/audio/test_granular
samples_audio_test_granular_SOURCES = samples/audio/test_granular.c samples/audio/tap.h
samples_audio_test_granular_LDADD = samples/audio/libsfaudio.la

# The granular WAV (byte-identical at 1, 2, 4 threads, header fields, sox
# --i) and sfpiece's (the same, default path, summary line, errors).
TESTS += samples/test-audio.sh
EXTRA_DIST += samples/test-audio.sh

# stream: sox's pink noise through it to sox, byte-identical at 1, 2, 4
# threads with a generous deadline, late blocks at --deadline-ms 0, the
# hostile inputs and the errors; 10,000 blocks through 4 threads.
TESTS += samples/test-stream.sh
EXTRA_DIST += samples/test-stream.sh

# mpi-render: the granular piece low-pass filtered over MPI ranks, every
# message a libsf-mpi future; built when configure found MPI.
if SF_MPI
noinst_PROGRAMS += samples/mpi-render
samples_mpi_render_SOURCES = samples/mpi-render.c samples/audio/args.h
samples_mpi_render_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/samples $(MPI_CFLAGS)
samples_mpi_render_LDADD = libsf-mpi.la samples/audio/libsfaudio.la $(MPI_LIBS) -lm
endif
# Its file byte-identical without mpiexec and at -np 1, 2 and 4 (under
# timeout), its usage and output errors; needs mpiexec (MPIEXEC).
if SF_MPI_TESTS
TESTS += samples/test-mpi-render.sh
endif
EXTRA_DIST += samples/test-mpi-render.sh
# Open MPI's leaks at exit, for memcheck over mpi-render at one rank.
EXTRA_DIST += samples/mpi-valgrind.supp

# jack: a private jackd (dummy driver) and the generator feeding two
# clients (SF_THREADS=1 mono, SF_THREADS=4 stereo); every block in time
# bit-identical to --offline, every late one to --offline --dry, no xrun of
# theirs. SKIP, said so, without JACK.
TESTS += samples/test-jack.sh
EXTRA_DIST += samples/test-jack.sh
endif
