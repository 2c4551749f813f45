/*
 * hang.c - a stuck program says why, and a program that exits
 * without sf_shutdown() still reports (hang.h).
 *
 * Stalls (SF_HANG_REPORT=S). A stall is a time in which no task started or
 * ended anywhere: the sum over every thread of the counters the statistics
 * keep (tasks run inline, by the pool, stolen, drained; discarded,
 * cancelled; parked fibers resumed) did not move. No counter is added for
 * it, so completions cost nothing more: only a wait that has just napped
 * sums them, at most every LOOK_NS, and only while reports are on. Each
 * such thread keeps its own view (hang_since, hang_sum): the time the sum
 * last moved, or its wait began (a look after a gap longer than GAP_NS
 * starts afresh: the thread was away, computing). Once that is S ago, the
 * thread that first sees it prints the report - one per stall: the stall
 * is named by its sum, and `reported` elects one reporter per sum. A
 * promise set by a thread outside libsf ends a stall only through what
 * its getter does next (a task starts or ends), so a task that gets a
 * slow promise after another, starting nothing, may be reported once.
 *
 * The report: every wait published where the deadlock detector reads it
 * (a fiber's wait record, park.c: every get that has slept or parked),
 * and each sf_wait_any, batch wait and shutdown that napped lately
 * (hang_at within RECENT_NS), each as a chain of links read one at a
 * time: a future, RUNNING on a fiber (run.h, runner), whose task's
 * function is named as the trace names it; that fiber's own wait; and so
 * on, until an unset promise (and the task that made it: hang.h), a task
 * that is in no libsf wait (computing, or blocked outside libsf: a lock,
 * a read), a fiber seen before (a cycle), or a link that moved on (done,
 * not started). A chain whose first fiber lies inside another chain is
 * that chain's tail and is not printed; of a cycle's members, one is.
 * Threads move while this reads, so a line may be stale by a link; every
 * pointer it follows stays valid (futures and fibers are type-stable,
 * park.h and future.c), and a batch's pointer is printed, never read.
 *
 * Exit (a destructor: after the program's atexit handlers, so a handler
 * that shuts down comes first). A runtime still up has its unhandled
 * failures reported (the debug build: its futures never released, too)
 * only when that is safe: no other thread is inside a libsf call (the
 * registry closes without waiting, sf__registry_try_close) and no pool
 * worker runs a task, after the pool's deadline is set so that none
 * starts one (a claimer sheds it: pool.h) - looked for during up to 10 ms,
 * since the worker whose completion let the exiting thread go on counts
 * itself busy a few instructions longer. Then nothing else reads or
 * frees a future's message; each is copied, and reported - through the
 * hook, which may call libsf - once the registry is open again, inside a
 * call as the shutdown's reports are. The trace is closed whatever runs:
 * this thread's lines (every thread's but the workers', when the registry
 * closed) and the closing "]" are written, later writes go to /dev/null
 * (sf__trace_at_exit). An exit from inside a libsf call (a task, a hook)
 * does nothing: the call's own state is in the middle of a change.
 */
#include "sched/hang.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sched/failure.h"
#include "sched/park.h"
#include "sched/pool.h"
#include "sched/trace.h"

#define LOOK_NS 10000000ull    /* sums the counters at most this often ... */
#define GAP_NS 500000000ull    /* ... and a wait that did not look for this long began anew */
#define RECENT_NS 250000000ull /* a wait that napped this recently is waiting */
#define LINKS 64               /* a chain is cut after this many links */
#define QUIET_TRIES 100        /* at exit, looks for a quiet pool this often ... */
#define QUIET_NAP_NS 100000L   /* ... this far apart (10 ms in all) */

uint64_t sf__hang_ns;

/* The stall last reported: its sum plus 1, 0 for none. Relaxed: the CAS
 * only elects one reporter per sum; nothing is published through it. */
static _Atomic uint64_t reported;

void sf__hang_start(double seconds)
{
    sf__hang_ns = seconds > 0 ? (uint64_t)(seconds * 1e9) : 0;
    if (seconds > 0 && sf__hang_ns == 0)
        sf__hang_ns = 1;
    atomic_store_explicit(&reported, 0, memory_order_relaxed);
}

/* Tasks started or ended so far, over every thread. Relaxed: counters each
 * written by its owner; a sum read while they move is only compared with
 * the next one. */
static uint64_t tasks_moved(void)
{
    uint64_t sum = 0;
    for (int i = 0, n = sf__registry_count(); i < n; i++) {
        struct sf__sched *s = sf__sched(sf__registry_get(i));
        sum += atomic_load_explicit(&s->c_inline, memory_order_relaxed) +
               atomic_load_explicit(&s->c_pool, memory_order_relaxed) +
               atomic_load_explicit(&s->c_stolen, memory_order_relaxed) +
               atomic_load_explicit(&s->c_drained, memory_order_relaxed) +
               atomic_load_explicit(&s->c_discarded, memory_order_relaxed) +
               atomic_load_explicit(&s->c_cancelled, memory_order_relaxed) +
               atomic_load_explicit(&s->c_resumes, memory_order_relaxed);
    }
    return sum;
}

/* ---- the report ------------------------------------------------------ */

/* sf_promise, as a promise's u.fn holds it (promise.h, SF__PROMISE_FN;
 * compared only). */
#define PROMISE_FN ((void *(*)(void *))(void (*)(void))sf_promise)

static const char *name_of(const void *fn, char *buf, size_t size)
{
    return sf__trace_fn_name(fn, buf, size);
}

/* A chain's start: a fiber's published wait (fb), or a wait that only
 * napped (fb NULL: sf_wait_any, a batch wait, the shutdown). */
struct root {
    int thread;
    struct sf__fiber *fb;
    enum sf__hang_kind kind;
    const void *what;
    int n;
    struct sf__fiber *runners[LINKS]; /* the fibers its chain runs through */
    int nr;
    bool cycle;
};

/* Is t waiting in an sf_wait_any or a batch wait now (it napped lately)? */
static bool napping(struct sf__thread *t, uint64_t now, enum sf__hang_kind *kind,
                    const void **what, int *n)
{
    struct sf__sched *s = sf__sched(t);
    /* Relaxed, all: a report's snapshot; a stale one names a wait that
     * just ended, which the walk then finds done. */
    uint64_t at = atomic_load_explicit(&s->hang_at, memory_order_relaxed);
    if (at == 0 || now - at > RECENT_NS)
        return false;
    *kind = (enum sf__hang_kind)atomic_load_explicit(&s->hang_kind, memory_order_relaxed);
    *what = atomic_load_explicit(&s->hang_what, memory_order_relaxed);
    *n = atomic_load_explicit(&s->hang_n, memory_order_relaxed);
    return *kind != SF__HANG_NONE;
}

/* Follows the chain from h, the future the start waits for; writes it to
 * out (when not NULL) and records its fibers in r. */
static void walk(struct root *r, sf_future *h, FILE *out, uint64_t now)
{
    char b1[32];
    r->nr = 0;
    r->cycle = false;
    for (int k = 0;; k++) {
        if (k == LINKS) {
            if (out)
                fprintf(out, " -> ... (cut at %d links)", LINKS);
            return;
        }
        /* Acquire: a runner's store of runner, and a maker's of u.fn,
         * precede the states that show them. */
        uint64_t s = atomic_load_explicit(&h->state, memory_order_acquire);
        uint64_t st = sf__status(s);
        /* Read only while it is a task's (PENDING or RUNNING): a FREE
         * future's word is its free list's link. */
        const void *fn = st == SF__PENDING || st == SF__RUNNING || st == SF__WAITING
                             ? (const void *)__atomic_load_n(&h->u.fn, __ATOMIC_RELAXED)
                             : NULL;
        if (st == SF__DONE || st == SF__FREE || (s & SF__ORPHAN)) {
            if (out)
                fprintf(out, "future %p (done meanwhile)", (void *)h);
            return;
        }
        if (st == SF__PENDING) {
            if (out)
                fprintf(out, "future %p: task %s, not started yet", (void *)h,
                        name_of(fn, b1, sizeof b1));
            return;
        }
        if (st == SF__WAITING) {
            if (out)
                fprintf(out, "future %p: continuation %s, %s", (void *)h,
                        name_of(fn, b1, sizeof b1),
                        (s & SF__CANCEL) ? "ready, not started yet" : "waiting for its deps");
            return;
        }
        if (st != SF__RUNNING) {
            if (out)
                fprintf(out, "future %p", (void *)h);
            return;
        }
        if (fn == (const void *)PROMISE_FN) {
            /* hang.h: the maker's function, in up_tag. Relaxed: as there. */
            uint64_t maker = __atomic_load_n(&h->up_tag, __ATOMIC_RELAXED);
            if (out) {
                fprintf(out, "promise %p: unset", (void *)h);
                if (maker != 0)
                    fprintf(out, ", made by task %s",
                            name_of((const void *)(uintptr_t)maker, b1, sizeof b1));
                else
                    fprintf(out, ", made outside any task");
            }
            return;
        }
        /* Relaxed: accepted only if it is a fiber (get.c, Deadlock). */
        void *v = __atomic_load_n(&h->runner, __ATOMIC_RELAXED);
        if (!sf__park_is_fiber(v)) {
            if (out)
                fprintf(out, "future %p: task %s, starting", (void *)h,
                        name_of(fn, b1, sizeof b1));
            return;
        }
        struct sf__fiber *fb = v;
        if (out)
            fprintf(out, "future %p: task %s (thread %d)", (void *)h,
                    name_of(fn, b1, sizeof b1), fb->thread->id);
        bool seen = fb == r->fb;
        for (int i = 0; i < r->nr; i++)
            seen |= r->runners[i] == fb;
        if (seen) {
            r->cycle = true;
            if (out)
                fprintf(out, ", whose fiber is in this chain already: a cycle");
            return;
        }
        r->runners[r->nr++] = fb;
        sf_future *w;
        uint64_t stamp;
        if (!sf__wait_read(fb, &w, &stamp)) {
            if (out)
                fprintf(out, ", its wait changing");
            return;
        }
        if (w == NULL) {
            enum sf__hang_kind kind;
            const void *what;
            int n;
            if (napping(fb->thread, now, &kind, &what, &n) && kind == SF__HANG_ANY) {
                if (out)
                    fprintf(out, " -> sf_wait_any of %d, the first: ", n);
                h = (sf_future *)what;
                continue;
            }
            if (napping(fb->thread, now, &kind, &what, &n) && kind == SF__HANG_BATCH) {
                if (out)
                    fprintf(out, " -> sf_batch_wait of batch %p", what);
                return;
            }
            if (out)
                fprintf(out, ", in no libsf wait: computing, or blocked outside libsf "
                             "(a lock, a read)");
            return;
        }
        if (out)
            fprintf(out, " -> ");
        h = w;
    }
}

static void report_stall(uint64_t stalled_ns)
{
    uint64_t now = sf__now_ns();
    int nt = sf__registry_count();
    size_t cap = (size_t)nt * (SF__FIBERS + 2), nr = 0;
    struct root *roots = calloc(cap, sizeof *roots);
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    if (roots == NULL || out == NULL) {
        fprintf(stderr, "libsf: no task has started or ended for %.1f s (SF_HANG_REPORT); no "
                        "memory to say more\n", (double)stalled_ns / 1e9);
        free(roots);
        if (out != NULL)
            fclose(out);
        free(text);
        return;
    }
    for (int i = 0; i < nt; i++) {
        struct sf__thread *t = sf__registry_get(i);
        /* Relaxed: is the thread's struct in use (a snapshot). */
        if (!atomic_load_explicit(&t->alive, memory_order_relaxed))
            continue;
        struct sf__sched *s = sf__sched(t);
        /* Acquire: pairs with the release that published the array. */
        struct sf__fiber *fs = atomic_load_explicit(&s->fibers, memory_order_acquire);
        for (int k = 0; k <= SF__FIBERS; k++) {
            struct sf__fiber *fb = k == 0 ? &s->base : fs != NULL ? &fs[k - 1] : NULL;
            sf_future *w;
            uint64_t stamp;
            if (fb == NULL || !sf__wait_read(fb, &w, &stamp) || w == NULL)
                continue;
            roots[nr++] = (struct root){.thread = t->id, .fb = fb, .kind = SF__HANG_GET,
                                        .what = w};
        }
        enum sf__hang_kind kind;
        const void *what;
        int n;
        if (napping(t, now, &kind, &what, &n) && kind != SF__HANG_GET)
            roots[nr++] = (struct root){.thread = t->id, .kind = kind, .what = what, .n = n};
    }
    for (size_t i = 0; i < nr; i++)
        if (roots[i].kind == SF__HANG_GET || roots[i].kind == SF__HANG_ANY)
            walk(&roots[i], (sf_future *)roots[i].what, NULL, now);
    fprintf(out, "libsf: no task has started or ended for %.1f s (SF_HANG_REPORT); what each "
                 "waiting thread waits for:\n", (double)stalled_ns / 1e9);
    for (size_t i = 0; i < nr; i++) {
        struct root *r = &roots[i];
        /* A tail of another chain (that one starts upstream) is not
         * printed; of a cycle's members only the first. */
        bool tail = false;
        for (size_t j = 0; j < nr && !tail && r->fb != NULL; j++) {
            if (j == i)
                continue;
            bool in_j = false, j_in_r = false;
            for (int k = 0; k < roots[j].nr; k++)
                in_j |= roots[j].runners[k] == r->fb;
            for (int k = 0; k < r->nr; k++)
                j_in_r |= roots[j].fb != NULL && r->runners[k] == roots[j].fb;
            tail = in_j && (!j_in_r || j < i);
        }
        if (tail)
            continue;
        fprintf(out, "libsf:   thread %d: ", r->thread);
        switch (r->kind) {
        case SF__HANG_GET:
            fprintf(out, "waits for ");
            walk(r, (sf_future *)r->what, out, now);
            break;
        case SF__HANG_ANY:
            fprintf(out, "sf_wait_any of %d, the first: ", r->n);
            walk(r, (sf_future *)r->what, out, now);
            break;
        case SF__HANG_BATCH: fprintf(out, "sf_batch_wait of batch %p", r->what); break;
        default: fprintf(out, "sf_shutdown() waits for the tasks still running"); break;
        }
        fputc('\n', out);
    }
    fclose(out);
    /* One write: the report's lines stay together. */
    if (text != NULL)
        fwrite(text, 1, len, stderr);
    free(text);
    free(roots);
}

void sf__hang_look(struct sf__thread *me, enum sf__hang_kind kind, const void *what, int n)
{
    struct sf__sched *s = sf__sched(me);
    uint64_t now = sf__now_ns();
    /* Relaxed, all four: read by reporters as a snapshot (napping). */
    atomic_store_explicit(&s->hang_kind, (int)kind, memory_order_relaxed);
    atomic_store_explicit(&s->hang_what, what, memory_order_relaxed);
    atomic_store_explicit(&s->hang_n, n, memory_order_relaxed);
    uint64_t last = atomic_load_explicit(&s->hang_at, memory_order_relaxed);
    atomic_store_explicit(&s->hang_at, now, memory_order_relaxed);
    if (now - last > GAP_NS) {
        s->hang_since = now; /* a wait that began anew */
        s->hang_sum = tasks_moved();
        s->hang_next = now + LOOK_NS;
        return;
    }
    if (now < s->hang_next)
        return;
    s->hang_next = now + LOOK_NS;
    uint64_t sum = tasks_moved();
    if (sum != s->hang_sum) {
        s->hang_sum = sum;
        s->hang_since = now;
        return;
    }
    if (now - s->hang_since < sf__hang_ns)
        return;
    uint64_t r = atomic_load_explicit(&reported, memory_order_relaxed);
    if (r == sum + 1 ||
        !atomic_compare_exchange_strong_explicit(&reported, &r, sum + 1, memory_order_relaxed,
                                                 memory_order_relaxed))
        return;
    report_stall(now - s->hang_since);
}

/* ---- exit without sf_shutdown --------------------------------------- */

#ifdef SF_DEBUG
/* The debug build: futures still held (not FREE, not released while
 * running), grouped by their task's function. */
struct held {
    const void *fn;
    unsigned long n;
};

static void report_unreleased(void)
{
    struct held h[16];
    int nh = 0;
    unsigned long total = 0, others = 0;
    struct sf__futures_cursor walk_c = {0};
    uint64_t s;
    for (sf_future *f; (f = sf__futures_next(&walk_c, &s)) != NULL;) {
        if (s & SF__ORPHAN)
            continue;
        total++;
        const void *fn = (const void *)__atomic_load_n(&f->u.fn, __ATOMIC_RELAXED);
        int i = 0;
        while (i < nh && h[i].fn != fn)
            i++;
        if (i < nh)
            h[i].n++;
        else if (nh < (int)(sizeof h / sizeof h[0]))
            h[nh++] = (struct held){fn, 1};
        else
            others++;
    }
    if (total == 0)
        return;
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    if (out == NULL)
        return;
    fprintf(out, "libsf: %lu future%s never released, of tasks:", total, total == 1 ? "" : "s");
    for (int i = 0; i < nh; i++) {
        char buf[32];
        fprintf(out, "%s %s (%lu)", i > 0 ? "," : "", sf__trace_fn_name(h[i].fn, buf, sizeof buf),
                h[i].n);
    }
    if (others > 0)
        fprintf(out, ", others (%lu)", others);
    fputc('\n', out);
    fclose(out);
    if (text != NULL)
        fwrite(text, 1, len, stderr);
    free(text);
}
#endif

/* A failure nobody saw, taken at exit to be reported after the registry
 * reopens (the hook may call libsf). */
struct unseen {
    int code;
    char *msg; /* a copy; NULL: none */
    const void *fn;
};

/* Failures nobody saw, on futures nobody released: marked SEEN (no second
 * report) and copied into *out (malloc'd; the count is returned). The
 * messages stay the futures'. */
static size_t take_unhandled(struct unseen **out)
{
    struct sf__futures_cursor walk_c = {0};
    uint64_t s;
    size_t n = 0, cap = 0;
    *out = NULL;
    for (sf_future *f; (f = sf__futures_next(&walk_c, &s)) != NULL;) {
        if (sf__status(s) != SF__DONE || !(s & SF__FAILED) || (s & SF__SEEN))
            continue;
        /* Acquire: the completion's release published the code and msg. */
        s = atomic_load_explicit(&f->state, memory_order_acquire);
        if (sf__status(s) != SF__DONE || !(s & SF__FAILED) || (s & SF__SEEN))
            continue;
        if (n == cap) {
            struct unseen *more = realloc(*out, (cap = cap * 2 + 8) * sizeof **out);
            if (more == NULL)
                break;
            *out = more;
        }
        sf__future_mark_seen(f, s);
        /* Relaxed: ordered by the acquire above. */
        (*out)[n++] = (struct unseen){
            (int)atomic_load_explicit(&f->fail_code, memory_order_relaxed),
            f->msg != NULL ? strdup(f->msg) : NULL,
            (const void *)__atomic_load_n(&f->u.fn, __ATOMIC_RELAXED)};
    }
    return n;
}

__attribute__((destructor)) static void at_exit(void)
{
    /* No runtime (never started, or shut down), or this thread is inside a
     * call (exit() from a task or a hook): nothing to do, or nothing safe. */
    if (sf__registry_count() == 0 || sf__call_inside())
        return;
    /* This thread's struct, outside any call (sf__thread_self says NULL
     * there). Relaxed: as sf__thread_self. */
    struct sf__thread *me =
        sf__tls.me != NULL &&
                sf__tls.me_gen == atomic_load_explicit(&sf__registry_gen, memory_order_relaxed)
            ? sf__tls.me
            : NULL;
    struct unseen *fails = NULL;
    size_t nfails = 0;
    bool closed = sf__registry_try_close(), quiet = closed;
    if (closed) {
        /* From now on a claimer sheds what it claims (pool.h): no task
         * starts, so a pool with no busy worker stays without one. Relaxed:
         * busy is the pool's own "quiet" test (pool.c, run_taken); a worker
         * that read the deadline just before this store and counts itself
         * busy just after the load below may still start one task - a
         * window of a few instructions, at exit, in which the walk below
         * could read a future that task releases. */
        sf__pool_set_deadline(1);
        /* A worker counts itself busy until just after its task's
         * completion, which may be what let this thread go on (a batch
         * wait, a get): past the deadline no task starts, so busy only
         * falls, and a short wait lets that worker finish counting. */
        quiet = atomic_load_explicit(&sf__pool.busy, memory_order_relaxed) == 0;
        for (int i = 0; !quiet && i < QUIET_TRIES; i++) {
            nanosleep(&(struct timespec){0, QUIET_NAP_NS}, NULL);
            quiet = atomic_load_explicit(&sf__pool.busy, memory_order_relaxed) == 0;
        }
        if (quiet) {
            nfails = take_unhandled(&fails);
#ifdef SF_DEBUG
            report_unreleased();
#endif
        }
        sf__pool_set_deadline(0);
    }
    /* Closed, no thread but the workers may use a buffer: all flushed. */
    sf__trace_at_exit(me, closed);
    if (closed)
        sf__registry_reopen();
#ifdef SF_DEBUG
    if (!quiet)
        fprintf(stderr, "libsf: the process exits without sf_shutdown() while tasks run; "
                        "unhandled failures and unreleased futures were not looked for\n");
#endif
    if (nfails == 0)
        return;
    /* Inside a call, as the shutdown's reports are: the hook may use
     * libsf, and an sf_shutdown() there is refused. */
    sf__call_begin("exit");
    for (size_t i = 0; i < nfails; i++) {
        sf__failure_report(fails[i].code, fails[i].msg,
                           (void *(*)(void *))(void (*)(void))fails[i].fn);
        free(fails[i].msg);
    }
    sf__call_end();
    free(fails);
}
