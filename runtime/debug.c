/*
 * debug.c - layer 0: failure reports and the lock-order witness of a debug
 * build (see debug.h).
 *
 * The witness keeps, per thread, the stack of runtime locks it holds. Taking
 * a lock whose rank is not above the rank of every held lock is a lock-order
 * violation, reported before the thread can block on it: a deadlock is
 * caught the first time one order is used, not the day two threads race.
 */
#include "debug.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static void report(const char *prefix, const char *fmt, va_list ap)
{
    /* One fprintf per part, but stderr is unbuffered and the process dies
     * next: nothing else is written meanwhile by this thread. */
    fputs(prefix, stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

_Noreturn void sf__debug_fail(const char *file, int line, const char *fmt, ...)
{
    char prefix[256];
    snprintf(prefix, sizeof prefix, "libsf: %s:%d: ", file, line);
    va_list ap;
    va_start(ap, fmt);
    report(prefix, fmt, ap);
    va_end(ap);
    abort();
}

_Noreturn void sf__misuse(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report("libsf: ", fmt, ap);
    va_end(ap);
    abort();
}

void sf__lock_init(struct sf__lock *l, enum sf__lock_rank rank, const char *name)
{
    pthread_mutex_init(&l->m, NULL);
#ifdef SF_DEBUG
    l->rank = rank;
    l->name = name;
#else
    (void)rank;
    (void)name;
#endif
}

void sf__lock_destroy(struct sf__lock *l) { pthread_mutex_destroy(&l->m); }

#ifdef SF_DEBUG
__thread char sf__debug_me;

#define HELD_MAX 8 /* more than the ranks: nesting deeper is itself a bug */
static __thread struct sf__lock *held[HELD_MAX];
static __thread int nheld;

void sf__lock(struct sf__lock *l)
{
    for (int i = 0; i < nheld; i++)
        if (held[i]->rank >= l->rank)
            sf__debug_fail(__FILE__, __LINE__,
                           "lock order violated: taking %s (rank %d) while holding %s (rank %d)",
                           l->name, (int)l->rank, held[i]->name, (int)held[i]->rank);
    if (nheld == HELD_MAX)
        sf__debug_fail(__FILE__, __LINE__, "more than %d runtime locks held", HELD_MAX);
    pthread_mutex_lock(&l->m);
    held[nheld++] = l;
}

void sf__unlock(struct sf__lock *l)
{
    int i = nheld;
    while (i > 0 && held[i - 1] != l)
        i--;
    if (i == 0)
        sf__debug_fail(__FILE__, __LINE__, "unlocking %s, which this thread does not hold",
                       l->name);
    for (; i < nheld; i++)
        held[i - 1] = held[i];
    nheld--;
    pthread_mutex_unlock(&l->m);
}

void sf__witness_assert_none(const char *what)
{
    if (nheld > 0)
        sf__debug_fail(__FILE__, __LINE__, "%s while holding %s: no runtime lock may be held then",
                       what, held[nheld - 1]->name);
}
#endif
