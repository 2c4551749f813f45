/*
 * park.c - sleeping and waking (Linux futexes) and the asymmetric fence.
 *
 * Every sleep in libsf is a Dekker pair between a hot side that must stay
 * cheap (a task completing, a get submitting work) and a cold side that is
 * about to sleep anyway (a blocked getter, an idle worker). membarrier(2)
 * with MEMBARRIER_CMD_PRIVATE_EXPEDITED makes every running thread of the
 * process execute a full memory barrier, so the hot side needs only a compiler
 * barrier (sf__fence_light) when the cold side calls sf__fence_heavy. This is
 * the scheme of Linux's sys_membarrier and liburcu's urcu-memb flavour. Where
 * membarrier is missing both sides use seq_cst fences.
 */
#include "internal.h"

#include <linux/futex.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

bool sf__asym;

void sf__park_init(void)
{
    if (sf__asym)
        return; /* registration is per process and lasts */
    long cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    if (cmds > 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
        syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0)
        sf__asym = true; /* set before any worker exists; never cleared */
}

void sf__fence_heavy(void)
{
    atomic_thread_fence(memory_order_seq_cst);
    if (sf__asym)
        /* Cannot fail once registered (EINVAL/EPERM only without it). */
        (void)syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
}

void sf__futex_wait(void *word, uint32_t expect, long timeout_ns)
{
    struct timespec ts = {timeout_ns / 1000000000L, timeout_ns % 1000000000L};
    /* EAGAIN (value changed), EINTR and ETIMEDOUT all just return: every
     * caller rechecks its condition. */
    (void)syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, expect, timeout_ns > 0 ? &ts : NULL,
                  NULL, 0);
}

void sf__futex_wake(void *word, int n)
{
    (void)syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

uint64_t sf__now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
