/*
 * test_threads.c - the threads libsf starts (docs/threads.md): every pool
 * worker is named sf-worker-<its index>, and sf_config.on_thread_start runs
 * once on each worker, with its index and sf_config.ctx, before the worker
 * runs any task and before sf_init() returns; never on the caller of
 * sf_init(). The hook may call libsf: tasks and loops work there, sf_init()
 * fails with EBUSY and sf_shutdown() is refused, none of them hangs. The
 * docs' flush-to-zero example works where the CPU has it.
 */
#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)
#include <pmmintrin.h>
#include <xmmintrin.h>
#endif

/* What the hook saw: calls per index, and calls that found something wrong. */
static atomic_int hook_calls[SF_MAX_THREADS];
static atomic_int hook_total;
static atomic_int hook_bad_ctx;   /* ctx was not the one sf_config gave */
static atomic_int hook_bad_index; /* index was not sf_thread_index() */
static atomic_int hook_bad_name;  /* the thread was not named yet */
static void *want_ctx;
/* The hook's index + 1 on this thread; 0: the hook did not run here. */
static _Thread_local int hooked_as;

/* What tasks saw: per index, tasks that ran there; tasks on a worker whose
 * name or hook was wrong; tasks on the main thread that found a hook. */
static atomic_int ran_on[SF_MAX_THREADS];
static atomic_int task_bad_name;
static atomic_int task_not_hooked;
static atomic_int task_hooked_on_main;
static int main_index;

/* A short name for failure messages. */
static int ld(atomic_int *a) { return atomic_load(a); }

static void reset(void *ctx)
{
    for (int i = 0; i < SF_MAX_THREADS; i++) {
        atomic_store(&hook_calls[i], 0);
        atomic_store(&ran_on[i], 0);
    }
    atomic_store(&hook_total, 0);
    atomic_store(&hook_bad_ctx, 0);
    atomic_store(&hook_bad_index, 0);
    atomic_store(&hook_bad_name, 0);
    atomic_store(&task_bad_name, 0);
    atomic_store(&task_not_hooked, 0);
    atomic_store(&task_hooked_on_main, 0);
    want_ctx = ctx;
}

static int named_as_worker(int index)
{
    char name[16] = "", want[16];
    snprintf(want, sizeof want, "sf-worker-%d", index);
    return pthread_getname_np(pthread_self(), name, sizeof name) == 0 && strcmp(name, want) == 0;
}

static void hook(int index, void *ctx)
{
    if (ctx != want_ctx)
        atomic_fetch_add(&hook_bad_ctx, 1);
    if (sf_thread_index() != index)
        atomic_fetch_add(&hook_bad_index, 1);
    if (!named_as_worker(index))
        atomic_fetch_add(&hook_bad_name, 1);
    if (index >= 0 && index < SF_MAX_THREADS)
        atomic_fetch_add(&hook_calls[index], 1);
    atomic_fetch_add(&hook_total, 1);
    hooked_as = index + 1;
}

/* Called by every task and loop chunk: on a worker, its name and its hook
 * are checked; on the main thread, that no hook ran there. */
static void note_task(void)
{
    int i = sf_thread_index();
    if (i < 0 || i >= SF_MAX_THREADS)
        return;
    atomic_fetch_add(&ran_on[i], 1);
    if (i == main_index) {
        if (hooked_as != 0)
            atomic_fetch_add(&task_hooked_on_main, 1);
        return;
    }
    if (!named_as_worker(i))
        atomic_fetch_add(&task_bad_name, 1);
    if (hooked_as != i + 1)
        atomic_fetch_add(&task_not_hooked, 1);
}

/* One task on each of n workers: each waits until all n run, so no worker
 * runs two, and the main thread waits with a deadline, so it runs none. */
struct each {
    void (*fn)(void);
    atomic_int arrived;
    int n;
    atomic_int timed_out;
};

static void *each_task(void *arg)
{
    struct each *e = arg;
    note_task();
    if (e->fn != NULL)
        e->fn();
    atomic_fetch_add(&e->arrived, 1);
    if (!tu_wait_count(&e->arrived, e->n, 30000))
        atomic_store(&e->timed_out, 1);
    return NULL;
}

static void on_every_worker(int n, void (*fn)(void))
{
    if (n == 0)
        return;
    struct each e = {.fn = fn, .n = n};
    sf_future *fs[SF_MAX_THREADS];
    sf_batch *b = sf_batch_new();
    ck_assert_ptr_nonnull(b);
    for (int i = 0; i < n; i++) {
        fs[i] = sf_batch_do(b, each_task, &e);
        ck_assert_ptr_nonnull(fs[i]);
    }
    ck_assert_int_eq(sf_batch_wait_for(b, 60), 0);
    sf_batch_close(b);
    for (int i = 0; i < n; i++)
        sf_release(fs[i]);
    int timed_out = atomic_load(&e.timed_out), arrived = atomic_load(&e.arrived);
    ck_assert_int_eq(timed_out, 0);
    ck_assert_int_eq(arrived, n);
}

static void chunk(long lo, long hi, void *ctx)
{
    (void)lo, (void)hi, (void)ctx;
    note_task();
    tu_spin_us(20); /* long enough for the workers to take chunks */
}

/* The hook ran exactly once on each of the `workers` workers and nowhere
 * else, with the right ctx and index, the thread already named; every
 * worker ran a task, and every task on a worker found its name and hook. */
static void check_pool(int workers)
{
    ck_assert_int_eq(ld(&hook_bad_ctx), 0);
    ck_assert_int_eq(ld(&hook_bad_index), 0);
    ck_assert_int_eq(ld(&hook_bad_name), 0);
    ck_assert_int_eq(ld(&hook_calls[main_index]), 0);
    on_every_worker(workers, NULL);
    ck_assert_int_eq(sf_for_range(0, 20000, 64, chunk, NULL), 0);
    int hooked = 0, ran = 0;
    for (int i = 0; i < SF_MAX_THREADS; i++) {
        int calls = ld(&hook_calls[i]);
        ck_assert_msg(calls <= 1, "the hook ran %d times on thread %d", calls, i);
        hooked += calls;
        if (i != main_index && ld(&ran_on[i]) > 0) {
            ck_assert_msg(calls == 1, "thread %d ran tasks and had no hook", i);
            ran++;
        }
    }
    ck_assert_int_eq(hooked, workers);
    ck_assert_int_eq(ran, workers); /* every worker ran a task */
    ck_assert_int_eq(ld(&task_bad_name), 0);
    ck_assert_int_eq(ld(&task_not_hooked), 0);
    ck_assert_int_eq(ld(&task_hooked_on_main), 0);
}

static int start(int threads, void (*on_start)(int, void *), void *ctx)
{
    sf_config cfg = {0};
    cfg.threads = threads;
    cfg.on_thread_start = on_start;
    cfg.ctx = ctx;
    return sf_init(&cfg);
}

static const int thread_counts[] = {1, 2, 4};

START_TEST(workers_named_and_hooked)
{
    int threads = thread_counts[_i], workers = threads - 1;
    static int token;
    tu_env_clean();
    reset(&token);
    ck_assert_int_eq(start(threads, hook, &token), 0);
    main_index = sf_thread_index();
    ck_assert_int_eq(main_index, 0);
    /* sf_init returned after every hook. */
    ck_assert_int_eq(ld(&hook_total), workers);
    ck_assert_int_eq(tu_stats_quiet().workers, workers);
    check_pool(workers);
    sf_shutdown();
    ck_assert_int_eq(ld(&hook_total), workers);
}
END_TEST

START_TEST(hook_with_null_ctx)
{
    tu_env_clean();
    reset(NULL);
    ck_assert_int_eq(start(3, hook, NULL), 0);
    main_index = sf_thread_index();
    ck_assert_int_eq(ld(&hook_total), 2);
    check_pool(2);
    sf_shutdown();
}
END_TEST

/* A new runtime's workers get the new sf_config's hook and ctx; a runtime
 * started implicitly has no hook, its workers are still named. */
START_TEST(hook_again_after_shutdown)
{
    static int first, second;
    tu_env_clean();
    reset(&first);
    ck_assert_int_eq(start(3, hook, &first), 0);
    main_index = sf_thread_index();
    check_pool(2);
    sf_shutdown();

    reset(&second);
    ck_assert_int_eq(start(4, hook, &second), 0);
    main_index = sf_thread_index();
    ck_assert_int_eq(ld(&hook_total), 3);
    check_pool(3);
    sf_shutdown();

    reset(NULL);
    tu_env_threads(3);
    main_index = sf_thread_index(); /* an implicit start */
    on_every_worker(2, NULL);
    ck_assert_int_eq(ld(&hook_total), 0);
    ck_assert_int_eq(ld(&task_bad_name), 0);
    ck_assert_int_eq(ld(&task_not_hooked), 2); /* no hook ran on them */
    sf_shutdown();
}
END_TEST

/* The docs' example (docs/threads.md). */
static void flush_to_zero(int index, void *ctx)
{
    (void)ctx;
#if defined(__x86_64__)
    _MM_SET_FLUSH_ZERO_MODE(_MM_FLUSH_ZERO_ON);
    _MM_SET_DENORMALS_ZERO_MODE(_MM_DENORMALS_ZERO_ON);
#elif defined(__aarch64__)
    uint64_t fpcr;
    __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
    __asm__ volatile("msr fpcr, %0" : : "r"(fpcr | (uint64_t)1 << 24)); /* FZ */
#endif
    hook(index, ctx);
}

/* Subnormal results or inputs that came out as something other than 0. */
static atomic_int not_flushed;

static int subnormals_kept(void)
{
    volatile double a = 1e-200, b = 1e-120, tiny = 1e-310, one = 1.0;
    volatile float fa = 1e-20f, fb = 1e-20f;
    int kept = 0;
    kept += a * b != 0.0;       /* 1e-320: a subnormal product */
    kept += fa * fb != 0.0f;    /* 1e-40 */
    kept += tiny * one != 0.0;  /* a subnormal input */
    return kept;
}

static void count_not_flushed(void) { atomic_fetch_add(&not_flushed, subnormals_kept()); }

START_TEST(flush_to_zero_on_workers)
{
#if defined(__x86_64__) || defined(__aarch64__)
    tu_env_clean();
    reset(NULL);
    atomic_store(&not_flushed, 0);
    ck_assert_int_eq(subnormals_kept(), 3); /* this thread keeps them */
    ck_assert_int_eq(start(4, flush_to_zero, NULL), 0);
    main_index = sf_thread_index();
    on_every_worker(3, count_not_flushed);
    ck_assert_int_eq(ld(&not_flushed), 0);
    ck_assert_int_eq(ld(&hook_total), 3);
    ck_assert_int_eq(ld(&task_not_hooked), 0);
    ck_assert_int_eq(subnormals_kept(), 3); /* the caller of sf_init is not touched */
    sf_shutdown();
#else
    printf("# skipped: flush-to-zero is checked on x86-64 and aarch64 only\n");
#endif
}
END_TEST

/* A hook that calls libsf. */
static atomic_int libsf_bad;
static atomic_int body_busy;

static void init_body(long i, void *ctx)
{
    (void)i, (void)ctx;
    errno = 0;
    if (sf_init(NULL) == -1 && errno == EBUSY)
        atomic_fetch_add(&body_busy, 1);
}

static void calling_hook(int index, void *ctx)
{
    hook(index, ctx);
    if (sf_thread_index() != index)
        atomic_fetch_add(&libsf_bad, 1);
    sf_future *f = sf_do(tu_fib, (void *)15L);
    if (f == NULL || sf_get(f) != (void *)610L)
        atomic_fetch_add(&libsf_bad, 1);
    sf_release(f);
    /* Loop bodies on every thread: sf_init answers at once, also on a worker
     * that is past its own hook while this one's sf_init still waits. */
    if (sf_for(0, 64, init_body, NULL) != 0)
        atomic_fetch_add(&libsf_bad, 1);
    errno = 0;
    if (sf_init(NULL) != -1 || errno != EBUSY)
        atomic_fetch_add(&libsf_bad, 1);
    sf_shutdown(); /* refused: one line */
    errno = 0;
    if (sf_shutdown_timeout(0) != -1 || errno != EDEADLK) /* refused: one line */
        atomic_fetch_add(&libsf_bad, 1);
}

START_TEST(hook_calls_libsf)
{
    tu_env_clean();
    reset(NULL);
    atomic_store(&libsf_bad, 0);
    atomic_store(&body_busy, 0);
    struct tu_capture c;
    tu_capture_begin(&c);
    int rc = start(4, calling_hook, NULL);
    char *out = tu_capture_end(&c);
    ck_assert_int_eq(rc, 0);
    main_index = sf_thread_index();
    ck_assert_int_eq(ld(&hook_total), 3);
    ck_assert_int_eq(ld(&libsf_bad), 0);
    ck_assert_int_eq(ld(&body_busy), 3 * 64);
    ck_assert_msg(tu_count_lines(out) == 6, "want 6 lines, got: \"%s\"", out);
    ck_assert_int_eq(tu_count_prefixed(out, "libsf: sf_shutdown() called from an "
                                            "on_thread_start hook; ignored"), 3);
    ck_assert_int_eq(tu_count_prefixed(out, "libsf: sf_shutdown_timeout() called from an "
                                            "on_thread_start hook; ignored"), 3);
    free(out);
    check_pool(3);
    sf_shutdown();
}
END_TEST

/* A deep chain on a small stack, at SF_THREADS=1: once its thread has no
 * fiber left it goes on in new threads (docs/waiting.md, Deep chains), each
 * named sf-fresh-<index>. */
#if defined(__SANITIZE_THREAD__)
#define CHAIN_DEPTH 100000L /* a stack holds 1,280 levels there (get.c, stack_exhausted) */
#else
#define CHAIN_DEPTH 200000L /* several threads' worth of 64 fibers */
#endif
#define CHAIN_STACK ((size_t)128 << 10) /* room for a level under a sanitizer */
static _Thread_local int looked_at = -1; /* the index whose name this thread checked */
static atomic_int fresh_threads, fresh_bad_name;

static void *chain(void *arg)
{
    long n = (long)arg;
    int i = sf_thread_index();
    if (i != looked_at) {
        looked_at = i;
        if (i != main_index) {
            char name[16] = "", want[16];
            snprintf(want, sizeof want, "sf-fresh-%d", i);
            if (pthread_getname_np(pthread_self(), name, sizeof name) != 0 ||
                strcmp(name, want) != 0)
                atomic_fetch_add(&fresh_bad_name, 1);
            atomic_fetch_add(&fresh_threads, 1);
        }
    }
    if (n == 0)
        return (void *)0L;
    sf_future *f = sf_do(chain, (void *)(n - 1));
    long r = (long)sf_get(f);
    sf_release(f);
    return (void *)(r + 1);
}

static void *chain_root(void *arg)
{
    main_index = sf_thread_index();
    return chain(arg);
}

/* Is a thread of this process named `name` (/proc/self/task/.../comm)? */
static int thread_named(const char *name)
{
    DIR *d = opendir("/proc/self/task");
    if (d == NULL)
        return 0;
    int found = 0;
    for (struct dirent *e; !found && (e = readdir(d)) != NULL;) {
        char path[300], comm[32] = "";
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (f == NULL)
            continue;
        if (fgets(comm, sizeof comm, f) != NULL) {
            comm[strcspn(comm, "\n")] = '\0';
            found = strcmp(comm, name) == 0;
        }
        fclose(f);
    }
    closedir(d);
    return found;
}

/* Run by sf_shutdown's drain, while the watch runs: it looks for it. */
static void *look_for_watch(void *arg)
{
    atomic_int *seen = arg;
    double end = tu_now_ms() + 20000;
    while (!thread_named("sf-shutdown") && tu_now_ms() < end)
        tu_sleep_ms(1);
    atomic_store(seen, thread_named("sf-shutdown"));
    return NULL;
}

START_TEST(other_threads_named)
{
    tu_env_clean();
    sf_config cfg = {0};
    cfg.threads = 1; /* no worker: every other thread is a fresh stack's */
    cfg.stack_size = CHAIN_STACK;
    ck_assert_int_eq(sf_init(&cfg), 0);
    long r = (long)tu_run_on_thread(chain_root, (void *)CHAIN_DEPTH, CHAIN_STACK);
    ck_assert_int_eq(r, CHAIN_DEPTH);
    ck_assert_int_gt(ld(&fresh_threads), 0);
    ck_assert_int_eq(ld(&fresh_bad_name), 0);
    /* The watch runs during a shutdown once the process has made a promise. */
    sf_future *p = sf_promise();
    ck_assert_ptr_nonnull(p);
    ck_assert_int_eq(sf_promise_set(p, NULL), 0);
    sf_release(p);
    static atomic_int seen;
    sf_future *f = sf_do(look_for_watch, &seen); /* pending: the shutdown runs it */
    ck_assert_ptr_nonnull(f);
    sf_shutdown();
    ck_assert_int_eq(ld(&seen), 1);
    ck_assert_int_eq(thread_named("sf-shutdown"), 0);
}
END_TEST

static Suite *threads_suite(void)
{
    Suite *s = suite_create("threads");
    TCase *tc = tcase_create("threads");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, workers_named_and_hooked, 0,
                        (int)(sizeof thread_counts / sizeof thread_counts[0]));
    tcase_add_test(tc, hook_with_null_ctx);
    tcase_add_test(tc, hook_again_after_shutdown);
    tcase_add_test(tc, flush_to_zero_on_workers);
    tcase_add_test(tc, hook_calls_libsf);
    tcase_add_test(tc, other_threads_named);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(threads_suite)
