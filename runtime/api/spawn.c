/*
 * spawn.c - light tasks' entry points: sf_light_run, and sf_spawn's and
 * sf_sync's slow paths (sf.h, Light tasks; the deque: deque.h; the
 * scheduler's part: light.h).
 *
 * The inline spawn and sync (sf.h) do the common case. They come here when:
 *   - spawn: head reached limit - the deque is full (one slot short of its
 *     end: the overflow, below), or a thief lowered limit to ask for a
 *     share (deque.h, Asking for work), or the deque is slow (debug build,
 *     trace: limit held at base);
 *   - sync: head - 1 is below pub.split - the slot is shared (take it back
 *     or wait for its thief), or values of an overflow are kept (split held
 *     high), or the deque is slow (split held high).
 *
 * Deadlock freedom. A sync waits only for a slot a thief claimed, which
 * that thief runs as a task of its own (light.h); the sync gets that
 * future as sf_get() does, so get.c's argument holds: the stolen task
 * waits for nothing the sync's frames hold but what the program's own
 * gets make (a light task that gets a future its spawner's frames would
 * complete later is a cycle of the program's, reported as sf_get reports
 * one). A sync of a slot nobody claimed runs it here, needing nobody.
 *
 * The overflow. A deque has room for SF__DEQUE_SLOTS tasks. A spawn past
 * it runs the task at once, on this stack, and keeps its slot, the value
 * in it, on the deque's overflow stack; pub.split is held high meanwhile,
 * so that the syncs come here and return those slots newest first before
 * any of the deque.
 *
 * Values. A task's value goes in its slot (sf.h, struct sf_light_slot):
 * sf_sync_slow() returns the slot, and the inline sync reads the value of
 * its own kind there - a pointer, or a typed task's bytes. A task that
 * never ran (its run failed first, or memory lacked) leaves a zero value.
 */
#include "api/lifecycle.h"
#include "sched/get.h"
#include "sched/light.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#ifdef SF_DEBUG
/* Debug build: w must be the running stack's deque, inside a run. */
static struct sf__light *check_owner(sf_worker *w, const char *call)
{
    struct sf__thread *me = sf__thread_self();
    struct sf__light *l = sf__light_of(w);
    if (me == NULL || atomic_load_explicit(&sf__sched(me)->fiber->light, memory_order_relaxed) != l)
        sf__misuse("%s(%p): not this stack's worker (a light task spawns and syncs only on the "
                   "worker handed to it)",
                   call, (void *)w);
    if (l->frames == NULL)
        sf__misuse("%s(%p): no light run is running on this worker", call, (void *)w);
    return l;
}
#define OWNER(w, call) check_owner((w), (call))
#else
#define OWNER(w, call) sf__light_of(w)
#endif

/* Runs slot t's task on this stack, its spawner's (a sync, or an
 * overflow), its value into t. The debug build gives it a frame of its
 * own, so that what it spawns and syncs is checked against its own frame:
 * a sync with nothing of its own to sync, a return with spawns not synced
 * (sf.h, Light tasks). */
static void call_here(struct sf__light *l, struct sf_light_slot *t)
{
#ifdef SF_DEBUG
    struct sf__light_frame fr = {l->frames->root, l->d.pub.head, l->over_n, l->frames};
    l->frames = &fr;
    const void *name = sf__light_slot_fn(t); /* the run overwrites it */
    sf__light_slot_run(&l->d.pub, t);
    if (l->d.pub.head != fr.base || l->over_n != fr.over)
        sf__misuse("a light task (%p) returned with %ld tasks it spawned not synced", name,
                   (long)(l->d.pub.head - fr.base) + (long)(l->over_n - fr.over));
    l->frames = fr.outer;
#else
    sf__light_slot_run(&l->d.pub, t);
#endif
}

/* The innermost run's scope on l: where a failure here goes. */
static struct sf__scope *run_scope(const struct sf__light *l)
{
    return (struct sf__scope *)&l->frames->root->scope;
}

/* Spawn past the room: run the task now, keep its slot for the sync. It
 * runs in a copy, not in the stack of kept slots, which the spawns past the
 * room it makes may move. */
static void overflow(struct sf__light *l, const struct sf_light_slot *task)
{
    struct sf_light_slot v = *task;
    call_here(l, &v);
    if (l->over_n == l->over_cap) {
        size_t cap = l->over_cap ? 2 * l->over_cap : 64;
        struct sf_light_slot *p = realloc(l->over_v, cap * sizeof *p);
        if (p == NULL) {
            /* The value is lost, the run fails: its sync returns NULL. */
            (void)sf__scope_fail(run_scope(l), ENOMEM, NULL);
            l->over_n++;
            l->d.pub.split = (struct sf_light_slot *)UINTPTR_MAX;
            return;
        }
        l->over_v = p;
        l->over_cap = cap;
    }
    if (l->over_n < l->over_cap)
        l->over_v[l->over_n] = v;
    l->over_n++;
    l->d.pub.split = (struct sf_light_slot *)UINTPTR_MAX;
}

/* Fills slot t with task's function and argument (sf.h: run and u). */
static void fill(struct sf_light_slot *t, const struct sf_light_slot *task)
{
    t->run = task->run;
    t->u = task->u;
}

/* The trace's spawn: the task as a future (light.h), queued as sf_do()
 * queues. A task that cannot be queued runs at once, its value in the slot
 * (its future word NULL). */
static void spawn_future(struct sf__light *l, const struct sf_light_slot *task)
{
    struct sf_light_slot *t = l->d.pub.head;
    fill(t, task);
    /* Relaxed: this thread's, and the task's future reads them after its
     * queueing's release. */
    __atomic_store_n(&t->sf_opaque_[SF__SLOT_ROOT], (void *)l->frames->root, __ATOMIC_RELAXED);
    /* MAKING until f is stored: a runner that ends first waits for it
     * (light.c, publish). */
    __atomic_store_n(&t->sf_opaque_[SF__SLOT_FUT], SF__SLOT_MAKING, __ATOMIC_RELAXED);
    sf_future *f = sf_do(sf__light_task_fn, t);
    if (f == NULL) {
        /* Run in a copy (light.h, sf__light_slot_run): it spawns from t. */
        struct sf_light_slot v = *task;
        call_here(l, &v);
        t = l->d.pub.head;
        fill(t, &v);
    }
    /* Release: pairs with publish's load and CAS (MAKING above). */
    __atomic_store_n(&t->sf_opaque_[SF__SLOT_FUT], (void *)f, __ATOMIC_RELEASE);
    l->d.pub.head = t + 1;
}

SF_EXPORT void sf_spawn_slow(sf_worker *w, const struct sf_light_slot *task)
{
    struct sf__light *l = OWNER(w, "sf_spawn");
    struct sf_light_slot *t = l->d.pub.head;
    if (SF__UNLIKELY(t >= l->d.end - 1 || l->over_n > 0)) {
        overflow(l, task);
        return;
    }
    if (l->futures) {
        spawn_future(l, task);
        return;
    }
    fill(t, task);
    l->d.pub.head = t + 1;
    /* Here with room: a thief asked (limit lowered, or the flag of a slow
     * deque). Relaxed: a hint (deque.h, Asking for work). */
    if (sf__deque_asked(&l->d) ||
        (!l->d.slow && __atomic_load_n(&l->d.pub.limit, __ATOMIC_RELAXED) != l->d.end - 1))
        sf__light_share(l);
}

/* The trace's sync: get the slot's future. */
static struct sf_light_slot *sync_future(struct sf__light *l)
{
    struct sf_light_slot *t = l->d.pub.head - 1;
    /* Relaxed: this thread stored it, or its runner is writing the value
     * (WRITING, waited out by sf__light_stolen). */
    if (__atomic_load_n(&t->sf_opaque_[SF__SLOT_FUT], __ATOMIC_RELAXED) == NULL) {
        l->d.pub.head = t;
        return t; /* it ran at its spawn */
    }
    sf_future *f = sf__light_stolen(t);
    /* head stays above t until the task has ended: a thief reads the slot
     * when it starts, and a task run here meanwhile spawns above it. */
    int code = sf_wait(f, NULL);
    l->d.pub.head = t;
    if (code != 0) {
        /* Not run (cancelled before it started), or a cycle of gets: the
         * run fails with it. */
        const char *m = sf_error_message(f);
        (void)sf__scope_fail(run_scope(l), code, m != NULL ? strdup(m) : NULL);
        sf__light_revoke(t, f); /* it may run on: not into t */
        memset(&t->u, 0, sizeof t->u);
    }
    sf_release(f);
    return t;
}

/* Pauses a sync spends on a stolen task before it waits as sf_get. */
#define STOLEN_SPINS 4096

/* A stolen slot t: get its thief's future, release it. */
static struct sf_light_slot *sync_stolen(struct sf__thread *me, struct sf__light *l,
                                         struct sf_light_slot *t)
{
    sf_future *g = sf__light_stolen(t);
    errno = 0;
    /* Acquire: DONE publishes the thief's writes, the value among them. A
     * stolen light task is usually short: spin a while before the get's
     * help, which parks this stack, and its sleep. */
    uint64_t s = atomic_load_explicit(&g->state, memory_order_acquire);
    for (int i = 0; i < STOLEN_SPINS && sf__status(s) != SF__DONE; i++) {
        sf__pause();
        s = atomic_load_explicit(&g->state, memory_order_acquire);
    }
    if (!sf__done_ok(s))
        (void)sf__get_slow(me, g, false); /* the value is in t */
    s = atomic_load_explicit(&g->state, memory_order_acquire);
    if (!sf__done_ok(s)) {
        /* A cycle of gets (EDEADLK) or a failure of the future itself: the
         * run fails; the release below leaves a running g to its thief. */
        (void)sf__scope_fail(run_scope(l), errno != 0 ? errno : EINVAL, NULL);
        sf__light_revoke(t, g); /* it may run on: not into t */
        memset(&t->u, 0, sizeof t->u);
    }
    sf_release(g);
    sf__light_stolen_synced(l, t);
    return t;
}

/* Is there a task of l's innermost run to sync? */
static bool run_has_task(const struct sf__light *l)
{
    const struct sf__light_frame *fr = l->frames;
    return fr != NULL && (l->d.pub.head > fr->base || l->over_n > fr->over);
}

/* Syncs l's newest task: its slot, the value in it. */
static struct sf_light_slot *sync_newest(struct sf__light *l)
{
    if (l->futures && l->over_n == 0)
        return sync_future(l);
    struct sf_light_slot *t;
    switch (sf__light_pop(l, &t)) {
    case SF__LIGHT_OVER: return t;
    case SF__LIGHT_RUN: {
        /* In a copy: the task spawns from t, and a misuse may leave there
         * what it did not sync (the value would overwrite it). */
        struct sf_light_slot v = sf__light_task_copy(t);
        call_here(l, &v);
        l->ret.u = v.u;
        return &l->ret;
    }
    default: return sync_stolen(sf__thread_self(), l, t);
    }
}

/* What a sync with nothing to sync returns: a zero value. Never written. */
static struct sf_light_slot no_task;

SF_EXPORT struct sf_light_slot *sf_sync_slow(sf_worker *w,
                                             void (*run)(sf_worker *, struct sf_light_slot *))
{
    struct sf__light *l = OWNER(w, "sf_sync");
    if (SF__UNLIKELY(!run_has_task(l))) {
#ifdef SF_DEBUG
        sf__misuse("sf_sync(%p): no light task of this run is left to sync (a sync per spawn, "
                   "in the spawning function)",
                   (void *)w);
#endif
        errno = EINVAL;
        return &no_task;
    }
#ifdef SF_DEBUG
    /* LIFO: the newest task is the kind this sync is for. A lost slot
     * (NULL) has no kind left to check. */
    const struct sf_light_slot *n = sf__light_newest(l);
    if (n != NULL && n->run != run)
        sf__misuse("sf_sync(%p): the newest light task (%p) is not of the kind this sync is "
                   "for (%s): syncs go newest first, each with its spawn's kind",
                   (void *)w, sf__light_slot_fn(n), run != NULL ? "a typed task" : "sf_spawn's");
#else
    (void)run;
#endif
    return sync_newest(l);
}

SF_EXPORT void *sf_light_run(int abi, sf_light_fn fn, void *arg)
{
    if (abi != SF_LIGHT_ABI) {
        errno = ENOTSUP;
        return NULL;
    }
    if (fn == NULL) {
        errno = EINVAL;
        return NULL;
    }
    SF__OUTERMOST("sf_light", void *, sf_light_run(abi, fn, arg));
    struct sf__thread *me = sf__enter();
    if (me == NULL)
        return NULL;
    struct sf__light *l = sf__light_here(me);
    if (l == NULL)
        return NULL;
    sf_future *cur = sf__sched(me)->cur;
    /* A run of plain code outside every region opens one of its own, as a
     * task of plain code does when it starts (get.c, Plain code's waits):
     * its syncs, plain code's waits, help with its tasks and nothing else.
     * Inside a region (a loop's body run by plain code) it stays there. */
    bool open = cur == NULL && sf__sched(me)->region == 0;
    struct sf__light_root root = {
        .region = open ? sf__region_new() : sf__sched(me)->region,
        .plain = open,
        /* As sf_do() takes them under cur (futures.c): stolen tasks' lineage. */
        .up = cur != NULL ? cur->kids_up : NULL,
        .up_tag = cur != NULL ? cur->kids_up_tag : 0,
    };
    sf__scope_init(&root.scope);
    root.scope.light = true;
    struct sf__light_frame fr = {&root, l->d.pub.head, l->over_n, l->frames};
    l->frames = &fr;
    struct sf__scope_frame sfr;
    sf__scope_push(me, &sfr, &root.scope);
    /* Idle workers asleep come and ask for a share: every one for a run of
     * plain code, which starts the program's fork-join (so they join in
     * about one wake's time, not one after another: pool.c, hand_on), one
     * for a run inside a task, which the pool already runs. */
    if (cur == NULL)
        sf__pool_wake_all();
    else
        sf__pool_notify();
    void *r = fn(&l->d.pub, arg);
    sf__scope_pop(me, &sfr);
    if (SF__UNLIKELY(l->d.pub.head != fr.base || l->over_n != fr.over)) {
#ifdef SF_DEBUG
        sf__misuse("sf_light(%p): returned with %ld light tasks not synced", (void *)fn,
                   (long)(l->d.pub.head - fr.base + (long)(l->over_n - fr.over)));
#endif
        /* Release build: nothing is lost - they run (or are waited for). */
        while (run_has_task(l))
            (void)sync_newest(l);
    }
    l->frames = fr.outer;
    int code = atomic_load_explicit(&root.scope.code, memory_order_relaxed);
    if (SF__UNLIKELY(code != 0)) {
        /* Every task of the run has ended (synced), so its message is
         * written: the thieves' through their futures' completion, which
         * the syncs acquired. */
        free(sf__entry(me)->task_msg);
        sf__entry(me)->task_msg = root.scope.msg;
        errno = code;
        return NULL;
    }
    return r;
}
