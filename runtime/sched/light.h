/*
 * light.h - light tasks in the scheduler: a deque per fiber, the runs light
 * tasks belong to, and a stolen light task as a task of its own.
 *
 * A deque per stack. A light task runs on the stack that syncs it or on a
 * thief's, and spawns onto the deque of the stack it runs on: each fiber
 * (thread.h) has its own (made at its first light run), so a fiber that
 * parks keeps its deque as it keeps its frames, and the LIFO order of
 * spawns and syncs on a deque is the nesting of calls on its stack. Thieves
 * find deques through their thread's light_mask.
 *
 * Runs. sf_light() and a stolen task each push a frame on their deque
 * (struct sf__light_frame): the run (struct sf__light_root: its failure
 * scope, its region, the task around it) that the slots above the frame's
 * base belong to. A share writes each slot's run into it (deque.h,
 * SF__SLOT_ROOT), so a thief knows whose task it took; the run outlives
 * every task of it, since sf_light() returns only once all are synced.
 *
 * A stolen task. A thief claims a shared slot (deque.h) and makes it a
 * future of its own: RUNNING from the start (claimed), its function
 * sf__light_task_fn with the slot as its argument, its lineage the run's
 * (cancel.h: cancelling the task around the run reaches it), its region
 * the run's. It stores the future in the slot (SF__SLOT_FUT) and runs it
 * as it runs any claimed task (pool.c, get.c). The owner's sync of that
 * slot gets the future - waiting, helping and parking as sf_get() does -
 * and releases it. So everything a task has - a fiber that runs it for
 * deadlock checks, a trace, sf_cancelled() - a stolen light task has, at
 * the price of a future per steal, not per task.
 *
 * Exactly once. A slot is run by its owner's sync (private, or taken back
 * by CAS) or by the one thief whose CAS claimed it (deque.h, I2, I3);
 * nothing else calls a slot's fn.
 */
#ifndef SF_LIGHT_H
#define SF_LIGHT_H

#include "queue/deque.h"
#include "sched/failure.h"

/* A light run (sf_light): what its tasks belong to. Lives in sf_light()'s
 * frame. */
struct sf__light_root {
    struct sf__scope scope; /* sf_fail() in its tasks fails it */
    uint32_t region;        /* its tasks' isolation region (get.c) */
    bool plain;             /* started by plain code: region is its own
                             * (spawn.c), which a stolen task carries as a
                             * plain task's (SF__REGION_ROOT) */
    sf_future *up;          /* lineage of a stolen task (future.h): the */
    uint64_t up_tag;        /* task around the run, as sf_do() takes it */
};

/* A deque's runs, innermost first; in the frame of the code that pushed. */
struct sf__light_frame {
    const struct sf__light_root *root;
    struct sf_light_slot *base; /* head when pushed: slots above are the run's */
    size_t over;                /* over_n when pushed: values above are the run's */
    struct sf__light_frame *outer;
};

/* A fiber's light state. */
struct sf__light {
    struct sf__deque d;
    struct sf__light_frame *frames; /* owner */
    bool futures;                   /* a future per task (trace): light.c */
    /* Tasks spawned past the deque's room: run at once, their slots (the
     * values in them) kept here for the syncs, newest last; a slot past
     * cap is lost (no memory: the run failed with ENOMEM). */
    struct sf_light_slot *over_v;
    size_t over_n, over_cap;
    /* The value of the last slow sync that ran its task here (spawn.c):
     * the task ran in a copy, not in its slot, where what it spawned but
     * did not sync (a misuse the release build forgives) now lies. */
    struct sf_light_slot ret;
};

/* A copy of slot t's task (its run and data), to run apart from t; not of
 * t's libsf words, which other threads may be writing. */
static inline struct sf_light_slot sf__light_task_copy(const struct sf_light_slot *t)
{
    struct sf_light_slot v = {.run = t->run, .u = t->u};
    return v;
}

/* Runs slot t's task on w, its value into t->u (sf.h): a typed task by its
 * run, an sf_spawn() task by its function. The task spawns from w's head:
 * t must lie below it, or be a copy, or be free again once the task has
 * synced all it spawned. */
static inline void sf__light_slot_run(sf_worker *w, struct sf_light_slot *t)
{
    if (t->run != NULL) {
        t->run(w, t);
        return;
    }
    sf_light_fn fn = t->u.call.fn;
    void *arg = t->u.call.arg;
    t->u.value = fn(w, arg);
}

/* The deque of w (what sf.h hands to light tasks). */
static inline struct sf__light *sf__light_of(sf_worker *w)
{
    return (struct sf__light *)(void *)w;
}

/* Owner: the running fiber's light state, made at its first use; NULL with
 * errno ENOMEM. */
struct sf__light *sf__light_here(struct sf__thread *me);

/* Owner: the run of slot t of l: the innermost frame whose base is at or
 * below t. */
const struct sf__light_root *sf__light_root_of(const struct sf__light *l,
                                               const struct sf_light_slot *t);

/* Owner: answers a thief's ask: shares half of l's private slots (writing
 * their runs) and wakes an idle worker. */
void sf__light_share(struct sf__light *l);
/* A get about to wait (get.c): the waiting stack's light tasks not yet
 * shared become stealable, all of them - its owner syncs none until the
 * get returns, and idle workers would otherwise wait for a spawn that
 * does not come. */
void sf__light_offer(struct sf__thread *me);

/* Owner: what a sync of l's newest task finds (sf__light_pop). */
enum sf__light_pop {
    SF__LIGHT_RUN,    /* the slot is the owner's: call it */
    SF__LIGHT_STOLEN, /* a thief runs it: wait for its future (sf__light_stolen) */
    SF__LIGHT_OVER    /* it ran at its spawn (past the room): its value is kept */
};
/* Owner: pops l's newest task for a sync: *t its slot - for OVER the kept
 * copy, its value in it (zero if lost). RUN and OVER leave head below it;
 * STOLEN leaves it for sf__light_stolen_synced. */
enum sf__light_pop sf__light_pop(struct sf__light *l, struct sf_light_slot **t);
/* Owner: the slot l's next sync pops (the kept copy past the room), or NULL. */
const struct sf_light_slot *sf__light_newest(const struct sf__light *l);
/*
 * A slot's future word (deque.h, SF__SLOT_FUT): region << 1 | 1 while it is
 * shared and unclaimed; the future that runs its task (a thief's, or the
 * trace's); NULL once synced (or, under the trace, for a task that ran at
 * its spawn); and two passing marks. MAKING: the trace's spawn is making
 * the task's future (spawn.c). WRITING: the task's runner is writing its
 * value into the slot (sf__light_task_fn), which it does only by a CAS
 * from its own future - so an owner that gives up on a task (a cycle of
 * gets) takes the word back first (sf__light_revoke), and a runner that
 * ends later writes nothing into a slot the owner has reused.
 */
#define SF__SLOT_MAKING ((void *)2)
#define SF__SLOT_WRITING ((void *)4)

/* Owner: the future of stolen slot t, once its thief has stored it and is
 * not writing (a spin of a few instructions' length, or a yield if the
 * thief was preempted between its claim and its store). */
sf_future *sf__light_stolen(struct sf_light_slot *t);
/* Owner: gives up on slot t's task, run by future f: once this returns,
 * f's runner writes nothing into t (it may still be running). */
void sf__light_revoke(struct sf_light_slot *t, sf_future *f);
/* Owner: stolen slot t is synced (its future got and released). */
void sf__light_stolen_synced(struct sf__light *l, struct sf_light_slot *t);

/* The function of a stolen light task's future, and of every light task's
 * when l->futures: runs the slot's task on the running fiber's deque,
 * inside the slot's run, in a copy; its value then goes in the slot unless
 * the owner gave up on it (SF__SLOT_WRITING). The future's value is the
 * slot. */
void *sf__light_task_fn(void *slot);

/* The function that names slot t's task, until its run writes its value. */
static inline const void *sf__light_slot_fn(const struct sf_light_slot *t)
{
    return t->run != NULL ? (const void *)t->run : (const void *)t->u.call.fn;
}

/* The function the trace names f's task by: a light task's own, not
 * sf__light_task_fn's. */
static inline const void *sf__light_trace_fn(const sf_future *f)
{
    if (f->u.fn != sf__light_task_fn)
        return (const void *)f->u.fn;
    return sf__light_slot_fn(f->val); /* as it starts: its value is not in u yet */
}

/*
 * A thief (an idle worker, or a get helping within `region`, 0 or
 * SF__REGION_ANY: any): claims another thread's oldest shared light task of
 * that region and returns its future, claimed (*claimed its state) and
 * stored in the slot; *from is the owner's thread id. NULL: none (owners
 * with nothing shared were asked to share), or no future to make one with.
 */
sf_future *sf__light_take(struct sf__thread *me, uint32_t region, uint64_t *claimed, int *from);

/* At shutdown, every thread quiet: unmaps every deque. */
void sf__light_free(struct sf__thread *t);

#endif /* SF_LIGHT_H */
