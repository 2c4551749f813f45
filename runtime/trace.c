/*
 * trace.c - SF_TRACE: the seed's schedule trace (docs/trace-format.md).
 *
 * Each thread formats its lines into its own buffer and writes whole buffers
 * with one write(2), so tracing takes no lock of ours and lines never
 * interleave mid-line (the file is opened O_APPEND; stderr writes of whole
 * lines). The cost: lines of different threads are not in time order in the
 * file; the Time column orders them (tools/sftrace sorts). A thread flushes
 * when its buffer fills, before it sleeps, when it exits, and at shutdown.
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TBUF_BYTES 65536
#define LINE_MAX_BYTES 512

static void write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return; /* a broken trace sink must not break the program */
        }
        p += w;
        n -= (size_t)w;
    }
}

int sf__trace_open(const char *path)
{
    int fd = 2;
    if (path != NULL) {
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
        if (fd < 0)
            return -1;
    }
    sf__rt.trace_fd = fd;
    static const char header[] = "Thread\tQueue\tAsleep\tTime\tMessage...\n";
    write_all(fd, header, sizeof header - 1);
    return 0;
}

void sf__trace_close(void)
{
    if (sf__rt.trace_fd > 2)
        close(sf__rt.trace_fd);
    sf__rt.trace_fd = 2;
}

void sf__trace_flush(struct sf__thread *t)
{
    /* Writes of at most PIPE_BUF bytes that end a line: a pipe (stderr to
     * a pager, say) keeps each of them whole even with other writers. */
    size_t done = 0;
    while (done < t->tlen) {
        size_t n = t->tlen - done;
        if (n > PIPE_BUF) {
            n = PIPE_BUF;
            while (n > 0 && t->tbuf[done + n - 1] != '\n')
                n--;
            if (n == 0) /* cannot happen (lines are < LINE_MAX_BYTES); never loop */
                n = PIPE_BUF;
        }
        write_all(sf__rt.trace_fd, t->tbuf + done, n);
        done += n;
    }
    t->tlen = 0;
}

/* Tasks queued and not started, over all threads. Each counter is exact for
 * its owner; the sum is a snapshot taken while others move, so clamp. */
static long long queued(void)
{
    long long q = 0;
    int n = sf__registry_count();
    for (int i = 0; i < n; i++) {
        struct sf__thread *r = sf__registry_get(i);
        q += (long long)(atomic_load_explicit(&r->c_created, memory_order_relaxed) -
                         atomic_load_explicit(&r->c_inline, memory_order_relaxed) -
                         atomic_load_explicit(&r->c_pool, memory_order_relaxed) -
                         atomic_load_explicit(&r->c_stolen, memory_order_relaxed) -
                         atomic_load_explicit(&r->c_drained, memory_order_relaxed) -
                         atomic_load_explicit(&r->c_discarded, memory_order_relaxed));
    }
    return q < 0 ? 0 : q;
}

void sf__trace(struct sf__thread *t, const char *fmt, ...)
{
    if (t->tbuf == NULL && (t->tbuf = malloc(TBUF_BYTES)) == NULL)
        return; /* no memory for tracing: the program goes on untraced */
    if (t->tlen > TBUF_BYTES - LINE_MAX_BYTES)
        sf__trace_flush(t);
    uint64_t ns = sf__now_ns() - sf__rt.t0_ns;
    char *p = t->tbuf + t->tlen;
    size_t room = LINE_MAX_BYTES - 1;
    int n = snprintf(p, room, "%d\t%lld\t%d\t%llu.%03llu\t", t->id, queued(),
                     atomic_load_explicit(&sf__rt.asleep, memory_order_relaxed),
                     (unsigned long long)(ns / 1000000), (unsigned long long)(ns / 1000 % 1000));
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(p + n, room - (size_t)n, fmt, ap);
    va_end(ap);
    size_t len = (size_t)n + ((size_t)m < room - (size_t)n ? (size_t)m : room - (size_t)n - 1);
    p[len++] = '\n';
    t->tlen += len;
}
