/*
 * sftrace - reads a libsf trace (docs/trace-format.md) and makes it readable.
 *
 * libsf buffers its trace per thread and writes whole batches, so the lines of
 * different threads arrive out of time order and the raw file is hard to read.
 * sftrace checks every line against the format, sorts the lines by time and
 * prints one of:
 *
 *   --summary   (the default) per thread, the tasks it ran by how, the time
 *               it spent running tasks, its steals, sleeps and idle time;
 *   --sorted    the trace itself, sorted by time;
 *   --untimed   the same without the Time column, to compare runs;
 *   --counts    how many times each thread logged each event, by how;
 *   --schedule  per thread, tasks by kind, busy share, sleeps, the longest
 *               wait, idle time, parks and resumes (schedule.c; the default
 *               for a JSON trace);
 *   --profile   per task function: tasks, total and self time, self share
 *               (schedule.c; functions are named in a Chrome trace only);
 *   --json FILE the schedule model (schedule.h) as JSON Lines;
 *   --png, --svg, --pdf FILE  the schedule as a picture, drawn from those
 *               lines by tools/sftrace/sftrace-plot.py with matplotlib.
 *
 * It also reads the Chrome JSON trace of SF_TRACE=chrome (an input whose
 * first non-space character is '['): schedule.c turns it into the same
 * schedule model that the text trace gives, for --schedule, --profile,
 * --json and the pictures; the other outputs and --check read the text format only.
 *
 * It also cross-checks the events against each other (every task queued once
 * and run at most once, FStart/FDone nested per thread, a Take followed by
 * the FStart it promised, ...). By default an inconsistent trace only gets a
 * one-line warning; --check lists every problem and exits 1, which is how the
 * runtime's trace is tested (tests/test_trace.c).
 *
 * The format itself - the header, the events, their argument kinds, the
 * hows - comes from runtime/sched/trace_format.h, the header the runtime writes
 * from; sftrace keeps no list of its own. --events prints that table as the
 * Markdown of docs/trace-format.md, and tools/sftrace/test.sh checks that
 * the docs hold it unchanged. What sftrace adds is one handler per event
 * (on_<ID>), which knows what the event means for the checks and the summary.
 *
 * C11 and POSIX with json-c, without libsf (trace_format.h is macros and
 * one static inline parser), so it builds and reads a trace copied from
 * anywhere, not just where libsf runs.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Made by make in the build tree (tools/local.mk); <>, so that one an
 * in-tree build left in the source tree is not found first from a VPATH
 * build's. */
#include <plot-path.h>

#include "schedule.h"
#include "sched/trace_format.h"

/* Task names are packed into one 64-bit key: thread in the top bits, sequence
 * number in the low ones. The limits are far beyond any real trace. */
#define SEQ_BITS 47
#define MAX_SEQ ((UINT64_C(1) << SEQ_BITS) - 1)
#define MAX_THREAD_ID UINT64_C(65535)
/* A task's thread, and the thread a Take or Steal names: up to 131071, the
 * id of batch tasks (in no thread's queue; docs/trace-format.md). */
#define MAX_TASK_THREAD UINT64_C(131071)
/* A Set line from outside libsf's calls names thread 131071 (MAX_TASK_THREAD);
 * its records keep this id, above every real one a trace has in practice. */
#define OUTSIDE_THREAD MAX_THREAD_ID
/* A promise's number is its maker's count of promises from 2^38 up. */
#define PROMISE_SEQ (UINT64_C(1) << 38)
/* A continuation's number (sf_do_after): its maker's count from 2^38 + 2^37
 * up. It sits in no queue: no sequence, no Submit All. */
#define AFTER_SEQ (PROMISE_SEQ | PROMISE_SEQ >> 1)
#define MAX_COUNT UINT64_C(999999999999999)
/* ~3 years */
#define MAX_MS UINT64_C(99999999999)

#define MAX_SYNTAX_ERRORS 10   /* malformed lines listed before giving up */
#define MAX_PROBLEMS_SHOWN 100 /* consistency problems listed by --check */
#define NONE UINT32_MAX        /* "no record" in 32-bit record indices */
/* Arguments a record keeps: as many as the spec parser allows. */
#define REC_ARGS SF__TRACE_MAX_ARGS
/* The column of an event's first argument, after the fixed ones and the name. */
#define FIRST_ARG (SF_TRACE_FIXED_COLUMNS + 1)
/* Columns split out of a line; more is "too many columns". Above every
 * event's count, so that one argument too many gets the clearer message. */
#define MAX_COLUMNS 8
_Static_assert(FIRST_ARG + REC_ARGS < MAX_COLUMNS, "MAX_COLUMNS too small");

/* Event and how ids come from trace_format.h, in its order. */
enum event {
#define X(id, name, spec, meaning) EV_##id,
    SF_TRACE_EVENTS(X)
#undef X
    EV_COUNT
};

enum how {
#define X(id, name, meaning) HOW_##id,
    SF_TRACE_HOWS(X)
#undef X
    HOW_COUNT
};

static const char *const how_names[HOW_COUNT] = {
#define X(id, name, meaning) [HOW_##id] = name,
    SF_TRACE_HOWS(X)
#undef X
};

static const char *const how_meanings[HOW_COUNT] = {
#define X(id, name, meaning) [HOW_##id] = meaning,
    SF_TRACE_HOWS(X)
#undef X
};

/* One event: name, spec and meaning from trace_format.h; the rest is the
 * spec parsed once by parse_specs(), with the runtime's parser. */
static struct event_info {
    const char *name, *spec, *meaning;
    struct sf__trace_args a;
    int task_at;   /* index of the task argument, -1 if none */
    char args[64]; /* the arguments for people: "task, how" */
} events[EV_COUNT] = {
#define X(id, nm, sp, mn) [EV_##id] = {.name = nm, .spec = sp, .meaning = mn, .task_at = -1},
    SF_TRACE_EVENTS(X)
#undef X
};

static char how_list[64]; /* "inline, pool, steal or drain", for messages */

/* struct rec keeps the event id in a byte */
_Static_assert(EV_COUNT <= 256, "too many events for struct rec");

/* One trace line after validation; the raw text stays in in_buf for
 * --sorted. Kept small: a fib(30) trace has ten million of them. */
struct rec {
    int64_t time; /* microseconds since the runtime started */
    /* the arguments in spec order: a task as its key, a how as its id,
     * the others as numbers (task_of, arg_of and key_of read them) */
    uint64_t arg[REC_ARGS];
    size_t off;
    uint32_t len;  /* a valid line is short */
    uint32_t line;
    uint32_t queue, asleep; /* saturated: only compared with 0 and printed */
    uint16_t thread;
    uint8_t ev;
    uint8_t outside; /* a Set line of Thread 131071: thread is OUTSIDE_THREAD */
};

/* What the trace says about one task, as indices into recs (NONE: absent).
 * A promise's Promise line takes do_r, its Set line done_r. */
struct task {
    uint64_t key1; /* key + 1; 0 marks an empty slot */
    uint32_t do_r, start_r, done_r, discard_r;
    int promise;   /* made by a Promise line, not a Do */
};

struct vec {
    uint32_t *v;
    size_t n, cap;
};

/* Fibers a thread's waits may park work on (runtime/sched/park.h, SF__FIBERS). */
#define MAX_FIBERS 64
_Static_assert(MAX_FIBERS == SCHED_MAX_FIBER, "schedule.h's fibers are the trace's");


struct thr {
    int seen;
    int worker; /* logged Take or Idle: a pool worker */
    uint64_t run[HOW_COUNT], steals, sleeps, idles;
    int64_t busy, asleep, idle;
    /* walk state */
    struct vec runs; /* FStart records of tasks running here, innermost last */
    struct vec gets; /* GStart records of gets in progress, innermost last */
    int64_t busy_from, sleep_from, idle_from;
    uint32_t sleep_r; /* the Sleep record while asleep, else NONE */
    uint32_t nap_r;   /* the Nap record while it naps, else NONE */
    int idling;
    uint32_t expect_r; /* a Take or Steal whose FStart has not come yet */
    /* Fibers (Park, Fiber): runs and gets above are the running fiber's;
     * the others' wait here while it runs. MAX_FIBERS + 1 of each, made at
     * the thread's first Fiber line: most threads never switch, and kept
     * in place they made a thread 3 KiB (200 MiB for 65,536 threads). */
    int fib;
    struct vec *fib_runs, *fib_gets;
    /* Task runs open on all its fibers: the thread is busy while a task of
     * it runs or is parked, and a helped task on another fiber is no new
     * busy stretch (runs.n is the running fiber's only). */
    size_t open_runs;
    uint64_t next_seq, unsubmitted;
};

struct problem {
    uint32_t line;
    size_t seq; /* found order, to keep the sort by line stable */
    char *msg;
};

static const char *prog = "sftrace";
static const char *in_name;
static char *in_buf;
static struct rec *recs;
static size_t nrecs, recs_cap;
static uint32_t *order; /* recs by time, ties in file order */
static struct thr *thrs;
static size_t nthrs; /* highest thread id + 1 */
static size_t ndo, nthreads_traced; /* Do lines and thread ids in the whole trace */
static struct task *tasks;
static size_t tasks_mask;
static struct problem *problems;
static size_t nproblems, problems_cap, problems_dropped;
static int syntax_errors;

/* the span of the trace: its first and last event */
static int64_t t_begin, t_end;

_Noreturn static void die(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: ", prog);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

static void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (!p)
        die("out of memory");
    return p;
}

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        die("out of memory");
    return p;
}

static void vec_push(struct vec *s, uint32_t x)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 16;
        s->v = xrealloc(s->v, s->cap * sizeof *s->v);
    }
    s->v[s->n++] = x;
}

static uint32_t vec_top(const struct vec *s)
{
    return s->n ? s->v[s->n - 1] : NONE;
}

/* ---- the format, from trace_format.h ----------------------------------- */

/* Appends sep and item to the string in buf (size bytes). */
static void list_add(char *buf, size_t size, const char *sep, const char *item)
{
    size_t len = strlen(buf);
    int w = snprintf(buf + len, size - len, "%s%s", sep, item);
    if (w < 0 || (size_t)w >= size - len)
        die("internal error: the list for '%s' is too long", item);
}

/* Parses every event's argument spec into events[], once, before any trace
 * is read. A spec the parser refuses, or one with two tasks, is a bug in
 * trace_format.h: stop. */
static void parse_specs(void)
{
    for (int h = 0; h < HOW_COUNT; h++)
        list_add(how_list, sizeof how_list, h == 0 ? "" : h == HOW_COUNT - 1 ? " or " : ", ",
                 how_names[h]);
    for (int ev = 0; ev < EV_COUNT; ev++) {
        struct event_info *e = &events[ev];
        if (sf__trace_parse_spec(e->spec, &e->a) != 0)
            die("internal error: %s: cannot read the spec '%s'", e->name, e->spec);
        /* for messages and --events: the spec's words, comma-separated */
        const char *p = e->spec;
        for (int n = 0; n < e->a.n; n++) {
            char tok[32];
            size_t len = strcspn(p, " ");
            snprintf(tok, sizeof tok, "%.*s", (int)len, p);
            p += len + (p[len] == ' ');
            list_add(e->args, sizeof e->args, n == 0 ? "" : ", ", tok);
            if (e->a.kind[n] == SF__TK_TASK) {
                if (e->task_at >= 0)
                    die("internal error: %s names two tasks ('%s')", e->name, e->spec);
                e->task_at = n;
            }
        }
    }
}

/* The arguments of a record. Handlers name what they read by kind (or key),
 * not by position, so a reordered spec in the header cannot be misread; an
 * argument the event lacks is a bug in sftrace: stop. */
/* Only for an event that names a task (task_at >= 0). */
static uint64_t task_of(const struct rec *r)
{
    return r->arg[events[r->ev].task_at];
}

/* The index of event ev's first argument of kind k, -1 if it has none. */
static int arg_index(int ev, enum sf__trace_kind k)
{
    for (int a = 0; a < events[ev].a.n; a++)
        if (events[ev].a.kind[a] == k)
            return a;
    return -1;
}

static uint64_t arg_of(const struct rec *r, enum sf__trace_kind k)
{
    int a = arg_index(r->ev, k);
    if (a < 0)
        die("internal error: %s has no argument of kind %d", events[r->ev].name, (int)k);
    return r->arg[a];
}

static uint64_t key_of(const struct rec *r, const char *key)
{
    const struct event_info *e = &events[r->ev];
    size_t kn = strlen(key);
    for (int a = 0; a < e->a.n; a++)
        if (e->a.kind[a] == SF__TK_KEY && strncmp(e->a.key[a], key, kn) == 0 &&
            e->a.key[a][kn] == '=')
            return r->arg[a];
    die("internal error: %s has no %s= argument", e->name, key);
}

/* ---- reading and validating ------------------------------------------- */

static char *read_all(FILE *f, size_t *len)
{
    size_t cap = 1 << 16, n = 0;
    char *buf = xrealloc(NULL, cap);
    for (;;) {
        if (cap - n < 4096) {
            if (cap > SIZE_MAX / 2)
                die("%s: input too large", in_name);
            cap *= 2;
            buf = xrealloc(buf, cap);
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    if (ferror(f))
        die("%s: read error", in_name);
    buf[n] = '\0'; /* room: the last read found at least 4096 bytes free */
    *len = n;
    return buf;
}

static void syntax_error(size_t line, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s:%zu: ", in_name, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    syntax_errors++; /* parse_input gives up at MAX_SYNTAX_ERRORS */
}

/* A canonical decimal: digits only, no sign, no leading zero, at most max.
 * Canonical so that a runtime printing garbage cannot slip through as a
 * number by accident. */
static int parse_uint(const char *s, size_t n, uint64_t max, uint64_t *out)
{
    uint64_t v = 0;
    if (n == 0 || (n > 1 && s[0] == '0'))
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (max - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

static int parse_time(const char *s, size_t n, int64_t *us)
{
    uint64_t ms, frac;
    if (n < 5 || s[n - 4] != '.')
        return -1;
    if (parse_uint(s, n - 4, MAX_MS, &ms) < 0)
        return -1;
    for (size_t i = n - 3; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return -1;
    frac = (uint64_t)(s[n - 3] - '0') * 100 + (uint64_t)(s[n - 2] - '0') * 10 +
           (uint64_t)(s[n - 1] - '0');
    *us = (int64_t)(ms * 1000 + frac);
    return 0;
}

static int parse_task(const char *s, size_t n, uint64_t *key)
{
    const char *dot = memchr(s, '.', n);
    uint64_t t, seq;
    if (!dot)
        return -1;
    size_t tn = (size_t)(dot - s);
    if (parse_uint(s, tn, MAX_TASK_THREAD, &t) < 0 ||
        parse_uint(dot + 1, n - tn - 1, MAX_SEQ, &seq) < 0)
        return -1;
    *key = t << SEQ_BITS | seq;
    return 0;
}

static void task_name(uint64_t key, char *buf, size_t size)
{
    snprintf(buf, size, "%" PRIu64 ".%" PRIu64, key >> SEQ_BITS, key & MAX_SEQ);
}

/* Parses column s (n bytes), argument as of event ev, into *v; on error
 * reports it and returns -1. */
static int parse_arg(size_t line, int ev, int a, const char *s, size_t n, uint64_t *v)
{
    const char *name = events[ev].name;
    const char *key = events[ev].a.key[a];
    switch (events[ev].a.kind[a]) {
    case SF__TK_TASK:
        if (parse_task(s, n, v) == 0)
            return 0;
        syntax_error(line, "%s: '%.*s' is not a task name (thread.sequence)", name, (int)n, s);
        return -1;
    case SF__TK_THREAD:
        if (parse_uint(s, n, MAX_TASK_THREAD, v) == 0)
            return 0;
        syntax_error(line, "%s: '%.*s' is not a thread id", name, (int)n, s);
        return -1;
    case SF__TK_COUNT:
        if (parse_uint(s, n, MAX_COUNT, v) == 0)
            return 0;
        syntax_error(line, "%s: '%.*s' is not a count", name, (int)n, s);
        return -1;
    case SF__TK_HOW:
        for (int h = 0; h < HOW_COUNT; h++)
            if (strlen(how_names[h]) == n && memcmp(how_names[h], s, n) == 0) {
                *v = (uint64_t)h;
                return 0;
            }
        syntax_error(line, "%s: how '%.*s' is not %s", name, (int)n, s, how_list);
        return -1;
    case SF__TK_KEY: {
        size_t kn = strlen(key);
        if (n > kn && memcmp(s, key, kn) == 0 && parse_uint(s + kn, n - kn, MAX_COUNT, v) == 0)
            return 0;
        syntax_error(line, "%s: '%.*s' is not %sN", name, (int)n, s, key);
        return -1;
    }
    }
    return -1;
}

/* Validates one line (not the header) and appends it to recs. */
static void parse_line(size_t line, size_t off, size_t len)
{
    const char *p = in_buf + off;
    const char *f[MAX_COLUMNS];
    size_t fl[MAX_COLUMNS];
    int nf = 0;
    struct rec r;
    uint64_t queue, asleep;

    if (len == 0) {
        syntax_error(line, "empty line");
        return;
    }
    if (memchr(p, '\0', len)) {
        syntax_error(line, "NUL byte in line");
        return;
    }
    if (p[len - 1] == '\r') {
        syntax_error(line, "line ends in a carriage return (CRLF line ends?)");
        return;
    }
    for (size_t i = 0, start = 0; i <= len; i++) {
        if (i == len || p[i] == '\t') {
            if (nf == MAX_COLUMNS) {
                syntax_error(line, "too many columns");
                return;
            }
            f[nf] = p + start;
            fl[nf++] = i - start;
            start = i + 1;
        }
    }
    if (nf < FIRST_ARG) {
        syntax_error(line, "%d tab-separated columns, want at least %d "
                     "(Thread, Queue, Asleep, Time, event)", nf, FIRST_ARG);
        return;
    }

    memset(&r, 0, sizeof r);
    uint64_t thread;
    if (parse_uint(f[0], fl[0], MAX_TASK_THREAD, &thread) < 0 ||
        (thread > MAX_THREAD_ID && thread != MAX_TASK_THREAD)) {
        syntax_error(line, "Thread '%.*s' is not a thread id (0..%" PRIu64 ")",
                     (int)fl[0], f[0], MAX_THREAD_ID);
        return;
    }
    int outside = thread == MAX_TASK_THREAD;
    if (outside)
        thread = OUTSIDE_THREAD;
    r.thread = (uint16_t)thread;
    r.outside = (uint8_t)outside;
    if (parse_uint(f[1], fl[1], MAX_COUNT, &queue) < 0) {
        syntax_error(line, "Queue '%.*s' is not a count", (int)fl[1], f[1]);
        return;
    }
    if (parse_uint(f[2], fl[2], MAX_COUNT, &asleep) < 0) {
        syntax_error(line, "Asleep '%.*s' is not a count", (int)fl[2], f[2]);
        return;
    }
    if (parse_time(f[3], fl[3], &r.time) < 0) {
        syntax_error(line, "Time '%.*s' is not milliseconds with three decimals",
                     (int)fl[3], f[3]);
        return;
    }

    int ev;
    for (ev = 0; ev < EV_COUNT; ev++)
        if (strlen(events[ev].name) == fl[4] && memcmp(events[ev].name, f[4], fl[4]) == 0)
            break;
    if (ev == EV_COUNT) {
        syntax_error(line, "unknown event '%.*s'", (int)fl[4], f[4]);
        return;
    }
    r.ev = (uint8_t)ev;
    if (outside && ev != EV_SET) {
        syntax_error(line, "%s on Thread %" PRIu64 ": only a Set line comes from outside libsf",
                     events[ev].name, MAX_TASK_THREAD);
        return;
    }
    if (nf - FIRST_ARG != events[ev].a.n && events[ev].a.n == 0) {
        syntax_error(line, "%s wants no arguments, found %d", events[ev].name, nf - FIRST_ARG);
        return;
    }
    if (nf - FIRST_ARG != events[ev].a.n) {
        syntax_error(line, "%s wants %d argument%s (%s), found %d", events[ev].name,
                     events[ev].a.n, events[ev].a.n == 1 ? "" : "s", events[ev].args,
                     nf - FIRST_ARG);
        return;
    }
    for (int a = 0; a < events[ev].a.n; a++) {
        if (parse_arg(line, ev, a, f[FIRST_ARG + a], fl[FIRST_ARG + a], &r.arg[a]) < 0)
            return;
    }

    if (nrecs >= NONE - 1)
        die("%s: too many lines", in_name);
    r.line = (uint32_t)line;
    r.off = off;
    r.len = (uint32_t)len;
    r.queue = queue > UINT32_MAX ? UINT32_MAX : (uint32_t)queue;
    r.asleep = asleep > UINT32_MAX ? UINT32_MAX : (uint32_t)asleep;
    if (nrecs == recs_cap) {
        recs_cap = recs_cap ? 2 * recs_cap : 1024;
        recs = xrealloc(recs, recs_cap * sizeof *recs);
    }
    recs[nrecs++] = r;
    if (r.thread >= nthrs)
        nthrs = r.thread + 1;
}

/* The lines of in_buf (len bytes) into recs; -1 after the errors (the
 * first MAX_SYNTAX_ERRORS) if any line is malformed. Returns, never exits:
 * the fuzz target (fuzz.c) reads many traces in one process. */
static int parse_input(size_t len)
{
    size_t line = 0, off = 0;
    while (off < len) {
        if (syntax_errors >= MAX_SYNTAX_ERRORS) {
            fprintf(stderr, "%s: too many malformed lines, giving up\n", prog);
            return -1;
        }
        const char *nl = memchr(in_buf + off, '\n', len - off);
        size_t end = nl ? (size_t)(nl - in_buf) : len;
        line++;
        if (line == 1) {
            if (end - off != strlen(SF_TRACE_HEADER) ||
                memcmp(in_buf + off, SF_TRACE_HEADER, end - off) != 0)
                syntax_error(1, "the first line is not the header "
                             "'Thread<TAB>Queue<TAB>Asleep<TAB>Time<TAB>Message...'");
        } else {
            parse_line(line, off, end - off);
        }
        off = end + 1;
    }
    if (line == 0)
        syntax_error(1, "empty trace (not even the header)");
    if (syntax_errors >= MAX_SYNTAX_ERRORS)
        fprintf(stderr, "%s: too many malformed lines, giving up\n", prog);
    return syntax_errors ? -1 : 0;
}

/* ---- problems ----------------------------------------------------------- */

static void problem(uint32_t line, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    if (nproblems == 10000) { /* enough to see the pattern */
        problems_dropped++;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (nproblems == problems_cap) {
        problems_cap = problems_cap ? 2 * problems_cap : 64;
        problems = xrealloc(problems, problems_cap * sizeof *problems);
    }
    size_t n = strlen(buf) + 1;
    problems[nproblems].line = line;
    problems[nproblems].seq = nproblems;
    problems[nproblems].msg = memcpy(xrealloc(NULL, n), buf, n);
    nproblems++;
}

static int cmp_problem(const void *a, const void *b)
{
    const struct problem *x = a, *y = b;
    if (x->line != y->line)
        return x->line < y->line ? -1 : 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

/* ---- sorting ------------------------------------------------------------ */

static int cmp_order(const void *a, const void *b)
{
    const struct rec *x = &recs[*(const uint32_t *)a], *y = &recs[*(const uint32_t *)b];
    if (x->time != y->time)
        return x->time < y->time ? -1 : 1;
    /* file order breaks ties: this makes the sort stable */
    return (x->line > y->line) - (x->line < y->line);
}

/* ---- the task table ------------------------------------------------------ */

static size_t ntasks;

static struct task *task_find(uint64_t key, int create)
{
    uint64_t h = key * UINT64_C(0x9E3779B97F4A7C15);
    size_t i = (size_t)(h ^ h >> 29) & tasks_mask;
    for (;; i = (i + 1) & tasks_mask) {
        if (tasks[i].key1 == key + 1)
            return &tasks[i];
        if (tasks[i].key1 == 0) {
            if (!create)
                return NULL;
            tasks[i].key1 = key + 1;
            tasks[i].do_r = tasks[i].start_r = tasks[i].done_r = tasks[i].discard_r = NONE;
            ntasks++;
            return &tasks[i];
        }
    }
}

/* Keeps the table at most half full, so that probes stay short. */
static void tasks_reserve(size_t want)
{
    size_t cap = tasks_mask + 1;
    if (tasks && 2 * want <= cap)
        return;
    while (2 * want > cap || cap < 16)
        cap *= 2;
    struct task *old = tasks;
    size_t oldcap = old ? tasks_mask + 1 : 0;
    tasks = xcalloc(cap, sizeof *tasks);
    tasks_mask = cap - 1;
    ntasks = 0;
    for (size_t j = 0; j < oldcap; j++)
        if (old[j].key1)
            *task_find(old[j].key1 - 1, 1) = old[j];
    free(old);
}

static const char *rec_task(const struct rec *r, char *buf, size_t size)
{
    task_name(task_of(r), buf, size);
    return buf;
}

/* First pass: where each task was queued, started, finished, discarded. */
static void build_tasks(void)
{
    for (size_t i = 0; i < nrecs; i++)
        ndo += recs[i].ev == EV_DO;
    tasks_mask = 0;
    tasks_reserve(ndo + 8);
    for (size_t i = 0; i < nrecs; i++) {
        const struct rec *r = &recs[i];
        uint32_t *slot;
        const char *what;
        char name[48];
        if (r->ev != EV_DO && r->ev != EV_FSTART && r->ev != EV_FDONE && r->ev != EV_DISCARD &&
            r->ev != EV_PROMISE && r->ev != EV_SET)
            continue;
        tasks_reserve(ntasks + 1); /* tasks without a Do are not counted above */
        struct task *t = task_find(task_of(r), 1);
        switch (r->ev) {
        case EV_DO: slot = &t->do_r; what = "queued"; break;
        case EV_FSTART: slot = &t->start_r; what = "started"; break;
        case EV_FDONE: slot = &t->done_r; what = "finished"; break;
        case EV_PROMISE: slot = &t->do_r; what = "made"; t->promise = 1; break;
        case EV_SET: slot = &t->done_r; what = "completed"; break;
        default: slot = &t->discard_r; what = "discarded"; break;
        }
        if (*slot != NONE)
            problem(r->line, "task %s %s twice (first at line %" PRIu32 ")",
                    rec_task(r, name, sizeof name), what, recs[*slot].line);
        else
            *slot = (uint32_t)i;
    }
}

/* ---- the walk ------------------------------------------------------------ */

static uint64_t init_threads, init_workers, shutdown_drained, drained_run;
static int init_seen, shutdown_seen;
static uint32_t init_r = NONE, shutdown_r = NONE;
static size_t nworkers_seen;

static struct thr *thr_of(const struct rec *r)
{
    return &thrs[r->thread];
}

static uint32_t rec_index(const struct rec *r)
{
    return (uint32_t)(r - recs);
}

/*
 * One handler per event, called by walk() in time order after the checks
 * every event gets (before_event). A handler checks what its event says
 * against the thread's state so far and updates that state. The table is
 * generated from SF_TRACE_EVENTS, so a new event in trace_format.h does not
 * compile until it has its on_<ID> here.
 */
typedef void handler(const struct rec *r);

static void on_INIT(const struct rec *r)
{
    if (init_seen) {
        problem(r->line, "second Init (first at line %" PRIu32 ")", recs[init_r].line);
        return;
    }
    uint64_t threads = key_of(r, "threads"), workers = key_of(r, "workers");
    init_seen = 1;
    init_r = rec_index(r);
    init_threads = threads;
    init_workers = workers;
    if (r->thread != 0)
        problem(r->line, "Init logged by thread %" PRIu32 ", not by thread 0 "
                "(the thread that starts the runtime is 0)", r->thread);
    if (threads < 1 || threads > 1024)
        problem(r->line, "Init: threads=%" PRIu64 " is outside 1..1024", threads);
    else if (workers != threads - 1)
        problem(r->line, "Init: workers=%" PRIu64 " is not threads - 1 = %" PRIu64, workers,
                threads - 1);
    if (r->queue != 0 || r->asleep != 0)
        problem(r->line, "Init: Queue and Asleep should be 0 when the runtime starts");
}

static void on_DO(const struct rec *r)
{
    struct thr *t = thr_of(r);
    uint64_t task = task_of(r);
    char name[48];
    if (task >> SEQ_BITS == MAX_TASK_THREAD)
        return; /* a batch task: any thread adds them, in no queue of its own */
    if ((task & MAX_SEQ & AFTER_SEQ) == AFTER_SEQ)
        return; /* a continuation: in no queue either */
    if (task >> SEQ_BITS != r->thread)
        problem(r->line, "Do %s logged by thread %" PRIu32 "; a task is named after the "
                "thread that queues it", rec_task(r, name, sizeof name), r->thread);
    else if ((task & MAX_SEQ) != t->next_seq)
        problem(r->line, "Do %s out of sequence: thread %" PRIu32 "'s next task is %" PRIu32
                ".%" PRIu64, rec_task(r, name, sizeof name), r->thread, r->thread, t->next_seq);
    t->next_seq = (task & MAX_SEQ) + 1;
    t->unsubmitted++;
}

static void on_SUBMIT(const struct rec *r)
{
    struct thr *t = thr_of(r);
    uint64_t n = arg_of(r, SF__TK_COUNT);
    if (n > t->unsubmitted)
        problem(r->line, "Submit All %" PRIu64 ", but thread %" PRIu32 " queued only %" PRIu64
                " tasks since its last Submit All", n, r->thread, t->unsubmitted);
    t->unsubmitted = 0;
}

/* What Take and Steal share: the task comes from the queue of the thread
 * that queued it, and this thread's next event must be its FStart
 * (before_event and on_FSTART check that). */
static void take_or_steal(const struct rec *r)
{
    uint64_t from = arg_of(r, SF__TK_THREAD), task_thread = task_of(r) >> SEQ_BITS;
    char name[48];
    if (from != task_thread)
        problem(r->line, "%s %s from thread %" PRIu64 ", but the task was queued by thread %"
                PRIu64, events[r->ev].name, rec_task(r, name, sizeof name), from, task_thread);
    thr_of(r)->expect_r = rec_index(r);
}

/* A thread that logs Take or Idle is a pool worker; Init says how many. */
static void note_worker(const struct rec *r)
{
    struct thr *t = thr_of(r);
    if (!t->worker && ++nworkers_seen > init_workers && init_seen)
        problem(r->line, "more threads act as pool workers (Take/Idle) than Init's workers=%"
                PRIu64, init_workers);
    t->worker = 1;
}

static void on_TAKE(const struct rec *r)
{
    struct thr *t = thr_of(r);
    take_or_steal(r);
    note_worker(r);
    if (t->runs.n || t->gets.n)
        problem(r->line, "Take by a thread that is running a task or getting (only idle "
                "pool workers take)");
}

static void on_STEAL(const struct rec *r)
{
    struct thr *t = thr_of(r);
    take_or_steal(r);
    t->steals++;
    if (t->gets.n == 0 && t->fib == 0)
        problem(r->line, "Steal outside a get (only a blocked get, or a fiber it parked work "
                "on, steals)");
}

static void on_FSTART(const struct rec *r)
{
    struct thr *t = thr_of(r);
    uint64_t task = task_of(r);
    enum how how = (enum how)arg_of(r, SF__TK_HOW);
    char name[48], name2[48];
    t->run[how]++;
    if (t->expect_r != NONE) {
        const struct rec *x = &recs[t->expect_r];
        enum how want = x->ev == EV_TAKE ? HOW_POOL : HOW_STEAL;
        if (task_of(x) != task || how != want)
            problem(r->line, "FStart %s %s, but line %" PRIu32 " %s %s (want FStart %s %s)",
                    rec_task(r, name, sizeof name), how_names[how], x->line,
                    x->ev == EV_TAKE ? "took" : "stole", rec_task(x, name2, sizeof name2),
                    name2, how_names[want]);
        t->expect_r = NONE;
    } else if (how == HOW_POOL || how == HOW_STEAL) {
        problem(r->line, "FStart %s %s without a %s before it", rec_task(r, name, sizeof name),
                how_names[how], how == HOW_POOL ? "Take" : "Steal");
    } else if (how == HOW_INLINE) {
        uint32_t g = vec_top(&t->gets);
        if (g == NONE || task_of(&recs[g]) != task)
            problem(r->line, "FStart %s inline, but the innermost get on this thread is not "
                    "a get of %s", rec_task(r, name, sizeof name), name);
    }
    if (how == HOW_DRAIN)
        drained_run++;
    if (t->open_runs++ == 0)
        t->busy_from = r->time;
    vec_push(&t->runs, rec_index(r));
}

static void on_FDONE(const struct rec *r)
{
    struct thr *t = thr_of(r);
    uint64_t task = task_of(r);
    char name[48], name2[48];
    size_t i = t->runs.n;
    while (i > 0 && task_of(&recs[t->runs.v[i - 1]]) != task)
        i--;
    if (i == 0) {
        problem(r->line, "FDone %s, but %s is not running on thread %" PRIu32,
                rec_task(r, name, sizeof name), name, r->thread);
        return;
    }
    if (i != t->runs.n)
        problem(r->line, "FDone %s while %s (FStart at line %" PRIu32 ") still runs inside it",
                rec_task(r, name, sizeof name),
                rec_task(&recs[vec_top(&t->runs)], name2, sizeof name2),
                recs[vec_top(&t->runs)].line);
    t->open_runs -= t->runs.n - (i - 1);
    t->runs.n = i - 1;
    if (t->open_runs == 0)
        t->busy += r->time - t->busy_from;
}

static void on_GSTART(const struct rec *r)
{
    vec_push(&thr_of(r)->gets, rec_index(r));
}

/* Non Pending, Sleep, Wake and GDone belong to the innermost get in
 * progress on their thread; returns whether r's is. */
static int in_innermost_get(const struct rec *r)
{
    const struct thr *t = thr_of(r);
    uint32_t g = vec_top(&t->gets);
    char name[48], name2[48];
    if (g != NONE && task_of(&recs[g]) == task_of(r))
        return 1;
    problem(r->line, "%s %s, but the innermost get on thread %" PRIu32 " is %s",
            events[r->ev].name, rec_task(r, name, sizeof name), r->thread,
            g == NONE ? "none" : rec_task(&recs[g], name2, sizeof name2));
    return 0;
}

static void on_NON_PENDING(const struct rec *r)
{
    in_innermost_get(r);
}

static void on_PARK(const struct rec *r)
{
    in_innermost_get(r);
}

/* The thread runs another of its fibers: the stacks of tasks and gets are
 * that fiber's from here on. */
static void on_FIBER(const struct rec *r)
{
    struct thr *t = thr_of(r);
    uint64_t n = arg_of(r, SF__TK_COUNT);
    if (n > MAX_FIBERS) {
        problem(r->line, "Fiber %" PRIu64 ": a thread has fibers 0 to %d", n, MAX_FIBERS);
        return;
    }
    if (t->fib_runs == NULL) {
        t->fib_runs = xcalloc(MAX_FIBERS + 1, sizeof *t->fib_runs);
        t->fib_gets = xcalloc(MAX_FIBERS + 1, sizeof *t->fib_gets);
    }
    struct vec runs = t->runs, gets = t->gets;
    t->fib_runs[t->fib] = runs;
    t->fib_gets[t->fib] = gets;
    t->fib = (int)n;
    t->runs = t->fib_runs[n];
    t->gets = t->fib_gets[n];
}

/* A sleep ends (Wake, Nap End) that began at `from`: time asleep, and no
 * busy time even inside a task (the stretch it lies in is added whole at
 * its end: on_FDONE, after_walk). */
static void slept(struct thr *t, int64_t from, int64_t to)
{
    t->asleep += to - from;
    if (t->open_runs)
        t->busy -= to - from;
}

static void on_SLEEP(const struct rec *r)
{
    struct thr *t = thr_of(r);
    in_innermost_get(r);
    t->sleeps++;
    if (t->sleep_r == NONE) {
        t->sleep_r = rec_index(r);
        t->sleep_from = r->time;
    }
}

static void on_WAKE(const struct rec *r)
{
    struct thr *t = thr_of(r);
    char name[48], name2[48];
    in_innermost_get(r);
    if (t->sleep_r == NONE) {
        problem(r->line, "Wake %s without a Sleep", rec_task(r, name, sizeof name));
        return;
    }
    if (task_of(&recs[t->sleep_r]) != task_of(r))
        problem(r->line, "Wake %s, but the Sleep at line %" PRIu32 " was for %s",
                rec_task(r, name, sizeof name), recs[t->sleep_r].line,
                rec_task(&recs[t->sleep_r], name2, sizeof name2));
    slept(t, t->sleep_from, r->time);
    t->sleep_r = NONE;
}

/* A wait that names no one task naps (Nap .. Nap End): a sleep too. */
static void on_NAP(const struct rec *r)
{
    struct thr *t = thr_of(r);
    t->sleeps++;
    if (t->nap_r == NONE) {
        t->nap_r = rec_index(r);
        t->sleep_from = r->time;
    }
}

static void on_NAP_END(const struct rec *r)
{
    struct thr *t = thr_of(r);
    if (t->nap_r == NONE) {
        problem(r->line, "Nap End without a Nap");
        return;
    }
    slept(t, t->sleep_from, r->time);
    t->nap_r = NONE;
}

static void on_GDONE(const struct rec *r)
{
    struct thr *t = thr_of(r);
    uint64_t task = task_of(r);
    char name[48];
    if (in_innermost_get(r)) {
        t->gets.n--;
    } else { /* unwind to it if it is deeper */
        size_t i = t->gets.n;
        while (i > 0 && task_of(&recs[t->gets.v[i - 1]]) != task)
            i--;
        if (i > 0)
            t->gets.n = i - 1;
    }
    /* a get returns the task's value: its task must be over */
    const struct task *x = task_find(task, 0);
    rec_task(r, name, sizeof name);
    if (x && x->done_r != NONE && recs[x->done_r].time > r->time)
        problem(r->line, "GDone %s at %" PRId64 " us, but %s finishes only at line %" PRIu32,
                name, r->time, name, recs[x->done_r].line);
    else if (x && x->done_r == NONE && x->discard_r == NONE)
        problem(r->line, "GDone %s, but %s never finishes", name, name);
}

static void on_GET(const struct rec *r)
{
    const struct task *x = task_find(task_of(r), 0);
    char name[48];
    rec_task(r, name, sizeof name);
    /* Done means finished, or discarded (cancelled: its get sees ECANCELED). */
    uint32_t end = x == NULL ? NONE : x->done_r != NONE ? x->done_r : x->discard_r;
    if (x && end != NONE && recs[end].time > r->time)
        problem(r->line, "Get %s (already done), but %s %s only at line %" PRIu32, name, name,
                end == x->done_r ? "finishes" : "is discarded", recs[end].line);
    else if (x && end == NONE)
        problem(r->line, "Get %s (already done), but %s never finishes", name, name);
}

static void on_DISCARD(const struct rec *r)
{
    /* build_tasks recorded it; check_task_order keeps the task from running.
     * A task taken or stolen and then found cancelled (a cancellation
     * reached it: the runtime's cancel.h) is discarded instead of started:
     * its Discard answers the Take or Steal (the step check lets it pass). */
    struct thr *t = thr_of(r);
    if (t->expect_r != NONE && task_of(&recs[t->expect_r]) == task_of(r))
        t->expect_r = NONE;
}

static void on_IDLE(const struct rec *r)
{
    struct thr *t = thr_of(r);
    t->idles++;
    t->idling = 1;
    t->idle_from = r->time;
    note_worker(r);
    if (t->runs.n || t->gets.n)
        problem(r->line, "Idle while running a task or getting");
}

/* sf_batch_wait_for gave up: no get ends (a batch wait logs none). */
static void on_BATCH_TIMEOUT(const struct rec *r) { (void)r; }

/* A timed wait gave up on the task: the get that began it (if it logged
 * GStart) ends, without the task done. */
static void on_TIMEOUT(const struct rec *r)
{
    struct thr *t = thr_of(r);
    uint32_t g = vec_top(&t->gets);
    if (g != NONE && task_of(&recs[g]) == task_of(r))
        t->gets.n--;
}

static void on_SHUTDOWN(const struct rec *r)
{
    struct thr *t = thr_of(r);
    if (shutdown_seen) {
        problem(r->line, "second Shutdown (first at line %" PRIu32 ")", recs[shutdown_r].line);
        return;
    }
    shutdown_seen = 1;
    shutdown_r = rec_index(r);
    shutdown_drained = key_of(r, "drained");
    if (r->queue != 0)
        problem(r->line, "Shutdown with Queue %" PRIu32 "; shutdown runs every pending task "
                "first", r->queue);
    if (r->asleep != 0)
        problem(r->line, "Shutdown with Asleep %" PRIu32, r->asleep);
    if (t->runs.n || t->gets.n)
        problem(r->line, "Shutdown from inside a task or get");
}

/* A promise is named after the thread that made it, numbered from
 * PROMISE_SEQ up, apart from its tasks. */
static void on_PROMISE(const struct rec *r)
{
    uint64_t task = task_of(r);
    char name[48];
    if (task >> SEQ_BITS != r->thread || (task & MAX_SEQ) < PROMISE_SEQ)
        problem(r->line, "Promise %s logged by thread %" PRIu32 "; a promise is named after "
                "the thread that makes it, numbered from %" PRIu64, rec_task(r, name, sizeof name),
                r->thread, PROMISE_SEQ);
}

/* A Set completes a promise (build_tasks keeps one per promise), and only a
 * promise: nothing runs it. check_task_order keeps it after its Promise. */
static void on_SET(const struct rec *r)
{
    const struct task *x = task_find(task_of(r), 0);
    char name[48];
    if (x != NULL && (!x->promise || x->start_r != NONE))
        problem(r->line, "Set %s, which is no promise (it %s)", rec_task(r, name, sizeof name),
                x->start_r != NONE ? "runs" : "is no Promise line's");
}

static handler *const handlers[EV_COUNT] = {
#define X(id, nm, sp, mn) [EV_##id] = on_##id,
    SF_TRACE_EVENTS(X)
#undef X
};

/* The checks and bookkeeping every event gets before its handler. */
static void before_event(const struct rec *r)
{
    struct thr *t = thr_of(r);
    const char *ev = events[r->ev].name;
    char name[48];

    if (!t->seen && !r->outside) /* Thread 131071 is none of the trace's */
        t->seen = 1;
    if (t->idling) {
        /* Idle has no wake event: the worker's next line is its wake */
        t->idle += r->time - t->idle_from;
        t->idling = 0;
    }
    if (t->sleep_r != NONE && r->ev != EV_WAKE)
        problem(r->line, "%s on thread %" PRIu32 " while it sleeps in a get (Sleep at line %"
                PRIu32 ", no Wake yet)", ev, r->thread, recs[t->sleep_r].line);
    if (t->nap_r != NONE && r->ev != EV_NAP_END)
        problem(r->line, "%s on thread %" PRIu32 " while it naps (Nap at line %" PRIu32
                ", no Nap End yet)", ev, r->thread, recs[t->nap_r].line);
    /* a Take or Steal and the FStart of its task are one step of the thread;
     * or its Discard, when a cancellation reached the task (on_DISCARD) */
    if (t->expect_r != NONE && r->ev != EV_FSTART &&
        !(r->ev == EV_DISCARD && task_of(r) == task_of(&recs[t->expect_r]))) {
        problem(recs[t->expect_r].line, "%s %s is not followed by its FStart on thread %"
                PRIu32, events[recs[t->expect_r].ev].name,
                rec_task(&recs[t->expect_r], name, sizeof name), r->thread);
        t->expect_r = NONE;
    }
    if (shutdown_seen && r->time > recs[shutdown_r].time)
        problem(r->line, "%s after Shutdown (line %" PRIu32 ")", ev, recs[shutdown_r].line);
    if (!init_seen && r->ev != EV_INIT)
        problem(r->line, "%s before Init", ev);
    /* bounds that hold for any trace, read over the whole of it */
    if (r->queue > ndo)
        problem(r->line, "Queue %" PRIu32 ", but the trace queues only %zu tasks", r->queue,
                ndo);
    if (r->asleep > nthreads_traced)
        problem(r->line, "Asleep %" PRIu32 ", but only %zu threads log events", r->asleep,
                nthreads_traced);
}

/* Cross-thread order, after the handler: nothing happens to a task before
 * its Do, and a discarded task never starts. Equal times are fine: lines of
 * different threads written in the same microsecond have no order. */
static void check_task_order(const struct rec *r)
{
    const struct task *x = task_find(task_of(r), 0);
    const char *ev = events[r->ev].name;
    char name[48];
    rec_task(r, name, sizeof name);
    if (!x || x->do_r == NONE)
        problem(r->line, "%s %s, but %s is never queued (no Do)", ev, name, name);
    else if (recs[x->do_r].time > r->time)
        problem(r->line, "%s %s before its Do (line %" PRIu32 ")", ev, name, recs[x->do_r].line);
    if (x && r->ev == EV_FSTART && x->discard_r != NONE)
        problem(r->line, "FStart %s, but %s is discarded at line %" PRIu32
                " (a discarded task never runs)", name, name, recs[x->discard_r].line);
}

/* What is still open at the end of the trace. */
static void after_walk(void)
{
    for (size_t i = 0; i < nthrs; i++) {
        struct thr *t = &thrs[i];
        char nm[48];
        if (!t->seen)
            continue;
        if (t->open_runs)
            t->busy += t_end - t->busy_from;
        /* Without fibers, runs and gets are fiber 0's, and its only. */
        const struct vec *fr = &t->runs, *fg = &t->gets;
        int nfib = 1;
        if (t->fib_runs != NULL) {
            t->fib_runs[t->fib] = t->runs;
            t->fib_gets[t->fib] = t->gets;
            fr = t->fib_runs;
            fg = t->fib_gets;
            nfib = MAX_FIBERS + 1;
        }
        for (int k = 0; k < nfib; k++) {
            for (size_t j = 0; j < fr[k].n; j++)
                problem(recs[fr[k].v[j]].line, "FStart %s has no FDone",
                        rec_task(&recs[fr[k].v[j]], nm, sizeof nm));
            for (size_t j = 0; j < fg[k].n; j++)
                problem(recs[fg[k].v[j]].line, "GStart %s has no GDone",
                        rec_task(&recs[fg[k].v[j]], nm, sizeof nm));
        }
        if (t->sleep_r != NONE || t->nap_r != NONE)
            slept(t, t->sleep_from, t_end);
        if (t->idling)
            t->idle += t_end - t->idle_from;
        if (t->expect_r != NONE)
            problem(recs[t->expect_r].line, "%s %s has no FStart after it",
                    events[recs[t->expect_r].ev].name,
                    rec_task(&recs[t->expect_r], nm, sizeof nm));
    }
    if (shutdown_seen) {
        /* sf_shutdown runs every pending task: no task may be left behind */
        for (size_t i = 0; i <= tasks_mask; i++) {
            const struct task *x = &tasks[i];
            char nm[48];
            if (x->key1 && x->do_r != NONE && x->start_r == NONE && x->discard_r == NONE &&
                !x->promise) /* a promise runs nothing; it may stay unset */
                problem(recs[x->do_r].line, "task %s is queued but neither runs nor is "
                        "discarded before Shutdown", (task_name(x->key1 - 1, nm, sizeof nm), nm));
        }
        if (shutdown_drained != drained_run)
            problem(recs[shutdown_r].line, "Shutdown drained=%" PRIu64 ", but %" PRIu64
                    " tasks start with how=drain", shutdown_drained, drained_run);
    }
}

/* Second pass, in time order: every event through its handler. */
static void walk(void)
{
    for (size_t k = 0; k < nrecs; k++) {
        const struct rec *r = &recs[order[k]];
        before_event(r);
        handlers[r->ev](r);
        if (events[r->ev].task_at >= 0 && r->ev != EV_DO)
            check_task_order(r);
    }
    after_walk();
}

/* ---- output ------------------------------------------------------------ */

static const char *ms(int64_t us, char *buf)
{
    sprintf(buf, "%" PRId64 ".%03d", us / 1000, (int)(us % 1000));
    return buf;
}

static void print_sorted(void)
{
    puts(SF_TRACE_HEADER);
    for (size_t k = 0; k < nrecs; k++) {
        const struct rec *r = &recs[order[k]];
        fwrite(in_buf + r->off, 1, r->len, stdout);
        putchar('\n');
    }
}

/* Writes a line without its Time column, the last of the fixed ones. */
static void put_untimed(const char *p, size_t len)
{
    size_t start = 0, col = 0;
    for (size_t i = 0; i < len && col < SF_TRACE_FIXED_COLUMNS; i++)
        if (p[i] == '\t' && ++col == SF_TRACE_FIXED_COLUMNS - 1)
            start = i + 1;
    const char *end = memchr(p + start, '\t', len - start);
    fwrite(p, 1, start, stdout);
    if (end)
        fwrite(end + 1, 1, len - (size_t)(end + 1 - p), stdout);
    putchar('\n');
}

/* --untimed: what --sorted prints without the Time column, so that two runs
 * of a fixed schedule print the same bytes. */
static void print_untimed(void)
{
    put_untimed(SF_TRACE_HEADER, strlen(SF_TRACE_HEADER));
    for (size_t k = 0; k < nrecs; k++) {
        const struct rec *r = &recs[order[k]];
        put_untimed(in_buf + r->off, r->len);
    }
}

/* --counts: "thread<TAB>event<TAB>how<TAB>count" for every event a thread
 * logs, by how for an event with a how argument ("-" for the others); in
 * thread order, then in trace_format.h's order; counts of 0 left out. */
static void print_counts(void)
{
    size_t per_thread = (size_t)EV_COUNT * (HOW_COUNT + 1);
    uint64_t *n = xcalloc(nthrs * per_thread, sizeof *n);
    for (size_t i = 0; i < nrecs; i++) {
        const struct rec *r = &recs[i];
        int h = arg_index(r->ev, SF__TK_HOW);
        n[r->thread * per_thread + r->ev * (HOW_COUNT + 1u) +
          (h < 0 ? HOW_COUNT : (size_t)r->arg[h])]++;
    }
    for (size_t t = 0; t < nthrs; t++)
        for (int ev = 0; ev < EV_COUNT; ev++)
            for (int h = 0; h <= HOW_COUNT; h++) {
                uint64_t c = n[t * per_thread + (size_t)ev * (HOW_COUNT + 1u) + (size_t)h];
                if (c)
                    printf("%zu\t%s\t%s\t%" PRIu64 "\n", t, events[ev].name,
                           h == HOW_COUNT ? "-" : how_names[h], c);
            }
    free(n);
}

/* Writes s for a Markdown table cell: a '|' would end the cell. */
static void put_cell(const char *s)
{
    for (; *s; s++) {
        if (*s == '|')
            putchar('\\');
        putchar(*s);
    }
}

/* --events: the tables of docs/trace-format.md, from trace_format.h;
 * tools/sftrace/test.sh checks that the docs hold exactly these bytes. */
static void print_events(void)
{
    puts("| event | arguments | meaning |\n|---|---|---|");
    for (int ev = 0; ev < EV_COUNT; ev++) {
        printf("| `%s` | %s | ", events[ev].name, events[ev].args);
        put_cell(events[ev].meaning);
        puts(" |");
    }
    puts("\n| how | meaning |\n|---|---|");
    for (int h = 0; h < HOW_COUNT; h++) {
        printf("| `%s` | ", how_names[h]);
        put_cell(how_meanings[h]);
        puts(" |");
    }
}

static void print_pct(int64_t part, int64_t whole)
{
    if (whole > 0)
        printf(" %6.1f", 100.0 * (double)part / (double)whole);
    else
        printf(" %6s", "-");
}

/* The summary's column for tasks run by how h: drain, which only
 * sf_shutdown does, keeps the narrower column it has always had. */
static int how_width(int h)
{
    return h == HOW_DRAIN ? 6 : 8;
}

static void print_summary(void)
{
    char a[32], b[32], c[32];
    size_t nthreads = nthreads_traced;
    uint64_t ndiscard = 0;
    struct thr all;
    int64_t span = t_end - t_begin;

    memset(&all, 0, sizeof all);
    for (size_t i = 0; i < nrecs; i++)
        ndiscard += recs[i].ev == EV_DISCARD;

    printf("trace: %zu events from %zu thread%s", nrecs, nthreads, nthreads == 1 ? "" : "s");
    if (init_seen)
        printf(", Init threads=%" PRIu64 " workers=%" PRIu64 "\n", init_threads, init_workers);
    else
        printf(", no Init\n");
    printf("span: %s .. %s ms (%s ms)\n", ms(t_begin, a), ms(t_end, b), ms(span, c));

    for (size_t i = 0; i < nthrs; i++) {
        const struct thr *t = &thrs[i];
        for (int h = 0; h < HOW_COUNT; h++)
            all.run[h] += t->run[h];
        all.busy += t->busy;
        all.steals += t->steals;
        all.sleeps += t->sleeps;
        all.asleep += t->asleep;
        all.idles += t->idles;
        all.idle += t->idle;
    }
    uint64_t nrun = 0;
    for (int h = 0; h < HOW_COUNT; h++)
        nrun += all.run[h];
    printf("tasks: %zu queued, %" PRIu64 " run, %" PRIu64 " discarded",
           ndo, nrun, ndiscard);
    if (shutdown_seen)
        printf(", Shutdown drained=%" PRIu64 "\n", shutdown_drained);
    else
        printf(", no Shutdown\n");
    if (span > 0)
        printf("busy: %s ms in all, %.2f threads running tasks on average\n",
               ms(all.busy, a), (double)all.busy / (double)span);
    else
        printf("busy: %s ms in all\n", ms(all.busy, a));

    printf("\n%6s", "thread");
    for (int h = 0; h < HOW_COUNT; h++)
        printf(" %*s", how_width(h), how_names[h]);
    printf(" %10s %6s %7s %7s %10s %7s %10s\n", "busy ms", "busy%", "steals", "sleeps",
           "asleep ms", "idles", "idle ms");
    for (size_t i = 0; i <= nthrs; i++) {
        const struct thr *t = i < nthrs ? &thrs[i] : &all;
        if (i < nthrs && !t->seen)
            continue;
        if (i < nthrs)
            printf("%6zu", i);
        else
            printf("%6s", "all");
        for (int h = 0; h < HOW_COUNT; h++)
            printf(" %*" PRIu64, how_width(h), t->run[h]);
        printf(" %10s", ms(t->busy, a));
        /* all: the share of every listed thread's time spent in tasks */
        print_pct(t->busy, i < nthrs ? span : span * (int64_t)nthreads);
        printf(" %7" PRIu64 " %7" PRIu64 " %10s %7" PRIu64 " %10s\n", t->steals, t->sleeps,
               ms(t->asleep, b), t->idles, ms(t->idle, c));
    }
}

/* The text trace in in_buf (len bytes): parsed into recs, sorted by time,
 * then every event checked against the others (problems). Returns 0, or -1
 * when a line is malformed (said on stderr). */
static int read_text(size_t len)
{
    if (parse_input(len) != 0)
        return -1;
    /* the runtime ends every line; a last line without one was cut short
     * (every line but the header made a record, so it is line nrecs + 1) */
    if (len && in_buf[len - 1] != '\n')
        problem((uint32_t)nrecs + 1, "the last line has no newline (is the trace cut short?)");

    order = xcalloc(nrecs, sizeof *order);
    for (size_t i = 0; i < nrecs; i++)
        order[i] = (uint32_t)i;
    qsort(order, nrecs, sizeof *order, cmp_order);
    t_begin = nrecs ? recs[order[0]].time : 0;
    t_end = nrecs ? recs[order[nrecs - 1]].time : 0;

    /* per-thread file order is the thread's real order: time cannot go back;
     * the Set lines of Thread 131071 are no one thread's (plain threads each
     * write theirs at once) */
    {
        char a[32], b[32];
        int64_t *lastt = xcalloc(nthrs, sizeof *lastt);
        uint32_t *lastl = xcalloc(nthrs, sizeof *lastl);
        for (size_t i = 0; i < nrecs; i++) {
            const struct rec *r = &recs[i];
            if (r->outside)
                continue;
            nthreads_traced += !lastl[r->thread];
            if (lastl[r->thread] && r->time < lastt[r->thread])
                problem(r->line, "time goes back on thread %" PRIu32 ": %s ms after %s ms "
                        "at line %" PRIu32, r->thread, ms(r->time, a), ms(lastt[r->thread], b),
                        lastl[r->thread]);
            lastt[r->thread] = r->time;
            lastl[r->thread] = r->line;
        }
        free(lastt);
        free(lastl);
    }

    thrs = xcalloc(nthrs, sizeof *thrs);
    for (size_t i = 0; i < nthrs; i++)
        thrs[i].sleep_r = thrs[i].nap_r = thrs[i].expect_r = NONE;
    build_tasks();
    walk();

    if (nproblems > 1) {
        /* stable by line: cmp_problem breaks ties by position in the array */
        qsort(problems, nproblems, sizeof *problems, cmp_problem);
    }
    return 0;
}

/* Frees what reading a text trace made, in_buf included, and resets the
 * reader for the next trace (the fuzz target reads one per input). */
static void text_free(void)
{
    for (size_t i = 0; thrs != NULL && i < nthrs; i++) {
        struct thr *t = &thrs[i];
        if (t->fib_runs != NULL) { /* runs and gets are in them, too */
            t->fib_runs[t->fib] = t->runs;
            t->fib_gets[t->fib] = t->gets;
            for (int k = 0; k <= MAX_FIBERS; k++) {
                free(t->fib_runs[k].v);
                free(t->fib_gets[k].v);
            }
            free(t->fib_runs);
            free(t->fib_gets);
        } else {
            free(t->runs.v);
            free(t->gets.v);
        }
    }
    for (size_t i = 0; i < nproblems; i++)
        free(problems[i].msg);
    free(in_buf);
    free(recs);
    free(order);
    free(thrs);
    free(tasks);
    free(problems);
    in_buf = NULL;
    recs = NULL;
    order = NULL;
    thrs = NULL;
    tasks = NULL;
    problems = NULL;
    nrecs = recs_cap = nthrs = ndo = nthreads_traced = tasks_mask = ntasks = 0;
    nproblems = problems_cap = problems_dropped = nworkers_seen = 0;
    syntax_errors = init_seen = shutdown_seen = 0;
    t_begin = t_end = 0;
    init_threads = init_workers = shutdown_drained = drained_run = 0;
    init_r = shutdown_r = NONE;
}

/* The schedule model (schedule.h) of the text trace: FStart..FDone task
 * slices with their nesting depth on their fiber, Sleep..Wake and Nap..Nap
 * End sleeps, Idle to the thread's next event, Park and Fiber marks, Set,
 * Timeout and Batch Timeout marks - a Set from outside libsf (Thread
 * 131071) a mark of no thread (schedule.c's builder keeps a stack per
 * fiber and the parked spans). A thread that logs Take or Idle is a pool
 * worker. */
static void build_schedule(struct sched *sc)
{
    struct st {
        unsigned fiber; /* the fiber running, from its Fiber lines */
        int worker;
    } *st = xcalloc(nthrs ? nthrs : 1, sizeof *st);
    static const uint8_t kind_of_how[HOW_COUNT] = {
        [HOW_INLINE] = SK_INLINE, [HOW_POOL] = SK_POOL, [HOW_STEAL] = SK_STOLEN,
        [HOW_DRAIN] = SK_DRAINED, [HOW_WAIT] = SK_BATCH};
    struct sched_build *b = sched_b_new(sc);
    for (size_t i = 0; i < nrecs; i++) { /* file order: each thread's own order */
        const struct rec *r = &recs[i];
        struct st *t = &st[r->thread];
        double now = (double)r->time;
        if (r->outside) { /* a Set, by no thread of the trace */
            sched_global_mark(sc, now, SM_SET);
            continue;
        }
        sched_b_event(b, r->thread, now);
        switch (r->ev) {
        case EV_INIT: sc->threads_cfg = r->arg[0]; break;
        case EV_TAKE: t->worker = 1; break;
        case EV_IDLE:
            t->worker = 1;
            sched_b_idle(b, r->thread, now);
            break;
        case EV_FSTART:
            sched_b_begin(b, r->thread, t->fiber, now, kind_of_how[arg_of(r, SF__TK_HOW)],
                          sched_task(task_of(r) >> SEQ_BITS, task_of(r) & MAX_SEQ));
            break;
        case EV_SLEEP:
            sched_b_begin(b, r->thread, t->fiber, now, SK_SLEEP,
                          sched_task(task_of(r) >> SEQ_BITS, task_of(r) & MAX_SEQ));
            break;
        /* A trace that fails --check may not pair them: the end is skipped,
         * and the warning has said so. */
        case EV_FDONE: sched_b_end(b, r->thread, t->fiber, now, SCHED_END_TASK); break;
        case EV_NAP: sched_b_begin(b, r->thread, t->fiber, now, SK_SLEEP, SCHED_NO_TASK); break;
        case EV_WAKE:
        case EV_NAP_END: sched_b_end(b, r->thread, t->fiber, now, SCHED_END_SLEEP); break;
        case EV_SET: sched_mark(sc, r->thread, t->fiber, now, SM_SET); break;
        case EV_TIMEOUT:
        case EV_BATCH_TIMEOUT: sched_mark(sc, r->thread, t->fiber, now, SM_TIMEOUT); break;
        case EV_PARK: sched_b_park(b, r->thread, t->fiber, now); break;
        case EV_FIBER:
            if (arg_of(r, SF__TK_COUNT) <= SCHED_MAX_FIBER) { /* --check reports the others */
                t->fiber = (unsigned)arg_of(r, SF__TK_COUNT);
                sched_b_resume(b, r->thread, t->fiber, now);
            }
            break;
        default: break;
        }
    }
    sched_b_finish(b);
    for (size_t i = 0; i < nthrs && i < sc->nthr; i++)
        if (st[i].worker)
            snprintf(sc->thr[i].name, sizeof sc->thr[i].name, "worker %zu", i);
    free(st);
}

/* The directory this program's file is in, with its '/': the link
 * /proc/self/exe names it (symbolic links followed), whatever PATH found;
 * where there is no /proc, argv[0] when it has a directory. NULL when
 * neither says. The caller frees it. */
static char *exe_dir(const char *argv0)
{
    for (size_t cap = 256; cap <= 65536; cap *= 2) {
        char *p = xrealloc(NULL, cap);
        ssize_t n = readlink("/proc/self/exe", p, cap);
        if (n < 0) {
            free(p);
            break;
        }
        if ((size_t)n < cap) {
            p[n] = '\0';
            char *slash = strrchr(p, '/');
            if (slash != NULL) {
                slash[1] = '\0';
                return p;
            }
            free(p);
            break;
        }
        free(p); /* cut short: a longer buffer */
    }
    const char *slash = strrchr(argv0, '/');
    if (slash == NULL)
        return NULL;
    size_t n = (size_t)(slash - argv0) + 1;
    char *p = xrealloc(NULL, n + 1);
    memcpy(p, argv0, n);
    p[n] = '\0';
    return p;
}

/*
 * Where sftrace-plot is. Found from where this program's file is, so that
 * neither a new --prefix nor a moved install tree can leave it pointing at
 * an old place: next to it (the build tree, tools/sftrace/), else
 * ../libexec/libsf/ from it (`make install`'s bin/ and libexec/libsf/ under
 * any prefix), else the pkglibexecdir configure was given (plot-path.h,
 * rewritten by make when it changes: a --libexecdir of its own). The
 * caller frees it.
 */
static char *plot_path(const char *argv0)
{
    static const char *const rel[] = {"sftrace-plot", "../libexec/libsf/sftrace-plot"};
    char *dir = exe_dir(argv0);
    for (size_t k = 0; dir != NULL && k < sizeof rel / sizeof rel[0]; k++) {
        size_t n = strlen(dir), m = strlen(rel[k]) + 1;
        char *p = xrealloc(NULL, n + m);
        memcpy(p, dir, n);
        memcpy(p + n, rel[k], m);
        if (access(p, X_OK) == 0) {
            free(dir);
            return p;
        }
        free(p);
    }
    free(dir);
    char *p = xrealloc(NULL, sizeof SFTRACE_PLOT);
    memcpy(p, SFTRACE_PLOT, sizeof SFTRACE_PLOT);
    return p;
}

/* --json, the pictures, then --schedule (summary 1: given, or the default
 * of a JSON trace when nothing else is asked for) or --profile (summary 2).
 * Returns the exit status. */
static int schedule_outputs(struct sched *sc, const char *json,
                            const char *const pics[SCHED_FORMATS], const char *argv0,
                            int summary)
{
    if (json != NULL) {
        FILE *f = strcmp(json, "-") == 0 ? stdout : fopen(json, "w");
        if (f == NULL) {
            fprintf(stderr, "%s: %s: %s\n", prog, json, strerror(errno));
            return 1;
        }
        int bad = sched_write_json(sc, f) != 0;
        if (f != stdout)
            bad |= fclose(f) != 0;
        if (bad) {
            fprintf(stderr, "%s: %s: write error\n", prog, json);
            return 1;
        }
    }
    for (int k = 0; k < SCHED_FORMATS; k++)
        if (pics[k] != NULL) {
            fflush(stdout); /* before the script writes a picture to it */
            char *plot = plot_path(argv0);
            int bad = sched_plot(sc, plot, pics) != 0;
            free(plot);
            if (bad)
                return 1;
            break;
        }
    if (summary == 2)
        sched_profile(sc, stdout);
    else if (summary)
        sched_summary(sc, stdout);
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: %s [--summary | --sorted | --untimed | --counts | --schedule |\n"
            "       --profile]\n"
            "       [--json OUT] [--png OUT] [--svg OUT] [--pdf OUT] [--check] [FILE]\n"
            "       %s --events\n"
            "Reads a libsf trace (docs/trace-format.md) from FILE, or stdin if FILE\n"
            "is absent or -, checks every line and sorts the lines by Time. A Chrome\n"
            "JSON trace (SF_TRACE=chrome; its first non-space character is '[') is\n"
            "read too, for --schedule (its default), --profile, --json and the\n"
            "pictures.\n"
            "\n"
            "  --summary    (the default) per-thread summary: tasks run by how, busy\n"
            "               time, steals, sleeps and time asleep, idle time, the span\n"
            "  --sorted     print the trace sorted by Time (stable)\n"
            "  --untimed    print the sorted trace without its Time column\n"
            "  --counts     print 'thread<TAB>event<TAB>how<TAB>count' lines: how many\n"
            "               times each thread logged each event (by how for FStart,\n"
            "               '-' for events without one); counts of 0 are left out\n"
            "  --check      list every inconsistency between events on stderr and\n"
            "               exit 1 if there is one (without --check: one warning)\n"
            "  --schedule   per thread: tasks run by kind, busy ms and share, sleeps,\n"
            "               time asleep, the longest wait of one get, idle time,\n"
            "               parks and resumes\n"
            "  --profile    per task function (named in a Chrome trace): tasks, total\n"
            "               and self time, self time's share of the span\n"
            "  --json OUT   write the schedule (task slices, sleeps, idle spells,\n"
            "               parked stretches, park and resume marks) as JSON Lines\n"
            "  --png OUT, --svg OUT, --pdf OUT\n"
            "               draw the schedule with matplotlib (sftrace-plot): a row\n"
            "               per thread, time in ms, tasks coloured by function with\n"
            "               a strip by kind, nesting in bands, a lane per fiber,\n"
            "               parks and resumes marked\n"
            "  --events     print the table of events and hows as Markdown (the\n"
            "               one in docs/trace-format.md) and exit; reads no trace\n"            "  --plot-path  print the sftrace-plot the pictures run and exit\n"
            "  --help       this text\n"
            "\n"
            "OUT may be - for standard output. Exit status: 0 ok, 1 malformed or\n"
            "(with --check) inconsistent trace, or no picture drawn, 2 bad usage.\n",
            prog, prog);
}

#ifndef SFTRACE_NO_MAIN /* fuzz.c has its own */
int main(int argc, char **argv)
{
    enum { M_SUMMARY, M_SORTED, M_UNTIMED, M_COUNTS, M_SCHEDULE, M_PROFILE } mode = M_SUMMARY;
    int mode_set = 0, check = 0, nofile = 1;
    const char *path = NULL, *json = NULL, *pics[SCHED_FORMATS] = {NULL};
    static const char *const pic_opt[SCHED_FORMATS] = {
        [SCHED_PNG] = "--png", [SCHED_SVG] = "--svg", [SCHED_PDF] = "--pdf"};
    FILE *in;

    parse_specs();
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        int m = -1;
        if (strcmp(s, "--help") == 0 || strcmp(s, "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(s, "--plot-path") == 0) {
            /* which sftrace-plot the pictures would run, for tests and
             * for finding out why none is drawn */
            char *plot = plot_path(argv[0]);
            puts(plot);
            free(plot);
            return fflush(stdout) != 0 || ferror(stdout);
        } else if (strcmp(s, "--events") == 0) {
            print_events();
            return fflush(stdout) != 0 || ferror(stdout);
        } else if (strcmp(s, "--sorted") == 0) {
            m = M_SORTED;
        } else if (strcmp(s, "--untimed") == 0) {
            m = M_UNTIMED;
        } else if (strcmp(s, "--counts") == 0) {
            m = M_COUNTS;
        } else if (strcmp(s, "--summary") == 0) {
            m = M_SUMMARY;
        } else if (strcmp(s, "--schedule") == 0) {
            m = M_SCHEDULE;
        } else if (strcmp(s, "--profile") == 0) {
            m = M_PROFILE;
        } else if (strcmp(s, "--json") == 0 || strcmp(s, "--png") == 0 ||
                   strcmp(s, "--svg") == 0 || strcmp(s, "--pdf") == 0) {
            if (i + 1 >= argc || argv[i + 1][0] == '\0') {
                fprintf(stderr, "%s: %s wants an output file\n", prog, s);
                return 2;
            }
            const char **to = &json;
            for (int k = 0; k < SCHED_FORMATS; k++)
                if (strcmp(s, pic_opt[k]) == 0)
                    to = &pics[k];
            *to = argv[++i];
        } else if (strcmp(s, "--check") == 0) {
            check = 1;
        } else if (strcmp(s, "--") == 0) {
            if (i + 2 != argc || path) {
                fprintf(stderr, "%s: one trace at a time (try --help)\n", prog);
                return 2;
            }
            path = argv[++i];
        } else if (s[0] == '-' && s[1] != '\0') {
            fprintf(stderr, "%s: unknown option '%s' (try --help)\n", prog, s);
            return 2;
        } else if (path) {
            fprintf(stderr, "%s: one trace at a time (try --help)\n", prog);
            return 2;
        } else {
            path = s;
        }
        if (m >= 0) {
            if (mode_set && (int)mode != m) {
                fprintf(stderr, "%s: --summary, --sorted, --untimed, --counts, --schedule and "
                        "--profile exclude each other\n", prog);
                return 2;
            }
            mode = m;
            mode_set = 1;
        }
    }
    if (path && strcmp(path, "-") != 0) {
        in = fopen(path, "rb");
        if (!in) {
            fprintf(stderr, "%s: %s: %s\n", prog, path, strerror(errno));
            return 1;
        }
        in_name = path;
        nofile = 0;
    } else {
        in = stdin;
        in_name = "<stdin>";
    }

    /* --json or a picture: the schedule model is wanted */
    int model_out = json != NULL;
    for (int k = 0; k < SCHED_FORMATS; k++)
        model_out |= pics[k] != NULL;
    size_t len;
    in_buf = read_all(in, &len);
    if (!nofile)
        fclose(in);
    struct sched sc;
    memset(&sc, 0, sizeof sc);
    sc.name = nofile ? "<stdin>" : path;
    size_t first = strspn(in_buf, " \t\r\n"); /* in_buf ends in a NUL */
    if (first < len && in_buf[first] == '[') { /* the Chrome JSON trace */
        if (check ||
            (mode_set && mode != M_SUMMARY && mode != M_SCHEDULE && mode != M_PROFILE)) {
            fprintf(stderr, "%s: %s is a Chrome JSON trace: only --schedule (or --summary), "
                    "--profile, --json and the pictures read it\n", prog, in_name);
            return 2;
        }
        if (sched_read_json(&sc, in_buf, len) != 0) {
            sched_free(&sc);
            return 1;
        }
        int rc = schedule_outputs(&sc, json, pics, argv[0],
                                  mode == M_PROFILE ? 2 : mode_set || !model_out);
        sched_free(&sc);
        if (fflush(stdout) != 0 || ferror(stdout)) {
            fprintf(stderr, "%s: write error\n", prog);
            return 1;
        }
        return rc;
    }
    if (read_text(len) != 0)
        return 1;
    if (check) {
        size_t shown = nproblems < MAX_PROBLEMS_SHOWN ? nproblems : MAX_PROBLEMS_SHOWN;
        for (size_t i = 0; i < shown; i++)
            fprintf(stderr, "%s:%" PRIu32 ": %s\n", in_name, problems[i].line, problems[i].msg);
        if (nproblems + problems_dropped > shown)
            fprintf(stderr, "%s: ... and %zu more problems\n", prog,
                    nproblems + problems_dropped - shown);
    } else if (nproblems) {
        fprintf(stderr, "%s: warning: %s has %zu%s problems (--check lists them)\n",
                prog, in_name, nproblems + problems_dropped, problems_dropped ? "+" : "");
    }

    int pic_rc = 0;
    if (mode == M_SCHEDULE || mode == M_PROFILE || model_out) {
        build_schedule(&sc);
        pic_rc = schedule_outputs(&sc, json, pics, argv[0],
                                  mode == M_PROFILE ? 2 : mode == M_SCHEDULE);
        sched_free(&sc);
    }
    if (mode == M_SCHEDULE || mode == M_PROFILE || (model_out && !mode_set))
        ; /* printed above, or the model was all that was asked */
    else if (mode == M_SORTED)
        print_sorted();
    else if (mode == M_UNTIMED)
        print_untimed();
    else if (mode == M_COUNTS)
        print_counts();
    else if (mode_set || !check)
        print_summary();
    else
        printf("%s: %zu events, %zu problem%s\n", in_name, nrecs, nproblems + problems_dropped,
               nproblems + problems_dropped == 1 ? "" : "s");
    int inconsistent = check && nproblems;
    text_free();

    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "%s: write error\n", prog);
        return 1;
    }
    return pic_rc != 0 || inconsistent ? 1 : 0;
}
#endif /* SFTRACE_NO_MAIN */
