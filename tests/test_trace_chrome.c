/*
 * test_trace_chrome.c - SF_TRACE=chrome: the trace is Chrome Trace Event
 * Format JSON (docs/trace-format.md) that viewers can load, whatever the
 * threads did.
 *
 * The test parses each trace with json-c in its strict mode (RFC 8259: one
 * value, no trailing commas, no comments, escapes and numbers by the
 * grammar) and checks, for workloads with nesting, pool workers, sleeping
 * getters and threads that libsf did not start, at SF_THREADS 1, 2 and 4:
 *  - the file is one JSON array of event objects, each with ph, pid, tid,
 *    and ts where the format needs it;
 *  - per thread, the slices (B/E) nest: every E closes the latest open B of
 *    its thread, none is left open at shutdown, time never goes back, and a
 *    task slice's args.depth is the number of task slices open under it;
 *  - every flow has both ends: one "s" and one "f" per id, on different
 *    threads, the "f" right inside the slice of the task it names (the
 *    task's queuing thread is the "s" thread), one flow per task that ran
 *    on a thread other than the one that queued it;
 *  - the task slices are the tasks sf_stats counts as run, by kind; the
 *    "asleep" slices, each naming the task its get waits for, are its
 *    sleeps; "nap" slices (a wait of no one task: a batch wait here) name
 *    none; every thread with a slice is named;
 *  - each task slice is named by its task's function (static functions of
 *    this program, linked without -rdynamic, too), its kind in args.kind;
 *    a task discarded before it started is a "discard" instant.
 * A process that exits without sf_shutdown() leaves the array unclosed:
 * the file plus "]" must then be valid JSON (what the docs promise).
 */
#include "testutil.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <json-c/json.h>

/* ---- reading the JSON, with json-c ---- */

/* Parses text as exactly one JSON value, strictly (RFC 8259: no trailing
 * commas, numbers and escapes by the grammar); fails the test, quoting
 * where, unless it is valid. */
static json_object *jparse(const char *text, const char *what)
{
    json_tokener *tok = json_tokener_new();
    ck_assert_ptr_nonnull(tok);
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
    size_t n = strlen(text);
    ck_assert_uint_lt(n, INT_MAX);
    /* The terminating NUL too: it tells json-c the input ends there. */
    json_object *v = json_tokener_parse_ex(tok, text, (int)n + 1);
    enum json_tokener_error e = json_tokener_get_error(tok);
    size_t at = json_tokener_get_parse_end(tok);
    ck_assert_msg(v != NULL && e == json_tokener_success, "%s is not valid JSON: %s at byte %zu: \"%.60s\"",
                  what, json_tokener_error_desc(e), at, text + (at < n ? at : n));
    json_tokener_free(tok);
    return v;
}

static json_object *jget(json_object *o, const char *key)
{
    json_object *v;
    if (o == NULL || !json_object_is_type(o, json_type_object) ||
        !json_object_object_get_ex(o, key, &v))
        return NULL;
    return v;
}

static const char *jstr(json_object *o, const char *key)
{
    json_object *v = jget(o, key);
    return v != NULL && json_object_is_type(v, json_type_string) ? json_object_get_string(v)
                                                                 : NULL;
}

/* o[key] as a number; fails the test unless it is one. */
static double jnum(json_object *o, const char *key, size_t ev)
{
    json_object *v = jget(o, key);
    ck_assert_msg(v != NULL && (json_object_is_type(v, json_type_int) ||
                                json_object_is_type(v, json_type_double)),
                  "event %zu: \"%s\" is not a number", ev, key);
    return json_object_get_double(v);
}

/* ---- the checks ---- */

#define MAX_TID 256 /* tracks: a thread's own stack, and each fiber of it */
#define MAX_FLOWS 200000

/* A fiber's track (runtime/sched/park.c): tid = fiber << 17 | thread id. */
#define TID_THREAD(tid) ((tid) & 0x1ffff)
#define TID_FIBER(tid) ((tid) >> 17)

/* The tracks seen so far, in order: a tid's index below MAX_TID. */
static int track_tid[MAX_TID], ntracks;

static int track_of(int tid)
{
    for (int k = 0; k < ntracks; k++)
        if (track_tid[k] == tid)
            return k;
    ck_assert_int_lt(ntracks, MAX_TID);
    track_tid[ntracks] = tid;
    return ntracks++;
}

#define NAMES 4

struct tally {
    uint64_t kind[6]; /* slices by kind, in the order of kinds[] */
    uint64_t tasks, sleeps, naps, flows, foreign_runs, discards;
    const char *fn[NAMES];   /* in: function names to count (NULL ends) */
    uint64_t fn_slices[NAMES]; /* out: the task slices named so */
};

static const char *const kinds[6] = {"inline",  "wait-inlined", "pool",
                                     "stolen",  "drained",      "batch-wait"};

/* The queuing thread of a batch task (in no thread's queue): no arrow. */
#define NO_THREAD 131071u

struct flow {
    double id;
    int s_tid, f_tid, s_n, f_n;
};

static struct flow *flow_of(struct flow *fl, size_t *nfl, double id)
{
    for (size_t k = 0; k < *nfl; k++)
        if (fl[k].id == id)
            return &fl[k];
    ck_assert_uint_lt(*nfl, MAX_FLOWS);
    fl[*nfl] = (struct flow){id, -1, -1, 0, 0};
    return &fl[(*nfl)++];
}

/* Checks every rule of the top comment on the parsed trace; `closed`: the
 * runtime shut down (no slice may be left open). */
static struct tally check_trace_names(json_object *root, bool closed,
                                      const char *const fn[NAMES])
{
    struct tally t;
    memset(&t, 0, sizeof t);
    for (int n = 0; fn != NULL && n < NAMES; n++)
        t.fn[n] = fn[n];
    ck_assert_msg(json_object_is_type(root, json_type_array), "the trace is not a JSON array");
    size_t nev = json_object_array_length(root);
    ck_assert_uint_gt(nev, 0);
    /* Per thread: the open slices (event index; task or not), the last
     * time of a slice event, whether it is named. */
    static size_t open[MAX_TID][4096];
    static bool open_task[MAX_TID][4096];
    int nopen[MAX_TID] = {0}, task_open[MAX_TID] = {0};
    double last_ts[MAX_TID];
    bool named[MAX_TID] = {false}, sliced[MAX_TID] = {false};
    for (int k = 0; k < MAX_TID; k++)
        last_ts[k] = -1;
    struct flow *fl = calloc(MAX_FLOWS, sizeof *fl);
    ck_assert_ptr_nonnull(fl);
    size_t nfl = 0;
    ntracks = 0;
    pid_t pid = 0;
    for (size_t e = 0; e < nev; e++) {
        json_object *ev = json_object_array_get_idx(root, e);
        ck_assert_msg(json_object_is_type(ev, json_type_object), "event %zu is not an object", e);
        const char *ph = jstr(ev, "ph");
        ck_assert_msg(ph != NULL && strlen(ph) == 1, "event %zu: no one-letter \"ph\"", e);
        double dpid = jnum(ev, "pid", e), dtid = jnum(ev, "tid", e);
        if (e == 0)
            pid = (pid_t)dpid;
        ck_assert_msg(dpid == pid, "event %zu: pid %g, not the first event's %d", e, dpid, pid);
        ck_assert_msg(dtid >= 0 && dtid <= (64 << 17 | 0x1ffff) && dtid == floor(dtid),
                      "event %zu: tid %g", e, dtid);
        int rtid = (int)dtid, thread = TID_THREAD(rtid), fiber = TID_FIBER(rtid);
        ck_assert_msg(fiber <= 64, "event %zu: tid %d names fiber %d", e, rtid, fiber);
        int tid = track_of(rtid);
        if (*ph == 'M') {
            const char *name = jstr(ev, "name");
            ck_assert_ptr_nonnull(name);
            if (strcmp(name, "thread_name") == 0) {
                const char *tn = jstr(jget(ev, "args"), "name");
                ck_assert_msg(tn != NULL, "thread_name without args.name");
                char want[48];
                int k = thread == 0 ? snprintf(want, sizeof want, "main")
                        : strncmp(tn, "worker ", 7) == 0
                            ? snprintf(want, sizeof want, "worker %d", thread)
                            : snprintf(want, sizeof want, "thread %d", thread);
                if (fiber != 0)
                    snprintf(want + k, sizeof want - (size_t)k, " fiber %d", fiber);
                ck_assert_str_eq(tn, want);
                ck_assert_msg(!named[tid], "thread %d named twice", tid);
                named[tid] = true;
            }
            continue;
        }
        double ts = jnum(ev, "ts", e);
        ck_assert_msg(ts >= 0, "event %zu: negative ts", e);
        if (*ph == 's' || *ph == 'f') {
            /* Written by the thread that ran the task, so not in the
             * order of the start thread's own events: not timed here. */
            const char *cat = jstr(ev, "cat");
            ck_assert_msg(cat != NULL && strcmp(cat, "flow") == 0, "event %zu: flow cat", e);
            struct flow *f = flow_of(fl, &nfl, jnum(ev, "id", e));
            if (*ph == 's') {
                f->s_n++;
                f->s_tid = thread;
            } else {
                f->f_n++;
                f->f_tid = thread;
                const char *bp = jstr(ev, "bp");
                ck_assert_msg(bp != NULL && strcmp(bp, "e") == 0, "event %zu: f without bp e", e);
                /* Right inside the slice of its task, begun at its time. */
                ck_assert_msg(nopen[tid] > 0 && open_task[tid][nopen[tid] - 1],
                              "event %zu: a flow end outside a task slice", e);
                json_object *b = json_object_array_get_idx(root, open[tid][nopen[tid] - 1]);
                ck_assert_msg(jnum(b, "ts", e) == ts, "event %zu: flow end not at its slice", e);
                unsigned qt = 0;
                unsigned long long seq = 0;
                ck_assert_int_eq(sscanf(jstr(jget(b, "args"), "task"), "%u.%llu", &qt, &seq), 2);
                ck_assert_msg(f->id == (double)(((unsigned long long)qt << 36) | seq),
                              "event %zu: flow id is not its task's", e);
                ck_assert_int_ne((int)qt, thread);
            }
            continue;
        }
        ck_assert_msg(ts >= last_ts[tid], "event %zu: time goes back on thread %d", e, tid);
        last_ts[tid] = ts;
        ck_assert_msg(named[tid], "event %zu: thread %d logs before its thread_name", e, tid);
        if (*ph == 'B') {
            const char *cat = jstr(ev, "cat"), *name = jstr(ev, "name");
            ck_assert_msg(cat != NULL && name != NULL, "event %zu: B without cat or name", e);
            json_object *args = jget(ev, "args");
            bool task = strcmp(cat, "task") == 0;
            if (task) {
                /* Named by its function; its kind in args. */
                const char *kind = jstr(args, "kind");
                ck_assert_msg(kind != NULL, "event %zu: a task slice without args.kind", e);
                int k = 0;
                while (k < 6 && strcmp(kind, kinds[k]) != 0)
                    k++;
                ck_assert_msg(k < 6, "event %zu: task slice of kind \"%s\"", e, kind);
                ck_assert_msg(name[0] != '\0', "event %zu: a task slice without a name", e);
                for (int n = 0; n < NAMES && t.fn[n] != NULL; n++)
                    if (strcmp(name, t.fn[n]) == 0)
                        t.fn_slices[n]++;
                ck_assert_msg(jnum(args, "depth", e) == task_open[tid],
                              "event %zu: depth %g, but %d task slices are open", e,
                              jnum(args, "depth", e), task_open[tid]);
                unsigned qt = 0;
                unsigned long long seq = 0;
                const char *tn = jstr(args, "task");
                ck_assert_msg(tn != NULL && sscanf(tn, "%u.%llu", &qt, &seq) == 2,
                              "event %zu: args.task", e);
                if ((int)qt != thread && qt != NO_THREAD)
                    t.foreign_runs++;
                t.kind[k]++;
                t.tasks++;
                task_open[tid]++;
                sliced[tid] = true;
            } else if (strcmp(name, "nap") == 0) {
                ck_assert_msg(strcmp(cat, "sleep") == 0, "event %zu: a nap of cat \"%s\"", e, cat);
                ck_assert_msg(args == NULL, "event %zu: a nap names a task", e);
                t.naps++;
            } else {
                ck_assert_msg(strcmp(cat, "sleep") == 0 && strcmp(name, "asleep") == 0,
                              "event %zu: a slice of cat \"%s\"", e, cat);
                ck_assert_ptr_nonnull(jstr(args, "task"));
                t.sleeps++;
            }
            ck_assert_int_lt(nopen[tid], 4096);
            open_task[tid][nopen[tid]] = task;
            open[tid][nopen[tid]++] = e;
        } else if (*ph == 'E') {
            ck_assert_msg(nopen[tid] > 0, "event %zu: E with no open slice on thread %d", e, tid);
            if (open_task[tid][--nopen[tid]])
                task_open[tid]--;
        } else {
            ck_assert_msg(*ph == 'i', "event %zu: unknown ph \"%s\"", e, ph);
            const char *name = jstr(ev, "name");
            ck_assert_ptr_nonnull(name);
            if (strcmp(name, "discard") == 0) {
                const char *cat = jstr(ev, "cat");
                ck_assert_msg(cat != NULL && strcmp(cat, "task") == 0, "event %zu: discard cat", e);
                unsigned qt = 0;
                unsigned long long seq = 0;
                const char *tn = jstr(jget(ev, "args"), "task");
                ck_assert_msg(tn != NULL && sscanf(tn, "%u.%llu", &qt, &seq) == 2,
                              "event %zu: discard args.task", e);
                t.discards++;
            }
        }
    }
    for (int k = 0; k < MAX_TID; k++) {
        if (closed)
            ck_assert_msg(nopen[k] == 0, "thread %d: %d slices left open", k, nopen[k]);
        ck_assert_msg(!sliced[k] || named[k], "thread %d has slices and no name", k);
    }
    for (size_t k = 0; k < nfl; k++) {
        ck_assert_msg(fl[k].s_n == 1 && fl[k].f_n == 1, "flow %.0f: %d starts, %d ends", fl[k].id,
                      fl[k].s_n, fl[k].f_n);
        ck_assert_int_ne(fl[k].s_tid, fl[k].f_tid);
    }
    t.flows = nfl;
    ck_assert_uint_eq(t.flows, t.foreign_runs);
    free(fl);
    return t;
}

static struct tally check_trace(json_object *root, bool closed)
{
    return check_trace_names(root, closed, NULL);
}

/* ---- the workloads ---- */

/* A task that says it started, then runs until a getter has slept (or
 * 10 s pass, when the test's sleep count fails): getters on it block, and
 * one sleeps however loaded the machine is. */
static atomic_int slow_started;
static void *slow_task(void *arg)
{
    atomic_store(&slow_started, 1);
    double until = tu_now_ms() + 10000;
    sf_stats s;
    do
        tu_sleep_ms(1);
    while (sf_stats_read(&s) == 0 && s.sleeps == 0 && tu_now_ms() < until);
    return tu_fib(arg);
}

/* A thread libsf did not start: forks and joins its own fib, then gets a
 * future of thread 0 that is running there (it blocks, and may sleep). */
static void *foreign(void *arg)
{
    sf_future *slow = arg;
    sf_future *f = sf_do(tu_fib, (void *)12L);
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_eq(sf_get(f), (void *)144L);
    sf_release(f);
    ck_assert_int_eq(tu_wait_flag(&slow_started, 10000), 1);
    ck_assert_ptr_eq(sf_get(slow), (void *)55L);
    return NULL;
}

/* A foreign thread gets a task thread 0 queued and nobody took. */
static void *foreign_get(void *arg)
{
    return sf_get(arg);
}

#define BATCH_TASKS 20

/* Nesting (fib), a future got by two threads (one blocks), a foreign
 * thread's own tasks, a task of thread 0 run by a foreign get, a batch. */
static void workload(void)
{
    sf_future *f = sf_do(tu_fib, (void *)15L);
    ck_assert_ptr_eq(sf_get(f), (void *)610L);
    sf_release(f);

    atomic_store(&slow_started, 0);
    sf_future *slow = sf_do(slow_task, (void *)10L);
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, foreign, slow), 0);
    ck_assert_ptr_eq(sf_get(slow), (void *)55L);
    ck_assert_int_eq(pthread_join(th, NULL), 0);
    sf_release(slow);

    sf_future *g = sf_do(tu_fib, (void *)9L);
    ck_assert_ptr_eq(tu_run_on_thread(foreign_get, g, 0), (void *)34L);
    ck_assert_ptr_eq(sf_get(g), (void *)34L);
    sf_release(g);

    /* A batch, waited on: its tasks are slices of no queuing thread. */
    sf_batch *b = sf_batch_new();
    ck_assert_ptr_nonnull(b);
    sf_future *bf[BATCH_TASKS];
    for (int i = 0; i < BATCH_TASKS; i++)
        ck_assert_ptr_nonnull(bf[i] = sf_batch_do(b, tu_fib, (void *)10L));
    ck_assert_int_eq(sf_batch_wait(b), 0);
    for (int i = 0; i < BATCH_TASKS; i++) {
        ck_assert_ptr_eq(sf_get(bf[i]), (void *)55L);
        sf_release(bf[i]);
    }
    sf_batch_close(b);
}

static const int threads_of[] = {1, 2, 4};

/* The workload at 1, 2 and 4 threads; the trace checks and matches the
 * stats. */
START_TEST(chrome_workload)
{
    int threads = threads_of[_i];
    char path[256];
    tu_tmp_path(path, sizeof path, "chrome");
    tu_env_threads(threads);
    setenv("SF_TRACE", "chrome", 1);
    setenv("SF_TRACE_FILE", path, 1);
    ck_assert_int_eq(sf_init(NULL), 0);
    workload();
    sf_stats s = tu_stats_quiet();
    ck_assert_uint_eq(s.discarded, 0);
    sf_shutdown();

    char *text = tu_read_file(path);
    ck_assert_ptr_nonnull(text);
    ck_assert_msg(text[0] == '[', "the trace does not open the array");
    json_object *root = jparse(text, path);
    struct tally t = check_trace(root, true);
    ck_assert_uint_eq(t.tasks, s.created);
    ck_assert_uint_eq(t.tasks, s.run_inline + s.run_pool + s.run_stolen);
    ck_assert_uint_eq(t.kind[0] + t.kind[1], s.run_inline);
    ck_assert_uint_eq(t.kind[2], s.run_pool);
    ck_assert_uint_eq(t.kind[3] + t.kind[5], s.run_stolen);
    ck_assert_uint_eq(t.kind[4], 0);
    ck_assert_uint_eq(t.sleeps, s.sleeps);
    /* The foreign getter of the slow task has nothing to run until it
     * sleeps. */
    ck_assert_uint_ge(t.sleeps, 1);
    /* The foreign get ran thread 0's task: at least that one flow, and a
     * wait-inlined slice (the get left the fast path: not its own queue). */
    ck_assert_uint_ge(t.flows, 1);
    ck_assert_uint_ge(t.kind[1], 1);
    /* No pool at one thread (the foreign threads' gets may still steal:
     * they help while they wait). */
    if (threads == 1)
        ck_assert_uint_eq(t.kind[2], 0);
    /* Every batch task is run by the wait, the pool, or (if neither took
     * it first) by nobody else: the gets come after the wait. At one
     * thread the wait runs them all. */
    ck_assert_uint_le(t.kind[5], BATCH_TASKS);
    if (threads == 1)
        ck_assert_uint_eq(t.kind[5], BATCH_TASKS);
    /* The last event closes the array on its own line. */
    size_t n = strlen(text);
    ck_assert_msg(n >= 2 && strcmp(text + n - 2, "]\n") == 0, "the trace does not end in ]");
    json_object_put(root);
    free(text);
    unlink(path);
}
END_TEST

/* sf_config.trace = SF_TRACE_CHROME wins over SF_TRACE; tasks still
 * pending at shutdown are drained slices. */
START_TEST(chrome_from_config_with_drain)
{
    char path[256];
    tu_tmp_path(path, sizeof path, "chrome-cfg");
    tu_env_threads(2);
    setenv("SF_TRACE", "0", 1);
    sf_config cfg = {0};
    cfg.trace = SF_TRACE_CHROME;
    cfg.trace_file = path;
    ck_assert_int_eq(sf_init(&cfg), 0);
    sf_future *f = sf_do(tu_fib, (void *)10L);
    ck_assert_ptr_eq(sf_get(f), (void *)55L);
    sf_release(f);
    /* Queued and never got: the pool does not take it (lazy), the shutdown
     * runs it. */
    ck_assert_ptr_nonnull(sf_do(tu_fib, (void *)1L));
    sf_shutdown();
    char *text = tu_read_file(path);
    ck_assert_ptr_nonnull(text);
    json_object *root = jparse(text, path);
    struct tally t = check_trace(root, true);
    ck_assert_uint_eq(t.tasks, 1 + tu_fib_tasks(10) + 1);
    ck_assert_uint_eq(t.kind[4], 1);
    json_object_put(root);
    free(text);
    unlink(path);
}
END_TEST

/* Task functions of this program, which is linked without -rdynamic:
 * dladdr sees none of them (static, or not exported), so their names come
 * from the program's own symbol table. */
static void *named_leaf(void *arg)
{
    return (void *)((intptr_t)arg + 1);
}

static void *named_parent(void *arg)
{
    sf_future *f[3];
    for (int i = 0; i < 3; i++)
        ck_assert_ptr_nonnull(f[i] = sf_do(named_leaf, arg));
    intptr_t sum = 0;
    for (int i = 0; i < 3; i++) {
        sum += (intptr_t)sf_get(f[i]);
        sf_release(f[i]);
    }
    return (void *)sum;
}

static void *never_run(void *arg)
{
    ck_abort_msg("a discarded task ran");
    return arg;
}

/* Each slice is named by its task's function, static ones and a
 * non-exported global of another file (tu_fib) included; a task cancelled
 * and one released before they start are each a discard instant, and no
 * slice. */
START_TEST(chrome_names_and_discards)
{
    char path[256];
    tu_tmp_path(path, sizeof path, "chrome-names");
    tu_env_threads(1);
    setenv("SF_TRACE", "chrome", 1);
    setenv("SF_TRACE_FILE", path, 1);
    ck_assert_int_eq(sf_init(NULL), 0);
    sf_future *p = sf_do(named_parent, (void *)1L);
    ck_assert_ptr_nonnull(p);
    ck_assert_ptr_eq(sf_get(p), (void *)6L);
    sf_release(p);
    sf_future *f = sf_do(tu_fib, (void *)5L);
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_eq(sf_get(f), (void *)5L);
    sf_release(f);
    /* At one thread no pool takes them: both are discarded unstarted. */
    sf_future *c = sf_do(never_run, NULL);
    sf_future *r = sf_do(never_run, NULL);
    ck_assert_ptr_nonnull(c);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(sf_cancel(c), 0);
    sf_release(r);
    ck_assert_ptr_null(sf_get(c));
    ck_assert_int_eq(errno, ECANCELED);
    sf_release(c);
    sf_shutdown();

    char *text = tu_read_file(path);
    ck_assert_ptr_nonnull(text);
    json_object *root = jparse(text, path);
    static const char *const fn[NAMES] = {"named_parent", "named_leaf", "tu_fib", "never_run"};
    struct tally t = check_trace_names(root, true, fn);
    ck_assert_uint_eq(t.fn_slices[0], 1);
    ck_assert_uint_eq(t.fn_slices[1], 3);
    ck_assert_uint_eq(t.fn_slices[2], 1 + tu_fib_tasks(5));
    ck_assert_uint_eq(t.fn_slices[3], 0);
    ck_assert_uint_eq(t.tasks, 1 + 3 + 1 + tu_fib_tasks(5));
    ck_assert_uint_eq(t.discards, 2);
    json_object_put(root);
    free(text);
    unlink(path);
}
END_TEST

/* A bad sf_config.trace is still EINVAL. */
START_TEST(chrome_config_range)
{
    tu_env_threads(1);
    sf_config cfg = {0};
    cfg.trace = SF_TRACE_CHROME + 1;
    errno = 0;
    ck_assert_int_eq(sf_init(&cfg), -1);
    ck_assert_int_eq(errno, EINVAL);
}
END_TEST

/* A process that exits without sf_shutdown(): what its threads flushed is
 * whole events, and the array is not closed; with "]" appended it is valid
 * JSON (the Chrome loader accepts it as it is). */
START_TEST(chrome_exit_without_shutdown)
{
    char path[256];
    tu_tmp_path(path, sizeof path, "chrome-exit");
    tu_env_threads(2);
    setenv("SF_TRACE", "CHROME", 1);
    setenv("SF_TRACE_FILE", path, 1);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        if (sf_init(NULL) != 0)
            _exit(3);
        sf_future *f = sf_do(tu_fib, (void *)14L);
        long r = (long)sf_get(f);
        _exit(r == 377 ? 0 : 4);
    }
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child failed: %d", status);
    char *text = tu_read_file(path);
    ck_assert_ptr_nonnull(text);
    size_t n = strlen(text);
    ck_assert_msg(n > 0 && text[0] == '[' && text[n - 1] == '\n', "not a flushed array");
    ck_assert_ptr_null(strstr(text, "]\n"));
    char *closed = malloc(n + 2);
    ck_assert_ptr_nonnull(closed);
    memcpy(closed, text, n);
    memcpy(closed + n, "]", 2);
    json_object *root = jparse(closed, "the trace plus \"]\"");
    (void)check_trace(root, false);
    json_object_put(root);
    free(closed);
    free(text);
    unlink(path);
}
END_TEST

static Suite *trace_chrome_suite(void)
{
    Suite *s = suite_create("trace_chrome");
    TCase *tc = tcase_create("trace_chrome");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, chrome_workload, 0, (int)(sizeof threads_of / sizeof threads_of[0]));
    tcase_add_test(tc, chrome_from_config_with_drain);
    tcase_add_test(tc, chrome_config_range);
    tcase_add_test(tc, chrome_names_and_discards);
    tcase_add_test(tc, chrome_exit_without_shutdown);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(trace_chrome_suite)
