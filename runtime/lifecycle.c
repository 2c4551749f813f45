/*
 * lifecycle.c - starting and stopping the runtime, and its counters.
 *
 * Start: sf_init() or, implicitly, the first sf_do()/sf_get() of any thread.
 * Both go through start() under sf__rt.life, so concurrent first calls start
 * one runtime. Stop: sf_shutdown() drains every task still pending, stops the
 * pool and frees everything; bumping gen makes every thread's cached record
 * stale, so a later call registers afresh in a new runtime.
 */
#include "pending.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sf__rt sf__rt = {.life = PTHREAD_MUTEX_INITIALIZER, .trace_fd = 2};

/* Lock order: sf__rt.life, then the registry's lock (when the caller
 * registers). Held only by start and stop, never while a task runs. */
static int start(struct sf__cfg *c)
{
    sf__rt.threads = c->threads;
    sf__rt.workers = c->threads - 1;
    sf__rt.stack_size = c->stack_size;
    sf__rt.t0_ns = sf__now_ns(); /* reset below, just before the Init line */
    sf__rt.trace = false;
    sf__park_init();
    if (c->trace) {
        if (sf__trace_open(c->trace_file) != 0) {
            int err = errno;
            if (!c->trace_file_from_env) { /* an sf_config path: the caller's error */
                free(c->trace_file);
                errno = err;
                return -1;
            }
            fprintf(stderr, "libsf: SF_TRACE_FILE='%s' cannot be opened (%s); tracing to "
                            "stderr\n", c->trace_file, strerror(err));
            sf__trace_open(NULL);
        }
        sf__rt.trace = true;
    }
    free(c->trace_file);
    c->trace_file = NULL;
    if (sf__registry_init() != 0) {
        sf__trace_close();
        sf__rt.trace = false;
        return -1;
    }
    /* New generation first: records cached by threads of an earlier runtime
     * are stale from here on. */
    atomic_fetch_add_explicit(&sf__rt.gen, 1, memory_order_relaxed);
    /* Release: a thread that sees UP (acquire, sf__self_slow) sees the
     * configuration above. */
    atomic_store_explicit(&sf__rt.state, SF__UP, memory_order_release);
    struct sf__thread *t = sf__self_slow(); /* the starter is thread 0 */
    sf__rt.t0_ns = sf__now_ns(); /* Time 0.000 is the Init line */
    if (t != NULL)
        SF__TRACE(t, "Init\tthreads=%d\tworkers=%d", sf__rt.threads, sf__rt.workers);
    if (t == NULL || sf__pool_start() != 0) {
        int err = errno;
        atomic_store_explicit(&sf__rt.state, SF__DOWN, memory_order_relaxed);
        atomic_fetch_add_explicit(&sf__rt.gen, 1, memory_order_relaxed);
        sf__registry_destroy();
        sf__slabs_free_all();
        sf__trace_close();
        sf__rt.trace = false;
        errno = err;
        return -1;
    }
    return 0;
}

SF_EXPORT int sf_init(const sf_config *cfg)
{
    struct sf__cfg c;
    if (sf__config_resolve(cfg, &c) != 0)
        return -1;
    pthread_mutex_lock(&sf__rt.life);
    int rc;
    if (atomic_load_explicit(&sf__rt.state, memory_order_relaxed) == SF__UP) {
        free(c.trace_file);
        errno = EBUSY;
        rc = -1;
    } else {
        rc = start(&c);
    }
    pthread_mutex_unlock(&sf__rt.life);
    return rc;
}

int sf__start_implicit(void)
{
    pthread_mutex_lock(&sf__rt.life);
    int rc = 0;
    if (atomic_load_explicit(&sf__rt.state, memory_order_relaxed) != SF__UP) {
        struct sf__cfg c;
        rc = sf__config_resolve(NULL, &c);
        if (rc == 0)
            rc = start(&c);
        if (rc != 0)
            errno = EAGAIN;
    }
    pthread_mutex_unlock(&sf__rt.life);
    return rc;
}

/* Runs every task still pending anywhere until none is left and no worker is
 * busy (a running task may queue more). Returns how many it ran. */
static unsigned long drain(struct sf__thread *t)
{
    unsigned long n = 0;
    for (;;) {
        uint64_t claimed;
        sf_future *f = sf__pending_pop_own(t, &claimed);
        for (int i = 0, nr = sf__registry_count(); f == NULL && i < nr; i++)
            f = sf__pending_steal(sf__registry_get(i), SF__SCAN_DRAIN, UINT64_MAX, &claimed);
        if (f != NULL) {
            sf__run(t, f, claimed, SF__HOW_DRAIN);
            n++;
            continue;
        }
        /* Relaxed: a worker is quiet once busy is 0 and nothing is pending;
         * the next loop rescans anyway, and the join in sf__pool_stop orders
         * everything the workers did before our frees. */
        if (atomic_load_explicit(&sf__rt.busy, memory_order_relaxed) == 0)
            return n;
        sched_yield();
    }
}

SF_EXPORT void sf_shutdown(void)
{
    pthread_mutex_lock(&sf__rt.life);
    if (atomic_load_explicit(&sf__rt.state, memory_order_relaxed) != SF__UP) {
        pthread_mutex_unlock(&sf__rt.life);
        return;
    }
    struct sf__thread *t = sf__tls.rec;
    if (t != NULL && sf__tls.gen == atomic_load_explicit(&sf__rt.gen, memory_order_relaxed) &&
        (t->depth > 0 || t->is_worker)) {
        pthread_mutex_unlock(&sf__rt.life);
        fprintf(stderr, "libsf: sf_shutdown() called from inside a task; ignored\n");
        return;
    }
    pthread_mutex_unlock(&sf__rt.life);
    /* Registering may take the life lock (never here: the runtime is up). */
    t = sf__self();
    pthread_mutex_lock(&sf__rt.life);
    unsigned long drained = t != NULL ? drain(t) : 0;
    sf__pool_stop();
    if (t != NULL)
        SF__TRACE(t, "Shutdown\tdrained=%lu", drained);
    if (sf__rt.trace) {
        for (int i = 0, n = sf__registry_count(); i < n; i++)
            sf__trace_flush(sf__registry_get(i));
        sf__trace_close();
        sf__rt.trace = false;
    }
    atomic_store_explicit(&sf__rt.state, SF__DOWN, memory_order_relaxed);
    atomic_fetch_add_explicit(&sf__rt.gen, 1, memory_order_relaxed);
    sf__registry_destroy();
    sf__slabs_free_all();
    pthread_mutex_unlock(&sf__rt.life);
}

SF_EXPORT int sf_stats_read(sf_stats *out)
{
    if (out == NULL) {
        errno = EINVAL;
        return -1;
    }
    if (atomic_load_explicit(&sf__rt.state, memory_order_acquire) != SF__UP) {
        errno = ESRCH;
        return -1;
    }
    memset(out, 0, sizeof *out);
    out->threads = sf__rt.threads;
    out->workers = sf__rt.workers;
    out->peak_busy = atomic_load_explicit(&sf__rt.peak_busy, memory_order_relaxed);
    /* Relaxed: counters are statistics (internal.h, SF__BUMP). */
    for (int i = 0, n = sf__registry_count(); i < n; i++) {
        struct sf__thread *r = sf__registry_get(i);
        out->created += atomic_load_explicit(&r->c_created, memory_order_relaxed);
        out->run_inline += atomic_load_explicit(&r->c_inline, memory_order_relaxed);
        out->run_pool += atomic_load_explicit(&r->c_pool, memory_order_relaxed);
        out->run_stolen += atomic_load_explicit(&r->c_stolen, memory_order_relaxed);
        out->discarded += atomic_load_explicit(&r->c_discarded, memory_order_relaxed);
        out->gets_blocked += atomic_load_explicit(&r->c_blocked, memory_order_relaxed);
        out->sleeps += atomic_load_explicit(&r->c_sleeps, memory_order_relaxed);
    }
    return 0;
}
