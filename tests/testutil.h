/*
 * testutil.h - helpers shared by libsf's Check tests (tests/test_*.c).
 *
 * Every test program runs each test in a fresh process (Check's default fork
 * mode), so a test sets its environment with setenv() before its first
 * sf_init()/sf_do() and ends with sf_shutdown().
 */
#ifndef SF_TESTUTIL_H
#define SF_TESTUTIL_H

#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "sf.h"

/* Sanitizer builds: some tests (RLIMIT_AS) cannot run under them. */
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define TU_SANITIZED 1
#else
#define TU_SANITIZED 0
#endif

#define TU_MIB ((size_t)1 << 20)

/* Time. */
double tu_now_ms(void);
void tu_sleep_ms(long ms);
/* Waits until *flag != 0 or timeout_ms pass (yielding, then napping).
 * Returns 1 if the flag was seen set, 0 on timeout. */
int tu_wait_flag(atomic_int *flag, long timeout_ms);
/* Waits until *n >= want or timeout_ms pass (napping 1 ms). Returns 1 if it
 * was reached, 0 on timeout. */
int tu_wait_count(atomic_int *n, int want, long timeout_ms);
/* Spins for us microseconds without sleeping: a task that holds its thread. */
void tu_spin_us(double us);

/* Environment: SF_THREADS=n, and clears SF_TRACE / SF_TRACE_FILE / SF_STATS so a test
 * starts from a known environment whatever the caller's shell has. */
void tu_env_threads(int n);
void tu_env_clean(void);
int tu_online_cpus(void); /* what libsf documents as its default threads */

/* stderr capture: fd 2 goes to a temporary file between begin and end. */
struct tu_capture {
    int saved_fd;
    int tmp_fd;
};
void tu_capture_begin(struct tu_capture *c);
/* Restores fd 2; returns what was written (malloc'd, NUL-terminated). */
char *tu_capture_end(struct tu_capture *c);

/* Text. */
size_t tu_count_lines(const char *s);    /* '\n'-terminated lines (+ a last partial one) */
size_t tu_count_prefixed(const char *s, const char *prefix); /* lines starting with prefix */
char *tu_read_file(const char *path);    /* whole file, NUL-terminated; NULL if missing */
/* A unique path under $TMPDIR (or /tmp) that does not exist yet. */
void tu_tmp_path(char *buf, size_t size, const char *tag);
int tu_file_exists(const char *path);
/* Runs argv[0] with arguments argv (NULL-terminated) and returns its wait
 * status, its standard output in *out and its standard error in *err
 * (malloc'd; NULL if unreadable). err NULL: standard error goes into *out.
 * Fails the test if the program cannot start. */
int tu_run_capture(char *const argv[], char **out, char **err);
/* Runs `bin --check [option] trace` (bin: tools/sftrace/sftrace, SFTRACE_BIN
 * from tests/local.mk; option NULL for none, or one more, as "--counts") and
 * fails the test, quoting its output, unless it exits 0: the trace is
 * malformed or inconsistent. */
void tu_sftrace_check(const char *bin, const char *option, const char *trace);

/* Which pthreads ran tasks. tu_threads_note() is called by tasks; it records
 * the calling pthread once per tu_threads_reset() generation. */
void tu_threads_reset(void);
void tu_threads_note(void);
int tu_threads_count(void);
int tu_threads_contains(pthread_t t);
/* Threads of this process (entries of /proc/self/task), read once the count
 * has settled: a thread that was just joined is still listed for a moment. */
int tu_os_threads(void);
/* Polls the count (up to 10 s) until it is `expected`; returns the last. */
int tu_os_threads_expect(int expected);
#define tu_assert_os_threads(n)                                                \
    do {                                                                       \
        int tu_n_ = (n);                                                       \
        ck_assert_int_eq(tu_os_threads_expect(tu_n_), tu_n_);                  \
    } while (0)

/* Runs fn(arg) on a new pthread with the given stack size, joins it and
 * returns fn's value. */
void *tu_run_on_thread(void *(*fn)(void *), void *arg, size_t stack);

/* Runs fn in a forked child whose stderr goes to a pipe (and whose
 * environment is tu_env_clean's); returns what it wrote there (malloc'd),
 * the signal it died of (0: none) in *sig and, if status is not NULL, its
 * exit status (-1: killed) in *status. The child exits 0 when fn returns. */
char *tu_run_in_child(void (*fn)(void), int *sig, int *status);
/* The child running fn aborted (SIGABRT) after writing exactly one line,
 * "libsf: ...", which contains every string of parts (NULL-terminated): a
 * misuse a debug build reports. */
void tu_expect_abort(void (*fn)(void), const char *const *parts);

/* The header's example: fib(n) with one sf_do per call with n >= 2. */
void *tu_fib(void *arg);
long tu_fib_exact(int n);
/* Futures tu_fib(n) makes: C(n) = 1 + C(n-1) + C(n-2), C(0) = C(1) = 0,
 * which is fib(n+1) - 1. */
uint64_t tu_fib_tasks(int n);

/* Reads the stats and asserts they are exact for a quiet runtime:
 * created == run_inline + run_pool + run_stolen + discarded. */
sf_stats tu_stats_quiet(void);
/* The same with `pending` tasks known to be queued and not started:
 * created == run_inline + run_pool + run_stolen + discarded + pending. */
sf_stats tu_stats_pending(uint64_t pending);

/* A main() for a test program made of one suite. It reports in TAP on
 * stdout, one line per test case, for automake's TAP driver (Makefile.am),
 * which counts failed cases; a program that dies before printing its plan
 * is an error there. The exit status is that of the run as a whole. */
#define TU_MAIN(suite_fn)                                                        \
    int main(void)                                                             \
    {                                                                          \
        SRunner *sr = srunner_create(suite_fn());                              \
        srunner_set_tap(sr, "-");                                              \
        srunner_run_all(sr, CK_SILENT);                                        \
        int failed = srunner_ntests_failed(sr);                                \
        srunner_free(sr);                                                      \
        return failed == 0 ? 0 : 1;                                            \
    }

#endif /* SF_TESTUTIL_H */
