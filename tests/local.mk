# tests/local.mk - included by the top Makefile.am (paths are from the top
# directory). One Check program per concept; each test runs in a fresh
# process (Check's fork mode), so a test sets its environment before it
# starts the runtime. Each program reports its test cases in TAP (TU_MAIN).
# They are built when configure finds Check and json-c; else `make check`
# fails.

if SF_TESTS

# Each program is tests/NAME.c alone (automake's default sources), linked
# with LDADD below. Listed longest first: the driver starts them in this
# order, so `make -j2 check` ends with short ones on both cores.
sf_tests = \
	tests/test_park tests/test_after tests/test_light tests/test_memory tests/test_shutdown_timeout tests/test_claim \
	tests/test_faults tests/test_deadlock tests/test_shutdown tests/test_task \
	tests/test_help tests/test_stress tests/test_for tests/test_pending tests/test_meh \
	tests/test_isolated tests/test_trace_chrome tests/test_foreign tests/test_unload \
	tests/test_lazy tests/test_errors tests/test_cancel tests/test_batch \
	tests/test_once tests/test_combined tests/test_failures tests/test_trace \
	tests/test_stats tests/test_pool tests/test_fork tests/test_fiber \
	tests/test_config tests/test_release tests/test_wait_for tests/test_promise \
	tests/test_reduce tests/test_thread_index tests/test_cancel_tree tests/test_feed \
	tests/test_hang tests/test_threads tests/test_realtime tests/test_visibility \
	tests/test_on_idle
check_PROGRAMS += $(sf_tests)
TESTS += $(sf_tests)
# Long forms of two, run by tools/soak: test_stress for SF_STRESS_SECONDS,
# test_memory at SF_MEMORY_SCALE times its sizes.

# testutil.c is compiled once, into a convenience library every test links.
check_LTLIBRARIES = tests/libtestutil.la
tests_libtestutil_la_SOURCES = tests/testutil.c tests/testutil.h

# LDADD is the default of every program without its own _LDADD: programs
# outside tests/ set theirs. Check's compiler flags (-pthread, and its
# include directory where that is not the system's) go to every compile:
# the test programs use the default flags.
LDADD = tests/libtestutil.la libsf.la $(CHECK_LIBS)
AM_CFLAGS += $(CHECK_CFLAGS)

# include/sf.hpp, the C++17 layer, when configure found a C++17 compiler:
# one Check program in C++. It has its own main (testutil.h is C11, so it
# does not link testutil) and counts operator new, which it replaces.
if SF_CXX
check_PROGRAMS += tests/test_cpp
TESTS += tests/test_cpp
tests_test_cpp_SOURCES = tests/test_cpp.cpp
tests_test_cpp_CXXFLAGS = -std=c++17 -Wall -Wextra -pthread $(CHECK_CFLAGS)
tests_test_cpp_LDADD = libsf.la $(CHECK_LIBS)
endif

# Programs that differ from the default:

# test_trace, test_batch, test_wait_for, test_promise, test_after, test_task, test_cancel_tree and
# test_light check the runtime's traces with sftrace, the reader of the format.
tests_test_trace_CPPFLAGS = $(AM_CPPFLAGS) -DSFTRACE_BIN='"$(abs_top_builddir)/tools/sftrace/sftrace$(EXEEXT)"'
EXTRA_tests_test_trace_DEPENDENCIES = tools/sftrace/sftrace$(EXEEXT)
tests_test_batch_CPPFLAGS = $(tests_test_trace_CPPFLAGS)
EXTRA_tests_test_batch_DEPENDENCIES = tools/sftrace/sftrace$(EXEEXT)
tests_test_wait_for_CPPFLAGS = $(tests_test_trace_CPPFLAGS)
EXTRA_tests_test_wait_for_DEPENDENCIES = tools/sftrace/sftrace$(EXEEXT)
tests_test_promise_CPPFLAGS = $(tests_test_trace_CPPFLAGS)
EXTRA_tests_test_promise_DEPENDENCIES = tools/sftrace/sftrace$(EXEEXT)
tests_test_after_CPPFLAGS = $(tests_test_trace_CPPFLAGS)
EXTRA_tests_test_after_DEPENDENCIES = tools/sftrace/sftrace$(EXEEXT)
tests_test_task_CPPFLAGS = $(tests_test_trace_CPPFLAGS)
EXTRA_tests_test_task_DEPENDENCIES = tools/sftrace/sftrace$(EXEEXT)
tests_test_cancel_tree_CPPFLAGS = $(tests_test_trace_CPPFLAGS)
EXTRA_tests_test_cancel_tree_DEPENDENCIES = tools/sftrace/sftrace$(EXEEXT)
tests_test_light_CPPFLAGS = $(tests_test_trace_CPPFLAGS)
EXTRA_tests_test_light_DEPENDENCIES = tools/sftrace/sftrace$(EXEEXT)

# SF_TRACE=chrome: the JSON trace, read with json-c.
tests_test_trace_chrome_CFLAGS = $(AM_CFLAGS) $(JSONC_CFLAGS)
tests_test_trace_chrome_LDADD = $(LDADD) $(JSONC_LIBS) -lm
# test_hang reads a Chrome trace left by an exit without sf_shutdown().
tests_test_hang_CFLAGS = $(AM_CFLAGS) $(JSONC_CFLAGS)
tests_test_hang_LDADD = $(LDADD) $(JSONC_LIBS)

# Fault injection: the program defines malloc & co., pthread_create and a few
# other fallible calls itself (interposing on libsf's calls) and reaches
# glibc's through dlsym.
tests_test_faults_LDADD = $(LDADD) -ldl
# test_realtime counts allocations, locks and system calls likewise (dlsym).
tests_test_realtime_LDADD = $(LDADD) -ldl

# dlopen, work, dlclose, dlopen again (a plugin host): the program opens the
# libsf.so just built by its absolute path and is not linked against it (nor
# against testutil.c, which calls libsf), so it names libsf.la as a
# dependency to have it built first.
tests_test_unload_CPPFLAGS = $(AM_CPPFLAGS) -DLIBSF_SO='"$(abs_top_builddir)/.libs/libsf.so"'
tests_test_unload_LDADD = $(CHECK_LIBS) -ldl
EXTRA_tests_test_unload_DEPENDENCIES = libsf.la

# The queue alone (test_pending) and stacks and context switches alone
# (test_fiber; -lm for fesetround): internal functions, so the convenience
# library, not libsf.
sf_internal_ldadd = tests/libtestutil.la libsfcore.la $(CHECK_LIBS)
tests_test_pending_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/runtime
tests_test_pending_LDADD = $(sf_internal_ldadd)
tests_test_fiber_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/runtime
tests_test_fiber_LDADD = $(sf_internal_ldadd) -lm

# The debug build's self-checks, each misuse reported and aborted on.
if SF_DEBUG
check_PROGRAMS += tests/test_debug
TESTS += tests/test_debug
tests_test_debug_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/runtime
tests_test_debug_LDADD = $(sf_internal_ldadd)
endif

else
# A build without the tests has no green `make check`: configure's summary
# said why they were skipped (Check or json-c missing, or --disable-tests).
# make check builds check_DATA before it runs any test, so it stops here
# rather than run the scripts that need no Check.
check_DATA = tests-were-not-built
tests-were-not-built:
	@echo "make check: the tests were not built (configure's summary says why: they need Check and json-c, e.g. tools/deps); configure again" >&2; exit 1
endif
.PHONY: tests-were-not-built

# The typed light-task macros compile cleanly in C and C++ and refuse a task
# too big for a slot (the compilers the build uses).
TESTS += tests/test-light-macros.sh
EXTRA_DIST += tests/test-light-macros.sh
AM_TESTS_ENVIRONMENT = CC='$(CC)' CXX='$(CXX)'; export CC CXX;

# libsf-mpi's tests, under mpiexec (tests/test-mpi.sh), when configure found
# MPI and mpiexec (--with-mpi). The programs link libsf-mpi and MPI.
if SF_MPI_TESTS
AM_TESTS_ENVIRONMENT += MPIEXEC='$(MPIEXEC)'; export MPIEXEC;
check_PROGRAMS += tests/test_mpi tests/test_mpi_single
TESTS += tests/test-mpi.sh
tests_test_mpi_CPPFLAGS = $(AM_CPPFLAGS) $(MPI_CFLAGS)
tests_test_mpi_LDADD = tests/libtestutil.la libsf-mpi.la libsf.la $(CHECK_LIBS) $(MPI_LIBS)
tests_test_mpi_single_CPPFLAGS = $(tests_test_mpi_CPPFLAGS)
tests_test_mpi_single_LDADD = $(tests_test_mpi_LDADD)
endif
EXTRA_DIST += tests/test-mpi.sh tests/mpi-lsan.supp tests/mpi-env.sh
