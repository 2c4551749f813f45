# tools/bench/local.mk - included by the top Makefile.am (paths are from the
# top directory). The benchmark programs are EXTRA_PROGRAMS: plain `make`
# builds none of them, `make bench-programs` builds those whose peer configure
# found (tools/bench/run calls it). Compiler flags are the build's own
# (CFLAGS; tools/bench/run wants an optimised build and says so otherwise);
# libsf is linked statically, as the peers' headers-and-runtime are.

# Without --enable-bench only bench_fft's check mode is built (make check).
bench_programs =
EXTRA_PROGRAMS =
if SF_BENCH
bench_programs += tools/bench/bench_seq tools/bench/bench_sf tools/bench/bench_sftask \
	tools/bench/bench_sflight tools/bench/mem_sf tools/bench/xget_sf
EXTRA_PROGRAMS += tools/bench/bench_seq tools/bench/bench_sf tools/bench/bench_sftask \
	tools/bench/bench_sflight tools/bench/bench_lace tools/bench/mem_sf tools/bench/xget_sf \
	tools/bench/bench_tbb tools/bench/bench_gomp

tools_bench_bench_seq_SOURCES = tools/bench/src/bench_seq.c tools/bench/src/common.h \
	tools/bench/src/classic.h tools/bench/src/workloads.h
# Empty: without it the program would take the tests' default LDADD.
tools_bench_bench_seq_LDADD =

tools_bench_bench_sf_SOURCES = tools/bench/src/bench_sf.c tools/bench/src/common.h \
	tools/bench/src/classic.h tools/bench/src/workloads.h
tools_bench_bench_sf_LDADD = libsf.la
tools_bench_bench_sf_LDFLAGS = -static

# The same workloads with their tasks in the caller's frames (sf_task).
tools_bench_bench_sftask_SOURCES = $(tools_bench_bench_sf_SOURCES)
tools_bench_bench_sftask_CPPFLAGS = $(AM_CPPFLAGS) -DBENCH_SF_TASK
tools_bench_bench_sftask_LDADD = libsf.la
tools_bench_bench_sftask_LDFLAGS = -static

# The fork-join workloads on light tasks (sf_light, sf_spawn, sf_sync).
tools_bench_bench_sflight_SOURCES = tools/bench/src/bench_sflight.c tools/bench/src/common.h \
	tools/bench/src/classic.h tools/bench/src/workloads.h
tools_bench_bench_sflight_LDADD = libsf.la
tools_bench_bench_sflight_LDFLAGS = -static

# The same on Lace, light tasks' peer: built when configure's LACE_DIR names
# a Lace build (configure.ac), which it links statically (liblace.a).
tools_bench_bench_lace_SOURCES = tools/bench/src/bench_lace.c tools/bench/src/common.h \
	tools/bench/src/classic.h tools/bench/src/workloads.h
tools_bench_bench_lace_CPPFLAGS = $(AM_CPPFLAGS) $(LACE_CPPFLAGS) \
	-DLACE_VERSION='"$(LACE_VERSION)"' -DLACE_COMMIT='"$(LACE_COMMIT)"'
tools_bench_bench_lace_CFLAGS = -std=c11 -Wall -Wextra -pthread
tools_bench_bench_lace_LDADD = $(LACE_LIBS) -lm
# Relinked when liblace.a is rebuilt.
EXTRA_tools_bench_bench_lace_DEPENDENCIES = $(LACE_LIB)

tools_bench_mem_sf_SOURCES = tools/bench/src/mem_sf.c tools/bench/src/common.h
tools_bench_mem_sf_LDADD = libsf.la
tools_bench_mem_sf_LDFLAGS = -static

tools_bench_xget_sf_SOURCES = tools/bench/src/xget_sf.c tools/bench/src/common.h
tools_bench_xget_sf_LDADD = libsf.la
tools_bench_xget_sf_LDFLAGS = -static

tools_bench_bench_tbb_SOURCES = tools/bench/src/bench_tbb.cpp tools/bench/src/common.h \
	tools/bench/src/classic.h tools/bench/src/workloads.h
tools_bench_bench_tbb_CPPFLAGS = $(AM_CPPFLAGS) $(TBB_CFLAGS)
tools_bench_bench_tbb_CXXFLAGS = -std=c++17 -Wall -Wextra -pthread
tools_bench_bench_tbb_LDADD = $(TBB_LIBS)

tools_bench_bench_gomp_SOURCES = tools/bench/src/bench_omp.c tools/bench/src/common.h \
	tools/bench/src/classic.h tools/bench/src/workloads.h
tools_bench_bench_gomp_CPPFLAGS = $(AM_CPPFLAGS) -DOMP_RUNTIME_NAME='"gomp"'
tools_bench_bench_gomp_CFLAGS = $(AM_CFLAGS) $(OPENMP_CFLAGS)
tools_bench_bench_gomp_LDFLAGS = $(OPENMP_CFLAGS)
tools_bench_bench_gomp_LDADD =

# clang is a second compiler, outside automake's one-compiler-per-language
# model: one explicit rule, with the build's CFLAGS.
EXTRA_DIST += tools/bench/src/bench_omp.c
tools/bench/bench_llomp$(EXEEXT): $(srcdir)/tools/bench/src/bench_omp.c $(srcdir)/tools/bench/src/common.h \
		$(srcdir)/tools/bench/src/classic.h $(srcdir)/tools/bench/src/workloads.h
	@$(MKDIR_P) tools/bench
	$(AM_V_CC)$(CLANG) $(DEFAULT_INCLUDES) $(AM_CPPFLAGS) $(CPPFLAGS) -DOMP_RUNTIME_NAME='"llomp"' \
		-std=c11 -Wall -Wextra -pthread $(CFLAGS) -fopenmp=libomp \
		-o $@ $(srcdir)/tools/bench/src/bench_omp.c $(LDFLAGS)

if BENCH_TBB
bench_programs += tools/bench/bench_tbb
endif
if BENCH_GOMP
bench_programs += tools/bench/bench_gomp
endif
if BENCH_LLOMP
bench_programs += tools/bench/bench_llomp
endif
if BENCH_LACE
bench_programs += tools/bench/bench_lace
endif

bench-programs: $(bench_programs)
CLEANFILES += $(EXTRA_PROGRAMS) tools/bench/bench_llomp$(EXEEXT)

endif

if SF_AUDIO
# The audio samples' FFT and reverb against sequential code and FFTW
# (bench_fft.c); FFTW's columns are "not run" when configure did not find it.
if SF_BENCH
bench_programs += tools/bench/bench_fft
endif
EXTRA_PROGRAMS += tools/bench/bench_fft
tools_bench_bench_fft_SOURCES = tools/bench/src/bench_fft.c
if SF_FFTW
# Its libsf+FFTW leaves columns: the four-step FFT over FFTW plans.
tools_bench_bench_fft_SOURCES += tools/bench/src/fft_leaves.c tools/bench/src/fft_leaves.h
endif
tools_bench_bench_fft_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/samples $(FFTW_CFLAGS)
tools_bench_bench_fft_LDADD = samples/audio/libsfaudio.la $(FFTW_THREADS_LIBS) $(FFTW_LIBS) -lm
tools_bench_bench_fft_LDFLAGS = -static
if SF_FFTW
# make check runs its check mode: the FFTW-leaf engine against FFTW.
check_PROGRAMS += tools/bench/bench_fft
TESTS += tools/bench/test-fft-leaves.sh
endif
EXTRA_DIST += tools/bench/test-fft-leaves.sh

endif

if SF_BENCH
# The cost of a fiber switch (runtime/platform/fiber.h), linked against the internal
# convenience library as tests/test_fiber is; no peer.
bench_programs += tools/bench/switch_sf
EXTRA_PROGRAMS += tools/bench/switch_sf
tools_bench_switch_sf_SOURCES = tools/bench/src/switch_sf.c
tools_bench_switch_sf_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/runtime
tools_bench_switch_sf_LDADD = libsfcore.la

# The latency from sf_promise_set, on a plain thread, to the wake of a getter
# asleep on the promise (promise_sf.c); no peer.
bench_programs += tools/bench/promise_sf
EXTRA_PROGRAMS += tools/bench/promise_sf
tools_bench_promise_sf_SOURCES = tools/bench/src/promise_sf.c tools/bench/src/common.h
tools_bench_promise_sf_LDADD = libsf.la
tools_bench_promise_sf_LDFLAGS = -static

# Continuations: from sf_promise_set to the continuation's start, beside a
# task asleep in a get; a continuation's cost against sf_do + sf_get
# (after_sf.c; after-run); no peer.
bench_programs += tools/bench/after_sf
EXTRA_PROGRAMS += tools/bench/after_sf
tools_bench_after_sf_SOURCES = tools/bench/src/after_sf.c tools/bench/src/common.h
tools_bench_after_sf_LDADD = libsf.la
tools_bench_after_sf_LDFLAGS = -static

# A pipeline of handed futures fed by a plain thread (feed_sf.c; feed-run
# runs it against an older build side by side); no peer.
bench_programs += tools/bench/feed_sf
EXTRA_PROGRAMS += tools/bench/feed_sf
tools_bench_feed_sf_SOURCES = tools/bench/src/feed_sf.c tools/bench/src/common.h
tools_bench_feed_sf_LDADD = libsf.la
tools_bench_feed_sf_LDFLAGS = -static

# What a timed wait that does not time out costs against sf_wait on the same
# futures (waitfor_sf.c); no peer.
bench_programs += tools/bench/waitfor_sf
EXTRA_PROGRAMS += tools/bench/waitfor_sf
tools_bench_waitfor_sf_SOURCES = tools/bench/src/waitfor_sf.c tools/bench/src/common.h
tools_bench_waitfor_sf_LDADD = libsf.la
tools_bench_waitfor_sf_LDFLAGS = -static

# What include/sf.hpp costs over sf.h on fib (bench_sfcpp.cpp): `fib` as a
# runtime (libsf-cpp, counted by callgrind-run), `compare` for sf_do against
# sf::spawn and sf_task against sf::task in one process. Needs C++17.
if SF_CXX
bench_programs += tools/bench/bench_sfcpp
endif
EXTRA_PROGRAMS += tools/bench/bench_sfcpp
tools_bench_bench_sfcpp_SOURCES = tools/bench/src/bench_sfcpp.cpp tools/bench/src/common.h \
	tools/bench/src/classic.h tools/bench/src/workloads.h
tools_bench_bench_sfcpp_CXXFLAGS = -std=c++17 -Wall -Wextra -pthread
tools_bench_bench_sfcpp_LDADD = libsf.la
tools_bench_bench_sfcpp_LDFLAGS = -static

# An 8-byte MPI ping-pong four ways in one job: raw MPI, libsf-mpi futures
# through the idle hook, the progress thread, both (mpi_pingpong.c;
# mpi-run runs it and samples/mpi-render); no peer. Linked as libsf-mpi's
# users link it (shared): the four ways share the process, so its cost is
# the same for all.
if SF_MPI
bench_programs += tools/bench/mpi_pingpong
EXTRA_PROGRAMS += tools/bench/mpi_pingpong
tools_bench_mpi_pingpong_SOURCES = tools/bench/src/mpi_pingpong.c
tools_bench_mpi_pingpong_CPPFLAGS = $(AM_CPPFLAGS) $(MPI_CFLAGS)
tools_bench_mpi_pingpong_LDADD = libsf-mpi.la libsf.la $(MPI_LIBS)
endif
else
bench-programs:
	@echo "make bench-programs: the benchmarks were not configured: configure --enable-bench (tools/bench/run does)" >&2; exit 1
endif
.PHONY: bench-programs
