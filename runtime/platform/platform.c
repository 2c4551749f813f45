/*
 * platform.c - futexes, membarrier, the clock. See platform.h.
 */
#include "platform/platform.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <linux/futex.h>
#include <pthread.h>
#include <linux/membarrier.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

bool sf__asym;

void sf__platform_init(void)
{
    if (sf__asym)
        return; /* registration is per process and lasts */
    long cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    if (cmds > 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
        syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0)
        sf__asym = true; /* set before any worker exists; never cleared */
}

void sf__platform_after_fork(void) { sf__asym = false; }

/* The system calls below keep errno as they found it: they run inside
 * gets that succeed, and a program tells a task that returned NULL from a
 * failed get by errno alone (sf.h). */

void sf__fence_heavy(void)
{
    atomic_thread_fence(memory_order_seq_cst);
    if (sf__asym) {
        int saved = errno;
        /* Cannot fail once registered (EINVAL/EPERM only without it). */
        (void)syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
        errno = saved;
    }
}

void sf__futex_wait(void *word, uint32_t expect, long timeout_ns)
{
    struct timespec ts = {timeout_ns / 1000000000L, timeout_ns % 1000000000L};
    int saved = errno;
    /* EAGAIN (value changed), EINTR and ETIMEDOUT all just return: every
     * caller rechecks its condition. */
    (void)syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, expect, timeout_ns > 0 ? &ts : NULL,
                  NULL, 0);
    errno = saved;
}

#ifndef SYS_futex_waitv
#define SYS_futex_waitv 449 /* the same number on every architecture (Linux 5.16) */
#endif

/* The kernel's struct futex_waitv and flags (linux/futex.h, 5.16), spelled
 * out for older headers. FUTEX2_PRIVATE matches FUTEX_WAKE_PRIVATE: both
 * key the word by this process's memory map alone. */
struct waitv {
    uint64_t val;
    uint64_t uaddr;
    uint32_t flags;
    uint32_t reserved;
};
#define WAITV_U32 0x02u
#define WAITV_PRIVATE 128u

/* 1 once the kernel said ENOSYS: every later call falls back at once.
 * Relaxed: a hint; a stale 0 costs one more failing system call. */
static _Atomic int waitv_missing;

int sf__futex_waitv(uint32_t *const *words, const uint32_t *expect, int n, uint64_t deadline_ns)
{
    if (n < 1 || n > SF__FUTEX_WAITV_MAX ||
        atomic_load_explicit(&waitv_missing, memory_order_relaxed))
        return -1;
    struct waitv v[SF__FUTEX_WAITV_MAX];
    for (int i = 0; i < n; i++)
        v[i] = (struct waitv){expect[i], (uint64_t)(uintptr_t)words[i],
                              WAITV_U32 | WAITV_PRIVATE, 0};
    struct timespec ts = {(time_t)(deadline_ns / 1000000000u), (long)(deadline_ns % 1000000000u)};
    int saved = errno;
    /* Returns the index of a woken word, or -1 with EAGAIN (a word changed),
     * ETIMEDOUT or EINTR: every caller rechecks its condition. */
    long r = syscall(SYS_futex_waitv, v, (unsigned)n, 0u,
                     deadline_ns == UINT64_MAX ? NULL : &ts, CLOCK_MONOTONIC);
    int e = errno;
    errno = saved;
    if (r < 0 && e != EAGAIN && e != ETIMEDOUT && e != EINTR) {
        atomic_store_explicit(&waitv_missing, 1, memory_order_relaxed);
        return -1;
    }
    return 0;
}

void sf__futex_wake(void *word, int n)
{
    int saved = errno;
    (void)syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
    errno = saved;
}

void sf__stack_bounds(uintptr_t *lo, size_t *size)
{
    pthread_attr_t attr;
    void *addr = NULL;
    size_t n = 0;
    /* glibc fills in the main thread's stack too (from its mapping and
     * RLIMIT_STACK). */
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
        if (pthread_attr_getstack(&attr, &addr, &n) != 0)
            addr = NULL, n = 0;
        pthread_attr_destroy(&attr);
    }
    *lo = (uintptr_t)addr;
    *size = n;
}

void sf__thread_name(const char *prefix, int index)
{
    char name[16]; /* the kernel's TASK_COMM_LEN: 15 bytes and the NUL */
    if (index < 0)
        snprintf(name, sizeof name, "%s", prefix);
    else
        snprintf(name, sizeof name, "%s%d", prefix, index);
    int saved = errno;
    (void)pthread_setname_np(pthread_self(), name); /* a name is a courtesy: errors ignored */
    errno = saved;
}

int sf__usable_cpus(void)
{
    /* The calling thread's mask: the caller is the thread that starts the
     * runtime, whose mask is the process's unless the program narrowed it.
     * A mask wider than cpu_set_t (over 1024 CPUs) fails: online then. */
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0)
            return n;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > INT_MAX ? INT_MAX : (int)n;
}

uint64_t sf__now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

bool sf__cpu_clock_self(clockid_t *clock)
{
    /* pthread_getcpuclockid returns an error number and leaves errno alone. */
    return pthread_getcpuclockid(pthread_self(), clock) == 0;
}

bool sf__cpu_ns(clockid_t clock, uint64_t *ns)
{
    struct timespec ts;
    int saved = errno;
    /* A thread clock of a thread that exited reads EINVAL: the kernel looks
     * the thread up in this process at every read. */
    bool ok = clock_gettime(clock, &ts) == 0;
    errno = saved;
    if (ok)
        *ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    return ok;
}

void sf__memory_discard(void *p, size_t n)
{
    long pg = sysconf(_SC_PAGESIZE);
    uintptr_t page = pg > 0 ? (uintptr_t)pg : 4096;
    uintptr_t lo = ((uintptr_t)p + page - 1) & ~(page - 1);
    uintptr_t hi = ((uintptr_t)p + n) & ~(page - 1);
    if (hi > lo) {
        int saved = errno;
        madvise((void *)lo, hi - lo, MADV_DONTNEED); /* a failure only keeps the pages */
        errno = saved;
    }
}
