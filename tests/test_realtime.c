/*
 * test_realtime.c - the table of docs/realtime.md, proved: the calls it
 * lists allocate nothing, take no lock and make no system call but a futex
 * wake, on the threads it names.
 *
 * How. A watched thread makes the calls, with nothing of the test's own in
 * between (results go to plain memory; Check's assertions come after):
 *  - allocations and locks: this program defines malloc & co. and the
 *    locking calls (pthread mutexes, rwlocks and spin locks, semaphores),
 *    so libsf.so's calls reach them through its PLT; each counts when its
 *    caller is the watched thread, then forwards to glibc (__libc_malloc &
 *    co., or the next definition through dlsym);
 *  - system calls: a seccomp filter on the watched thread alone (no TSYNC)
 *    traps every system call (SIGSYS) but rt_sigreturn, which the handler
 *    needs. The handler counts each and fails it with ENOSYS, except a futex
 *    wake: that is counted apart and then made for real, by the handler,
 *    with a mark in the futex call's unused last argument that the filter
 *    lets through. A futex wait is let through only on the word the thread
 *    parks on afterwards: a filter cannot be removed, so a watched thread
 *    never ends, it parks for the rest of the process (Check runs each test
 *    in a process of its own).
 * Controls prove that each instrument sees what libsf does: a message's
 * allocation (sf_promise_fail with a format), the lock of sf_cancel of a
 * running task, a getpid and a futex wake of the thread's own.
 *
 * "Plain" threads never called libsf; "registered" ones called
 * sf_thread_index() first. Sanitizer builds own malloc (and their hooks
 * may allocate or make system calls): there allocations are not counted,
 * and under ThreadSanitizer, which runs its own code at every atomic, nor
 * are system calls; each skip prints one line.
 */
#include "testutil.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <math.h>
#include <semaphore.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/futex.h>
#include <linux/seccomp.h>

#define COUNT_ALLOCS (!TU_SANITIZED)
#if defined(__SANITIZE_THREAD__)
#define COUNT_SYSCALLS 0
#elif defined(__x86_64__)
#define COUNT_SYSCALLS 1
#define RT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define COUNT_SYSCALLS 1
#define RT_ARCH AUDIT_ARCH_AARCH64
#else
#define COUNT_SYSCALLS 0
#endif

/* ------------------------------------------------------------------------
 * The watched thread's counts (its own: thread-local, no race).
 */

static __thread bool tl_watched;
static __thread long tl_allocs, tl_locks, tl_wakes, tl_syscalls;
static __thread long tl_nr[4]; /* the first system calls trapped */

static void note_lock(void)
{
    if (tl_watched)
        tl_locks++;
}

/* ------------------------------------------------------------------------
 * Allocations (glibc's "Replacing malloc"; the blocks stay glibc's).
 */

#if COUNT_ALLOCS
extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t size);
extern void __libc_free(void *p);
extern void *__libc_memalign(size_t align, size_t size);

static void note_alloc(void)
{
    if (tl_watched)
        tl_allocs++;
}

void *malloc(size_t size)
{
    note_alloc();
    return __libc_malloc(size);
}

void *calloc(size_t n, size_t size)
{
    note_alloc();
    return __libc_calloc(n, size);
}

void *realloc(void *p, size_t size)
{
    note_alloc();
    return __libc_realloc(p, size);
}

void free(void *p)
{
    note_alloc(); /* free(NULL) too: a call into the allocator all the same */
    __libc_free(p);
}

void *memalign(size_t align, size_t size)
{
    note_alloc();
    return __libc_memalign(align, size);
}

void *aligned_alloc(size_t align, size_t size)
{
    note_alloc();
    return __libc_memalign(align, size);
}

int posix_memalign(void **out, size_t align, size_t size)
{
    note_alloc();
    void *p = __libc_memalign(align, size);
    if (p == NULL)
        return ENOMEM;
    *out = p;
    return 0;
}
#endif

/* ------------------------------------------------------------------------
 * Locks: each wrapper counts, then calls the next definition (glibc's, or
 * a sanitizer's interceptor), found at its first call.
 */

static void *next_symbol(const char *name)
{
    void *p = dlsym(RTLD_NEXT, name);
    if (p == NULL) {
        fprintf(stderr, "test_realtime: dlsym(RTLD_NEXT, %s): %s\n", name, dlerror());
        abort();
    }
    return p;
}

#define WRAP1(name, T)                                                         \
    int name(T *l)                                                             \
    {                                                                          \
        static int (*real)(T *);                                               \
        note_lock();                                                           \
        int (*r)(T *) = __atomic_load_n(&real, __ATOMIC_RELAXED);              \
        if (r == NULL) {                                                       \
            r = (int (*)(T *))next_symbol(#name);                              \
            __atomic_store_n(&real, r, __ATOMIC_RELAXED);                      \
        }                                                                      \
        return r(l);                                                           \
    }
#define WRAP2(name, T, U)                                                      \
    int name(T *l, U u)                                                        \
    {                                                                          \
        static int (*real)(T *, U);                                            \
        note_lock();                                                           \
        int (*r)(T *, U) = __atomic_load_n(&real, __ATOMIC_RELAXED);           \
        if (r == NULL) {                                                       \
            r = (int (*)(T *, U))next_symbol(#name);                           \
            __atomic_store_n(&real, r, __ATOMIC_RELAXED);                      \
        }                                                                      \
        return r(l, u);                                                        \
    }

WRAP1(pthread_mutex_lock, pthread_mutex_t)
WRAP1(pthread_mutex_trylock, pthread_mutex_t)
WRAP2(pthread_mutex_timedlock, pthread_mutex_t, const struct timespec *)
WRAP1(pthread_rwlock_rdlock, pthread_rwlock_t)
WRAP1(pthread_rwlock_wrlock, pthread_rwlock_t)
WRAP1(pthread_rwlock_tryrdlock, pthread_rwlock_t)
WRAP1(pthread_rwlock_trywrlock, pthread_rwlock_t)
WRAP1(pthread_spin_lock, pthread_spinlock_t)
WRAP1(pthread_spin_trylock, pthread_spinlock_t)
WRAP1(sem_wait, sem_t)
WRAP1(sem_trywait, sem_t)
WRAP2(sem_timedwait, sem_t, const struct timespec *)

/* ------------------------------------------------------------------------
 * System calls: the filter and its handler (top comment).
 */

/* The word a watched thread parks on once done: its one futex wait. */
static uint32_t park_word;
/* In a futex wake's last argument (val3, unused by FUTEX_WAKE): the
 * handler's own wake, which the filter lets through. */
#define WAKE_MARK 0x5f52545fu

#if COUNT_SYSCALLS
#if defined(__x86_64__)
#define ARG(uc, i)                                                                  \
    ((uc)->uc_mcontext.gregs[(int[]){REG_RDI, REG_RSI, REG_RDX, REG_R10, REG_R8,  \
                                      REG_R9}[i]])
#define RESULT(uc) ((uc)->uc_mcontext.gregs[REG_RAX])
#else
#define ARG(uc, i) ((uc)->uc_mcontext.regs[i])
#define RESULT(uc) ((uc)->uc_mcontext.regs[0])
#endif

static bool is_wake(long op)
{
    return (op & ~(FUTEX_PRIVATE_FLAG | FUTEX_CLOCK_REALTIME)) == FUTEX_WAKE;
}

static void on_sigsys(int sig, siginfo_t *si, void *ctx)
{
    (void)sig;
    ucontext_t *uc = ctx;
    int saved = errno;
    if (si->si_syscall == SYS_futex && is_wake((long)ARG(uc, 1))) {
        tl_wakes++;
        long r = syscall(SYS_futex, (void *)ARG(uc, 0), (int)ARG(uc, 1), (int)ARG(uc, 2), NULL,
                         NULL, WAKE_MARK);
        RESULT(uc) = r < 0 ? -errno : r;
    } else {
        if (tl_syscalls < 4)
            tl_nr[tl_syscalls] = si->si_syscall;
        tl_syscalls++;
        RESULT(uc) = -ENOSYS;
    }
    errno = saved;
}

#define LO(i) (offsetof(struct seccomp_data, args[i]) + (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__ ? 4 : 0))
#define HI(i) (offsetof(struct seccomp_data, args[i]) + (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__ ? 0 : 4))
#define LD(off) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (off))
/* At instruction `at`: to t if A == k, else to f (absolute indices). */
#define JEQ(at, k, t, f) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (k), (t) - (at)-1, (f) - (at)-1)
enum { TRAP = 15, ALLOW = 16 };

/* Installs the filter on the calling thread: 0, or an errno. */
static int filter_install(void)
{
    struct sigaction sa = {0};
    sa.sa_sigaction = on_sigsys;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSYS, &sa, NULL) != 0)
        return errno;
    uintptr_t park = (uintptr_t)&park_word;
    struct sock_filter prog[] = {
        /* 0 */ LD(offsetof(struct seccomp_data, arch)),
        /* 1 */ JEQ(1, RT_ARCH, 2, TRAP),
        /* 2 */ LD(offsetof(struct seccomp_data, nr)),
        /* 3 */ JEQ(3, __NR_rt_sigreturn, ALLOW, 4),
        /* 4 */ JEQ(4, __NR_futex, 5, TRAP),
        /* 5 */ LD(LO(1)),
        /* 6 */ BPF_STMT(BPF_ALU | BPF_AND | BPF_K, ~(uint32_t)(FUTEX_PRIVATE_FLAG | FUTEX_CLOCK_REALTIME)),
        /* 7 */ JEQ(7, FUTEX_WAKE, 8, 10),
        /* 8 */ LD(LO(5)),
        /* 9 */ JEQ(9, WAKE_MARK, ALLOW, TRAP),
        /* 10 */ JEQ(10, FUTEX_WAIT, 11, TRAP),
        /* 11 */ LD(LO(0)),
        /* 12 */ JEQ(12, (uint32_t)park, 13, TRAP),
        /* 13 */ LD(HI(0)),
        /* 14 */ JEQ(14, (uint32_t)((uint64_t)park >> 32), ALLOW, TRAP),
        /* 15 TRAP */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
        /* 16 ALLOW */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    _Static_assert(sizeof prog / sizeof prog[0] == ALLOW + 1, "the labels above");
    struct sock_fprog fp = {(unsigned short)(sizeof prog / sizeof prog[0]), prog};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return errno;
    /* No SECCOMP_FILTER_FLAG_TSYNC: this thread only. */
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fp) != 0)
        return errno;
    return 0;
}
#endif

/* ------------------------------------------------------------------------
 * Watched threads.
 */

struct watch {
    const char *what;
    /* On the watched thread: prep unwatched (may be NULL), then act. */
    void (*prep)(struct watch *);
    void (*act)(struct watch *);
    bool registered;   /* sf_thread_index() before prep */
    bool unfiltered;   /* count allocations and locks only */
    void *ctx;
    int kind;          /* which act, where one does several things */
    long r[16];        /* act's results */
    /* What act did. */
    long allocs, locks, wakes, syscalls, nr[4];
    int filter_err;    /* 0: the filter was on; else why not */
    atomic_int done;
};

static void *watched_main(void *arg)
{
    struct watch *w = arg;
    if (w->registered)
        (void)sf_thread_index();
    if (w->prep != NULL)
        w->prep(w);
    /* The thread's first allocations set up its arena and cache: the
     * controls' message then needs no system call. Volatile: the compiler
     * would drop an allocation nobody uses. */
    void *volatile warm = malloc(16);
    free(warm);
#if COUNT_SYSCALLS
    w->filter_err = w->unfiltered ? ENOSYS : filter_install();
#else
    w->filter_err = ENOSYS;
#endif
    tl_allocs = tl_locks = tl_wakes = tl_syscalls = 0;
    tl_watched = true;
    w->act(w);
    tl_watched = false;
    w->allocs = tl_allocs;
    w->locks = tl_locks;
    w->wakes = tl_wakes;
    w->syscalls = tl_syscalls;
    memcpy(w->nr, tl_nr, sizeof w->nr);
    /* Release: the counts above, to watch()'s acquire. */
    atomic_store_explicit(&w->done, 1, memory_order_release);
    for (;;) /* parked for good (top comment) */
        syscall(SYS_futex, &park_word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
    return NULL;
}

static void start_watch(struct watch *w)
{
    pthread_attr_t a;
    pthread_t t;
    ck_assert_int_eq(pthread_attr_init(&a), 0);
    ck_assert_int_eq(pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED), 0);
    ck_assert_int_eq(pthread_create(&t, &a, watched_main, w), 0);
    pthread_attr_destroy(&a);
}

static void end_watch(struct watch *w)
{
    ck_assert_msg(tu_wait_flag(&w->done, 30000), "%s: the watched thread did not finish", w->what);
}

static bool said_allocs, said_syscalls;

/* Asserts that w's act allocated nothing, took no lock and made no system
 * call but at most max_wakes futex wakes. */
static void assert_clean(const struct watch *w, long max_wakes)
{
    if (COUNT_ALLOCS)
        ck_assert_msg(w->allocs == 0, "%s: %ld calls of malloc & co.", w->what, w->allocs);
    else if (!said_allocs) {
        said_allocs = true;
        printf("# test_realtime: allocations not counted (a sanitizer owns malloc)\n");
    }
    ck_assert_msg(w->locks == 0, "%s: %ld locks taken", w->what, w->locks);
    if (w->filter_err == 0) {
        ck_assert_msg(w->syscalls == 0, "%s: %ld system calls besides futex wakes (%ld %ld %ld %ld)",
                      w->what, w->syscalls, w->nr[0], w->nr[1], w->nr[2], w->nr[3]);
        ck_assert_msg(w->wakes <= max_wakes, "%s: %ld futex wakes, at most %ld expected", w->what,
                      w->wakes, max_wakes);
    } else if (!said_syscalls) {
        said_syscalls = true;
        printf("# test_realtime: system calls not counted (%s)\n",
               COUNT_SYSCALLS ? strerror(w->filter_err)
                              : "ThreadSanitizer's hooks, or no filter for this architecture");
    }
    fflush(stdout);
}

static void run_watch(struct watch *w, long max_wakes)
{
    start_watch(w);
    end_watch(w);
    assert_clean(w, max_wakes);
}

/* ------------------------------------------------------------------------
 * Helpers: getters that sleep on a promise, tasks that hold a worker.
 */

static int value_a, value_b;

struct getter {
    sf_future *p;
    int kind;      /* 0: sf_get; 1: sf_wait_any, then sf_wait */
    void *got;
    int err;
    pthread_t t;
};

static void *getter_main(void *arg)
{
    struct getter *g = arg;
    if (g->kind == 1) {
        int which = -1;
        g->err = sf_wait_any(&g->p, 1, INFINITY, &which);
        if (g->err == 0)
            g->err = sf_wait(g->p, &g->got);
        return NULL;
    }
    errno = 0;
    g->got = sf_get(g->p);
    g->err = errno;
    return NULL;
}

/* A task that gets the promise arg, and fails as its get did. */
static void *get_task(void *arg)
{
    errno = 0;
    void *v = sf_get(arg);
    if (v == NULL && errno != 0)
        (void)sf_fail(errno, NULL);
    return v;
}

/* Threads asleep in a get: at least n, within 30 s. */
static void wait_asleep(int n)
{
    for (int i = 0; i < 30000; i++) {
        sf_stats st;
        ck_assert_int_eq(sf_stats_read(&st), 0);
        if (st.asleep >= n)
            return;
        tu_sleep_ms(1);
    }
    ck_abort_msg("fewer than %d getters fell asleep", n);
}

/* Sleepers on p: two plain threads' sf_get, one plain sf_wait_any
 * (futex_waitv), one batch task's sf_get on a worker. */
struct sleepers {
    struct getter g[3];
    sf_batch *b;
    sf_future *task;
};

static void sleepers_start(struct sleepers *s, sf_future *p)
{
    for (int i = 0; i < 3; i++) {
        s->g[i] = (struct getter){.p = p, .kind = i == 2};
        ck_assert_int_eq(pthread_create(&s->g[i].t, NULL, getter_main, &s->g[i]), 0);
    }
    s->b = sf_batch_new();
    ck_assert_ptr_nonnull(s->b);
    s->task = sf_batch_do(s->b, get_task, p);
    ck_assert_ptr_nonnull(s->task);
    wait_asleep(4);
}

/* The sleepers saw value v (err 0) or failure err. */
static void sleepers_end(struct sleepers *s, void *v, int err)
{
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(pthread_join(s->g[i].t, NULL), 0);
        ck_assert_int_eq(s->g[i].err, err);
        if (err == 0)
            ck_assert_ptr_eq(s->g[i].got, v);
    }
    void *r = NULL;
    ck_assert_int_eq(sf_wait(s->task, &r), err);
    if (err == 0)
        ck_assert_ptr_eq(r, v);
    sf_release(s->task);
    sf_batch_close(s->b);
}

/* A batch task that holds its worker until *arg is set. */
static atomic_int hold_started;
static void *hold_task(void *arg)
{
    atomic_store(&hold_started, 1);
    while (atomic_load((atomic_int *)arg) == 0)
        tu_sleep_ms(1);
    return &value_b;
}

static void *quick_task(void *arg) { return arg; }

static void start_env(void)
{
    tu_env_clean();
    tu_env_threads(4);
    ck_assert_int_eq(sf_init(NULL), 0);
}

/* ------------------------------------------------------------------------
 * Controls: each instrument sees libsf's calls.
 */

static void act_controls(struct watch *w)
{
    sf_future *p = w->ctx;
    /* A message: allocated. */
    w->r[0] = sf_promise_fail(p, EIO, "late by %d ms", 5);
    w->r[3] = errno;
    /* A system call, and a wake of our own. */
    w->r[1] = syscall(SYS_getpid);
    static uint32_t word;
    w->r[2] = syscall(SYS_futex, &word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void act_cancel_running(struct watch *w) { w->r[0] = sf_cancel(w->ctx); }

START_TEST(instruments_see_libsf)
{
    start_env();
    sf_future *p = sf_promise();
    struct watch w = {.what = "controls", .act = act_controls, .ctx = p};
    start_watch(&w);
    end_watch(&w);
    ck_assert_msg(w.r[0] == 0, "sf_promise_fail: %ld, errno %ld", w.r[0], w.r[3]);
    ck_assert_str_eq(sf_error_message(p), "late by 5 ms");
    if (COUNT_ALLOCS)
        ck_assert_int_ge(w.allocs, 1);
    if (w.filter_err == 0) {
        ck_assert_int_eq(w.r[1], -1); /* failed by the handler, ENOSYS */
        ck_assert_int_eq(w.syscalls, 1);
        ck_assert_int_eq(w.nr[0], SYS_getpid);
        ck_assert_int_eq(w.r[2], 0); /* made for real: nobody waited */
        ck_assert_int_eq(w.wakes, 1);
    } else {
        printf("# test_realtime: system calls not counted (%s)\n",
               COUNT_SYSCALLS ? strerror(w.filter_err)
                              : "ThreadSanitizer's hooks, or no filter for this architecture");
        fflush(stdout);
    }
    sf_release(p);

    /* sf_cancel of a running task records it under a lock (cancel.c); its
     * system calls (membarrier) are not this control's. */
    atomic_int go = 0;
    sf_batch *b = sf_batch_new();
    sf_future *t = sf_batch_do(b, hold_task, &go);
    ck_assert(tu_wait_flag(&hold_started, 30000));
    struct watch c = {.what = "cancel of a running task", .act = act_cancel_running, .ctx = t,
                      .registered = true, .unfiltered = true};
    start_watch(&c);
    end_watch(&c);
    ck_assert_int_eq(c.r[0], 0);
    ck_assert_int_ge(c.locks, 1);
    atomic_store(&go, 1);
    void *r;
    ck_assert_int_eq(sf_wait(t, &r), 0); /* it never asked: it keeps its result */
    sf_release(t);
    sf_batch_close(b);
    sf_shutdown();
}
END_TEST

/* ------------------------------------------------------------------------
 * sf_promise_set.
 */

static void act_set(struct watch *w)
{
    w->r[0] = sf_promise_set(w->ctx, &value_a);
    w->r[1] = errno;
    w->r[2] = sf_is_done(w->ctx);
}

/* The same for a promise its holder released: the handle is the setter's
 * alone. */
static void act_set_released(struct watch *w)
{
    w->r[0] = sf_promise_set(w->ctx, &value_a);
    w->r[1] = errno;
}

static void act_set_twice(struct watch *w)
{
    w->r[0] = sf_promise_set(w->ctx, &value_a);
    errno = 0;
    w->r[1] = sf_promise_set(w->ctx, &value_b);
    w->r[2] = errno;
}

START_TEST(set_is_realtime)
{
    start_env();
    /* Nobody waits. */
    sf_future *p = sf_promise();
    struct watch w = {.what = "set, no getter", .act = act_set, .ctx = p};
    run_watch(&w, 0);
    ck_assert_int_eq(w.r[0], 0);
    ck_assert_int_eq(w.r[2], 1);
    ck_assert_ptr_eq(sf_get(p), &value_a);
    sf_release(p);

    /* Getters asleep: the set wakes them (one futex wake). At a random
     * moment a getter may be between two naps, its count of sleepers
     * dropped: then no wake is needed, so the count is asserted over the
     * rounds. */
    long wakes = 0;
    for (int round = 0; round < 3; round++) {
        p = sf_promise();
        struct sleepers s;
        sleepers_start(&s, p);
        struct watch ws = {.what = "set, getters asleep", .act = act_set, .ctx = p};
        run_watch(&ws, 1);
        ck_assert_int_eq(ws.r[0], 0);
        sleepers_end(&s, &value_a, 0);
        wakes += ws.wakes;
        sf_release(p);
    }
    if (said_syscalls == false)
        ck_assert_int_ge(wakes, 1);

    /* Released by its holder first: the set frees it (deferred list). */
    p = sf_promise();
    sf_release(p);
    struct watch wr = {.what = "set, released first", .act = act_set_released, .ctx = p};
    run_watch(&wr, 0);
    ck_assert_int_eq(wr.r[0], 0);

    /* Twice: EALREADY. */
    p = sf_promise();
    struct watch w2 = {.what = "set twice", .act = act_set_twice, .ctx = p};
    run_watch(&w2, 0);
    ck_assert_int_eq(w2.r[0], 0);
    ck_assert_int_eq(w2.r[1], -1);
    ck_assert_int_eq(w2.r[2], EALREADY);
    ck_assert_ptr_eq(sf_get(p), &value_a);
    sf_release(p);
    sf_shutdown();
}
END_TEST

/* ------------------------------------------------------------------------
 * sf_cancel of a promise, and sets of cancelled ones.
 */

static void act_cancel(struct watch *w)
{
    w->r[0] = sf_cancel(w->ctx);
    w->r[1] = sf_cancel(w->ctx); /* done now */
    w->r[2] = sf_is_done(w->ctx);
}

START_TEST(cancel_is_realtime)
{
    start_env();
    /* An unset promise with getters asleep: completed at once, woken. */
    sf_future *p = sf_promise();
    struct sleepers s;
    sleepers_start(&s, p);
    struct watch w = {.what = "cancel, getters asleep", .act = act_cancel, .ctx = p};
    run_watch(&w, 1);
    ck_assert_int_eq(w.r[0], 0);
    ck_assert_int_eq(w.r[1], 1);
    ck_assert_int_eq(w.r[2], 1);
    sleepers_end(&s, NULL, ECANCELED);

    /* Its setter comes later: ECANCELED. */
    struct watch ws = {.what = "set, cancelled", .act = act_set, .ctx = p};
    run_watch(&ws, 0);
    ck_assert_int_eq(ws.r[0], -1);
    ck_assert_int_eq(ws.r[1], ECANCELED);
    sf_release(p);

    /* Cancelled, then released: the setter's call frees it. */
    p = sf_promise();
    ck_assert_int_eq(sf_cancel(p), 0);
    sf_release(p);
    struct watch wf = {.what = "set, cancelled and released", .act = act_set_released,
                       .ctx = p};
    run_watch(&wf, 0);
    ck_assert_int_eq(wf.r[0], -1);
    ck_assert_int_eq(wf.r[1], ECANCELED);

    /* Set, then cancelled: 1, already done. */
    p = sf_promise();
    ck_assert_int_eq(sf_promise_set(p, &value_a), 0);
    struct watch wd = {.what = "cancel, set", .act = act_cancel, .ctx = p};
    run_watch(&wd, 0);
    ck_assert_int_eq(wd.r[0], 1);
    ck_assert_ptr_eq(sf_get(p), &value_a);
    sf_release(p);
    sf_shutdown();
}
END_TEST

/* ------------------------------------------------------------------------
 * sf_promise_fail without a message.
 */

static void act_fail(struct watch *w)
{
    w->r[0] = sf_promise_fail(w->ctx, EPIPE, NULL);
    w->r[1] = sf_is_done(w->ctx);
}

START_TEST(fail_without_message_is_realtime)
{
    start_env();
    sf_future *p = sf_promise();
    struct sleepers s;
    sleepers_start(&s, p);
    struct watch w = {.what = "fail, no message", .act = act_fail, .ctx = p};
    run_watch(&w, 1);
    ck_assert_int_eq(w.r[0], 0);
    ck_assert_int_eq(w.r[1], 1);
    sleepers_end(&s, NULL, EPIPE);
    ck_assert_ptr_null(sf_error_message(p));
    sf_release(p);
    sf_shutdown();
}
END_TEST

/* ------------------------------------------------------------------------
 * Completions that make continuations ready (sf_do_after): each pushes its
 * continuation on the ready list and may wake an idle worker.
 */

enum { CONTS = 3 };

static void act_complete(struct watch *w)
{
    sf_future *p = w->ctx;
    switch (w->kind) {
    case 0:
        w->r[0] = sf_promise_set(p, &value_a);
        break;
    case 1:
        w->r[0] = sf_promise_fail(p, EPIPE, NULL);
        break;
    default:
        w->r[0] = sf_cancel(p);
        break;
    }
}

START_TEST(completions_with_continuations_are_realtime)
{
    static const char *const what[] = {"set, 3 continuations waiting",
                                       "fail, 3 continuations waiting",
                                       "cancel, 3 continuations waiting"};
    start_env();
    for (int kind = 0; kind < 3; kind++) {
        sf_future *p = sf_promise();
        sf_future *c[CONTS];
        for (int i = 0; i < CONTS; i++)
            ck_assert_ptr_nonnull(c[i] = sf_do_after(&p, 1, quick_task, &value_b));
        struct watch w = {.what = what[kind], .act = act_complete, .ctx = p, .kind = kind};
        /* An idle worker woken per continuation at most; nobody gets p. */
        run_watch(&w, CONTS);
        ck_assert_int_eq(w.r[0], 0);
        for (int i = 0; i < CONTS; i++) {
            ck_assert_ptr_eq(sf_get(c[i]), &value_b);
            sf_release(c[i]);
        }
        if (kind == 1)
            ck_assert_int_eq(sf_wait(p, NULL), EPIPE); /* seen: not reported */
        sf_release(p);
    }
    sf_shutdown();
}
END_TEST

/* ------------------------------------------------------------------------
 * Done futures, and sf_is_done: from any thread.
 */

struct done_set {
    sf_future *not_done, *task, *set, *failed;
};

static void act_done(struct watch *w)
{
    struct done_set *d = w->ctx;
    long *r = w->r;
    r[0] = sf_is_done(d->not_done);
    r[1] = sf_is_done(d->task);
    r[2] = sf_is_done(d->set);
    r[3] = sf_get(d->task) == &value_b;
    void *v = NULL;
    r[4] = sf_wait(d->set, &v);
    r[5] = v == &value_a;
    errno = 0;
    r[6] = sf_get(d->failed) == NULL ? errno : -1;
    r[7] = sf_wait(d->failed, NULL);
    r[8] = sf_error_message(d->failed) == NULL;
    v = NULL;
    r[9] = sf_wait_for(d->task, &v, 0);
    r[10] = v == &value_b;
    sf_future *fs[3] = {d->not_done, d->set, d->task};
    int which = -1;
    r[11] = sf_wait_any(fs, 3, 0, &which);
    r[12] = which;
    r[13] = sf_wait_all(fs + 1, 2, 0);
    r[14] = sf_wait_for(d->failed, NULL, 0);
}

START_TEST(done_futures_are_realtime)
{
    start_env();
    struct done_set d = {.not_done = sf_promise(), .task = sf_do(quick_task, &value_b),
                         .set = sf_promise(), .failed = sf_promise()};
    ck_assert_ptr_eq(sf_get(d.task), &value_b);
    ck_assert_int_eq(sf_promise_set(d.set, &value_a), 0);
    ck_assert_int_eq(sf_promise_fail(d.failed, EPIPE, NULL), 0);
    struct watch w = {.what = "done futures, plain thread", .act = act_done, .ctx = &d};
    run_watch(&w, 0);
    const long want[] = {0, 1, 1, 1, 0, 1, EPIPE, EPIPE, 1, 0, 1, 0, 1, 0, EPIPE};
    for (int i = 0; i < 15; i++)
        ck_assert_msg(w.r[i] == want[i], "result %d: %ld, not %ld", i, w.r[i], want[i]);
    ck_assert_int_eq(sf_promise_set(d.not_done, NULL), 0);
    sf_release(d.not_done);
    sf_release(d.task);
    sf_release(d.set);
    sf_release(d.failed);
    sf_shutdown();
}
END_TEST

/* ------------------------------------------------------------------------
 * Waits of 0 seconds on futures not done: a thread that called libsf.
 */

struct not_done {
    sf_future *unset, *running, *theirs, *mine, *set;
    sf_future *waiting; /* a continuation of unset, not started */
    atomic_int go; /* prep may go on */
    atomic_int ready;
};

static void prep_mine(struct watch *w)
{
    struct not_done *n = w->ctx;
    /* One of its own, queued, not yet submitted: the wait submits it. */
    n->mine = sf_do(quick_task, &value_a);
    atomic_store(&n->ready, 1);
    tu_wait_flag(&n->go, 30000);
}

static void act_zero_waits(struct watch *w)
{
    struct not_done *n = w->ctx;
    long *r = w->r;
    void *v = NULL;
    r[0] = sf_wait_for(n->unset, &v, 0);
    r[1] = sf_wait_for(n->running, &v, 0);
    r[2] = sf_wait_for(n->theirs, &v, 0);
    sf_future *fs[3] = {n->unset, n->running, n->theirs};
    int which = -1;
    r[3] = sf_wait_any(fs, 3, 0, &which);
    r[4] = sf_wait_all(fs, 3, 0);
    sf_future *some[2] = {n->set, n->unset};
    r[5] = sf_wait_any(some, 2, 0, &which);
    r[6] = which;
    r[7] = sf_wait_all(some, 2, 0);
    /* Its own task: submitted, offered to the pool; done or not by now. */
    r[8] = sf_wait_for(n->mine, &v, 0);
    r[9] = sf_is_done(n->unset);
    r[10] = sf_wait_for(n->waiting, &v, 0);
    sf_future *conts[2] = {n->waiting, n->unset};
    r[11] = sf_wait_any(conts, 2, 0, &which);
    r[12] = sf_wait_all(conts, 2, 0);
}

static void zero_waits(bool cancelling)
{
    start_env();
    struct not_done n = {.unset = sf_promise(), .set = sf_promise()};
    ck_assert_int_eq(sf_promise_set(n.set, &value_a), 0);
    atomic_int go = 0;
    atomic_store(&hold_started, 0);
    sf_batch *b = sf_batch_new();
    n.running = sf_batch_do(b, hold_task, &go);
    ck_assert(tu_wait_flag(&hold_started, 30000));
    n.theirs = sf_do(quick_task, &value_b); /* queued here, not submitted */
    n.waiting = sf_do_after(&n.unset, 1, quick_task, &value_b);
    ck_assert_ptr_nonnull(n.waiting);
    struct watch w = {.what = cancelling ? "0 s waits, a cancellation in effect" : "0 s waits",
                      .prep = prep_mine, .act = act_zero_waits, .ctx = &n, .registered = true};
    start_watch(&w);
    ck_assert(tu_wait_flag(&n.ready, 30000));
    if (cancelling) {
        /* A running task asked to stop, which does not: every thread's
         * starts are checked while it runs (cancel.h), the watched one's
         * too. */
        ck_assert_int_eq(sf_cancel(n.running), 0);
    }
    atomic_store(&n.go, 1);
    end_watch(&w);
    /* A wake for the pool at most per wait that submits or offers. */
    assert_clean(&w, 8);
    const long want[] = {ETIMEDOUT, ETIMEDOUT, ETIMEDOUT, ETIMEDOUT, ETIMEDOUT, 0, 0, ETIMEDOUT};
    for (int i = 0; i < 8; i++)
        ck_assert_msg(w.r[i] == want[i], "result %d: %ld, not %ld", i, w.r[i], want[i]);
    ck_assert_msg(w.r[8] == 0 || w.r[8] == ETIMEDOUT, "own task: %ld", w.r[8]);
    ck_assert_int_eq(w.r[9], 0);
    for (int i = 10; i < 13; i++)
        ck_assert_msg(w.r[i] == ETIMEDOUT, "result %d: %ld, not ETIMEDOUT", i, w.r[i]);
    /* Everything still goes on. */
    atomic_store(&go, 1);
    void *v = NULL;
    ck_assert_int_eq(sf_wait(n.running, &v), 0);
    ck_assert_ptr_eq(v, &value_b);
    ck_assert_ptr_eq(sf_get(n.theirs), &value_b);
    ck_assert_int_eq(sf_promise_set(n.unset, &value_a), 0);
    ck_assert_ptr_eq(sf_get(n.unset), &value_a);
    ck_assert_ptr_eq(sf_get(n.waiting), &value_b);
    sf_release(n.waiting);
    ck_assert_ptr_eq(sf_get(n.mine), &value_a);
    sf_release(n.unset);
    sf_release(n.set);
    sf_release(n.running);
    sf_release(n.theirs);
    sf_release(n.mine);
    sf_batch_close(b);
    sf_shutdown();
}

START_TEST(zero_second_waits_are_realtime) { zero_waits(false); }
END_TEST

START_TEST(zero_second_waits_during_a_cancellation) { zero_waits(true); }
END_TEST

static Suite *realtime_suite(void)
{
    Suite *s = suite_create("realtime");
    TCase *tc = tcase_create("realtime");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, instruments_see_libsf);
    tcase_add_test(tc, set_is_realtime);
    tcase_add_test(tc, cancel_is_realtime);
    tcase_add_test(tc, fail_without_message_is_realtime);
    tcase_add_test(tc, completions_with_continuations_are_realtime);
    tcase_add_test(tc, done_futures_are_realtime);
    tcase_add_test(tc, zero_second_waits_are_realtime);
    tcase_add_test(tc, zero_second_waits_during_a_cancellation);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(realtime_suite)
