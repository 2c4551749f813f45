# tests/local.mk - included by the top Makefile.am (paths are from the top
# directory). One Check program per concept; each test runs in a fresh
# process (Check's fork mode), so a test sets its environment before it
# starts the runtime. Each program reports its test cases in TAP (TU_MAIN).
# Configure needs Check unless --disable-tests; then `make check` fails.

if SF_TESTS

check_PROGRAMS += tests/test_lazy
check_PROGRAMS += tests/test_meh
check_PROGRAMS += tests/test_once
check_PROGRAMS += tests/test_help
check_PROGRAMS += tests/test_foreign
check_PROGRAMS += tests/test_release
check_PROGRAMS += tests/test_shutdown
check_PROGRAMS += tests/test_config
check_PROGRAMS += tests/test_errors
check_PROGRAMS += tests/test_trace
check_PROGRAMS += tests/test_claim
check_PROGRAMS += tests/test_pending
check_PROGRAMS += tests/test_fiber
check_PROGRAMS += tests/test_fork
check_PROGRAMS += tests/test_isolated
check_PROGRAMS += tests/test_memory
check_PROGRAMS += tests/test_stress
check_PROGRAMS += tests/test_failures
check_PROGRAMS += tests/test_cancel
check_PROGRAMS += tests/test_deadlock
check_PROGRAMS += tests/test_faults
check_PROGRAMS += tests/test_for
check_PROGRAMS += tests/test_combined
check_PROGRAMS += tests/test_pool
check_PROGRAMS += tests/test_stats
check_PROGRAMS += tests/test_shutdown_timeout
check_PROGRAMS += tests/test_batch
check_PROGRAMS += tests/test_task
check_PROGRAMS += tests/test_unload
check_PROGRAMS += tests/test_park

TESTS += tests/test_lazy
TESTS += tests/test_meh
TESTS += tests/test_once
TESTS += tests/test_help
TESTS += tests/test_foreign
TESTS += tests/test_release
TESTS += tests/test_shutdown
TESTS += tests/test_config
TESTS += tests/test_errors
TESTS += tests/test_trace
TESTS += tests/test_claim
TESTS += tests/test_pending
TESTS += tests/test_fiber
TESTS += tests/test_fork
TESTS += tests/test_isolated
TESTS += tests/test_memory
TESTS += tests/test_stress
TESTS += tests/test_failures
TESTS += tests/test_cancel
TESTS += tests/test_deadlock
TESTS += tests/test_faults
TESTS += tests/test_for
TESTS += tests/test_combined
TESTS += tests/test_pool
TESTS += tests/test_stats
TESTS += tests/test_shutdown_timeout
TESTS += tests/test_batch
TESTS += tests/test_task
TESTS += tests/test_unload
TESTS += tests/test_park

tests_test_memory_SOURCES = tests/test_memory.c tests/testutil.c tests/testutil.h
tests_test_memory_LDADD = libsf.la $(CHECK_LIBS)
tests_test_memory_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)

tests_test_isolated_SOURCES = tests/test_isolated.c tests/testutil.c tests/testutil.h
tests_test_isolated_LDADD = libsf.la $(CHECK_LIBS)
tests_test_isolated_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)

tests_test_for_SOURCES = tests/test_for.c tests/testutil.c tests/testutil.h
tests_test_for_LDADD = libsf.la $(CHECK_LIBS)
tests_test_for_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)

# Loops, batches, hand-overs and many threads together, checked exactly.
tests_test_combined_SOURCES = tests/test_combined.c tests/testutil.c tests/testutil.h
tests_test_combined_LDADD = libsf.la $(CHECK_LIBS)
tests_test_combined_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)

tests_test_pool_SOURCES = tests/test_pool.c tests/testutil.c tests/testutil.h
tests_test_pool_LDADD = libsf.la $(CHECK_LIBS)
tests_test_pool_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)

tests_test_lazy_SOURCES = tests/test_lazy.c tests/testutil.c tests/testutil.h
tests_test_lazy_LDADD = libsf.la $(CHECK_LIBS)
tests_test_lazy_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)

tests_test_meh_SOURCES = tests/test_meh.c tests/testutil.c tests/testutil.h
tests_test_meh_LDADD = libsf.la $(CHECK_LIBS)
tests_test_meh_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)

tests_test_once_SOURCES = tests/test_once.c tests/testutil.c tests/testutil.h
tests_test_once_LDADD = libsf.la $(CHECK_LIBS)
tests_test_once_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)

tests_test_help_SOURCES = tests/test_help.c tests/testutil.c tests/testutil.h
tests_test_help_LDADD = libsf.la $(CHECK_LIBS)
tests_test_help_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)

tests_test_foreign_SOURCES = tests/test_foreign.c tests/testutil.c tests/testutil.h
tests_test_foreign_LDADD = libsf.la $(CHECK_LIBS)
tests_test_foreign_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)

tests_test_release_SOURCES = tests/test_release.c tests/testutil.c tests/testutil.h
tests_test_release_LDADD = libsf.la $(CHECK_LIBS)
tests_test_release_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)

tests_test_shutdown_SOURCES = tests/test_shutdown.c tests/testutil.c tests/testutil.h
tests_test_shutdown_LDADD = libsf.la $(CHECK_LIBS)
tests_test_shutdown_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)

tests_test_config_SOURCES = tests/test_config.c tests/testutil.c tests/testutil.h
tests_test_config_LDADD = libsf.la $(CHECK_LIBS)
tests_test_config_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)

tests_test_errors_SOURCES = tests/test_errors.c tests/testutil.c tests/testutil.h
tests_test_errors_LDADD = libsf.la $(CHECK_LIBS)
tests_test_errors_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)

tests_test_trace_SOURCES = tests/test_trace.c tests/testutil.c tests/testutil.h
tests_test_trace_LDADD = libsf.la $(CHECK_LIBS)
tests_test_trace_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
# test_trace checks the runtime's traces with sftrace, the reader of the format
tests_test_trace_CPPFLAGS = $(AM_CPPFLAGS) -DSFTRACE_BIN='"$(abs_top_builddir)/tools/sftrace/sftrace$(EXEEXT)"'
EXTRA_tests_test_trace_DEPENDENCIES = tools/sftrace/sftrace$(EXEEXT)
tests_test_claim_SOURCES = tests/test_claim.c tests/testutil.c tests/testutil.h
tests_test_claim_LDADD = libsf.la $(CHECK_LIBS)
tests_test_claim_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)

tests_test_fork_SOURCES = tests/test_fork.c tests/testutil.c tests/testutil.h
tests_test_fork_LDADD = libsf.la $(CHECK_LIBS)
tests_test_fork_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)

# sf_fail, sf_wait, sf_cancel and deadlock detection (sf.h, "When things
# go wrong").
tests_test_failures_SOURCES = tests/test_failures.c tests/testutil.c tests/testutil.h
tests_test_failures_LDADD = libsf.la $(CHECK_LIBS)
tests_test_failures_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)

tests_test_cancel_SOURCES = tests/test_cancel.c tests/testutil.c tests/testutil.h
tests_test_cancel_LDADD = libsf.la $(CHECK_LIBS)
tests_test_cancel_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)

tests_test_deadlock_SOURCES = tests/test_deadlock.c tests/testutil.c tests/testutil.h
tests_test_deadlock_LDADD = libsf.la $(CHECK_LIBS)
tests_test_deadlock_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)

# A blocked get leaves no cycle the program does not have (help-first's
# limitation): handed futures, pipelines, many waiters, deep chains.
tests_test_park_SOURCES = tests/test_park.c tests/testutil.c tests/testutil.h
tests_test_park_LDADD = libsf.la $(CHECK_LIBS)
tests_test_park_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)

# Random trees and shared futures, checked exactly; SF_STRESS_SECONDS=N
# makes it a soak (tools/soak).
tests_test_stress_SOURCES = tests/test_stress.c tests/testutil.c tests/testutil.h
tests_test_stress_LDADD = libsf.la $(CHECK_LIBS)
tests_test_stress_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)

# Fault injection: the program defines malloc & co., pthread_create and a few
# other fallible calls itself (interposing on libsf's calls) and reaches
# glibc's through dlsym.
tests_test_faults_SOURCES = tests/test_faults.c tests/testutil.c tests/testutil.h
tests_test_faults_LDADD = libsf.la $(CHECK_LIBS) -ldl
tests_test_faults_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)

# Statistics: per-thread rows, queued/asleep, the SF_STATS table.
tests_test_stats_SOURCES = tests/test_stats.c tests/testutil.c tests/testutil.h
tests_test_stats_LDADD = libsf.la $(CHECK_LIBS)
tests_test_stats_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)

# sf_shutdown_timeout: the deadline, the discards, their getters.
tests_test_shutdown_timeout_SOURCES = tests/test_shutdown_timeout.c tests/testutil.c tests/testutil.h
tests_test_shutdown_timeout_LDADD = libsf.la $(CHECK_LIBS)
tests_test_shutdown_timeout_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_test_task_SOURCES = tests/test_task.c tests/testutil.c tests/testutil.h
tests_test_task_LDADD = libsf.la $(CHECK_LIBS)
tests_test_task_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)

tests_test_batch_SOURCES = tests/test_batch.c tests/testutil.c tests/testutil.h
tests_test_batch_LDADD = libsf.la $(CHECK_LIBS)
tests_test_batch_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
# test_batch checks a trace of batch tasks with sftrace, as test_trace does
tests_test_batch_CPPFLAGS = $(AM_CPPFLAGS) -DSFTRACE_BIN='"$(abs_top_builddir)/tools/sftrace/sftrace$(EXEEXT)"'
EXTRA_tests_test_batch_DEPENDENCIES = tools/sftrace/sftrace$(EXEEXT)

# dlopen, work, dlclose, dlopen again (a plugin host): the program opens the
# libsf.so just built by its absolute path and is not linked against it, so
# it names libsf.la as a dependency to have it built first.
tests_test_unload_SOURCES = tests/test_unload.c tests/testutil.h
tests_test_unload_CPPFLAGS = $(AM_CPPFLAGS) -DLIBSF_SO='"$(abs_top_builddir)/.libs/libsf.so"'
tests_test_unload_LDADD = $(CHECK_LIBS) -ldl
tests_test_unload_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
EXTRA_tests_test_unload_DEPENDENCIES = libsf.la

# The queue alone: internal functions, so the convenience library, not libsf.
tests_test_pending_SOURCES = tests/test_pending.c tests/testutil.c tests/testutil.h
tests_test_pending_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/runtime
tests_test_pending_LDADD = libsfcore.la $(CHECK_LIBS)
tests_test_pending_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)

# Stacks and context switches alone (runtime/fiber.h), as test_pending;
# -lm for fesetround.
tests_test_fiber_SOURCES = tests/test_fiber.c tests/testutil.c tests/testutil.h
tests_test_fiber_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/runtime
tests_test_fiber_LDADD = libsfcore.la $(CHECK_LIBS) -lm
tests_test_fiber_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)

# The debug build's self-checks, each misuse reported and aborted on.
if SF_DEBUG
check_PROGRAMS += tests/test_debug
TESTS += tests/test_debug
tests_test_debug_SOURCES = tests/test_debug.c tests/testutil.c tests/testutil.h
tests_test_debug_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/runtime
tests_test_debug_LDADD = libsfcore.la $(CHECK_LIBS)
tests_test_debug_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
endif

else
check-local:
	@echo "make check: the tests were disabled at configure time (--disable-tests); install Check and configure again" >&2; exit 1
endif

# SF_TRACE=chrome: the JSON trace, parsed by json-c in its strict mode.
check_PROGRAMS += tests/test_trace_chrome
TESTS += tests/test_trace_chrome
tests_test_trace_chrome_SOURCES = tests/test_trace_chrome.c tests/testutil.c tests/testutil.h
tests_test_trace_chrome_LDADD = libsf.la $(CHECK_LIBS) $(JSONC_LIBS) -lm
tests_test_trace_chrome_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) $(JSONC_CFLAGS)
