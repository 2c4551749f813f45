/*
 * platform.c - layer 0: futexes, membarrier, the clock. See platform.h.
 */
#include "platform.h"

#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <linux/membarrier.h>
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

uint64_t sf__now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
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
