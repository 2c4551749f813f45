/*
 * test_stress.c - randomised stress. Random nested trees of futures (each
 * node spawns 0..MAX_KIDS children, gets them in a random order, some twice,
 * releases some without a get, calls some directly, keeps some as tasks in
 * its frame - sf_task - got among the others), run on the calling
 * thread, and on several pthreads of ours at once together with futures that
 * one thread makes and all of them get. Every value is checked against a
 * sequential recomputation of the same shape, which never calls libsf: a
 * node's shape is a hash of (seed, its path), so both sides derive it alone.
 * Every shared task runs exactly once; the tasks that ran lie between those
 * that had to (got) and those that could (released ones may be discarded);
 * the stats add up the way sf.h says; tasks left pending run at shutdown.
 *
 * make check: a fixed number of rounds (fewer under a sanitizer) at
 * SF_THREADS 1, 2 and 4; no timing is asserted. SF_STRESS_SECONDS=N makes a
 * soak of it: rounds until N seconds have passed, at $SF_THREADS if set (else
 * 1, 2 and 4 in turn, N/3 seconds each), printing the totals on stderr.
 * SF_STRESS_SEED=S repeats a run's shapes (the schedule is the machine's);
 * the seed is printed on stderr at the start and in every failure.
 */
#include "testutil.h"

#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_KIDS 5        /* children of a node: 0..MAX_KIDS */
#define MAX_FOREIGN 8     /* pthreads of ours in a foreign round */
#define MAX_SHARED 96     /* futures shared between them */
#define MAX_DECOYS 16     /* futures made by the producer, released by main */
#define N_AT_SHUTDOWN 64  /* futures left pending for sf_shutdown() */
#define QUIET_WAIT_MS 60000L

/* make check's work; a sanitizer pays some 10-50 times per access. Depths
 * are at most 15 (4 bits of a task's argument). */
#if TU_SANITIZED
#define TREE_ROUNDS 120
#define FOREIGN_ROUNDS 40
#define MAX_DEPTH 10       /* of a root: 2..MAX_DEPTH */
#define MAX_SHARED_DEPTH 6 /* of a shared future's tree: 0..MAX_SHARED_DEPTH */
#else
#define TREE_ROUNDS 300
#define FOREIGN_ROUNDS 60
#define MAX_DEPTH 13
#define MAX_SHARED_DEPTH 8
#endif

static const int default_counts[] = {1, 2, 4};
static int thread_counts[3];
static int n_counts;
static unsigned long seed;
static long soak_seconds; /* 0: make check's fixed rounds */

/* Every assertion names the seed. */
#define SASSERT(cond, fmt, ...)                                                \
    ck_assert_msg((cond), "seed %lu: " fmt, seed, __VA_ARGS__)

/* ---- failures seen off the main thread (tasks, pthreads of ours) ---- */

static pthread_mutex_t fail_lock = PTHREAD_MUTEX_INITIALIZER;
static int n_fail;
static char fail_first[512];

static void fail_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail_note(const char *fmt, ...)
{
    pthread_mutex_lock(&fail_lock);
    if (n_fail++ == 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(fail_first, sizeof fail_first, fmt, ap);
        va_end(ap);
    }
    pthread_mutex_unlock(&fail_lock);
}

static void assert_no_failures(const char *where, long round)
{
    char first[sizeof fail_first];
    pthread_mutex_lock(&fail_lock);
    int n = n_fail;
    memcpy(first, fail_first, sizeof first);
    pthread_mutex_unlock(&fail_lock);
    SASSERT(n == 0, "%s round %ld: %d failures, the first: %s", where, round, n, first);
}

/* ---- randomness: a hash for shapes, xorshift64* for everything else ---- */

static uint64_t mix(uint64_t x) /* splitmix64's finaliser */
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static uint64_t salted(uint64_t key, uint64_t salt) { return mix(key ^ mix(salt * 0x51ed27ULL)); }

struct rng {
    uint64_t s;
};

static void rng_seed(struct rng *r, uint64_t s)
{
    r->s = mix(s);
    if (r->s == 0)
        r->s = 1;
}

static uint64_t rng_next(struct rng *r)
{
    uint64_t x = r->s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    r->s = x;
    return x * 0x2545f4914f6cdd1dULL;
}

static unsigned rng_below(struct rng *r, unsigned n) { return (unsigned)((rng_next(r) >> 32) % n); }

static void shuffle(struct rng *r, unsigned *a, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        a[i] = i;
    for (unsigned i = n; i > 1; i--) {
        unsigned j = rng_below(r, i), t = a[i - 1];
        a[i - 1] = a[j];
        a[j] = t;
    }
}

/* ---- the shape of a tree: pure functions of a node's key ---- */

/* A task's argument is its key, its depth (4 bits) and a "verify" bit. */
#define KEY_MASK ((uint64_t)(UINTPTR_MAX >> 8))
#define ARG_VERIFY 0x80u

/* TASK: a task in the node's frame (sf_task_do / sf_task_get), got once
 * or twice, in the same shuffled order as the futures beside it. */
enum fate { GET_ONCE, GET_TWICE, RELEASE, DIRECT, TASK };

static unsigned node_kids(uint64_t key, unsigned depth)
{
    return depth == 0 ? 0 : (unsigned)(salted(key, 1) % (MAX_KIDS + 1));
}

static uint64_t kid_key(uint64_t key, unsigned i) { return salted(key, 100 + i) & KEY_MASK; }

static unsigned kid_depth(uint64_t kid, unsigned depth)
{
    unsigned d = depth - 1;
    if (d > 0 && salted(kid, 2) % 4 == 0)
        d--;
    return d;
}

static enum fate kid_fate(uint64_t kid)
{
    unsigned h = (unsigned)(salted(kid, 3) % 16);
    return h < 5 ? GET_ONCE : h < 8 ? TASK : h < 10 ? GET_TWICE : h < 13 ? RELEASE : DIRECT;
}

static uintptr_t leaf_value(uint64_t key) { return (uintptr_t)(salted(key, 4) & 0xffff) + 1; }

static void *encode(uint64_t key, unsigned depth, int verify)
{
    return (void *)(uintptr_t)((key << 8) | depth | (verify ? ARG_VERIFY : 0));
}

/* ---- the sequential recomputation (no libsf) ---- */

/* Tasks that must run (got, or a root) and that may run besides (released
 * before a get: they, and everything under them, may never start). */
struct expect {
    uint64_t must, maybe;
};

static void expect_add(struct expect *to, const struct expect *e)
{
    to->must += e->must;
    to->maybe += e->maybe;
}

/* The value of node key; with e, also counts its subtree's tasks (into
 * must while `must`, else into maybe). */
static uintptr_t seq_node(uint64_t key, unsigned depth, struct expect *e, int must)
{
    uintptr_t sum = leaf_value(key);
    unsigned n = node_kids(key, depth);
    for (unsigned i = 0; i < n; i++) {
        uint64_t k = kid_key(key, i);
        unsigned d = kid_depth(k, depth);
        switch (kid_fate(k)) {
        case DIRECT:
            sum += seq_node(k, d, e, must);
            break;
        case RELEASE:
            if (e != NULL) {
                e->maybe++;
                (void)seq_node(k, d, e, 0);
            }
            break;
        default:
            if (e != NULL)
                *(must ? &e->must : &e->maybe) += 1;
            sum += seq_node(k, d, e, must);
            break;
        }
    }
    return sum;
}

/* ---- the same with libsf ---- */

static atomic_ullong n_created, n_ran, n_gets, n_released;
static atomic_long n_live;

static void bump(atomic_ullong *c) { atomic_fetch_add_explicit(c, 1, memory_order_relaxed); }

static void *node_task(void *arg);

static uintptr_t node_body(uint64_t key, unsigned depth)
{
    unsigned n = node_kids(key, depth), order[MAX_KIDS];
    sf_future *f[MAX_KIDS];
    sf_task t[MAX_KIDS];
    uint64_t k[MAX_KIDS];
    unsigned d[MAX_KIDS];
    enum fate fa[MAX_KIDS];
    for (unsigned i = 0; i < n; i++) {
        k[i] = kid_key(key, i);
        d[i] = kid_depth(k[i], depth);
        fa[i] = kid_fate(k[i]);
        f[i] = NULL;
        if (fa[i] == DIRECT)
            continue;
        if (fa[i] == TASK) {
            if (sf_task_do(&t[i], node_task, encode(k[i], d[i], 0)) == 0) {
                bump(&n_created);
            } else {
                fail_note("sf_task_do failed: %s", strerror(errno));
                fa[i] = DIRECT;
            }
            continue;
        }
        f[i] = sf_do(node_task, encode(k[i], d[i], fa[i] == RELEASE));
        if (f[i] == NULL) {
            fail_note("sf_do failed: %s", strerror(errno));
            fa[i] = DIRECT;
        } else {
            bump(&n_created);
        }
    }
    struct rng r;
    rng_seed(&r, salted(key, 5));
    shuffle(&r, order, n);
    uintptr_t sum = leaf_value(key);
    for (unsigned j = 0; j < n; j++) {
        unsigned i = order[j];
        uintptr_t v, v2;
        int done;
        switch (fa[i]) {
        case DIRECT:
            sum += node_body(k[i], d[i]);
            break;
        case TASK:
            errno = 0;
            v = (uintptr_t)sf_task_get(&t[i]);
            bump(&n_gets);
            if (v == 0)
                fail_note("node %#llx: sf_task_get failed: %s", (unsigned long long)k[i],
                          strerror(errno));
            if (salted(k[i], 6) % 4 == 0) {
                v2 = (uintptr_t)sf_task_get(&t[i]);
                bump(&n_gets);
                if (v2 != v)
                    fail_note("node %#llx: a second sf_task_get returned %lu, the first %lu",
                              (unsigned long long)k[i], (unsigned long)v2, (unsigned long)v);
            }
            sum += v;
            break;
        case RELEASE:
            done = sf_is_done(f[i]);
            if (done != 0 && done != 1)
                fail_note("sf_is_done of a live future: %d", done);
            sf_release(f[i]);
            bump(&n_released);
            break;
        default:
            v = (uintptr_t)sf_get(f[i]);
            bump(&n_gets);
            if ((done = sf_is_done(f[i])) != 1)
                fail_note("sf_is_done after sf_get: %d", done);
            if (fa[i] == GET_TWICE) {
                v2 = (uintptr_t)sf_get(f[i]);
                bump(&n_gets);
                if (v2 != v)
                    fail_note("node %#llx: a second sf_get returned %lu, the first %lu",
                              (unsigned long long)k[i], (unsigned long)v2, (unsigned long)v);
            }
            sum += v;
            sf_release(f[i]);
            break;
        }
    }
    return sum;
}

static void *node_task(void *arg)
{
    atomic_fetch_add_explicit(&n_live, 1, memory_order_relaxed);
    bump(&n_ran);
    uint64_t key = (uint64_t)((uintptr_t)arg >> 8);
    unsigned depth = (unsigned)((uintptr_t)arg & 0x0f);
    uintptr_t v = node_body(key, depth);
    /* A released task's value goes nowhere: it checks itself. */
    if (((uintptr_t)arg & ARG_VERIFY) != 0) {
        uintptr_t want = seq_node(key, depth, NULL, 0);
        if (v != want)
            fail_note("released task %#llx (depth %u) computed %lu, want %lu",
                      (unsigned long long)key, depth, (unsigned long)v, (unsigned long)want);
    }
    atomic_fetch_sub_explicit(&n_live, 1, memory_order_relaxed);
    return (void *)v;
}

static unsigned pick_depth(struct rng *r) { return 2 + rng_below(r, MAX_DEPTH - 1); }

/* nroots random trees: all made first, got in a random order. */
static void run_roots(struct rng *r, unsigned nroots, struct expect *e)
{
    enum { MAX_ROOTS = 4 };
    sf_future *f[MAX_ROOTS];
    uint64_t key[MAX_ROOTS];
    unsigned depth[MAX_ROOTS], order[MAX_ROOTS];
    if (nroots > MAX_ROOTS)
        nroots = MAX_ROOTS;
    for (unsigned i = 0; i < nroots; i++) {
        key[i] = rng_next(r) & KEY_MASK;
        depth[i] = pick_depth(r);
        f[i] = sf_do(node_task, encode(key[i], depth[i], 0));
        if (f[i] == NULL)
            fail_note("sf_do of a root failed: %s", strerror(errno));
        else
            bump(&n_created);
    }
    shuffle(r, order, nroots);
    for (unsigned j = 0; j < nroots; j++) {
        unsigned i = order[j];
        uintptr_t want = seq_node(key[i], depth[i], e, 1);
        e->must++;
        if (f[i] == NULL)
            continue;
        uintptr_t v = (uintptr_t)sf_get(f[i]);
        bump(&n_gets);
        if (v != want)
            fail_note("root %#llx (depth %u): sf_get returned %lu, want %lu",
                      (unsigned long long)key[i], depth[i], (unsigned long)v,
                      (unsigned long)want);
        sf_release(f[i]);
    }
}

/* ---- shared futures: one thread makes them, every thread gets them ---- */

struct slot {
    uint64_t key;
    unsigned depth;
    uintptr_t want;
    atomic_int runs;
    _Atomic(sf_future *) f;
    atomic_int ready;
    int has_decoy;    /* the producer makes a decoy with f: */
    sf_future *decoy; /* never got, released by main */
};
static struct slot slots[MAX_SHARED];
static unsigned n_shared;

static void *shared_task(void *arg)
{
    atomic_fetch_add_explicit(&n_live, 1, memory_order_relaxed);
    bump(&n_ran);
    struct slot *s = &slots[(uintptr_t)arg];
    atomic_fetch_add_explicit(&s->runs, 1, memory_order_relaxed);
    uintptr_t v = node_body(s->key, s->depth);
    atomic_fetch_sub_explicit(&n_live, 1, memory_order_relaxed);
    return (void *)v;
}

static void check_shared_value(unsigned i, uintptr_t v, const char *who)
{
    if (v != slots[i].want)
        fail_note("shared future %u (%s): sf_get returned %lu, want %lu", i, who,
                  (unsigned long)v, (unsigned long)slots[i].want);
}

/* Makes the shared futures (and some decoys) and hands them over through
 * slots[]; gets some at once, racing the others for them. */
static void produce(struct rng *r, int get_some)
{
    for (unsigned i = 0; i < n_shared; i++) {
        struct slot *s = &slots[i];
        if (s->has_decoy) {
            s->decoy = sf_do(node_task, encode(s->key ^ 1, s->depth, 1));
            if (s->decoy == NULL)
                fail_note("sf_do of decoy %u failed: %s", i, strerror(errno));
            else
                bump(&n_created);
        }
        /* f is the newest queued: a get of it here takes the fast path */
        sf_future *f = sf_do(shared_task, (void *)(uintptr_t)i);
        if (f == NULL)
            fail_note("sf_do of shared %u failed: %s", i, strerror(errno));
        else
            bump(&n_created);
        atomic_store_explicit(&s->f, f, memory_order_release);
        atomic_store_explicit(&s->ready, 1, memory_order_release);
        if (get_some && f != NULL && rng_below(r, 4) == 0) {
            check_shared_value(i, (uintptr_t)sf_get(f), "its maker");
            bump(&n_gets);
        }
    }
}

/* Gets every shared future, in a random order, some twice; those not handed
 * over yet are skipped and come back. */
static void consume(struct rng *r)
{
    unsigned order[MAX_SHARED], left = n_shared;
    char got[MAX_SHARED];
    memset(got, 0, sizeof got);
    shuffle(r, order, n_shared);
    while (left > 0) {
        for (unsigned j = 0; j < n_shared; j++) {
            unsigned i = order[j];
            if (got[i] || !atomic_load_explicit(&slots[i].ready, memory_order_acquire))
                continue;
            got[i] = 1;
            left--;
            sf_future *f = atomic_load_explicit(&slots[i].f, memory_order_acquire);
            if (f == NULL)
                continue;
            unsigned times = rng_below(r, 4) == 0 ? 2 : 1;
            for (unsigned t = 0; t < times; t++) {
                check_shared_value(i, (uintptr_t)sf_get(f), "a getter");
                bump(&n_gets);
            }
        }
        if (left > 0)
            sched_yield();
    }
}

struct part {
    pthread_t tid;
    long round;
    int idx;
    int role; /* 0 getter, 1 producer and getter, 2 producer that exits at once */
    struct expect e;
};

static void *participant(void *arg)
{
    struct part *p = arg;
    struct rng r;
    rng_seed(&r, salted(seed, ((uint64_t)p->round << 8) | (uint64_t)p->idx));
    if (p->role != 0)
        produce(&r, p->role == 1);
    if (p->role == 2)
        return NULL; /* its futures become public at its exit */
    run_roots(&r, 1 + rng_below(&r, 3), &p->e);
    consume(&r);
    return NULL;
}

/* Several pthreads of ours at once: each runs its own trees, and all get the
 * shared futures one of them (or a short-lived one) makes meanwhile. */
static void foreign_round(long round, struct expect *e)
{
    struct rng r;
    rng_seed(&r, salted(seed, 0xf0000000ULL + (uint64_t)round));
    unsigned nthreads = 4 + rng_below(&r, MAX_FOREIGN - 3); /* 4..8 getters */
    n_shared = 16 + rng_below(&r, MAX_SHARED - 15);
    for (unsigned i = 0; i < n_shared; i++) {
        struct slot *s = &slots[i];
        s->key = rng_next(&r) & KEY_MASK;
        s->depth = rng_below(&r, MAX_SHARED_DEPTH + 1);
        struct expect se = {1, 0}; /* the shared task itself */
        s->want = seq_node(s->key, s->depth, &se, 1);
        expect_add(e, &se);
        atomic_store_explicit(&s->runs, 0, memory_order_relaxed);
        atomic_store_explicit(&s->f, NULL, memory_order_relaxed);
        atomic_store_explicit(&s->ready, 0, memory_order_relaxed);
        s->decoy = NULL;
        s->has_decoy = i < MAX_DECOYS && rng_below(&r, 3) == 0;
        if (s->has_decoy) {
            struct expect de = {0, 1};
            (void)seq_node(s->key ^ 1, s->depth, &de, 0);
            expect_add(e, &de);
        }
    }
    int ephemeral = round % 3 == 2;
    unsigned producer = rng_below(&r, nthreads);
    struct part parts[MAX_FOREIGN + 1];
    unsigned nparts = nthreads + (ephemeral ? 1 : 0);
    for (unsigned t = 0; t < nparts; t++) {
        parts[t].round = round;
        parts[t].idx = (int)t;
        parts[t].role = t == nthreads ? 2 : (!ephemeral && t == producer) ? 1 : 0;
        parts[t].e.must = parts[t].e.maybe = 0;
        SASSERT(pthread_create(&parts[t].tid, NULL, participant, &parts[t]) == 0,
                "round %ld: pthread_create %u", round, t);
    }
    for (unsigned t = 0; t < nparts; t++) {
        SASSERT(pthread_join(parts[t].tid, NULL) == 0, "round %ld: pthread_join %u", round, t);
        expect_add(e, &parts[t].e);
    }
    /* Every shared task ran exactly once, and is done with its value; main
     * (which made none of them) releases them and the decoys. */
    for (unsigned i = 0; i < n_shared; i++) {
        struct slot *s = &slots[i];
        sf_future *f = atomic_load_explicit(&s->f, memory_order_relaxed);
        if (s->decoy != NULL) {
            sf_release(s->decoy);
            bump(&n_released);
        }
        if (f == NULL)
            continue;
        int runs = atomic_load_explicit(&s->runs, memory_order_relaxed);
        SASSERT(runs == 1, "round %ld: shared task %u ran %d times", round, i, runs);
        SASSERT(sf_is_done(f) == 1, "round %ld: shared task %u is not done after its gets",
                round, i);
        uintptr_t v = (uintptr_t)sf_get(f);
        bump(&n_gets);
        SASSERT(v == s->want, "round %ld: shared %u: a late sf_get returned %lu, want %lu", round,
                i, (unsigned long)v, (unsigned long)s->want);
        sf_release(f);
    }
}

static void tree_round(long round, struct expect *e)
{
    struct rng r;
    rng_seed(&r, salted(seed, 0x70000000ULL + (uint64_t)round));
    run_roots(&r, 1 + rng_below(&r, 4), e);
}

/* ---- the runtime: start, checks at the end of a round, stop ---- */

static void start(int threads)
{
    tu_env_threads(threads);
    SASSERT(sf_init(NULL) == 0, "sf_init at SF_THREADS=%d: %s", threads, strerror(errno));
}

/* At the end of a round every future was got or released; released tasks may
 * still be running somewhere, so this waits until none of ours runs and the
 * counters have settled, then checks what sf.h promises of them. */
static void check_round(int threads, const struct expect *e, const char *where, long round)
{
    sf_stats s;
    uint64_t created, ran, released, runs;
    long live;
    double give_up = tu_now_ms() + (double)QUIET_WAIT_MS;
    for (unsigned i = 0;; i++) {
        memset(&s, 0, sizeof s);
        SASSERT(sf_stats_read(&s) == 0, "%s round %ld: sf_stats_read: %s", where, round,
                strerror(errno));
        created = atomic_load_explicit(&n_created, memory_order_relaxed);
        ran = atomic_load_explicit(&n_ran, memory_order_relaxed);
        live = atomic_load_explicit(&n_live, memory_order_relaxed);
        runs = s.run_inline + s.run_pool + s.run_stolen;
        if ((live == 0 && s.created == created && runs == ran &&
             s.created == runs + s.discarded) ||
            tu_now_ms() > give_up)
            break;
        if (i < 100)
            sched_yield();
        else
            tu_sleep_ms(1);
    }
    released = atomic_load_explicit(&n_released, memory_order_relaxed);
    assert_no_failures(where, round);
    SASSERT(live == 0, "%s round %ld: %ld tasks still running after %ld ms", where, round, live,
            QUIET_WAIT_MS);
    SASSERT(ran >= e->must, "%s round %ld: %llu tasks ran, but %llu were got", where, round,
            (unsigned long long)ran, (unsigned long long)e->must);
    SASSERT(ran <= e->must + e->maybe,
            "%s round %ld: %llu tasks ran, more than the %llu got and %llu released", where,
            round, (unsigned long long)ran, (unsigned long long)e->must,
            (unsigned long long)e->maybe);
    SASSERT(s.threads == threads, "%s: stats.threads %d, SF_THREADS %d", where, s.threads,
            threads);
    SASSERT(s.workers >= 0 && s.workers <= threads - 1, "%s: stats.workers %d at SF_THREADS %d",
            where, s.workers, threads);
    SASSERT(s.peak_busy >= 0 && s.peak_busy <= s.workers, "%s: stats.peak_busy %d, workers %d",
            where, s.peak_busy, s.workers);
    SASSERT(s.created == created, "%s round %ld: stats.created %llu, sf_do made %llu", where,
            round, (unsigned long long)s.created, (unsigned long long)created);
    SASSERT(s.created == runs + s.discarded,
            "%s round %ld: quiet, yet created %llu != run_inline %llu + run_pool %llu + "
            "run_stolen %llu + discarded %llu",
            where, round, (unsigned long long)s.created, (unsigned long long)s.run_inline,
            (unsigned long long)s.run_pool, (unsigned long long)s.run_stolen,
            (unsigned long long)s.discarded);
    SASSERT(runs == ran, "%s round %ld: stats count %llu tasks run, the tasks counted %llu",
            where, round, (unsigned long long)runs, (unsigned long long)ran);
    SASSERT(s.discarded <= released,
            "%s round %ld: %llu discarded, but only %llu were released before a get", where,
            round, (unsigned long long)s.discarded, (unsigned long long)released);
    if (s.workers == 0)
        SASSERT(s.run_pool == 0 && s.peak_busy == 0,
                "%s: no pool worker, yet run_pool %llu, peak_busy %d", where,
                (unsigned long long)s.run_pool, s.peak_busy);
}

static atomic_int at_shutdown_runs[N_AT_SHUTDOWN];

static void *count_at_shutdown(void *arg)
{
    atomic_fetch_add_explicit(&at_shutdown_runs[(uintptr_t)arg], 1, memory_order_relaxed);
    return arg;
}

/* Leaves futures pending; sf_shutdown() runs each exactly once. */
static void stop(const char *where)
{
    for (uintptr_t i = 0; i < N_AT_SHUTDOWN; i++)
        SASSERT(sf_do(count_at_shutdown, (void *)i) != NULL, "%s: sf_do before shutdown: %s",
                where, strerror(errno));
    sf_shutdown();
    for (int i = 0; i < N_AT_SHUTDOWN; i++) {
        int n = atomic_load_explicit(&at_shutdown_runs[i], memory_order_relaxed);
        SASSERT(n == 1, "%s: a task pending at sf_shutdown ran %d times", where, n);
    }
    sf_stats s;
    errno = 0;
    SASSERT(sf_stats_read(&s) == -1 && errno == ESRCH,
            "%s: sf_stats_read after sf_shutdown: errno %d", where, errno);
}

/* ---- the tests ---- */

static void report(const char *what, int threads, long rounds, double t0)
{
    fprintf(stderr, "test_stress: %s at SF_THREADS=%d, seed %lu: %ld rounds, %llu tasks, "
                    "%llu gets in %.1f s\n",
            what, threads, seed, rounds,
            (unsigned long long)atomic_load_explicit(&n_ran, memory_order_relaxed),
            (unsigned long long)atomic_load_explicit(&n_gets, memory_order_relaxed),
            (tu_now_ms() - t0) / 1000.0);
}

START_TEST(random_trees)
{
    int threads = thread_counts[_i];
    struct expect e = {0, 0};
    double t0 = tu_now_ms();
    start(threads);
    for (long round = 0; round < TREE_ROUNDS; round++) {
        tree_round(round, &e);
        check_round(threads, &e, "trees", round);
    }
    report("trees", threads, TREE_ROUNDS, t0);
    stop("trees");
}
END_TEST

START_TEST(foreign_threads_and_shared_futures)
{
    int threads = thread_counts[_i];
    struct expect e = {0, 0};
    double t0 = tu_now_ms();
    start(threads);
    for (long round = 0; round < FOREIGN_ROUNDS; round++) {
        foreign_round(round, &e);
        check_round(threads, &e, "foreign", round);
    }
    report("foreign", threads, FOREIGN_ROUNDS, t0);
    stop("foreign");
}
END_TEST

START_TEST(soak)
{
    int threads = thread_counts[_i];
    struct expect e = {0, 0};
    double t0 = tu_now_ms(), end = t0 + 1000.0 * (double)soak_seconds / n_counts;
    long round = 0;
    start(threads);
    do {
        if (round % 2 == 0)
            tree_round(round, &e);
        else
            foreign_round(round, &e);
        check_round(threads, &e, round % 2 == 0 ? "soak trees" : "soak foreign", round);
        round++;
    } while (tu_now_ms() < end);
    report("soak", threads, round, t0);
    stop("soak");
}
END_TEST

/* Reads SF_STRESS_SEED, SF_STRESS_SECONDS and (soak only) SF_THREADS; runs in
 * the parent, once, before the tests are forked. */
static void read_environment(void)
{
    const char *v = getenv("SF_STRESS_SEED");
    char *endp;
    if (v != NULL && *v != '\0') {
        errno = 0;
        seed = strtoul(v, &endp, 0);
        if (errno != 0 || *endp != '\0') {
            fprintf(stderr, "test_stress: SF_STRESS_SEED=%s is not a number\n", v);
            exit(2);
        }
    } else {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        seed = (unsigned long)mix((uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec);
    }
    v = getenv("SF_STRESS_SECONDS");
    if (v != NULL && *v != '\0') {
        errno = 0;
        soak_seconds = strtol(v, &endp, 10);
        if (errno != 0 || *endp != '\0' || soak_seconds < 1) {
            fprintf(stderr, "test_stress: SF_STRESS_SECONDS=%s is not a positive number\n", v);
            exit(2);
        }
    }
    n_counts = 0;
    v = getenv("SF_THREADS");
    if (soak_seconds > 0 && v != NULL && *v != '\0') {
        long n = strtol(v, &endp, 10);
        if (*endp != '\0' || n < 1 || n > SF_MAX_THREADS) {
            fprintf(stderr, "test_stress: SF_THREADS=%s is not 1..%d\n", v, SF_MAX_THREADS);
            exit(2);
        }
        thread_counts[n_counts++] = (int)n;
    } else {
        for (size_t i = 0; i < sizeof default_counts / sizeof default_counts[0]; i++)
            thread_counts[n_counts++] = default_counts[i];
    }
    fprintf(stderr, "test_stress: seed %lu (SF_STRESS_SEED=%lu repeats it)", seed, seed);
    if (soak_seconds > 0)
        fprintf(stderr, ", soak of %ld s", soak_seconds);
    fprintf(stderr, "\n");
}

static Suite *stress_suite(void)
{
    read_environment();
    Suite *s = suite_create("stress");
    TCase *tc = tcase_create("stress");
    if (soak_seconds > 0) {
        tcase_set_timeout(tc, (double)soak_seconds / n_counts + 300);
        tcase_add_loop_test(tc, soak, 0, n_counts);
    } else {
        tcase_set_timeout(tc, 120);
        tcase_add_loop_test(tc, random_trees, 0, n_counts);
        tcase_add_loop_test(tc, foreign_threads_and_shared_futures, 0, n_counts);
    }
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(stress_suite)
