/*
 * test_config.c - SF_THREADS, SF_TRACE, SF_TRACE_FILE and sf_config: good
 * values are used silently; a bad environment value prints exactly one line
 * on stderr naming the variable, and the documented default is used.
 */
#include "testutil.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char TRACE_HEADER[] = "Thread\tQueue\tAsleep\tTime\tMessage...\n";

/* A small workload with an exact answer. */
static void run_fib12(void)
{
    sf_future *f = sf_do(tu_fib, (void *)12L);
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_eq(sf_get(f), (void *)144L);
    sf_release(f);
}

/* Starts the runtime (cfg NULL: from the environment), runs fib(12) and
 * stops it, all with stderr captured; returns what went to stderr and sets
 * *rc to sf_init's result. */
static char *captured_run(const sf_config *cfg, int *rc)
{
    struct tu_capture c;
    tu_capture_begin(&c);
    *rc = sf_init(cfg);
    run_fib12();
    sf_shutdown();
    return tu_capture_end(&c);
}

static void assert_one_line(const char *out, const char *prefix, const char *contains)
{
    ck_assert_msg(tu_count_lines(out) == 1, "want exactly one line on stderr, got: \"%s\"", out);
    ck_assert_msg(out[strlen(out) - 1] == '\n', "the line is not terminated: \"%s\"", out);
    ck_assert_msg(strncmp(out, prefix, strlen(prefix)) == 0, "the line does not start with %s: %s",
                  prefix, out);
    ck_assert_msg(strstr(out, contains) != NULL, "the line does not contain \"%s\": %s", contains,
                  out);
}

/* Digits only: no sign, no space at either end, nothing empty (config.c,
 * env_count). */
static const char *const bad_threads[] = {"abc", "0",  "-3", "99999999", "",     "12abc",
                                          "1025", " 4", "+4", "4 ",       "-1",   "\t4",
                                          "4 4",  " ",  "+", "0x4",      "4.0",  "99999999999999999999"};

START_TEST(bad_sf_threads)
{
    const char *bad = bad_threads[_i];
    tu_env_clean();
    setenv("SF_THREADS", bad, 1);
    struct tu_capture c;
    tu_capture_begin(&c);
    int rc = sf_init(NULL);
    char *out = tu_capture_end(&c);
    ck_assert_int_eq(rc, 0);
    assert_one_line(out, "libsf: SF_THREADS=", bad);
    /* The line names what is used instead: the number of online CPUs. */
    char ncpu[16];
    snprintf(ncpu, sizeof ncpu, "%d", tu_online_cpus());
    ck_assert_msg(strstr(out + strlen("libsf: SF_THREADS="), ncpu) != NULL,
                  "the line does not name the default %s: %s", ncpu, out);
    sf_stats s = tu_stats_quiet();
    ck_assert_int_eq(s.threads, tu_online_cpus());
    ck_assert_int_eq(s.workers, tu_online_cpus() - 1);
    run_fib12();
    free(out);
    sf_shutdown();
}
END_TEST

/* The implicit start of sf_do reads the environment the same way. */
START_TEST(bad_sf_threads_implicit_start)
{
    tu_env_clean();
    setenv("SF_THREADS", "abc", 1);
    struct tu_capture c;
    tu_capture_begin(&c);
    sf_future *f = sf_do(tu_fib, (void *)10L);
    char *out = tu_capture_end(&c);
    ck_assert_ptr_nonnull(f);
    assert_one_line(out, "libsf: SF_THREADS=", "abc");
    ck_assert_ptr_eq(sf_get(f), (void *)55L);
    sf_release(f);
    sf_stats s = tu_stats_quiet();
    ck_assert_int_eq(s.threads, tu_online_cpus());
    free(out);
    sf_shutdown();
}
END_TEST

static const struct {
    const char *value;
    int threads;
} good_threads[] = {{"1", 1}, {"3", 3}, {"16", 16}, {"04", 4}};

START_TEST(good_sf_threads)
{
    tu_env_clean();
    setenv("SF_THREADS", good_threads[_i].value, 1);
    int want = good_threads[_i].threads;
    int before = tu_os_threads();
    struct tu_capture c;
    tu_capture_begin(&c);
    int rc = sf_init(NULL);
    run_fib12();
    char *out = tu_capture_end(&c);
    ck_assert_int_eq(rc, 0);
    ck_assert_msg(out[0] == '\0', "a good SF_THREADS printed: %s", out);
    sf_stats s = tu_stats_quiet();
    ck_assert_int_eq(s.threads, want);
    ck_assert_int_eq(s.workers, want - 1);
    tu_assert_os_threads(before + want - 1);
    free(out);
    sf_shutdown();
    tu_assert_os_threads(before);
}
END_TEST

START_TEST(unset_sf_threads_is_online_cpus)
{
    tu_env_clean();
    struct tu_capture c;
    tu_capture_begin(&c);
    int rc = sf_init(NULL);
    char *out = tu_capture_end(&c);
    ck_assert_int_eq(rc, 0);
    ck_assert_str_eq(out, "");
    sf_stats s = tu_stats_quiet();
    ck_assert_int_eq(s.threads, tu_online_cpus());
    free(out);
    sf_shutdown();
}
END_TEST

/* The default follows the affinity mask, as OpenMP's and oneTBB's do: a
 * process bound to k CPUs (taskset, mpiexec --bind-to core) runs k
 * threads, not one per CPU of the machine on its k. _i + 1 CPUs, the first
 * ones of the mask. */
START_TEST(unset_sf_threads_follows_the_affinity_mask)
{
    cpu_set_t all, narrow;
    ck_assert_int_eq(sched_getaffinity(0, sizeof all, &all), 0);
    int want = _i + 1;
    if (CPU_COUNT(&all) < want) {
        /* Fewer CPUs than this case asks: the whole mask is the narrow one. */
        want = CPU_COUNT(&all);
    }
    CPU_ZERO(&narrow);
    for (int cpu = 0, n = 0; cpu < CPU_SETSIZE && n < want; cpu++)
        if (CPU_ISSET(cpu, &all)) {
            CPU_SET(cpu, &narrow);
            n++;
        }
    ck_assert_int_eq(sched_setaffinity(0, sizeof narrow, &narrow), 0);
    tu_env_clean();
    ck_assert_int_eq(sf_init(NULL), 0);
    sf_stats s = tu_stats_quiet();
    ck_assert_int_eq(s.threads, want);
    ck_assert_int_eq(s.workers, want - 1);
    ck_assert_int_eq(tu_online_cpus(), want);
    run_fib12();
    sf_shutdown();
}
END_TEST

/* sf_config.threads wins over SF_THREADS. */
START_TEST(config_threads_overrides_env)
{
    tu_env_threads(4);
    sf_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.threads = 3;
    ck_assert_int_eq(sf_init(&cfg), 0);
    sf_stats s = tu_stats_quiet();
    ck_assert_int_eq(s.threads, 3);
    ck_assert_int_eq(s.workers, 2);
    run_fib12();
    sf_shutdown();
}
END_TEST

/* SF_TRACE=maybe: one line, tracing stays off (nothing else on stderr, where
 * the trace would go). */
START_TEST(bad_sf_trace)
{
    tu_env_threads(2);
    setenv("SF_TRACE", "maybe", 1);
    int rc;
    char *out = captured_run(NULL, &rc);
    ck_assert_int_eq(rc, 0);
    assert_one_line(out, "libsf: SF_TRACE=", "maybe");
    free(out);
}
END_TEST

static const char *const trace_on[] = {"1", "true", "yes", "on"};
static const char *const trace_off[] = {"0", "false", "no", "off"};

START_TEST(sf_trace_on_values)
{
    char path[256];
    tu_tmp_path(path, sizeof path, "trace-on");
    tu_env_threads(2);
    setenv("SF_TRACE", trace_on[_i], 1);
    setenv("SF_TRACE_FILE", path, 1);
    int rc;
    char *out = captured_run(NULL, &rc);
    ck_assert_int_eq(rc, 0);
    ck_assert_str_eq(out, "");
    char *trace = tu_read_file(path);
    unlink(path);
    ck_assert_msg(trace != NULL, "SF_TRACE=%s wrote no trace file", trace_on[_i]);
    ck_assert_msg(strncmp(trace, TRACE_HEADER, strlen(TRACE_HEADER)) == 0,
                  "trace does not start with the header");
    ck_assert_uint_gt(tu_count_lines(trace), 1);
    free(out);
    free(trace);
}
END_TEST

START_TEST(sf_trace_off_values)
{
    char path[256];
    tu_tmp_path(path, sizeof path, "trace-off");
    tu_env_threads(2);
    setenv("SF_TRACE", trace_off[_i], 1);
    setenv("SF_TRACE_FILE", path, 1);
    int rc;
    char *out = captured_run(NULL, &rc);
    ck_assert_int_eq(rc, 0);
    ck_assert_str_eq(out, "");
    char *trace = tu_read_file(path); /* not tracing: nothing is written */
    unlink(path);
    ck_assert_msg(trace == NULL || trace[0] == '\0', "SF_TRACE=%s wrote a trace", trace_off[_i]);
    free(out);
    free(trace);
}
END_TEST

/* A trace file that opens but cannot be written (/dev/full: ENOSPC): the
 * program runs as usual, and one line says the trace is incomplete, naming
 * the file and the reason. _i: the text trace, the Chrome trace. */
START_TEST(unwritable_trace_file_says_so_once)
{
    tu_env_threads(2);
    setenv("SF_TRACE", _i == 0 ? "1" : "chrome", 1);
    setenv("SF_TRACE_FILE", "/dev/full", 1);
    int rc;
    char *out = captured_run(NULL, &rc);
    ck_assert_int_eq(rc, 0);
    assert_one_line(out, "libsf: writing the trace to '/dev/full' failed", strerror(ENOSPC));
    ck_assert_msg(strstr(out, "the trace is incomplete") != NULL, "%s", out);
    free(out);
}
END_TEST

/* An SF_TRACE_FILE that cannot be opened: one line naming it, and the trace
 * goes to the default, stderr (its header right after that line). */
START_TEST(unopenable_sf_trace_file)
{
    tu_env_threads(_i + 1);
    setenv("SF_TRACE", "1", 1);
    setenv("SF_TRACE_FILE", "/nonexistent-dir/x", 1);
    int rc;
    char *out = captured_run(NULL, &rc);
    ck_assert_int_eq(rc, 0);
    ck_assert_msg(tu_count_prefixed(out, "libsf:") == 1, "want one libsf: line, got: %s", out);
    ck_assert_msg(strncmp(out, "libsf: SF_TRACE_FILE=", strlen("libsf: SF_TRACE_FILE=")) == 0,
                  "first stderr line is not about SF_TRACE_FILE: %s", out);
    const char *nl = strchr(out, '\n');
    ck_assert_ptr_nonnull(nl);
    ck_assert_msg(memmem(out, (size_t)(nl - out), "/nonexistent-dir/x", 18) != NULL,
                  "the line does not name the file: %s", out);
    ck_assert_msg(strncmp(nl + 1, TRACE_HEADER, strlen(TRACE_HEADER)) == 0,
                  "the trace header does not follow the message on stderr: %s", out);
    ck_assert_uint_eq(tu_count_prefixed(out, "Thread\t"), 1);
    ck_assert_uint_eq(tu_count_prefixed(out, "0\t"), tu_count_lines(out) - 2 -
                      tu_count_prefixed(out, "1\t")); /* every other line is an event */
    free(out);
}
END_TEST

/* sf_config.trace overrides SF_TRACE; sf_config.trace_file overrides
 * SF_TRACE_FILE; the trace file is truncated. */
START_TEST(config_trace_off_overrides_env)
{
    char path[256];
    tu_tmp_path(path, sizeof path, "cfg-off");
    tu_env_threads(2);
    setenv("SF_TRACE", "1", 1);
    setenv("SF_TRACE_FILE", path, 1);
    sf_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.trace = SF_TRACE_OFF;
    int rc;
    char *out = captured_run(&cfg, &rc);
    ck_assert_int_eq(rc, 0);
    ck_assert_str_eq(out, "");
    char *trace = tu_read_file(path);
    unlink(path);
    ck_assert_msg(trace == NULL || trace[0] == '\0', "SF_TRACE_OFF still traced");
    free(out);
    free(trace);
}
END_TEST

START_TEST(config_trace_on_and_file_override_env)
{
    char env_path[256], cfg_path[256];
    tu_tmp_path(env_path, sizeof env_path, "env-file");
    tu_tmp_path(cfg_path, sizeof cfg_path, "cfg-file");
    FILE *fp = fopen(cfg_path, "w");
    ck_assert_ptr_nonnull(fp);
    fputs("old junk that must be truncated\n", fp);
    fclose(fp);
    tu_env_threads(2);
    setenv("SF_TRACE", "0", 1);
    setenv("SF_TRACE_FILE", env_path, 1);
    sf_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.trace = SF_TRACE_ON;
    cfg.trace_file = cfg_path;
    int rc;
    char *out = captured_run(&cfg, &rc);
    ck_assert_int_eq(rc, 0);
    ck_assert_str_eq(out, "");
    char *trace = tu_read_file(cfg_path);
    unlink(cfg_path);
    ck_assert_ptr_nonnull(trace);
    ck_assert_msg(strncmp(trace, TRACE_HEADER, strlen(TRACE_HEADER)) == 0,
                  "trace file does not start with the header: %.60s", trace);
    ck_assert_ptr_null(strstr(trace, "old junk"));
    char *other = tu_read_file(env_path);
    unlink(env_path);
    ck_assert_msg(other == NULL || other[0] == '\0', "SF_TRACE_FILE was written too");
    unlink(cfg_path);
    unlink(env_path);
    free(out);
    free(trace);
    free(other);
}
END_TEST

static Suite *config_suite(void)
{
    Suite *s = suite_create("config");
    TCase *tc = tcase_create("config");
    tcase_set_timeout(tc, 30);
    tcase_add_loop_test(tc, bad_sf_threads, 0, (int)(sizeof bad_threads / sizeof bad_threads[0]));
    tcase_add_test(tc, bad_sf_threads_implicit_start);
    tcase_add_loop_test(tc, good_sf_threads, 0,
                        (int)(sizeof good_threads / sizeof good_threads[0]));
    tcase_add_test(tc, unset_sf_threads_is_online_cpus);
    tcase_add_loop_test(tc, unset_sf_threads_follows_the_affinity_mask, 0, 2);
    tcase_add_test(tc, config_threads_overrides_env);
    tcase_add_test(tc, bad_sf_trace);
    tcase_add_loop_test(tc, sf_trace_on_values, 0, 4);
    tcase_add_loop_test(tc, sf_trace_off_values, 0, 4);
    tcase_add_loop_test(tc, unopenable_sf_trace_file, 0, 2);
    tcase_add_loop_test(tc, unwritable_trace_file_says_so_once, 0, 2);
    tcase_add_test(tc, config_trace_off_overrides_env);
    tcase_add_test(tc, config_trace_on_and_file_override_env);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(config_suite)
