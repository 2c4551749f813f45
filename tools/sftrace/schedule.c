/*
 * schedule.c - the schedule model of schedule.h, the builder both readers
 * feed it through, the reader of libsf's Chrome JSON trace, the model
 * written as JSON Lines and drawn by sftrace-plot, and the per-thread
 * summary printed from it.
 *
 * The builder (sched_b_*) takes a thread's events in that thread's order:
 * slices begin and end on a stack per fiber (tasks and gets nest per fiber:
 * docs/waiting.md), a resume switches the thread to another fiber, and an
 * idle spell lasts to the thread's next event. A switch away from a fiber
 * with tasks open on it starts an SK_PARKED span that the switch back ends;
 * so the text trace (Fiber lines) and the JSON trace (resume instants, each
 * fiber its own track) give the same model. What is still open when the
 * trace ends (a process that exited without sf_shutdown) ends there.
 *
 * The JSON reader parses each event object with json-c (strict RFC 8259)
 * and keeps what the model needs from it. It relies on what
 * libsf's writer guarantees (runtime/sched/trace.c, docs/trace-format.md): the
 * slice events (B/E) and instants (i) of one thread, on all its fibers'
 * tracks, appear in the file in that thread's order, so a per-fiber stack
 * pairs every E with its B. Flow events (s/f) are written by the thread that
 * ran the task and are not in the start thread's order; the model does not
 * need them. A file that ends without its closing "]" (the process exited
 * without sf_shutdown) is read to its last whole event.
 */
#include "schedule.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <json-c/json.h>

extern char **environ;

const char *const sched_kind_name[SK_COUNT] = {
    "inline", "wait-inlined", "pool", "stolen", "drained", "batch-wait", "asleep", "idle",
    "parked",
};

static void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n);
    if (p == NULL) {
        fputs("sftrace: out of memory\n", stderr);
        exit(1);
    }
    return p;
}

/* The capacity that holds index `need`: double from `cap` (16 at least),
 * up to `most`, which the readers' checks keep `need` under. Growing by
 * exactly need + 1 would copy the whole array once per new thread of a
 * trace whose ids ascend: quadratic in the threads. */
static size_t grown(size_t cap, size_t need, size_t most)
{
    if (need >= most) {
        fprintf(stderr, "sftrace: internal error: thread %zu past the limit %zu\n", need,
                most - 1);
        exit(1);
    }
    size_t n = cap ? cap : 16;
    while (n <= need)
        n = n > most / 2 ? most : n * 2;
    return n;
}

struct sched_thread *sched_thread(struct sched *s, size_t tid)
{
    if (tid >= s->thrcap) {
        size_t n = grown(s->thrcap, tid, SCHED_MAX_THREAD + 1);
        s->thr = xrealloc(s->thr, n * sizeof *s->thr);
        memset(s->thr + s->thrcap, 0, (n - s->thrcap) * sizeof *s->thr);
        for (size_t i = s->thrcap; i < n; i++)
            snprintf(s->thr[i].name, sizeof s->thr[i].name, i == 0 ? "main" : "thread %zu", i);
        s->thrcap = n;
    }
    if (tid >= s->nthr)
        s->nthr = tid + 1;
    s->thr[tid].seen = 1;
    return &s->thr[tid];
}

uint32_t sched_fn(struct sched *s, const char *name)
{
    /* A trace names a few functions: a search from the latest added (the
     * slices of one function tend to come together). */
    for (size_t i = s->nfn; i-- > 0;)
        if (strcmp(s->fn[i], name) == 0)
            return (uint32_t)i + 1;
    if (s->nfn == s->fncap) {
        s->fncap = s->fncap ? s->fncap * 2 : 16;
        s->fn = xrealloc(s->fn, s->fncap * sizeof *s->fn);
    }
    size_t n = strlen(name) + 1;
    s->fn[s->nfn] = memcpy(xrealloc(NULL, n), name, n);
    return (uint32_t)++s->nfn;
}

void sched_time(struct sched *s, double t)
{
    if (!s->have_time || t < s->t_begin)
        s->t_begin = t;
    if (!s->have_time || t > s->t_end)
        s->t_end = t;
    s->have_time = 1;
}

void sched_add(struct sched *s, size_t tid, unsigned fiber, double t0, double t1,
               enum sched_kind k, uint32_t depth, uint64_t task)
{
    struct sched_thread *t = sched_thread(s, tid);
    /* From 4, not more: a trace of many threads has few slices on most
     * (65,536 threads of one idle spell each took 160 MiB from 64). */
    if (t->n == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 4;
        t->s = xrealloc(t->s, t->cap * sizeof *t->s);
    }
    t->s[t->n++] = (struct sched_slice){t0, t1 < t0 ? t0 : t1, task, depth, 0, (uint8_t)k,
                                        (uint8_t)fiber};
    sched_time(s, t0);
    sched_time(s, t1);
}

void sched_mark(struct sched *s, size_t tid, unsigned fiber, double t, enum sched_mark_kind k)
{
    struct sched_thread *th = sched_thread(s, tid);
    if (th->nm == th->mcap) {
        th->mcap = th->mcap ? th->mcap * 2 : 4;
        th->m = xrealloc(th->m, th->mcap * sizeof *th->m);
    }
    th->m[th->nm++] = (struct sched_mark){t, (uint8_t)k, (uint8_t)fiber};
    sched_time(s, t);
}

void sched_global_mark(struct sched *s, double t, enum sched_mark_kind k)
{
    if (s->ngm == s->gmcap) {
        s->gmcap = s->gmcap ? s->gmcap * 2 : 4;
        s->gm = xrealloc(s->gm, s->gmcap * sizeof *s->gm);
    }
    s->gm[s->ngm++] = (struct sched_mark){t, (uint8_t)k, 0};
    sched_time(s, t);
}

struct span {
    double from, to;
};

/* The union of t's slices that `pick` takes, as disjoint spans in order
 * (slices are sorted by start: merged as they come) in *out (malloc'd);
 * returns their number. */
static size_t spans_of(const struct sched_thread *t, int (*pick)(const struct sched_slice *),
                       struct span **out)
{
    struct span *v = NULL;
    size_t n = 0, cap = 0;
    for (size_t i = 0; i < t->n; i++) {
        const struct sched_slice *x = &t->s[i];
        if (!pick(x))
            continue;
        if (n > 0 && x->t0 <= v[n - 1].to) {
            if (x->t1 > v[n - 1].to)
                v[n - 1].to = x->t1;
            continue;
        }
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            v = xrealloc(v, cap * sizeof *v);
        }
        v[n++] = (struct span){x->t0, x->t1};
    }
    *out = v;
    return n;
}

static int outermost_task(const struct sched_slice *x)
{
    return x->kind < SK_SLEEP && x->depth == 0;
}

static int asleep(const struct sched_slice *x) { return x->kind == SK_SLEEP; }

double sched_busy(const struct sched_thread *t)
{
    struct span *run, *zz;
    size_t nr = spans_of(t, outermost_task, &run), nz = spans_of(t, asleep, &zz);
    double busy = 0;
    for (size_t i = 0; i < nr; i++)
        busy += run[i].to - run[i].from;
    /* Less where the two unions meet: both in order, walked once. */
    for (size_t i = 0, k = 0; i < nr && k < nz;) {
        double from = run[i].from > zz[k].from ? run[i].from : zz[k].from;
        double to = run[i].to < zz[k].to ? run[i].to : zz[k].to;
        if (to > from)
            busy -= to - from;
        if (run[i].to < zz[k].to)
            i++;
        else
            k++;
    }
    free(run);
    free(zz);
    return busy > 0 ? busy : 0;
}

/* By start, outer first at a tie. A parked span's depth is the number of
 * tasks it holds, so it comes after them at a tie: the picture draws in
 * this order, and its hatch must lie over them. */
static int cmp_start(const void *a, const void *b)
{
    const struct sched_slice *x = a, *y = b;
    if (x->t0 != y->t0)
        return x->t0 < y->t0 ? -1 : 1;
    return x->depth < y->depth ? -1 : x->depth > y->depth;
}

void sched_sort(struct sched *s)
{
    for (size_t i = 0; i < s->nthr; i++)
        if (s->thr[i].n > 1) /* qsort wants a non-NULL base even for none */
            qsort(s->thr[i].s, s->thr[i].n, sizeof *s->thr[i].s, cmp_start);
}

/* ---- the builder ---- */

/* An open slice of a fiber, waiting for its end. */
struct open {
    double t0;
    uint64_t task;
    uint32_t tasks_below; /* task slices open under it on its fiber */
    uint32_t fn;          /* sched_slice.fn */
    uint8_t kind;         /* SK_COUNT: a slice the model does not draw */
};

struct bfib {
    struct open *o;
    size_t n, cap;
    double parked_from; /* < 0: not parked with tasks open */
    uint32_t parked_depth;
};

struct bthr {
    struct bfib *f;   /* [SCHED_MAX_FIBER + 1], made when first needed */
    double idle_from; /* < 0: not idle */
    unsigned cur;     /* the fiber running */
};

struct sched_build {
    struct sched *s;
    struct bthr *t;
    size_t nt;
};

struct sched_build *sched_b_new(struct sched *s)
{
    struct sched_build *b = xrealloc(NULL, sizeof *b);
    *b = (struct sched_build){s, NULL, 0};
    return b;
}

static struct bthr *bthr_of(struct sched_build *b, size_t tid)
{
    if (tid >= b->nt) {
        size_t n = grown(b->nt, tid, SCHED_MAX_THREAD + 1);
        b->t = xrealloc(b->t, n * sizeof *b->t);
        for (size_t i = b->nt; i < n; i++)
            b->t[i] = (struct bthr){NULL, -1, 0};
        b->nt = n;
    }
    return &b->t[tid];
}

static struct bfib *bfib_of(struct sched_build *b, size_t tid, unsigned fiber)
{
    struct bthr *t = bthr_of(b, tid);
    if (t->f == NULL) {
        t->f = xrealloc(NULL, (SCHED_MAX_FIBER + 1) * sizeof *t->f);
        for (int k = 0; k <= SCHED_MAX_FIBER; k++)
            t->f[k] = (struct bfib){NULL, 0, 0, -1, 0};
    }
    return &t->f[fiber <= SCHED_MAX_FIBER ? fiber : SCHED_MAX_FIBER];
}

/* Task slices open on a fiber. */
static uint32_t tasks_open(const struct bfib *f)
{
    if (f->n == 0)
        return 0;
    const struct open *o = &f->o[f->n - 1];
    return o->tasks_below + (o->kind < SK_SLEEP);
}

void sched_b_event(struct sched_build *b, size_t tid, double t)
{
    struct bthr *th = bthr_of(b, tid);
    sched_thread(b->s, tid);
    sched_time(b->s, t);
    if (th->idle_from >= 0) {
        sched_add(b->s, tid, th->cur, th->idle_from, t, SK_IDLE, 0, 0);
        th->idle_from = -1;
    }
}

void sched_b_idle(struct sched_build *b, size_t tid, double t)
{
    bthr_of(b, tid)->idle_from = t;
}

void sched_b_begin(struct sched_build *b, size_t tid, unsigned fiber, double t, int kind,
                   uint64_t task)
{
    sched_b_begin_fn(b, tid, fiber, t, kind, task, 0);
}

void sched_b_begin_fn(struct sched_build *b, size_t tid, unsigned fiber, double t, int kind,
                      uint64_t task, uint32_t fn)
{
    struct bfib *f = bfib_of(b, tid, fiber);
    if (f->n == f->cap) {
        f->cap = f->cap ? f->cap * 2 : 16;
        f->o = xrealloc(f->o, f->cap * sizeof *f->o);
    }
    uint32_t below = tasks_open(f);
    f->o[f->n++] = (struct open){t, task, below, fn, (uint8_t)kind};
}

int sched_b_end(struct sched_build *b, size_t tid, unsigned fiber, double t, int what)
{
    struct bfib *f = bfib_of(b, tid, fiber);
    if (f->n == 0)
        return -1;
    struct open o = f->o[f->n - 1];
    if ((what == SCHED_END_TASK && o.kind >= SK_SLEEP) ||
        (what == SCHED_END_SLEEP && o.kind != SK_SLEEP))
        return -1;
    f->n--;
    if (o.kind < SK_COUNT) {
        sched_add(b->s, tid, fiber, o.t0, t, (enum sched_kind)o.kind, o.tasks_below, o.task);
        struct sched_thread *th = &b->s->thr[tid];
        th->s[th->n - 1].fn = o.fn;
    }
    return 0;
}

void sched_b_park(struct sched_build *b, size_t tid, unsigned fiber, double t)
{
    sched_mark(b->s, tid, fiber, t, SM_PARK);
}

void sched_b_resume(struct sched_build *b, size_t tid, unsigned fiber, double t)
{
    struct bthr *th = bthr_of(b, tid);
    struct bfib *from = bfib_of(b, tid, th->cur), *to = bfib_of(b, tid, fiber);
    sched_mark(b->s, tid, fiber, t, SM_RESUME);
    if (fiber == th->cur)
        return;
    /* The fiber left stays where it is with its tasks open: parked until
     * the thread switches back. One left with none (its job is over, or
     * plain code's get) has nothing to show. */
    uint32_t n = tasks_open(from);
    if (n > 0 && from->parked_from < 0) {
        from->parked_from = t;
        from->parked_depth = n;
    }
    if (to->parked_from >= 0) {
        sched_add(b->s, tid, fiber, to->parked_from, t, SK_PARKED, to->parked_depth, 0);
        to->parked_from = -1;
    }
    th->cur = fiber;
}

void sched_b_finish(struct sched_build *b)
{
    struct sched *s = b->s;
    for (size_t tid = 0; tid < b->nt; tid++) {
        struct bthr *th = &b->t[tid];
        if (th->idle_from >= 0)
            sched_add(s, tid, th->cur, th->idle_from, s->t_end, SK_IDLE, 0, 0);
        for (unsigned k = 0; th->f != NULL && k <= SCHED_MAX_FIBER; k++) {
            struct bfib *f = &th->f[k];
            if (f->parked_from >= 0)
                sched_add(s, tid, k, f->parked_from, s->t_end, SK_PARKED, f->parked_depth, 0);
            while (f->n > 0) /* never closed: the trace was cut short */
                sched_b_end(b, tid, k, s->t_end, SCHED_END_ANY);
            free(f->o);
        }
        free(th->f);
    }
    free(b->t);
    free(b);
    sched_sort(s);
}

/* ---- the JSON reader ---- */

/* A track's tid: fiber << 17 | thread (docs/trace-format.md). */
#define FIBER_SHIFT 17

static int jerr(const struct sched *s, size_t at, const char *why)
{
    fprintf(stderr, "sftrace: %s: byte %zu: %s\n", s->name, at, why);
    return -1;
}

/* o[key] if it is a string, else "". */
static const char *jstr(json_object *o, const char *key)
{
    json_object *v;
    if (o != NULL && json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string))
        return json_object_get_string(v);
    return "";
}

/* Where the event being read is, for the errors about its fields: it ends
 * at byte `at` and is element `index` of the array, counting from 1. */
struct where {
    const struct sched *s;
    size_t at, index;
};

/* The error about one field of an event: its name, its value as the trace
 * spells it (json-c keeps a number's own text: NaN, 1e300), what it should
 * be. */
static int jbad(const struct where *w, const char *field, json_object *v, const char *what)
{
    fprintf(stderr, "sftrace: %s: byte %zu: event %zu: %s %s is not %s\n", w->s->name, w->at,
            w->index, field, json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN), what);
    return -1;
}

/*
 * o[key], a number, range-checked before any conversion: 0 when it is
 * absent or not a number; 1 with it in *out when it is finite, in [lo, hi]
 * and (if whole) an integer; else -1 after jbad's error (field, `what` it
 * should be). json-c reads NaN, Infinity and -Infinity even in strict mode,
 * 1e400 as infinity, and saturates an integer past 64 bits: all fail here,
 * where a cast of them to an integer type would be undefined.
 */
static int jnum(const struct where *w, json_object *o, const char *key, const char *field,
                double lo, double hi, int whole, const char *what, double *out)
{
    json_object *v;
    if (o == NULL || !json_object_object_get_ex(o, key, &v) ||
        !(json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double)))
        return 0;
    double d = json_object_get_double(v);
    if (!isfinite(d) || d < lo || d > hi || (whole && d != floor(d)))
        return jbad(w, field, v, what);
    *out = d;
    return 1;
}

/* A canonical decimal (digits, no leading zero) of n bytes at p, at most
 * max, into *v; whether it is one. By hand: sscanf's %llu takes a sign, and
 * its overflow is undefined. */
static int decimal(const char *p, size_t n, uint64_t max, uint64_t *v)
{
    uint64_t x = 0;
    if (n == 0 || (n > 1 && p[0] == '0'))
        return 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return 0;
        unsigned d = (unsigned)(p[i] - '0');
        if (x > (max - d) / 10)
            return 0;
        x = x * 10 + d;
    }
    *v = x;
    return 1;
}

/* A task name "T.N" as the model's key, with the text trace's bounds:
 * T a thread 0 to 131071 (the batch tasks' id), N below 2^47. */
#define TASK_WHAT "a task name T.N (T 0 to 131071, N below 2^47)"
static int task_key(const char *name, uint64_t *key)
{
    const char *dot = strchr(name, '.');
    uint64_t t, n;
    if (dot == NULL || !decimal(name, (size_t)(dot - name), 131071, &t) ||
        !decimal(dot + 1, strlen(dot + 1), (UINT64_C(1) << 47) - 1, &n))
        return 0;
    *key = sched_task(t, n);
    return 1;
}

/* A track id: fiber << 17 | thread, fiber 0 to SCHED_MAX_FIBER. */
#define TRACK_MAX ((double)((SCHED_MAX_FIBER << FIBER_SHIFT) | SCHED_MAX_THREAD))
#define TRACK_WHAT "a track id: fiber << 17 | thread, fiber 0 to 64, thread 0 to 65535"

/* The event ev, element `index` of the array (from 1) that ends at byte
 * `at`, into the model. */
static int take_event(struct sched_build *b, json_object *ev, size_t at, size_t index)
{
    struct sched *s = b->s;
    const struct where w = {s, at, index};
    json_object *args = NULL, *v;
    json_object_object_get_ex(ev, "args", &args);
    const char *ph = jstr(ev, "ph"), *name = jstr(ev, "name");
    double dtid, ts;
    int got = jnum(&w, ev, "tid", "tid", 0, TRACK_MAX, 1, TRACK_WHAT, &dtid);
    if (got < 0)
        return -1;
    if (got == 0 || ph[0] == '\0' || ph[1] != '\0')
        return jerr(s, at, "an event without a one-letter ph and a tid of a thread 0 to 65535 "
                           "(fiber << 17 | thread, fiber 0 to 64)");
    /* Whole and within TRACK_MAX: the conversion is exact. */
    size_t track = (size_t)dtid, tid = track & ((1u << FIBER_SHIFT) - 1);
    unsigned fiber = (unsigned)(track >> FIBER_SHIFT);
    if (tid > SCHED_MAX_THREAD && json_object_object_get_ex(ev, "tid", &v))
        return jbad(&w, "tid", v, TRACK_WHAT);
    if (ph[0] == 'M') {
        /* A fiber's track is named after its thread ("worker 1 fiber 2"):
         * the row is the thread's, named by its own track. */
        const char *tname = jstr(args, "name");
        if (fiber == 0 && strcmp(name, "thread_name") == 0 && tname[0] != '\0')
            snprintf(sched_thread(s, tid)->name, sizeof s->thr[0].name, "%s", tname);
        return 0;
    }
    if (ph[0] == 's' || ph[0] == 'f')
        return 0; /* arrows: not part of the model */
    got = jnum(&w, ev, "ts", "ts", 0, SCHED_MAX_TIME, 0,
               "a time in microseconds 0 to 1e14 (about 3 years)", &ts);
    if (got <= 0)
        return got < 0 ? -1 : jerr(s, at, "an event without ts");
    if ((ph[0] == 'i' || ph[0] == 'I') && strcmp(jstr(ev, "s"), "g") == 0) {
        /* A global instant belongs to no thread: a promise set from
         * outside libsf's calls (its tid is 0 for the format's sake). */
        if (strcmp(name, "set") == 0)
            sched_global_mark(s, ts, SM_SET);
        else
            sched_time(s, ts);
        return 0;
    }
    sched_b_event(b, tid, ts);
    if (ph[0] == 'B') {
        const char *cat = jstr(ev, "cat");
        int k = SK_SLEEP;
        uint32_t fn = 0;
        if (strcmp(cat, "task") == 0) {
            /* Named by its function, its kind in args.kind; a trace
             * without args.kind names its slices by their kind. */
            const char *kind = jstr(args, "kind");
            if (kind[0] != '\0') {
                if (name[0] == '\0')
                    return jerr(s, at, "a task slice without a name");
                fn = sched_fn(s, name);
            } else {
                kind = name;
            }
            k = 0;
            while (k < SK_SLEEP && strcmp(sched_kind_name[k], kind) != 0)
                k++;
            if (k == SK_SLEEP)
                return jerr(s, at, "a task slice of an unknown kind");
        } else if (strcmp(cat, "sleep") != 0) {
            k = SK_COUNT; /* a slice sftrace does not know: not drawn, but its E is its */
        }
        /* Its depth is the fiber's stack's, which is what libsf writes as
         * args.depth (each fiber keeps its own). Its task: none named, a
         * nap waits for no one task, and an older trace's sleep is 0.0. */
        uint64_t task = k == SK_SLEEP && strcmp(name, "nap") == 0 ? SCHED_NO_TASK : 0;
        if (args != NULL && json_object_object_get_ex(args, "task", &v) &&
            !(json_object_is_type(v, json_type_string) && task_key(json_object_get_string(v), &task)))
            return jbad(&w, "args.task", v, TASK_WHAT);
        sched_b_begin_fn(b, tid, fiber, ts, k, task, fn);
    } else if (ph[0] == 'E') {
        if (sched_b_end(b, tid, fiber, ts, SCHED_END_ANY) < 0)
            return jerr(s, at, "an E event with no open slice on its track");
    } else if (ph[0] == 'i' || ph[0] == 'I') {
        double threads;
        if (strcmp(name, "idle") == 0)
            sched_b_idle(b, tid, ts);
        else if (strcmp(name, "park") == 0)
            sched_b_park(b, tid, fiber, ts);
        else if (strcmp(name, "resume") == 0) /* on the track of the fiber that runs */
            sched_b_resume(b, tid, fiber, ts);
        else if (strcmp(name, "set") == 0)
            sched_mark(s, tid, fiber, ts, SM_SET);
        else if (strcmp(name, "timeout") == 0)
            sched_mark(s, tid, fiber, ts, SM_TIMEOUT);
        else if (strcmp(name, "init") == 0) {
            /* SF_MAX_THREADS of include/sf.h: what sf_init takes */
            got = jnum(&w, args, "threads", "args.threads", 1, 1024, 1,
                       "a thread count 1 to 1024", &threads);
            if (got < 0)
                return -1;
            if (got > 0)
                s->threads_cfg = (uint64_t)threads;
        }
        /* Other instants (discard, shutdown) are not part of the model. */
    }
    return 0;
}

static size_t skip_ws(const char *buf, size_t i, size_t len)
{
    while (i < len && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\n' || buf[i] == '\r'))
        i++;
    return i;
}

/* The events of the array in buf into the model b builds. json-c parses
 * each event object on its own, so that a trace of millions of events is
 * never a tree in memory; between events only the array's '[', ',' and ']'
 * are read here. */
static int read_array(struct sched_build *b, json_tokener *tok, const char *buf, size_t len)
{
    const struct sched *s = b->s;
    size_t i = skip_ws(buf, 0, len);
    if (i >= len || buf[i] != '[')
        return jerr(s, i, "a Chrome trace from libsf is a JSON array");
    i++;
    for (size_t index = 1;; index++) {
        int first = index == 1;
        i = skip_ws(buf, i, len);
        if (i >= len)
            return 0; /* no closing bracket: a process that did not shut down */
        if (buf[i] == ']') {
            i = skip_ws(buf, i + 1, len);
            return i < len ? jerr(s, i, "text after the closing ']'") : 0;
        }
        if (!first) {
            if (buf[i] != ',')
                return jerr(s, i, "expected ',' or ']'");
            i = skip_ws(buf, i + 1, len);
            if (i >= len)
                return jerr(s, i, "the input ends after a ','");
        }
        json_tokener_reset(tok);
        size_t left = len - i < INT_MAX ? len - i : INT_MAX;
        json_object *ev = json_tokener_parse_ex(tok, buf + i, (int)left);
        enum json_tokener_error e = json_tokener_get_error(tok);
        i += json_tokener_get_parse_end(tok);
        if (ev == NULL)
            return jerr(s, i, e == json_tokener_continue ? "the input ends inside an event"
                                                         : json_tokener_error_desc(e));
        int rc = json_object_is_type(ev, json_type_object) ? take_event(b, ev, i, index)
                                                           : jerr(s, i, "an event is not an object");
        json_object_put(ev);
        if (rc < 0)
            return -1;
    }
}

int sched_read_json(struct sched *s, const char *buf, size_t len)
{
    json_tokener *tok = json_tokener_new();
    if (tok == NULL) {
        fputs("sftrace: out of memory\n", stderr);
        exit(1);
    }
    /* Strict JSON; what follows an event is the array's, read above. */
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_ALLOW_TRAILING_CHARS);
    struct sched_build *b = sched_b_new(s);
    int rc = read_array(b, tok, buf, len);
    sched_b_finish(b); /* on an error too: it frees what it holds */
    json_tokener_free(tok);
    return rc;
}

/* ---- the model as JSON Lines, and the picture drawn from it ---- */

const char *const sched_mark_name[SM_COUNT] = {"park", "resume", "set", "timeout"};

/* Writes o as one line and drops it; whether the write went well. */
static int put_line(FILE *out, json_object *o)
{
    int ok = fputs(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN), out) >= 0 &&
             fputc('\n', out) != EOF;
    json_object_put(o);
    return ok;
}

/* A time of the model. The readers let in finite times only (the JSON
 * reader checks ts; the text trace's are decimals), and sums of them stay
 * finite; should one not be, it is written as null: json-c would write
 * NaN or Infinity, which is not JSON. */
static json_object *jtime(double us)
{
    return isfinite(us) ? json_object_new_double(us) : NULL;
}

static const char *sc_fn(const struct sched *s, uint32_t fn)
{
    return fn != 0 ? s->fn[fn - 1] : "(unnamed)";
}

int sched_write_json(const struct sched *s, FILE *out)
{
    /* Microseconds with the trace's precision (nanoseconds), whatever the
     * double's last digits. */
    json_c_set_serialization_double_format("%.3f", JSON_C_OPTION_GLOBAL);
    json_object *o = json_object_new_object();
    json_object_object_add(o, "schedule", json_object_new_string(s->name));
    json_object_object_add(o, "threads_cfg", json_object_new_int64((int64_t)s->threads_cfg));
    json_object_object_add(o, "t_begin", jtime(s->have_time ? s->t_begin : 0));
    json_object_object_add(o, "t_end", jtime(s->have_time ? s->t_end : 0));
    int ok = put_line(out, o);
    for (size_t i = 0; i < s->nthr && ok; i++) {
        const struct sched_thread *t = &s->thr[i];
        if (!t->seen)
            continue;
        uint64_t tasks = 0;
        for (size_t k = 0; k < t->n; k++)
            tasks += t->s[k].kind < SK_SLEEP;
        o = json_object_new_object();
        json_object_object_add(o, "thread", json_object_new_int64((int64_t)i));
        json_object_object_add(o, "name", json_object_new_string(t->name));
        json_object_object_add(o, "tasks", json_object_new_int64((int64_t)tasks));
        json_object_object_add(o, "busy", jtime(sched_busy(t)));
        ok = put_line(out, o);
        for (size_t k = 0; k < t->n && ok; k++) {
            const struct sched_slice *x = &t->s[k];
            char task[48];
            o = json_object_new_object();
            json_object_object_add(o, "thread", json_object_new_int64((int64_t)i));
            json_object_object_add(o, "kind", json_object_new_string(sched_kind_name[x->kind]));
            json_object_object_add(o, "t0", jtime(x->t0));
            json_object_object_add(o, "t1", jtime(x->t1));
            json_object_object_add(o, "depth", json_object_new_int64(x->depth));
            json_object_object_add(o, "fiber", json_object_new_int64(x->fiber));
            if (x->kind < SK_SLEEP || (x->kind == SK_SLEEP && x->task != SCHED_NO_TASK)) {
                snprintf(task, sizeof task, "%" PRIu64 ".%" PRIu64, SCHED_TASK_THREAD(x->task),
                         SCHED_TASK_SEQ(x->task));
                json_object_object_add(o, "task", json_object_new_string(task));
            }
            if (x->kind < SK_SLEEP && x->fn != 0)
                json_object_object_add(o, "fn", json_object_new_string(sc_fn(s, x->fn)));
            ok = put_line(out, o);
        }
        for (size_t k = 0; k < t->nm && ok; k++) {
            o = json_object_new_object();
            json_object_object_add(o, "thread", json_object_new_int64((int64_t)i));
            json_object_object_add(o, "mark", json_object_new_string(sched_mark_name[t->m[k].kind]));
            json_object_object_add(o, "t", jtime(t->m[k].t));
            json_object_object_add(o, "fiber", json_object_new_int64(t->m[k].fiber));
            ok = put_line(out, o);
        }
    }
    for (size_t k = 0; k < s->ngm && ok; k++) {
        o = json_object_new_object();
        json_object_object_add(o, "mark", json_object_new_string(sched_mark_name[s->gm[k].kind]));
        json_object_object_add(o, "t", jtime(s->gm[k].t));
        ok = put_line(out, o);
    }
    return ok && !ferror(out) ? 0 : -1;
}

int sched_plot(const struct sched *s, const char *plot, const char *const outs[SCHED_FORMATS])
{
    static const char *const opt[SCHED_FORMATS] = {"--png", "--svg", "--pdf"};
    char *argv[2 + 2 * SCHED_FORMATS];
    int n = 0, fds[2];
    argv[n++] = (char *)plot;
    for (int f = 0; f < SCHED_FORMATS; f++)
        if (outs[f] != NULL) {
            argv[n++] = (char *)opt[f];
            argv[n++] = (char *)outs[f];
        }
    argv[n] = NULL;
    if (pipe(fds) != 0) {
        fprintf(stderr, "sftrace: pipe: %s\n", strerror(errno));
        return -1;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[0], 0);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    posix_spawn_file_actions_addclose(&fa, fds[1]);
    pid_t pid;
    int err = posix_spawn(&pid, plot, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[0]);
    if (err != 0) {
        close(fds[1]);
        fprintf(stderr, "sftrace: cannot run %s: %s; no picture written\n", plot, strerror(err));
        return -1;
    }
    /* A script that stops early (no matplotlib) closes the pipe: that is
     * its exit status to report, not a signal to die of. */
    void (*old)(int) = signal(SIGPIPE, SIG_IGN);
    FILE *to = fdopen(fds[1], "w");
    if (to != NULL) {
        sched_write_json(s, to);
        fclose(to);
    } else {
        close(fds[1]);
    }
    signal(SIGPIPE, old);
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) {
            fprintf(stderr, "sftrace: waitpid: %s\n", strerror(errno));
            return -1;
        }
    /* The script says why on stderr when it fails. */
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

void sched_free(struct sched *s)
{
    for (size_t i = 0; i < s->nthr; i++) {
        free(s->thr[i].s);
        free(s->thr[i].m);
    }
    free(s->thr);
    s->thr = NULL;
    s->nthr = s->thrcap = 0;
    for (size_t i = 0; i < s->nfn; i++)
        free(s->fn[i]);
    free(s->fn);
    s->fn = NULL;
    s->nfn = s->fncap = 0;
    free(s->gm);
    s->gm = NULL;
    s->ngm = s->gmcap = 0;
}

/* ---- the summary ---- */

struct row {
    uint64_t run[SK_SLEEP], tasks, sleeps, marks[SM_COUNT];
    double busy, asleep, longest_wait, idle;
};

/* One thread's figures. A wait is a run of sleeps of one get: consecutive
 * sleeps on the same task with no task slice begun between them (a get
 * that naps, wakes with nothing to do, and sleeps again). */
static struct row row_of(const struct sched_thread *t)
{
    struct row w;
    memset(&w, 0, sizeof w);
    uint64_t wait_task = 0;
    double wait_from = 0, wait_to = 0;
    int waiting = 0;
    for (size_t i = 0; i < t->n; i++) {
        const struct sched_slice *x = &t->s[i];
        double d = x->t1 - x->t0;
        if (x->kind < SK_SLEEP) {
            w.run[x->kind]++;
            w.tasks++;
            waiting = 0;
        } else if (x->kind == SK_SLEEP) {
            w.sleeps++;
            w.asleep += d;
            if (!waiting || x->task != wait_task) {
                waiting = 1;
                wait_task = x->task;
                wait_from = x->t0;
            }
            wait_to = x->t1;
            if (wait_to - wait_from > w.longest_wait)
                w.longest_wait = wait_to - wait_from;
        } else if (x->kind == SK_IDLE) {
            w.idle += d;
        }
    }
    w.busy = sched_busy(t);
    for (size_t i = 0; i < t->nm; i++)
        w.marks[t->m[i].kind]++;
    return w;
}

static void print_row(FILE *out, const char *id, const char *name, const struct row *w,
                      double whole)
{
    fprintf(out, "%6s %-10s %7" PRIu64, id, name, w->tasks);
    for (int k = 0; k < SK_SLEEP; k++)
        fprintf(out, " %*" PRIu64, k == SK_WAIT ? 8 : 7, w->run[k]);
    fprintf(out, " %9.3f", w->busy / 1000);
    if (whole > 0)
        fprintf(out, " %6.1f", 100 * w->busy / whole);
    else
        fprintf(out, " %6s", "-");
    fprintf(out, " %7" PRIu64 " %9.3f %9.3f %9.3f %6" PRIu64 " %7" PRIu64 " %5" PRIu64
            " %8" PRIu64 "\n", w->sleeps, w->asleep / 1000, w->longest_wait / 1000,
            w->idle / 1000, w->marks[SM_PARK], w->marks[SM_RESUME], w->marks[SM_SET],
            w->marks[SM_TIMEOUT]);
}

void sched_summary(const struct sched *s, FILE *out)
{
    double span = s->have_time ? s->t_end - s->t_begin : 0;
    size_t nthreads = 0;
    struct row all;
    memset(&all, 0, sizeof all);
    for (size_t i = 0; i < s->nthr; i++)
        nthreads += s->thr[i].seen != 0;
    fprintf(out, "trace: %s, %zu thread%s", s->name, nthreads, nthreads == 1 ? "" : "s");
    if (s->threads_cfg)
        fprintf(out, " (SF_THREADS=%" PRIu64 ")", s->threads_cfg);
    fprintf(out, ", span %.3f .. %.3f ms (%.3f ms)\n", s->t_begin / 1000, s->t_end / 1000,
            span / 1000);
    fprintf(out, "\n%6s %-10s %7s", "thread", "name", "tasks");
    for (int k = 0; k < SK_SLEEP; k++)
        fprintf(out, " %*s", k == SK_WAIT ? 8 : 7,
                k == SK_WAIT ? "wait-inl" : k == SK_BATCH ? "batch" : sched_kind_name[k]);
    fprintf(out, " %9s %6s %7s %9s %9s %9s %6s %7s %5s %8s\n", "busy ms", "busy%", "sleeps",
            "asleep ms", "wait ms", "idle ms", "parks", "resumes", "sets", "timeouts");
    for (size_t i = 0; i < s->nthr; i++) {
        const struct sched_thread *t = &s->thr[i];
        if (!t->seen)
            continue;
        struct row w = row_of(t);
        char id[24];
        snprintf(id, sizeof id, "%zu", i);
        print_row(out, id, t->name, &w, span);
        for (int k = 0; k < SK_SLEEP; k++)
            all.run[k] += w.run[k];
        for (int k = 0; k < SM_COUNT; k++)
            all.marks[k] += w.marks[k];
        all.tasks += w.tasks;
        all.sleeps += w.sleeps;
        all.busy += w.busy;
        all.asleep += w.asleep;
        all.idle += w.idle;
        if (w.longest_wait > all.longest_wait)
            all.longest_wait = w.longest_wait;
    }
    /* all: busy% is the share of every listed thread's time */
    print_row(out, "all", "", &all, span * (double)nthreads);
    if (s->ngm > 0)
        fprintf(out, "\npromises set from outside libsf: %zu\n", s->ngm);
    fprintf(out, "\nbusy: time in outermost tasks, on any fiber (a parked task counts, once), "
                 "less sleeps; wait ms:\nthe longest wait of one get or wait asleep; parks: gets "
                 "that parked their fiber; resumes:\nswitches to a fiber; sets: promises "
                 "completed; timeouts: timed waits that gave up\n");
}

/* ---- the profile by function ---- */

struct prof {
    uint64_t tasks;
    double total, self;
    uint32_t fn;
    uint32_t open; /* slices of it open on the fiber being walked */
};

/* Most self time first; then most total; then by name. */
static const struct sched *prof_sched;
static int cmp_prof(const void *a, const void *b)
{
    const struct prof *x = a, *y = b;
    if (x->self != y->self)
        return x->self > y->self ? -1 : 1;
    if (x->total != y->total)
        return x->total > y->total ? -1 : 1;
    return strcmp(sc_fn(prof_sched, x->fn), sc_fn(prof_sched, y->fn));
}

/* One fiber's task slices, parked spans and sleeps, from slice `from` of
 * the thread's (start order, outer first at a tie) into p, by function. A
 * stack of the slices open: a slice's start pops those that ended by then;
 * its time is taken from the innermost open one's self time, as is a parked
 * span's and a sleep's (each lies inside the innermost task open on the
 * fiber, if any). */
static void prof_fiber(const struct sched_thread *t, unsigned fiber, struct prof *p)
{
    size_t *stack = xrealloc(NULL, (t->n + 1) * sizeof *stack), n = 0;
    for (size_t i = 0; i < t->n; i++) {
        const struct sched_slice *x = &t->s[i];
        if (x->fiber != fiber || (x->kind > SK_SLEEP && x->kind != SK_PARKED))
            continue;
        while (n > 0 && t->s[stack[n - 1]].t1 <= x->t0 &&
               !(t->s[stack[n - 1]].t1 == x->t0 && x->depth > t->s[stack[n - 1]].depth))
            p[t->s[stack[--n]].fn].open--;
        double d = x->t1 - x->t0;
        if (n > 0)
            p[t->s[stack[n - 1]].fn].self -= d;
        if (x->kind >= SK_SLEEP)
            continue;
        struct prof *q = &p[x->fn];
        q->tasks++;
        q->self += d;
        if (q->open++ == 0)
            q->total += d;
        stack[n++] = i;
    }
    while (n > 0)
        p[t->s[stack[--n]].fn].open--;
    free(stack);
}

void sched_profile(const struct sched *s, FILE *out)
{
    double span = s->have_time ? s->t_end - s->t_begin : 0;
    size_t nthreads = 0;
    struct prof *p = xrealloc(NULL, (s->nfn + 1) * sizeof *p);
    memset(p, 0, (s->nfn + 1) * sizeof *p);
    for (size_t f = 0; f <= s->nfn; f++)
        p[f].fn = (uint32_t)f;
    for (size_t i = 0; i < s->nthr; i++) {
        const struct sched_thread *t = &s->thr[i];
        if (!t->seen)
            continue;
        nthreads++;
        for (unsigned fiber = 0; fiber <= SCHED_MAX_FIBER; fiber++)
            prof_fiber(t, fiber, p);
    }
    prof_sched = s;
    qsort(p, s->nfn + 1, sizeof *p, cmp_prof);
    double whole = span * (double)nthreads;
    fprintf(out, "trace: %s, %zu thread%s, span %.3f ms\n\n", s->name, nthreads,
            nthreads == 1 ? "" : "s", span / 1000);
    fprintf(out, "%-32s %8s %10s %10s %6s\n", "function", "tasks", "total ms", "self ms", "self%");
    struct prof all = {0, 0, 0, 0, 0};
    for (size_t f = 0; f <= s->nfn; f++) {
        if (p[f].tasks == 0)
            continue;
        fprintf(out, "%-32s %8" PRIu64 " %10.3f %10.3f", sc_fn(s, p[f].fn), p[f].tasks,
                p[f].total / 1000, p[f].self / 1000);
        if (whole > 0)
            fprintf(out, " %6.1f\n", 100 * p[f].self / whole);
        else
            fprintf(out, " %6s\n", "-");
        all.tasks += p[f].tasks;
        all.self += p[f].self;
    }
    fprintf(out, "%-32s %8" PRIu64 " %10s %10.3f", "all", all.tasks, "", all.self / 1000);
    if (whole > 0)
        fprintf(out, " %6.1f\n", 100 * all.self / whole);
    else
        fprintf(out, " %6s\n", "-");
    fprintf(out, "\ntotal: wall time in the function's tasks (a nested call of the same function "
                 "counted once);\nself: less the tasks they ran nested, the time their fiber "
                 "was parked and their sleeps;\nself%%: of the span times the threads\n");
    free(p);
}
