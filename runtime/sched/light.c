/*
 * light.c - light tasks in the scheduler: each fiber's deque, shares,
 * thieves, a stolen task's future (light.h).
 */
#include "sched/light.h"
#include "sched/idle.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

/* A slot's words (deque.h, SF__SLOT_ROOT and SF__SLOT_FUT; the future
 * word's values: light.h). */
static inline void *slot_word(const struct sf_light_slot *t, int k)
{
    return __atomic_load_n(&t->sf_opaque_[k], __ATOMIC_RELAXED);
}

/* The bit of light_mask for fiber fb (thread.h). */
static inline int mask_bit(const struct sf__fiber *fb) { return fb->index < 63 ? fb->index : 63; }

struct sf__light *sf__light_here(struct sf__thread *me)
{
    struct sf__fiber *fb = sf__sched(me)->fiber;
    /* Relaxed: our own store. */
    struct sf__light *l = atomic_load_explicit(&fb->light, memory_order_relaxed);
    if (SF__LIKELY(l != NULL))
        return l;
    l = aligned_alloc(64, (sizeof *l + 63) / 64 * 64);
    if (l == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    *l = (struct sf__light){.frames = NULL};
    /* The trace sees every light task as a task: a future each (light.h);
     * the debug build checks every spawn and sync in the library. */
    bool trace = sf__trace_on;
#ifdef SF_DEBUG
    bool slow = true;
#else
    bool slow = trace;
#endif
    if (sf__deque_init(&l->d, slow) != 0) {
        free(l);
        return NULL;
    }
    l->futures = trace;
    /* Release, both: a thief that finds the pointer (acquire) finds the
     * deque's base, end and empty ts. */
    atomic_store_explicit(&fb->light, l, memory_order_release);
    atomic_fetch_or_explicit(&sf__sched(me)->light_mask, UINT64_C(1) << mask_bit(fb),
                             memory_order_release);
    return l;
}

const struct sf__light_root *sf__light_root_of(const struct sf__light *l,
                                               const struct sf_light_slot *t)
{
    const struct sf__light_frame *fr = l->frames;
    while (fr->outer != NULL && fr->base > t)
        fr = fr->outer;
    return fr->root;
}

/* Shares half of l's private slots, or all of them. */
static void share(struct sf__light *l, bool all)
{
    struct sf_light_slot *lo, *hi;
    if (l->futures || l->over_n > 0 || !sf__deque_share_range(&l->d, all, &lo, &hi)) {
        sf__deque_unask(&l->d);
        return;
    }
    for (struct sf_light_slot *t = lo; t < hi; t++) {
        const struct sf__light_root *root = sf__light_root_of(l, t);
        /* Relaxed, both: published by the share's release (deque.c). */
        __atomic_store_n(&t->sf_opaque_[SF__SLOT_ROOT], (void *)root, __ATOMIC_RELAXED);
        __atomic_store_n(&t->sf_opaque_[SF__SLOT_FUT], (void *)((uintptr_t)root->region << 1 | 1),
                         __ATOMIC_RELAXED);
    }
    sf__deque_share_commit(&l->d, hi);
    sf__pool_notify();
    /* Getters asleep on the task this stack runs (a sync of it, stolen)
     * come and help with what it just shared: a getter wakes for its
     * task's completion only, and would sleep through the work it could
     * take (get.c helps when it wakes). A hint: one that goes to sleep
     * just after this looks again at its next nap. Relaxed: the share's
     * CAS came before, and a stale count wakes nobody or one too many. */
    struct sf__thread *me = sf__thread_self();
    sf_future *cur = me != NULL ? sf__sched(me)->cur : NULL;
    if (cur != NULL && atomic_load_explicit(&cur->waiters, memory_order_relaxed) != 0)
        sf__futex_wake(sf__future_futex(cur), INT_MAX);
}

void sf__light_share(struct sf__light *l) { share(l, false); }

void sf__light_offer(struct sf__thread *me)
{
    /* Relaxed: our own store. */
    struct sf__light *l = atomic_load_explicit(&sf__sched(me)->fiber->light, memory_order_relaxed);
    if (l != NULL && l->frames != NULL && l->d.pub.head > l->d.o_split)
        share(l, true);
}

/* What the sync of a slot lost for want of memory gets: a zero value. */
static struct sf_light_slot lost_slot;

const struct sf_light_slot *sf__light_newest(const struct sf__light *l)
{
    if (l->over_n > 0)
        return l->over_n <= l->over_cap ? &l->over_v[l->over_n - 1] : NULL;
    return l->d.pub.head - 1;
}

enum sf__light_pop sf__light_pop(struct sf__light *l, struct sf_light_slot **t)
{
    if (SF__UNLIKELY(l->over_n > 0)) {
        size_t i = --l->over_n;
        if (i < l->over_cap) {
            *t = &l->over_v[i];
        } else {
            *t = &lost_slot; /* read, never written */
        }
        if (l->over_n == 0 && !l->d.slow) /* the inline sync may go on */
            l->d.pub.split = l->d.o_split;
        return SF__LIGHT_OVER;
    }
    struct sf_light_slot *s = l->d.pub.head - 1;
    *t = s;
    if (s >= l->d.o_split || sf__deque_take_back(&l->d, s)) {
        l->d.pub.head = s;
        return SF__LIGHT_RUN;
    }
    return SF__LIGHT_STOLEN;
}

/* Does future word w name a future (light.h)? */
static inline bool is_future(void *w)
{
    return w != NULL && !((uintptr_t)w & 1) && w != SF__SLOT_MAKING && w != SF__SLOT_WRITING;
}

sf_future *sf__light_stolen(struct sf_light_slot *t)
{
    for (unsigned spins = 0;; spins++) {
        /* Acquire: pairs with the thief's release (make_task, publish): g's
         * fields. */
        void *w = __atomic_load_n(&t->sf_opaque_[SF__SLOT_FUT], __ATOMIC_ACQUIRE);
        if (is_future(w))
            return w;
        if (spins < 64)
            sf__pause();
        else
            sched_yield();
    }
}

void sf__light_revoke(struct sf_light_slot *t, sf_future *f)
{
    for (;;) {
        void *w = f;
        /* Acquire on success: pairs with publish's release, so that a value
         * written before comes before this owner's next writes of t. */
        if (__atomic_compare_exchange_n(&t->sf_opaque_[SF__SLOT_FUT], &w, NULL, false,
                                        __ATOMIC_ACQUIRE, __ATOMIC_RELAXED) ||
            w != SF__SLOT_WRITING)
            return;
        sf__pause(); /* a copy of 40 bytes */
    }
}

/* A runner's end (sf__light_task_fn): the value into slot t, unless its
 * owner gave up on it - the word no longer g (light.h). */
static void publish(struct sf_light_slot *t, sf_future *g, const union sf_light_data *value)
{
    for (;;) {
        void *w = __atomic_load_n(&t->sf_opaque_[SF__SLOT_FUT], __ATOMIC_RELAXED);
        if (w == SF__SLOT_MAKING) { /* the trace's spawner stores g next */
            sched_yield();
            continue;
        }
        if (w != g)
            return;
        /* Acquire: the value's stores stay after the mark. */
        if (__atomic_compare_exchange_n(&t->sf_opaque_[SF__SLOT_FUT], &w, SF__SLOT_WRITING, false,
                                        __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
            break;
    }
    t->u = *value;
    /* Release: the value before the word (sf__light_revoke, sf__light_stolen). */
    __atomic_store_n(&t->sf_opaque_[SF__SLOT_FUT], (void *)g, __ATOMIC_RELEASE);
}

void sf__light_stolen_synced(struct sf__light *l, struct sf_light_slot *t)
{
    /* Relaxed: the next share writes it afresh before its release. */
    __atomic_store_n(&t->sf_opaque_[SF__SLOT_FUT], NULL, __ATOMIC_RELAXED);
    l->d.pub.head = t;
    sf__deque_stolen_synced(&l->d, t);
}

/* Release build: a stolen task returned with tasks not synced (sf.h
 * forbids it; the debug build reports it). They are synced here so that
 * its deque's next sync is its outer run's: private ones run, stolen ones
 * are waited for by spinning - this thread helps with nothing meanwhile,
 * the price of the misuse, not a hang (their thieves run them). */
static void sync_leftovers(struct sf__light *l, const struct sf__light_frame *fr)
{
    while (l->d.pub.head > fr->base || l->over_n > fr->over) {
        struct sf_light_slot *t;
        switch (sf__light_pop(l, &t)) {
        case SF__LIGHT_OVER: break;
        case SF__LIGHT_RUN: {
            struct sf_light_slot v = sf__light_task_copy(t); /* t may hold its leftovers */
            sf__light_slot_run(&l->d.pub, &v);
            break;
        }
        case SF__LIGHT_STOLEN: {
            sf_future *g = sf__light_stolen(t);
            uint64_t s;
            /* Acquire: DONE publishes the thief's writes. */
            while (sf__status(s = atomic_load_explicit(&g->state, memory_order_acquire)) !=
                   SF__DONE)
                sched_yield();
            if (!sf__done_ok(s))
                free(g->val); /* its message (failure.h) */
            sf__future_put(&sf__thread_self()->free, g, s);
            sf__light_stolen_synced(l, t);
            break;
        }
        }
    }
}

void *sf__light_task_fn(void *p)
{
    struct sf_light_slot *t = p;
    struct sf__thread *me = sf__thread_self();
    /* The slot stays until its sync, which waits for this task: its words
     * are the claim's (acquired) or this thread's own (futures). */
    const struct sf__light_root *root = slot_word(t, SF__SLOT_ROOT);
    sf_future *g = sf__sched(me)->cur;
    struct sf__light *l = sf__light_here(me);
    if (l == NULL) {
        /* No deque for this stack: the task cannot run, and its run fails
         * (the sync sees a zero value). */
        (void)sf__scope_fail((struct sf__scope *)&root->scope, ENOMEM, NULL);
        publish(t, g, &(union sf_light_data){.value = NULL});
        return t;
    }
    /* A copy: t is read now, while its owner waits for this task, and
     * written at the end only through publish. */
    struct sf_light_slot v = sf__light_task_copy(t);
    struct sf__light_frame fr = {root, l->d.pub.head, l->over_n, l->frames};
    l->frames = &fr;
    /* sf_fail() here fails the run (failure.h, Scopes): the frame names
     * this task's future, me->cur while fn runs. */
    struct sf__scope_frame sfr;
    sf__scope_push(me, &sfr, (struct sf__scope *)&root->scope);
#ifdef SF_DEBUG
    const void *name = sf__light_slot_fn(&v); /* the run overwrites it */
#endif
    sf__light_slot_run(&l->d.pub, &v);
    sf__scope_pop(me, &sfr);
    if (SF__UNLIKELY(l->d.pub.head != fr.base || l->over_n != fr.over)) {
#ifdef SF_DEBUG
        sf__misuse("a light task (%p) returned with %ld tasks it spawned not synced",
                   name, (long)(l->d.pub.head - fr.base));
#endif
        sync_leftovers(l, &fr);
    }
    l->frames = fr.outer;
    publish(t, g, &v.u);
    return t;
}

/* A stolen task's tag: the thief's id, then the promises' top bit and a
 * bit of its own below the continuations' (promise.h, after.h: a promise
 * is known by its function too, a continuation by its status), then a
 * count. It never matches a queue's push, so no queue's watermarks count
 * it (pending.h, Submission). */
#define SF__LIGHT_SEQ_TOP (UINT64_C(1) << (SF__SEQ_BITS - 3))
#define SF__LIGHT_SEQ (UINT64_C(1) << (SF__SEQ_BITS - 1) | SF__LIGHT_SEQ_TOP)
static _Atomic uint64_t stolen_made;

/* A thief's claim of slot t of l's deque (claimed with word ts): the
 * future g becomes the task, RUNNING, stored in the slot. */
static uint64_t make_task(struct sf__thread *me, sf_future *g, struct sf_light_slot *t)
{
    const struct sf__light_root *root = slot_word(t, SF__SLOT_ROOT);
    /* Its lineage, as sf_do()'s under the task around the run (cancel.h).
     * Release, up_tag first: the walk of cancel.h. */
    __atomic_store_n(&g->up_tag, root->up_tag, __ATOMIC_RELEASE);
    __atomic_store_n(&g->up, root->up, __ATOMIC_RELEASE);
    g->u.fn = sf__light_task_fn;
    /* Relaxed, both: the owner reads g only after the slot's release below,
     * and nobody else finds it. */
    __atomic_store_n(&g->val, (void *)t, __ATOMIC_RELAXED);
    /* A run of plain code: the region it opened, as a task of plain code
     * carries its own (SF__REGION_ROOT), so that the owner's sync - a wait
     * of plain code - helps within it (get.c, Plain code's waits). */
    atomic_store_explicit(&g->region, root->region | (root->plain ? SF__REGION_ROOT : 0),
                          memory_order_relaxed);
    /* Relaxed: tags need only be distinct. */
    uint64_t k = atomic_fetch_add_explicit(&stolen_made, 1, memory_order_relaxed);
    uint64_t n = (uint64_t)me->id << SF__SEQ_BITS | SF__LIGHT_SEQ | (k & (SF__LIGHT_SEQ_TOP - 1));
    g->kids_up_tag = (n << SF__TAG_SHIFT) | SF__PENDING;
    uint64_t s = (n << SF__TAG_SHIFT) | SF__RUNNING;
    SF__ASSERT_TRANSITION(SF__FREE, s);
    atomic_store_explicit(&g->state, s, memory_order_relaxed);
    SF__BUMP(sf__sched(me)->c_created);
    /* Release: the owner's sync (acquire) sees g's fields and state. */
    __atomic_store_n(&t->sf_opaque_[SF__SLOT_FUT], (void *)g, __ATOMIC_RELEASE);
    return s;
}

/* One deque of a victim: its oldest shared slot of `region`, claimed into g. */
static bool take_from(struct sf__thread *me, struct sf__light *l, uint32_t region, sf_future **g,
                      uint64_t *claimed)
{
    uint64_t ts;
    struct sf_light_slot *t = sf__deque_peek(&l->d, &ts);
    if (t == NULL) {
        sf__deque_ask(&l->d);
        return false;
    }
    if (region != SF__REGION_ANY) {
        /* Admitted as a queued task of the run's region would be (pending.h,
         * Regions): a helper outside every region takes none of a closed
         * one. A guess before the claim (deque.h): the slot may be claimed
         * and shared anew meanwhile, and a task of another region taken
         * then (rarely) runs as any thief's would. */
        uintptr_t w = (uintptr_t)slot_word(t, SF__SLOT_FUT);
        if (!(w & 1) || !sf__region_admits(region, (uint32_t)(w >> 1)))
            return false;
    }
    if (*g == NULL && (*g = sf__future_alloc(&me->free)) == NULL)
        return false;
    if (!sf__deque_claim(&l->d, ts))
        return false;
    *claimed = make_task(me, *g, t);
    return true;
}

/* Victim v's deques, in fiber order. */
static bool take_from_thread(struct sf__thread *me, struct sf__thread *v, uint32_t region,
                             sf_future **g, uint64_t *claimed)
{
    /* Acquire: the fibers' light pointers were stored before their bits. */
    uint64_t mask = atomic_load_explicit(&sf__sched(v)->light_mask, memory_order_acquire);
    if (mask == 0)
        return false;
    struct sf__light *l;
    if (mask & 1) {
        l = atomic_load_explicit(&sf__sched(v)->base.light, memory_order_acquire);
        if (l != NULL && take_from(me, l, region, g, claimed))
            return true;
    }
    if ((mask >>= 1) == 0)
        return false;
    /* Acquire: the array is published before any of its fibers has a deque
     * (park.c). */
    struct sf__fiber *fs = atomic_load_explicit(&sf__sched(v)->fibers, memory_order_acquire);
    if (fs == NULL)
        return false;
    for (int k = 0; k < SF__FIBERS; k++) {
        int bit = k < 62 ? k : 62; /* fiber k + 1's bit, less the base's */
        if (!(mask >> bit & 1)) {
            if (k >= 62)
                break;
            continue;
        }
        l = atomic_load_explicit(&fs[k].light, memory_order_acquire);
        if (l != NULL && take_from(me, l, region, g, claimed))
            return true;
    }
    return false;
}

sf_future *sf__light_take(struct sf__thread *me, uint32_t region, uint64_t *claimed, int *from)
{
    int n = sf__registry_count();
    sf_future *g = NULL;
    for (int k = 0, i = (int)(sf__thread_rand(me) % (unsigned)n); k < n;
         k++, i = i + 1 == n ? 0 : i + 1) {
        struct sf__thread *v = sf__registry_get(i);
        if (v == me)
            continue;
        if (take_from_thread(me, v, region, &g, claimed)) {
            *from = v->id;
            return g;
        }
    }
    if (g != NULL)
        sf__future_unalloc(&me->free, g);
    return NULL;
}

void sf__light_free(struct sf__thread *t)
{
    struct sf__fiber *fs = atomic_load_explicit(&sf__sched(t)->fibers, memory_order_relaxed);
    for (int k = -1; k < (fs != NULL ? SF__FIBERS : 0); k++) {
        struct sf__fiber *fb = k < 0 ? &sf__sched(t)->base : &fs[k];
        /* Relaxed: every thread is quiet (the caller's promise). */
        struct sf__light *l = atomic_load_explicit(&fb->light, memory_order_relaxed);
        if (l == NULL)
            continue;
        sf__deque_destroy(&l->d);
        free(l->over_v);
        free(l);
        atomic_store_explicit(&fb->light, NULL, memory_order_relaxed);
    }
    atomic_store_explicit(&sf__sched(t)->light_mask, 0, memory_order_relaxed);
}
