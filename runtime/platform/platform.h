/*
 * platform.h - what libsf needs from the CPU and the kernel.
 * Futex sleep and wake, the asymmetric fence pair, the monotonic clock, the
 * CPU's spin-wait pause and a small random number generator. Nothing here
 * knows about futures, queues or threads of the runtime.
 *
 * The asymmetric fence. Every sleep in libsf is a Dekker pair between a hot
 * side that must stay cheap (a task completing, a get submitting work, an
 * owner claiming its own task) and a cold side that is rare (a getter about
 * to sleep, an idle worker about to sleep, a thread claiming another's
 * private task). membarrier(2) with MEMBARRIER_CMD_PRIVATE_EXPEDITED makes
 * every running thread of the process execute a full memory barrier, so the
 * hot side needs only a compiler barrier (sf__fence_light) when the cold side
 * calls sf__fence_heavy. This is the scheme of Linux's sys_membarrier and of
 * liburcu's memb flavour. Where membarrier is missing (Linux < 4.14, or a
 * seccomp filter) both sides use seq_cst fences, and the fork-join fast path
 * then pays one fence per private claim.
 */
#ifndef SF_PLATFORM_H
#define SF_PLATFORM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define SF__LIKELY(x) __builtin_expect(!!(x), 1)
#define SF__UNLIKELY(x) __builtin_expect(!!(x), 0)

/*
 * A field written only by one thread (its owner) and read by others: the
 * owner's own loads need no ordering, it always sees its own latest store.
 * Every use is an owner reading its own field.
 */
#define SF__OWN_LOAD(p) atomic_load_explicit((p), memory_order_relaxed)

/*
 * A counter written only by its owner and read by anyone for statistics:
 * a plain load-add-store (no read-modify-write needed, there is one writer),
 * relaxed because readers want a recent value, not an order with anything.
 */
#define SF__BUMP(c) atomic_store_explicit(&(c), SF__OWN_LOAD(&(c)) + 1, memory_order_relaxed)
/* The same, adding n. */
#define SF__ADD(c, n) atomic_store_explicit(&(c), SF__OWN_LOAD(&(c)) + (n), memory_order_relaxed)

/* True once membarrier is registered; then never changes (set before any
 * worker starts, so every thread reads it after the start's publication). */
extern bool sf__asym;

/* The hot side of an asymmetric Dekker pair. */
static inline void sf__fence_light(void)
{
    if (SF__LIKELY(sf__asym))
        atomic_signal_fence(memory_order_seq_cst);
    else
        atomic_thread_fence(memory_order_seq_cst);
}

/* The cold side: a full barrier in every running thread of the process. */
void sf__fence_heavy(void);

/* Registers membarrier once per process. Called at every start; idempotent. */
void sf__platform_init(void);
/* In a child after fork(): the registration belongs to the parent's memory
 * map, so the next sf__platform_init registers afresh. */
void sf__platform_after_fork(void);

/* Sleeps while *word == expect, at most timeout_ns (<= 0: no limit). May
 * return early for any reason: every caller rechecks its condition. */
void sf__futex_wait(void *word, uint32_t expect, long timeout_ns);
void sf__futex_wake(void *word, int n);
/* Sleeps while every *words[i] == expect[i] (i < n), until the monotonic
 * clock (sf__now_ns) reaches deadline_ns (UINT64_MAX: no limit): Linux's
 * futex_waitv, whose wakers are plain sf__futex_wake calls on any of the
 * words. May return early for any reason. -1 when the kernel lacks it
 * (ENOSYS) or n exceeds SF__FUTEX_WAITV_MAX: the caller sleeps otherwise. */
#define SF__FUTEX_WAITV_MAX 128
int sf__futex_waitv(uint32_t *const *words, const uint32_t *expect, int n, uint64_t deadline_ns);

/*
 * The 32-bit half of a 64-bit atomic word that holds its low bits: a futex
 * works on 32 bits, and the state words libsf sleeps on keep the bits that
 * change at completion in their low half.
 */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ||
                   __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__,
               "the futex word is the low half of a 64-bit word: a byte order with halves");
_Static_assert(sizeof(_Atomic uint64_t) == 2 * sizeof(uint32_t),
               "a 64-bit atomic word is two 32-bit futex words, lock-free");
static inline uint32_t *sf__futex_low_half(_Atomic uint64_t *word)
{
    return (uint32_t *)(void *)word + (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__ ? 1 : 0);
}

/* The calling thread's stack: its lowest address and its size (stacks grow
 * down on every architecture libsf runs on). 0 and 0 when unknown. */
void sf__stack_bounds(uintptr_t *lo, size_t *size);

/* Names the calling thread `prefix` followed by index (none if index < 0),
 * cut to the 15 bytes Linux keeps (ps, top, gdb and perf show it). */
void sf__thread_name(const char *prefix, int index);

/* The CPUs this process may run on: those of its affinity mask (as
 * mpiexec, taskset or a container's cpuset leave it), else the online ones;
 * at least 1. What OpenMP and oneTBB size their default pools by. */
int sf__usable_cpus(void);

/* Monotonic nanoseconds. */
uint64_t sf__now_ns(void);
/* The calling thread's CPU clock (pthread_getcpuclockid), which any thread
 * of the process may read with sf__cpu_ns while this one lives: true with
 * it in *clock, false when the system gives none. Keeps errno. */
bool sf__cpu_clock_self(clockid_t *clock);
/* The CPU time, in nanoseconds, that the thread of `clock` has used: true
 * with it in *ns, false once that thread is gone (the kernel finds no such
 * thread) or the clock cannot be read. Keeps errno. */
bool sf__cpu_ns(clockid_t clock, uint64_t *ns);
/* The sf__now_ns time `seconds` (>= 0, not NaN) from now; UINT64_MAX (no
 * deadline) from 10^9 seconds on (infinity too): beyond that it would not fit
 * 64 bits of nanoseconds safely. */
static inline uint64_t sf__deadline_ns(double seconds)
{
    return seconds < 1e9 ? sf__now_ns() + (uint64_t)(seconds * 1e9) : UINT64_MAX;
}

/* Gives the whole pages within [p, p + n) back to the system; they stay
 * mapped and read as zeros afterwards (private anonymous memory only). */
void sf__memory_discard(void *p, size_t n);

/*
 * The CPU's spin-wait hint, for one turn of a spin loop. It is a compiler
 * barrier on every architecture too: the loop's loads are made again.
 *  - x86, x86-64: `pause`, which lets the core's other hardware thread run,
 *    saves power, and spares the memory-order mis-speculation at the loop's
 *    exit.
 *  - aarch64: `yield`, the architecture's hint that the thread spins (the
 *    one Linux's cpu_relax gives). On cores without hardware threads it
 *    retires as a no-op, so a turn costs a compiler barrier, as Concurrency
 *    Kit's ck_pr_stall does there. Not `isb`, whose pipeline flush some
 *    runtimes use as a delay: a longer turn would stretch every spin count
 *    of the callers (claim.c, get.c, pool.c, ...), which x86 sets.
 *  - any other architecture: the compiler barrier alone; the loop spins at
 *    full speed, as it would with a hint the core ignores.
 */
static inline void sf__pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __asm__ __volatile__("pause" ::: "memory");
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#else
    __asm__ __volatile__("" ::: "memory");
#endif
}

/* xorshift32: a cheap per-thread random number, where a scan of all queues
 * starts, so that thieves and idle workers spread over victims. *state must
 * not be 0. */
static inline uint32_t sf__xorshift32(uint32_t *state)
{
    uint32_t x = *state;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return *state = x;
}

#endif /* SF_PLATFORM_H */
