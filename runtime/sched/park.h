/*
 * park.h - waits that park instead of stacking (park.c has the
 * design, the argument why a program without a cycle of gets cannot
 * deadlock, and the bounds).
 *
 * A get whose task runs elsewhere does not run other work on top of its own
 * frame: it parks the fiber it runs on (its stack, suspended where it is)
 * and runs that work on another fiber of the same thread. A parked fiber
 * goes on when its future is done, whatever the other fibers are doing, at
 * the next point where its thread waits or finishes a job.
 */
#ifndef SF_PARK_H
#define SF_PARK_H

#include "sched/thread.h"

/* What a new fiber runs: run(me, job) on that fiber, then, each time that
 * returns and no parked fiber can go on, next(me, job, region), which sets
 * up another job to help with within `region` (false: none). The job is
 * copied into the fiber before anything else happens there. The caller
 * (get.c) owns the policy: what to claim, when not to start anything. */
struct sf__park_job {
    void (*run)(struct sf__thread *me, struct sf__park_job *job);
    bool (*next)(struct sf__thread *me, struct sf__park_job *job, uint32_t region);
    sf_future *f;      /* the task to run, or to get */
    uint64_t claimed;  /* its state as claimed (a task to run) */
    int from;          /* the queue it was claimed from (trace) */
    bool isolated;     /* a get: sf_get_isolated */
    /* A get on the parker's behalf (get.c, Deep chains): DONE once the job
     * has ended; the parker waits for it rather than for f, which it
     * releases once it goes on - this fiber may be parked on f too. */
    sf_future *over;
};

/* A thread exits, none of its fibers parked or running: frees their
 * stacks. The fibers themselves stay, for the struct's next owner: a getter
 * following a chain of waits may reach one through a stale val and read its
 * wait record at any time (get.c, Deadlock). */
void sf__park_release(struct sf__thread *me);
/* The struct is freed (sf_shutdown, no other thread in libsf): frees the
 * fibers too. */
void sf__park_free(struct sf__thread *me);

/* Is p a fiber of a registered thread (thread.h, struct sf__fiber)? For
 * the deadlock detector (get.c), which accepts only those as runners. */
bool sf__park_is_fiber(const void *p);

/* A fiber to run a job on: a spare one, or a new one with a stack of
 * stack_size bytes. NULL when SF__FIBERS are in use, or no memory. Give it
 * back unused with sf__park_unfiber. */
struct sf__fiber *sf__park_fiber(struct sf__thread *me, size_t stack_size);
void sf__park_unfiber(struct sf__thread *me, struct sf__fiber *fb);

/*
 * The running fiber, which waits for f, parks, and fb (sf__park_fiber) runs
 * *job; once the job is done fb helps within `region` (job->next) until a
 * parked fiber can go on. Returns when this fiber is resumed: f is done, or
 * nothing else could run (look again).
 */
void sf__park_run(struct sf__thread *me, sf_future *f, struct sf__fiber *fb,
                  const struct sf__park_job *job, uint32_t region);

/* A parked fiber of this thread that can go on - what it waits for is
 * done, its deadline passed, or else one that yielded: resumes it, the running fiber parking meanwhile (waiting for f; NULL: it
 * yields). True once the running fiber is resumed; false if none could go
 * on (nothing happened). */
bool sf__park_resume_ready(struct sf__thread *me, sf_future *f);

/* What a timed wait parks until (park.c, Order of resumption): one future
 * (one, or NULL), one of a set (set[0..n)), or the deadline `until`
 * (sf__now_ns; UINT64_MAX: none). */
struct sf__park_until {
    sf_future *one;
    sf_future *const *set;
    int n;
    uint64_t until;
};
/* A timed wait's resumption: a parked fiber of this thread that can go on
 * because what it waits for is done or its deadline passed - never one
 * that only yielded - is resumed, the running fiber parking until *c.
 * True once the running fiber is resumed; false if none could go on. */
bool sf__park_resume_done(struct sf__thread *me, const struct sf__park_until *c);

/* Is the task in caller storage f (RUNNING) running on another fiber of
 * this thread, which a helping fiber of its took it to (a get of it then
 * waits, sf__park_wait_local), rather than enclosing the caller? */
bool sf__park_runs_here(const struct sf__thread *me, const sf_future *f);
/* Waits until f, a task in caller storage running on a parked fiber of this
 * thread, is DONE: resumes parked fibers as they can go on, the running one
 * parking meanwhile without showing f to other threads (task.c: none of
 * them may read it). */
void sf__park_wait_local(struct sf__thread *me, sf_future *f);

/* A thread that sleeps while it has parked fibers looks at them again at
 * least this often: their futures complete without waking it (park.c). */
#define SF__PARKED_NAP_NS 1000000L

/* Owner: does this thread have parked fibers? */
static inline bool sf__park_any(const struct sf__thread *me)
{
    return sf__sched(me)->parked != NULL;
}

/* Before an outermost call returns to the program, and before a pool worker
 * or a fresh stack ends: resumes this thread's parked fibers as their
 * futures complete, until none is parked. */
void sf__park_drain(struct sf__thread *me);

/* The wait record of a fiber (get.c, Deadlock): published by its thread,
 * read by any getter that follows a chain of waits. */
void sf__wait_publish(struct sf__fiber *fb, sf_future *w, uint64_t stamp);
bool sf__wait_read(struct sf__fiber *fb, sf_future **w, uint64_t *stamp);
/* A stamp for a new wait: unique, and later than every earlier one. */
uint64_t sf__wait_stamp(void);

#endif /* SF_PARK_H */
