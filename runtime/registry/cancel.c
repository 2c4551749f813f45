/*
 * cancel.c - the lineage walk and the record of cancellations in
 * effect (cancel.h).
 */
#include "registry/cancel.h"

#include <stdlib.h>

_Atomic unsigned long sf__cancel_asked;

/* The running tasks sf_cancel asked, with the state each had then (its
 * tag names the incarnation). Under cancel_lock. `lost` is 1 once a record
 * could not be allocated: the count then never drops to 0 (every start is
 * checked, which is slower, never wrong) until a fork's child resets it. */
struct asked {
    sf_future *f;
    uint64_t s;
};
static struct asked *asked;
static size_t nasked, capasked;
static unsigned long lost;
static struct sf__lock cancel_lock = SF__LOCK_INITIALIZER(SF__RANK_LEAF, "cancel_lock");
/* One pruner at a time; the others go on (settling is a hint's upkeep). */
static _Atomic bool pruning;

bool sf__cancel_reaches(sf_future *p, uint64_t tag)
{
    while (p != NULL) {
        /* Acquire, here and below: the walk of cancel.h, "Walking a link". */
        uint64_t s = atomic_load_explicit(&p->state, memory_order_acquire);
        if (sf__tag(s) != sf__tag(tag) || sf__status(s) != SF__RUNNING)
            return false; /* ended: the chain is cut here */
        if (s & SF__CANCEL)
            return true;
        sf_future *up = __atomic_load_n(&p->up, __ATOMIC_ACQUIRE);
        uint64_t up_tag = __atomic_load_n(&p->up_tag, __ATOMIC_ACQUIRE);
        /* Relaxed: after the acquire loads above, which later loads do not
         * pass. */
        s = atomic_load_explicit(&p->state, memory_order_relaxed);
        if (sf__tag(s) != sf__tag(tag) || sf__status(s) != SF__RUNNING)
            return false;
        if (s & SF__CANCEL)
            return true;
        p = up;
        tag = up_tag;
    }
    return false;
}

/* Drops the records of tasks no longer running in the incarnation
 * recorded, and stores the count. A record is made before its CANCEL is
 * set (sf__cancel_ask), so one whose flag is still to come is kept; one
 * whose sf_cancel gave up (the task was released meanwhile) stays until the
 * task ends, which only keeps starts checked. Under cancel_lock. */
static void prune(void)
{
    size_t k = 0;
    for (size_t i = 0; i < nasked; i++) {
        /* Relaxed: a record kept too long only keeps starts checked. */
        uint64_t s = atomic_load_explicit(&asked[i].f->state, memory_order_relaxed);
        if (sf__tag(s) == sf__tag(asked[i].s) && sf__status(s) == SF__RUNNING)
            asked[k++] = asked[i];
    }
    nasked = k;
    /* seq_cst: the Dekker pair with sf__cancel_settle (cancel.h). */
    atomic_store_explicit(&sf__cancel_asked, nasked + lost, memory_order_seq_cst);
}

void sf__cancel_ask(sf_future *f, uint64_t s)
{
    sf__lock(&cancel_lock);
    prune();
    if (nasked == capasked) {
        size_t cap = capasked != 0 ? 2 * capasked : 16;
        struct asked *a = realloc(asked, cap * sizeof *a);
        if (a != NULL) {
            asked = a;
            capasked = cap;
        }
    }
    if (nasked < capasked)
        asked[nasked++] = (struct asked){f, s};
    else
        lost = 1;
    /* seq_cst: before the bits below (cancel.h, the Dekker pair). */
    atomic_store_explicit(&sf__cancel_asked, nasked + lost, memory_order_seq_cst);
    sf__unlock(&cancel_lock);
    /* Every queue, dead threads' too (an adopter keeps the queue): a start
     * on any thread may be a descendant of f. */
    for (int i = 0, n = sf__registry_count(); i < n; i++)
        sf__pending_want_check(&sf__registry_get(i)->q);
}

void sf__cancel_settle(struct sf__pending *q)
{
    /* seq_cst, as every access to the count and the bit here. */
    if (atomic_load_explicit(&sf__cancel_asked, memory_order_seq_cst) != 0) {
        /* Relaxed: a hint that someone prunes; the exchange decides. */
        if (atomic_load_explicit(&pruning, memory_order_relaxed) ||
            atomic_exchange_explicit(&pruning, true, memory_order_acquire))
            return;
        sf__lock(&cancel_lock);
        prune();
        sf__unlock(&cancel_lock);
        atomic_store_explicit(&pruning, false, memory_order_release);
        if (atomic_load_explicit(&sf__cancel_asked, memory_order_seq_cst) != 0)
            return;
    }
    sf__pending_want_settle(q);
    if (atomic_load_explicit(&sf__cancel_asked, memory_order_seq_cst) != 0)
        sf__pending_want_check(q); /* a cancellation came meanwhile */
}

void sf__cancel_after_fork(void)
{
    /* The parent's records name tasks that do not run here; the lock may
     * have been caught held. */
    free(asked);
    asked = NULL;
    nasked = capasked = 0;
    lost = 0;
    atomic_store_explicit(&pruning, false, memory_order_relaxed);
    atomic_store_explicit(&sf__cancel_asked, 0, memory_order_relaxed);
    sf__lock_init(&cancel_lock, SF__RANK_LEAF, "cancel_lock");
}
