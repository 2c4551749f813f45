/*
 * registry.c - per-thread records and the global pending set.
 *
 * Every thread that calls into libsf gets a record (struct sf__thread) the
 * first time, cached in TLS. The records, in an append-only array, are the
 * global pending set: the union of their pending queues is every task not yet
 * started, and blocked getters (get.c), idle workers (pool.c) and the drain
 * of sf_shutdown search it by scanning the queues.
 *
 * Records are never freed while the runtime runs: a scanner may hold one at
 * any time. When a thread exits, its record is marked dead; its queue stays in
 * the set (its pending tasks remain claimable) and a later thread adopts the
 * record once the queue holds nothing pending.
 *
 * The array is published by the release store of nrecs; entries below it
 * never change, so a scanner reads them after an acquire load of nrecs.
 */
#include "pending.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

__thread struct sf__tls sf__tls __attribute__((tls_model("initial-exec")));

static struct sf__thread *recs[SF__MAX_RECORDS];
static _Atomic int nrecs;
/* Lock order: may be taken under sf__rt.life (start), never the reverse;
 * nothing is taken under it except malloc's own locks. */
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;

int sf__registry_count(void)
{
    /* Acquire: pairs with the release in new_record; recs[i < n] is set. */
    return atomic_load_explicit(&nrecs, memory_order_acquire);
}

struct sf__thread *sf__registry_get(int i) { return recs[i]; }

static struct sf__thread *new_record(bool worker)
{
    pthread_mutex_lock(&reg_lock);
    int n = atomic_load_explicit(&nrecs, memory_order_relaxed);
    struct sf__thread *t = NULL;
    for (int i = 0; i < n; i++) {
        struct sf__thread *d = recs[i];
        /* Acquire: the dead thread's last writes to its record come first. */
        if (atomic_load_explicit(&d->alive, memory_order_acquire) == 0 && sf__pending_empty(d)) {
            t = d;
            break;
        }
    }
    if (t == NULL) {
        if (n == SF__MAX_RECORDS) {
            pthread_mutex_unlock(&reg_lock);
            errno = EAGAIN;
            return NULL;
        }
        t = aligned_alloc(64, (sizeof *t + 63) / 64 * 64);
        if (t == NULL || (memset(t, 0, sizeof *t), sf__pending_init(&t->q, n)) != 0) {
            free(t);
            pthread_mutex_unlock(&reg_lock);
            errno = ENOMEM;
            return NULL;
        }
        t->id = n;
        t->rng = 2654435761u * (uint32_t)(n + 1);
        recs[n] = t;
        /* Release: scanners that see the new count see the record. */
        atomic_store_explicit(&nrecs, n + 1, memory_order_release);
    }
    t->is_worker = worker;
    t->depth = 0;
    atomic_store_explicit(&t->alive, 1, memory_order_relaxed);
    pthread_mutex_unlock(&reg_lock);
    return t;
}

static void attach(struct sf__thread *t)
{
    sf__tls.rec = t;
    sf__tls.gen = atomic_load_explicit(&sf__rt.gen, memory_order_relaxed);
}

struct sf__thread *sf__self_slow(void)
{
    if (atomic_load_explicit(&sf__rt.state, memory_order_acquire) != SF__UP &&
        sf__start_implicit() != 0)
        return NULL;
    struct sf__thread *t = new_record(false);
    if (t == NULL)
        return NULL;
    attach(t);
    /* The destructor marks the record dead when this thread exits. */
    pthread_setspecific(sf__rt.exit_key, t);
    return t;
}

struct sf__thread *sf__register_worker(void)
{
    struct sf__thread *t = new_record(true);
    if (t != NULL)
        attach(t);
    return t;
}

void sf__registry_thread_exit(struct sf__thread *t)
{
    /* Nobody will answer a request for this queue's private tasks any more:
     * make them all public now, so blocked getters can help with them. */
    sf__pending_publish(t);
    sf__trace_flush(t);
    /* Release: pairs with the acquire in new_record of an adopter. */
    atomic_store_explicit(&t->alive, 0, memory_order_release);
}

static void on_thread_exit(void *rec) { sf__registry_thread_exit(rec); }

int sf__registry_init(void)
{
    if (pthread_key_create(&sf__rt.exit_key, on_thread_exit) != 0) {
        errno = EAGAIN;
        return -1;
    }
    return 0;
}

void sf__registry_destroy(void)
{
    /* Deleting the key first: no exit destructor can touch a freed record. */
    pthread_key_delete(sf__rt.exit_key);
    int n = atomic_load_explicit(&nrecs, memory_order_relaxed);
    for (int i = 0; i < n; i++) {
        sf__pending_destroy(&recs[i]->q);
        free(recs[i]->tbuf);
        free(recs[i]);
        recs[i] = NULL;
    }
    atomic_store_explicit(&nrecs, 0, memory_order_relaxed);
    sf__tls.rec = NULL;
}
