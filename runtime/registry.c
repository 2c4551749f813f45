/*
 * registry.c - layer 3: thread structs, TLS, thread exit and adoption.
 *
 * Structs are never freed while the registry is open: a scanner may hold one
 * at any time. When a thread exits, its struct is marked dead; its queue stays
 * in the set (its pending tasks remain claimable) and a later thread adopts
 * the struct once the queue holds nothing pending.
 *
 * The table grows in chunks of CHUNK entries, allocated as ids reach them,
 * so a million-thread capacity costs one small static array. Entries and
 * chunks are published by the release store of nthreads; entries below it
 * never change while the registry is open, so a scanner reads them after an
 * acquire load of nthreads. Dead structs wait on a list for adoption, so a
 * registration looks at the dead, not at every thread.
 */
#include "registry.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

__thread struct sf__tls sf__tls __attribute__((tls_model("initial-exec")));
_Atomic unsigned sf__registry_gen;

#define CHUNK_BITS 10
#define CHUNK (1 << CHUNK_BITS)
static struct sf__thread **chunks[SF__MAX_THREAD_IDS / CHUNK];
/* Claims only, by CAS (registry.h); id and pub_seq are all that is read. */
struct sf__pending sf__no_thread_queue = {.pub_seq = UINT64_MAX, .id = SF__NO_THREAD_ID};
static _Atomic int nthreads;
/* Exited threads' structs, linked by dead_next; under reg_lock. */
static struct sf__thread *dead;
static pthread_key_t exit_key;
static bool exit_key_live; /* between init and destroy: only a live key is deleted */
static void (*exit_hook)(struct sf__thread *t);
/* Rank REGISTRY (debug.h): taken under the life lock at start, never the
 * reverse; only malloc's own locks are taken under it. */
static struct sf__lock reg_lock = SF__LOCK_INITIALIZER(SF__RANK_REGISTRY, "reg_lock");

int sf__registry_count(void)
{
    /* Acquire: pairs with the release in new_thread; threads[i < n] is set. */
    return atomic_load_explicit(&nthreads, memory_order_acquire);
}

struct sf__thread *sf__registry_get(int i) { return chunks[i >> CHUNK_BITS][i & (CHUNK - 1)]; }

/* Under reg_lock. */
static struct sf__thread *new_thread(int n)
{
    struct sf__thread ***c = &chunks[n >> CHUNK_BITS];
    if (*c == NULL && (*c = calloc(CHUNK, sizeof **c)) == NULL)
        return NULL;
    struct sf__thread *t = aligned_alloc(64, (sizeof *t + 63) / 64 * 64);
    if (t == NULL)
        return NULL;
    memset(t, 0, sizeof *t);
    if (sf__pending_init(&t->q, n) != 0) {
        free(t);
        return NULL;
    }
    t->q.fl = &t->free; /* promotion takes slab futures from here (pending.h) */
    t->id = n;
    t->rng = 2654435761u * (uint32_t)(n + 1);
    (*c)[n & (CHUNK - 1)] = t;
    /* Release: scanners that see the new count see the struct. */
    atomic_store_explicit(&nthreads, n + 1, memory_order_release);
    return t;
}

/* Stack assumed below the registering frame when neither the system nor the
 * caller can tell: the smallest stack libsf allows (config.c). */
#define UNKNOWN_STACK ((size_t)64 << 10)

struct sf__thread *sf__registry_register(bool worker, size_t stack_hint)
{
    sf__lock(&reg_lock);
    /* Relaxed: nthreads is written only under reg_lock, which we hold. */
    int n = atomic_load_explicit(&nthreads, memory_order_relaxed);
    struct sf__thread *t = NULL;
    /* A dead struct whose queue still holds pending tasks (left by a thread
     * that exited without getting them) stays on the list until a claimer
     * empties it. Acquire on alive: the dead thread's last writes to its
     * struct come first. */
    for (struct sf__thread **p = &dead; *p != NULL; p = &(*p)->dead_next) {
        if (atomic_load_explicit(&(*p)->alive, memory_order_acquire) == 0 &&
            !sf__pending_has_pending(&(*p)->q)) {
            t = *p;
            *p = t->dead_next;
            break;
        }
    }
    if (t == NULL) {
        if (n == SF__MAX_THREADS_REGISTERED) {
            sf__unlock(&reg_lock);
            errno = EAGAIN;
            return NULL;
        }
        if ((t = new_thread(n)) == NULL) {
            sf__unlock(&reg_lock);
            errno = ENOMEM;
            return NULL;
        }
    }
    sf__pending_adopt(&t->q);
    SF__OWNER_SET(&t->free);
    /* Atomic (relaxed): statistics read it from other threads (stats.c)
     * while an adopted struct changes kind; the owner reads it plainly. */
    __atomic_store_n(&t->is_worker, worker, __ATOMIC_RELAXED);
    t->cur = NULL;
#if defined(__SANITIZE_THREAD__)
    t->depth = 0;
#endif
    t->fails = NULL;
    t->scope = NULL;
    free(t->task_msg); /* an exited thread's last failure message (task.c) */
    t->task_msg = NULL;
    atomic_store_explicit(&t->waiting_on, NULL, memory_order_relaxed);
    t->region = 0;
    sf__stack_bounds(&t->stack_lo, &t->stack_size);
    /* The mapping's top holds the thread's static TLS (ThreadSanitizer's
     * state alone is most of a megabyte there): count only what lies below
     * our frame. Later frames above it are near the top, where nothing
     * needs bounding. */
    uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
    if (t->stack_size != 0 && sp > t->stack_lo && sp - t->stack_lo < t->stack_size) {
        t->stack_size = sp - t->stack_lo;
    } else {
        /* Unknown (pthread_getattr_np failed, say for want of memory):
         * assume little, a half of a stack we made (its top also holds
         * the TLS) or the smallest libsf allows. Deep chains then move to
         * fresh stacks early, which costs threads, never a crash. */
        size_t assumed = stack_hint / 2 > UNKNOWN_STACK ? stack_hint / 2 : UNKNOWN_STACK;
        t->stack_size = assumed - assumed / 8;
        t->stack_lo = sp - assumed + assumed / 8;
    }
    /* The last quarter of the stack is left to the task that runs there and
     * to the user code it calls before its next get. */
    t->stack_red_task = t->stack_size != 0 ? t->stack_lo + t->stack_size / 4 : 0;
    t->stack_red = UINTPTR_MAX; /* no task runs here yet (registry.h) */
    /* Relaxed: alive is read under reg_lock, or as a hint. */
    atomic_store_explicit(&t->alive, 1, memory_order_relaxed);
    sf__unlock(&reg_lock);
    sf__tls.me = t;
    /* Relaxed: gen changes only at init and destroy, which do not race with
     * registration (sf.h); the value read is the one init wrote. */
    sf__tls.gen = atomic_load_explicit(&sf__registry_gen, memory_order_relaxed);
    /* The destructor runs the exit hook and marks the struct dead when this
     * thread exits. */
    pthread_setspecific(exit_key, t);
    return t;
}

static void on_thread_exit(void *arg)
{
    struct sf__thread *t = arg;
    exit_hook(t);
    sf__lock(&reg_lock);
    /* Release: pairs with the acquire in sf__registry_register of an
     * adopter. */
    atomic_store_explicit(&t->alive, 0, memory_order_release);
    t->dead_next = dead;
    dead = t;
    sf__unlock(&reg_lock);
}

int sf__registry_init(void (*on_exit)(struct sf__thread *t))
{
    if (pthread_key_create(&exit_key, on_thread_exit) != 0) {
        errno = EAGAIN;
        return -1;
    }
    exit_hook = on_exit;
    exit_key_live = true;
    /* Relaxed: see sf__thread_self. */
    atomic_fetch_add_explicit(&sf__registry_gen, 1, memory_order_relaxed);
    return 0;
}

void sf__registry_after_fork(void)
{
    sf__lock_init(&reg_lock, SF__RANK_REGISTRY, "reg_lock");
    /* The forking thread's exit must not run the hook on a struct of the
     * parent's runtime. A key deleted at shutdown may since belong to
     * someone else: delete only our live one. */
    if (exit_key_live)
        pthread_key_delete(exit_key);
    exit_key_live = false;
    /* Relaxed: the child has one thread. */
    atomic_fetch_add_explicit(&sf__registry_gen, 1, memory_order_relaxed);
    atomic_store_explicit(&nthreads, 0, memory_order_relaxed);
    /* The parent's structs and chunks leak: their memory may be in any state. */
    memset(chunks, 0, sizeof chunks);
    dead = NULL;
    sf__tls.me = NULL;
}

void sf__registry_destroy(void)
{
    /* Deleting the key first: no exit destructor can touch a freed struct. */
    pthread_key_delete(exit_key);
    exit_key_live = false;
    /* Relaxed, all three: nobody else uses the registry any more (sf.h:
     * sf_shutdown does not race with other calls; its workers are joined). */
    atomic_fetch_add_explicit(&sf__registry_gen, 1, memory_order_relaxed);
    int n = atomic_load_explicit(&nthreads, memory_order_relaxed);
    for (int i = 0; i < n; i++) {
        struct sf__thread *t = sf__registry_get(i);
        sf__pending_destroy(&t->q);
        sf__freelist_destroy(&t->free);
        free(t->tbuf);
        free(t->task_msg);
        free(t);
    }
    for (size_t c = 0; c < sizeof chunks / sizeof chunks[0] && chunks[c] != NULL; c++) {
        free(chunks[c]);
        chunks[c] = NULL;
    }
    dead = NULL;
    atomic_store_explicit(&nthreads, 0, memory_order_relaxed);
    sf__tls.me = NULL;
}

/* Relaxed loads, both: statistics (platform.h, SF__BUMP); a stale counter
 * makes a snapshot, never a wrong one once the threads are quiet. */
uint64_t sf__registry_queued(void)
{
    int64_t q = 0;
    for (int i = 0, n = sf__registry_count(); i < n; i++) {
        struct sf__thread *r = sf__registry_get(i);
        q += (int64_t)(atomic_load_explicit(&r->c_created, memory_order_relaxed) -
                       atomic_load_explicit(&r->c_inline, memory_order_relaxed) -
                       atomic_load_explicit(&r->c_pool, memory_order_relaxed) -
                       atomic_load_explicit(&r->c_stolen, memory_order_relaxed) -
                       atomic_load_explicit(&r->c_drained, memory_order_relaxed) -
                       atomic_load_explicit(&r->c_discarded, memory_order_relaxed) -
                       atomic_load_explicit(&r->c_cancelled, memory_order_relaxed));
    }
    return q < 0 ? 0 : (uint64_t)q;
}

int sf__registry_asleep(void)
{
    int a = 0;
    for (int i = 0, n = sf__registry_count(); i < n; i++)
        a += atomic_load_explicit(&sf__registry_get(i)->asleep, memory_order_relaxed);
    return a;
}
