/*
 * test_trace.c - SF_TRACE output against docs/trace-format.md: the header,
 * well-formed lines, and at one thread the exact sequence of events.
 */
#include "testutil.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HEADER "Thread\tQueue\tAsleep\tTime\tMessage..."
#define MAXF 16

struct tline {
    int thread;
    long queue, asleep;
    long long time_us;
    int nf;            /* fields in all */
    char *f[MAXF];     /* the fields */
    char msg[256];     /* fields 5.. joined by tabs */
    int lineno;
};

struct trace {
    char *text;
    struct tline *l;
    int n;
};

static int all_digits(const char *s)
{
    if (*s == '\0')
        return 0;
    for (; *s; s++)
        if (!isdigit((unsigned char)*s))
            return 0;
    return 1;
}

/* Parses and checks the format of every line; fails the test on a bad one. */
static void parse_trace(const char *path, struct trace *t)
{
    t->text = tu_read_file(path);
    unlink(path); /* read once; gone even if a check below fails */
    ck_assert_msg(t->text != NULL, "no trace file %s", path);
    size_t nl = tu_count_lines(t->text);
    ck_assert_msg(t->text[0] != '\0' && t->text[strlen(t->text) - 1] == '\n',
                  "trace is empty or its last line is unterminated");
    t->l = calloc(nl, sizeof *t->l);
    ck_assert_ptr_nonnull(t->l);
    t->n = 0;
    char *save = NULL;
    int lineno = 0;
    for (char *line = strtok_r(t->text, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        lineno++;
        if (lineno == 1) {
            ck_assert_msg(strcmp(line, HEADER) == 0, "first line is not the header: \"%s\"", line);
            continue;
        }
        ck_assert_msg(strcmp(line, HEADER) != 0, "line %d: a second header", lineno);
        struct tline *x = &t->l[t->n++];
        x->lineno = lineno;
        x->nf = 0;
        char *p = line;
        for (;;) {
            ck_assert_msg(x->nf < MAXF, "line %d: too many fields", lineno);
            x->f[x->nf++] = p;
            char *tab = strchr(p, '\t');
            if (tab == NULL)
                break;
            *tab = '\0';
            p = tab + 1;
        }
        ck_assert_msg(x->nf >= 5, "line %d: %d fields, want >= 5", lineno, x->nf);
        for (int i = 0; i < 3; i++)
            ck_assert_msg(all_digits(x->f[i]), "line %d: field %d \"%s\" is not a non-negative "
                          "integer", lineno, i + 1, x->f[i]);
        const char *dot = strchr(x->f[3], '.');
        ck_assert_msg(dot != NULL && dot != x->f[3] && strlen(dot + 1) == 3,
                      "line %d: time \"%s\" does not have 3 decimals", lineno, x->f[3]);
        char ipart[32];
        ck_assert_uint_lt((size_t)(dot - x->f[3]), sizeof ipart);
        memcpy(ipart, x->f[3], (size_t)(dot - x->f[3]));
        ipart[dot - x->f[3]] = '\0';
        ck_assert_msg(all_digits(ipart) && all_digits(dot + 1), "line %d: time \"%s\" is not a "
                      "decimal number", lineno, x->f[3]);
        x->thread = atoi(x->f[0]);
        x->queue = atol(x->f[1]);
        x->asleep = atol(x->f[2]);
        x->time_us = atoll(ipart) * 1000 + atoll(dot + 1);
        x->msg[0] = '\0';
        for (int i = 4; i < x->nf; i++) {
            if (i > 4)
                strncat(x->msg, "\t", sizeof x->msg - strlen(x->msg) - 1);
            strncat(x->msg, x->f[i], sizeof x->msg - strlen(x->msg) - 1);
        }
        ck_assert_msg(x->f[4][0] != '\0', "line %d: empty event name", lineno);
    }
    ck_assert_int_ge(lineno, 1);
    /* Time never goes back within one thread. */
    for (int i = 0; i < t->n; i++)
        for (int j = i + 1; j < t->n; j++)
            if (t->l[j].thread == t->l[i].thread) {
                ck_assert_msg(t->l[j].time_us >= t->l[i].time_us,
                              "thread %d: time goes back from line %d to line %d",
                              t->l[i].thread, t->l[i].lineno, t->l[j].lineno);
                break;
            }
}

static void free_trace(struct trace *t)
{
    free(t->l);
    free(t->text);
}

static int count_event(const struct trace *t, int thread, const char *name)
{
    int n = 0;
    for (int i = 0; i < t->n; i++)
        if ((thread < 0 || t->l[i].thread == thread) && strcmp(t->l[i].f[4], name) == 0)
            n++;
    return n;
}

static atomic_int ran_a, ran_b, ran_c, ran_d;
static void *fa(void *arg) { atomic_fetch_add(&ran_a, 1); return arg; }
static void *fb(void *arg) { atomic_fetch_add(&ran_b, 1); return arg; }
static void *fc(void *arg) { atomic_fetch_add(&ran_c, 1); return arg; }
static void *fd(void *arg) { atomic_fetch_add(&ran_d, 1); return arg; }

/*
 * At SF_THREADS=1 the schedule of this program is fixed:
 *   A = sf_do(fa); B = sf_do(fb); get(B); get(A); get(B) again;
 *   C = sf_do(fc); release(C); release(A); release(B); D = sf_do(fd);
 *   sf_shutdown (drains D).
 * Expected events, from docs/trace-format.md (Queue = tasks made by sf_do and
 * neither started nor discarded; a task counts as started on its FStart line;
 * a get with no newly pending task to submit logs no Submit All).
 */
struct expect {
    long queue;
    const char *msg;
};

static const struct expect expected[] = {
    {0, "Init\tthreads=1\tworkers=0"},
    {1, "Do\t0.0"},
    {2, "Do\t0.1"},
    {2, "GStart\t0.1"},
    {2, "Submit All\t2"},
    {1, "FStart\t0.1\tinline"},
    {1, "FDone\t0.1"},
    {1, "GDone\t0.1"},
    {1, "GStart\t0.0"},
    {0, "FStart\t0.0\tinline"},
    {0, "FDone\t0.0"},
    {0, "GDone\t0.0"},
    {0, "Get\t0.1"},
    {1, "Do\t0.2"},
    {0, "Discard\t0.2"},
    {1, "Do\t0.3"},
    {0, "FStart\t0.3\tdrain"},
    {0, "FDone\t0.3"},
    {0, "Shutdown\tdrained=1"},
};

/* Every line is thread 0's, with the expected event, Queue and Asleep 0. */
static void check_sequence(const struct trace *t, const struct expect *exp, int n)
{
    for (int i = 0; i < t->n && i < n; i++) {
        ck_assert_msg(t->l[i].thread == 0, "line %d: thread %d at SF_THREADS=1", t->l[i].lineno,
                      t->l[i].thread);
        ck_assert_msg(strcmp(t->l[i].msg, exp[i].msg) == 0,
                      "event %d (line %d): \"%s\", want \"%s\"", i + 1, t->l[i].lineno,
                      t->l[i].msg, exp[i].msg);
        ck_assert_msg(t->l[i].queue == exp[i].queue,
                      "event %d (line %d, %s): Queue %ld, want %ld", i + 1, t->l[i].lineno,
                      t->l[i].msg, t->l[i].queue, exp[i].queue);
        ck_assert_msg(t->l[i].asleep == 0, "line %d: Asleep %ld, want 0", t->l[i].lineno,
                      t->l[i].asleep);
    }
    ck_assert_msg(t->n == n, "%d events, want %d", t->n, n);
}

START_TEST(one_thread_exact_sequence)
{
    char path[256];
    tu_tmp_path(path, sizeof path, "trace1");
    tu_env_threads(1);
    setenv("SF_TRACE", "1", 1);
    setenv("SF_TRACE_FILE", path, 1);
    struct tu_capture c;
    tu_capture_begin(&c);
    ck_assert_int_eq(sf_init(NULL), 0);
    sf_future *a = sf_do(fa, (void *)1);
    sf_future *b = sf_do(fb, (void *)2);
    ck_assert_ptr_eq(sf_get(b), (void *)2);
    ck_assert_ptr_eq(sf_get(a), (void *)1);
    ck_assert_ptr_eq(sf_get(b), (void *)2);
    sf_future *cf = sf_do(fc, (void *)3);
    sf_release(cf);
    sf_release(a);
    sf_release(b);
    sf_future *d = sf_do(fd, (void *)4);
    ck_assert_ptr_nonnull(d);
    sf_shutdown();
    char *err = tu_capture_end(&c);
    ck_assert_str_eq(err, ""); /* the trace went to the file only */
    free(err);
    struct trace t;
    parse_trace(path, &t);
    ck_assert_int_eq(atomic_load(&ran_a), 1);
    ck_assert_int_eq(atomic_load(&ran_b), 1);
    ck_assert_int_eq(atomic_load(&ran_c), 0);
    ck_assert_int_eq(atomic_load(&ran_d), 1);
    check_sequence(&t, expected, (int)(sizeof expected / sizeof expected[0]));
    free_trace(&t);
    unlink(path);
}
END_TEST

/* SF_TRACE=1 without SF_TRACE_FILE: the trace goes to stderr. */
START_TEST(trace_to_stderr)
{
    tu_env_threads(1);
    setenv("SF_TRACE", "1", 1);
    struct tu_capture c;
    tu_capture_begin(&c);
    ck_assert_int_eq(sf_init(NULL), 0);
    sf_future *a = sf_do(fa, (void *)1);
    ck_assert_ptr_eq(sf_get(a), (void *)1);
    sf_release(a);
    sf_shutdown();
    char *err = tu_capture_end(&c);
    char path[256];
    tu_tmp_path(path, sizeof path, "stderr-trace");
    FILE *fp = fopen(path, "w");
    ck_assert_ptr_nonnull(fp);
    fputs(err, fp);
    fclose(fp);
    struct trace t;
    parse_trace(path, &t);
    static const struct expect exp[] = {
        {0, "Init\tthreads=1\tworkers=0"},
        {1, "Do\t0.0"},
        {1, "GStart\t0.0"},
        {1, "Submit All\t1"},
        {0, "FStart\t0.0\tinline"},
        {0, "FDone\t0.0"},
        {0, "GDone\t0.0"},
        {0, "Shutdown\tdrained=0"},
    };
    check_sequence(&t, exp, (int)(sizeof exp / sizeof exp[0]));
    free_trace(&t);
    free(err);
    unlink(path);
}
END_TEST

/* Two threads, fib(15): every line well-formed; every task starts and ends
 * exactly once; the counts agree with sf_stats. */
START_TEST(two_threads_fib15)
{
    char path[256];
    tu_tmp_path(path, sizeof path, "trace2");
    tu_env_threads(2);
    setenv("SF_TRACE", "1", 1);
    setenv("SF_TRACE_FILE", path, 1);
    ck_assert_int_eq(sf_init(NULL), 0);
    sf_future *f = sf_do(tu_fib, (void *)15L);
    ck_assert_ptr_eq(sf_get(f), (void *)610L);
    sf_release(f);
    sf_stats s = tu_stats_quiet();
    uint64_t tasks = 1 + tu_fib_tasks(15);
    ck_assert_uint_eq(s.created, tasks);
    sf_shutdown();
    struct trace t;
    parse_trace(path, &t);
    ck_assert_uint_eq(s.discarded, 0);
    ck_assert_int_eq(count_event(&t, -1, "Init"), 1);
    ck_assert_int_eq(count_event(&t, -1, "Shutdown"), 1);
    ck_assert_int_eq(count_event(&t, -1, "Do"), (int)tasks);
    ck_assert_int_eq(count_event(&t, -1, "FStart"), (int)tasks);
    ck_assert_int_eq(count_event(&t, -1, "FDone"), (int)tasks);
    ck_assert_int_eq(count_event(&t, -1, "Discard"), 0);

    int first0 = -1, last0 = -1;
    long seq[2] = {0, 0};
    int how_inline = 0, how_pool = 0, how_steal = 0, how_drain = 0;
    /* started[T][N]: task T.N had an FStart (thread ids 0 and 1 only). */
    static unsigned char started[2][4096], done[2][4096];
    for (int i = 0; i < t.n; i++) {
        struct tline *x = &t.l[i];
        ck_assert_msg(x->thread == 0 || x->thread == 1, "line %d: thread %d at SF_THREADS=2",
                      x->lineno, x->thread);
        ck_assert_msg(x->asleep <= 2, "line %d: Asleep %ld", x->lineno, x->asleep);
        ck_assert_msg((uint64_t)x->queue <= tasks, "line %d: Queue %ld", x->lineno, x->queue);
        if (x->thread == 0) {
            if (first0 < 0)
                first0 = i;
            last0 = i;
        }
        const char *ev = x->f[4];
        if (strcmp(ev, "Do") == 0) {
            /* Tasks are named T.N: T the queuing thread, N its sf_do count. */
            char want[32];
            snprintf(want, sizeof want, "%d.%ld", x->thread, seq[x->thread]++);
            ck_assert_msg(x->nf == 6 && strcmp(x->f[5], want) == 0,
                          "line %d: Do %s, want Do %s", x->lineno, x->nf > 5 ? x->f[5] : "",
                          want);
        } else if (strcmp(ev, "FStart") == 0 || strcmp(ev, "FDone") == 0) {
            int is_start = ev[1] == 'S';
            ck_assert_msg(x->nf == (is_start ? 7 : 6), "line %d: %d fields", x->lineno, x->nf);
            int tt = -1, nn = -1;
            ck_assert_msg(sscanf(x->f[5], "%d.%d", &tt, &nn) == 2 && tt >= 0 && tt <= 1 &&
                              nn >= 0 && nn < 4096,
                          "line %d: bad task name %s", x->lineno, x->f[5]);
            if (is_start) {
                ck_assert_msg(!started[tt][nn], "line %d: task %s started twice", x->lineno,
                              x->f[5]);
                started[tt][nn] = 1;
                const char *how = x->f[6];
                if (strcmp(how, "inline") == 0)
                    how_inline++;
                else if (strcmp(how, "pool") == 0)
                    how_pool++;
                else if (strcmp(how, "steal") == 0)
                    how_steal++;
                else if (strcmp(how, "drain") == 0)
                    how_drain++;
                else
                    ck_abort_msg("line %d: FStart how \"%s\"", x->lineno, how);
            } else {
                ck_assert_msg(started[tt][nn] && !done[tt][nn],
                              "line %d: FDone of %s without one FStart before it", x->lineno,
                              x->f[5]);
                done[tt][nn] = 1;
            }
        } else if (strcmp(ev, "Take") == 0 || strcmp(ev, "Steal") == 0) {
            ck_assert_msg(x->nf == 7, "line %d: %d fields", x->lineno, x->nf);
            /* The next line of this thread starts that task, pool or steal. */
            int j = i + 1;
            while (j < t.n && t.l[j].thread != x->thread)
                j++;
            ck_assert_msg(j < t.n && strcmp(t.l[j].f[4], "FStart") == 0 &&
                              strcmp(t.l[j].f[5], x->f[5]) == 0 &&
                              strcmp(t.l[j].f[6], ev[0] == 'T' ? "pool" : "steal") == 0,
                          "line %d: %s %s not followed by its FStart", x->lineno, ev, x->f[5]);
            /* From the queue of the thread that queued it. */
            char from[16];
            snprintf(from, sizeof from, "%d", atoi(x->f[5]));
            ck_assert_msg(strcmp(x->f[6], from) == 0, "line %d: %s %s from %s", x->lineno, ev,
                          x->f[5], x->f[6]);
        }
    }
    ck_assert_int_ge(first0, 0);
    ck_assert_str_eq(t.l[first0].msg, "Init\tthreads=2\tworkers=1");
    ck_assert_str_eq(t.l[last0].msg, "Shutdown\tdrained=0");
    ck_assert_uint_eq((uint64_t)(seq[0] + seq[1]), tasks);
    ck_assert_uint_eq((uint64_t)how_inline, s.run_inline);
    ck_assert_uint_eq((uint64_t)how_pool, s.run_pool);
    ck_assert_uint_eq((uint64_t)how_steal, s.run_stolen);
    ck_assert_int_eq(how_drain, 0);
    ck_assert_int_eq(count_event(&t, -1, "Take"), (int)s.run_pool);
    ck_assert_int_eq(count_event(&t, -1, "Steal"), (int)s.run_stolen);
    for (int th = 0; th < 2; th++) {
        ck_assert_int_eq(count_event(&t, th, "GStart"), count_event(&t, th, "GDone"));
        ck_assert_int_eq(count_event(&t, th, "Sleep"), count_event(&t, th, "Wake"));
    }
    free_trace(&t);
    unlink(path);
}
END_TEST

static Suite *trace_suite(void)
{
    Suite *s = suite_create("trace");
    TCase *tc = tcase_create("trace");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, one_thread_exact_sequence);
    tcase_add_test(tc, trace_to_stderr);
    tcase_add_test(tc, two_threads_fib15);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(trace_suite)
