/*
 * debug.h - the checks of a debug build (./configure --enable-debug,
 * which defines SF_DEBUG), and the runtime's locks.
 *
 * A debug build checks, and aborts with one line on stderr naming what broke:
 *  - assertions (SF__ASSERT) on every state transition of a future and on
 *    the queue's invariants;
 *  - owner-only fields: a structure that one thread owns records its owner,
 *    and every owner-only operation checks the caller is that thread;
 *  - the lock order: every runtime lock has a rank, and a thread may only
 *    take a lock of higher rank than every lock it holds (the "witness" of
 *    FreeBSD and jemalloc, reduced to ranks); no lock may be held while a
 *    task runs;
 *  - misuse of the API that the release build can only partly detect: a get
 *    or release of a future already released, a second release (sf__misuse);
 *  - misuse of tasks in caller storage (sf_task, sf.h), named with the
 *    sf_task's address (sf__misuse): sf_task_do over one whose task is
 *    still queued (task.c); one whose memory went away before its get,
 *    found when its owner next reads through its queue slot - the memory
 *    no longer holds the future that slot was filled with (pending.c,
 *    check_marked); one never got when its thread exits or at sf_shutdown
 *    (lifecycle.c).
 * In a release build every check compiles to nothing.
 *
 * Lock order (ranks; take only upwards, the leaves take nothing under them):
 *   SF__RANK_LIFE      the runtime's start/stop lock (lifecycle.c)
 *   SF__RANK_REGISTRY  the registry's lock (registry.c)
 *   SF__RANK_BATCHES   the ring of open batches (batch.c); a batch's own
 *                      lock, a leaf, nests under it
 *   SF__RANK_LEAF      the future slabs' lock (future.c), a queue's foreign
 *                      claim lock (claim.c), a batch's lock (batch.c), the
 *                      ready list's takers' lock (after.c); never nested in
 *                      each other
 */
#ifndef SF_DEBUG_H
#define SF_DEBUG_H

#include <pthread.h>
#include <stdbool.h>

enum sf__lock_rank {
    SF__RANK_LIFE = 1,
    SF__RANK_REGISTRY = 2,
    SF__RANK_BATCHES = 3,
    SF__RANK_LEAF = 4
};

/* A runtime lock: a mutex with its rank and name for the witness. */
struct sf__lock {
    pthread_mutex_t m;
#ifdef SF_DEBUG
    enum sf__lock_rank rank;
    const char *name;
#endif
};

#ifdef SF_DEBUG
#define SF__LOCK_INITIALIZER(rank, name) {PTHREAD_MUTEX_INITIALIZER, (rank), (name)}
#else
#define SF__LOCK_INITIALIZER(rank, name) {PTHREAD_MUTEX_INITIALIZER}
#endif

void sf__lock_init(struct sf__lock *l, enum sf__lock_rank rank, const char *name);
void sf__lock_destroy(struct sf__lock *l);

#ifdef SF_DEBUG
void sf__lock(struct sf__lock *l);
void sf__unlock(struct sf__lock *l);
/* Aborts if the calling thread holds any runtime lock; `what` names the
 * place ("a task starts"). */
void sf__witness_assert_none(const char *what);
#else
static inline void sf__lock(struct sf__lock *l) { pthread_mutex_lock(&l->m); }
static inline void sf__unlock(struct sf__lock *l) { pthread_mutex_unlock(&l->m); }
static inline void sf__witness_assert_none(const char *what) { (void)what; }
#endif

/* One line on stderr, "libsf: <file>:<line>: ...", then abort(). Debug
 * builds only; a release build never stops the program. */
_Noreturn void sf__debug_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* API misuse the debug build detects: "libsf: <fmt>" and abort(). */
_Noreturn void sf__misuse(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#ifdef SF_DEBUG
#define SF__ASSERT(cond, ...)                                                      \
    ((cond) ? (void)0 : sf__debug_fail(__FILE__, __LINE__, "assertion '" #cond "' failed: " __VA_ARGS__))

/* Owner-only structures: a field naming the owning thread, set when the
 * thread takes the structure over, checked by every owner-only operation.
 * The address of a thread-local byte identifies a live thread. */
extern __thread char sf__debug_me;
#define SF__OWNER_FIELD const void *debug_owner;
#define SF__OWNER_SET(obj) ((obj)->debug_owner = &sf__debug_me)
#define SF__OWNER_CHECK(obj, what)                                                 \
    SF__ASSERT((obj)->debug_owner == &sf__debug_me, "%s by a thread that does not own it", (what))
#else
#define SF__ASSERT(cond, ...) ((void)0)
#define SF__OWNER_FIELD
#define SF__OWNER_SET(obj) ((void)0)
#define SF__OWNER_CHECK(obj, what) ((void)0)
#endif

#endif /* SF_DEBUG_H */
