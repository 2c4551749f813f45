/*
 * debug.c - failure reports and the lock-order witness of a debug
 * build (see debug.h).
 *
 * The witness keeps, per thread, the stack of runtime locks it holds. Taking
 * a lock whose rank is not above the rank of every held lock is a lock-order
 * violation, reported before the thread can block on it: a deadlock is
 * caught the first time one order is used, not the day two threads race.
 */
#include "platform/debug.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The longest report: PIPE_BUF on Linux, so that one write(2) of it to a pipe
 * is atomic too (POSIX); a longer one is cut, ending in "...". */
#define REPORT_MAX 4096

/*
 * One report, one line, one write(2) (docs/debug.md: one line each). Threads
 * that trip checks at once - several misuses of one future, say - each write
 * a whole line: a single write is never interleaved with another (on a pipe
 * up to PIPE_BUF bytes, on a file or terminal whatever its size), where
 * stdio's unbuffered stderr would write each part separately ("libsf:
 * libsf: ..."). No lock: a reporter aborts next, and one that held a lock
 * would keep the others' lines from coming out at all.
 */
static void write_report(const char *prefix, const char *fmt, va_list ap)
{
    char line[REPORT_MAX];
    int n = snprintf(line, sizeof line, "%s", prefix);
    if (n < 0)
        n = 0;
    if ((size_t)n < sizeof line) {
        int m = vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
        if (m > 0)
            n += m;
    }
    /* Room for the newline, and a mark where the line was cut. */
    if ((size_t)n > sizeof line - 1) {
        static const char cut[] = "...";
        n = (int)(sizeof line - 1);
        memcpy(line + n - (sizeof cut - 1), cut, sizeof cut - 1);
    }
    line[n++] = '\n';
    const char *p = line;
    size_t left = (size_t)n;
    while (left > 0) { /* more than one write only if a signal cut it short */
        ssize_t w = write(2, p, left);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        p += w;
        left -= (size_t)w;
    }
}

_Noreturn void sf__debug_fail(const char *file, int line, const char *fmt, ...)
{
    char prefix[256];
    snprintf(prefix, sizeof prefix, "libsf: %s:%d: ", file, line);
    va_list ap;
    va_start(ap, fmt);
    write_report(prefix, fmt, ap);
    va_end(ap);
    abort();
}

_Noreturn void sf__misuse(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    write_report("libsf: ", fmt, ap);
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
