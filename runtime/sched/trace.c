/*
 * trace.c - writing the schedule trace (format: trace_format.h).
 *
 * Each thread formats its lines into its own buffer and writes whole buffers
 * with one write(2), so tracing takes no lock of ours and lines never
 * interleave mid-line (the file is opened O_APPEND; stderr gets writes of
 * whole lines). The cost: lines of different threads are not in time order
 * in the file; the Time column orders them (tools/sftrace sorts). A thread
 * flushes when its buffer fills, before it sleeps, when it exits, and at
 * shutdown.
 *
 * Lines are formatted from the event table of trace_format.h: each event's
 * argument spec is parsed once, at open, into argument kinds by
 * trace_format.h's parser, the one sftrace reads traces with.
 *
 * SF_TRACE=chrome writes the same events as the Chrome Trace Event Format
 * (JSON Array Format, docs/trace-format.md) through the same buffers: the
 * file opens with "[" and a process_name event, every later event is
 * written as ",{...}\n", and sf__trace_close writes the closing "]". Since
 * every buffer holds whole events and is written whole (or cut at a
 * newline, which ends every event), the file is valid JSON under any
 * interleaving of threads once closed. Each thread keeps its own nesting
 * depth (t->tdepth) and writes its own name the first time it logs, so no
 * state is shared between threads here either - but for the names of task
 * functions (Names, below), resolved once per function for every thread.
 */
#include "sched/trace.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define TBUF_BYTES 65536
/* The most one event writes: a text line, or up to five JSON objects (two
 * metadata, flow start, slice begin, flow end) of under 200 bytes each,
 * the slice's name (under FN_NAME_BYTES) besides. */
#define LINE_MAX_BYTES 1536

bool sf__trace_on;
static int trace_fd = 2;
static uint64_t t0_ns;
/* Written at open, before any other thread traces; read-only after. */
static bool chrome;
static int chrome_pid;

static const char *const event_name[SF__EV_COUNT] = {
#define NAME(id, name, args, meaning) name,
    SF_TRACE_EVENTS(NAME)
#undef NAME
};
static const char *const event_spec[SF__EV_COUNT] = {
#define SPEC(id, name, args, meaning) args,
    SF_TRACE_EVENTS(SPEC)
#undef SPEC
};
static const char *const how_name[SF__HOW_COUNT] = {
#define HOW(id, name, meaning) name,
    SF_TRACE_HOWS(HOW)
#undef HOW
};

/* Each event's columns, from its spec (sf__trace_parse_spec). */
static struct sf__trace_args layout[SF__EV_COUNT];

/* Parses every spec of trace_format.h. A spec the parser refuses is a bug
 * in that header, caught by the first traced run of the test suite. */
static void parse_specs(void)
{
    for (int e = 0; e < SF__EV_COUNT; e++) {
        int bad = sf__trace_parse_spec(event_spec[e], &layout[e]);
        SF__ASSERT(bad == 0, "event %s: bad argument spec", event_name[e]);
        (void)bad;
    }
}

/* The sink's name for the one line that says the trace is incomplete, and
 * whether that line was written (0: not yet). */
static char sink_name[256];
static _Atomic int sink_failed;

static void write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            /* A broken trace sink must not break the program, nor be lost
             * in silence: the first failure says so in one line. Relaxed:
             * the exchange only elects the thread that writes it. */
            int err = errno;
            if (atomic_exchange_explicit(&sink_failed, 1, memory_order_relaxed) == 0) {
                char line[512];
                int len = snprintf(line, sizeof line,
                                   "libsf: writing the trace to %s failed (%s); the trace is "
                                   "incomplete\n",
                                   sink_name, strerror(err));
                if (len > 0 && fd != 2)
                    (void)!write(2, line, (size_t)len < sizeof line ? (size_t)len : sizeof line - 1);
            }
            return;
        }
        p += w;
        n -= (size_t)w;
    }
}

static void flush_to(int fd, struct sf__thread *t);

int sf__trace_open(const char *path, bool as_chrome)
{
    int fd = 2;
    if (path != NULL) {
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
        if (fd < 0)
            return -1;
    }
    parse_specs();
    snprintf(sink_name, sizeof sink_name, path != NULL ? "'%s'" : "%s",
             path != NULL ? path : "stderr");
    /* Relaxed: set before any thread traces (sf__trace_on is set below, and
     * threads start tracing only after the runtime has started). */
    atomic_store_explicit(&sink_failed, 0, memory_order_relaxed);
    trace_fd = fd;
    t0_ns = sf__now_ns();
    chrome = as_chrome;
    if (chrome) {
        /* The first element, so that every later one starts with a comma. */
        char open_array[160];
        chrome_pid = (int)getpid();
        int n = snprintf(open_array, sizeof open_array,
                         "[{\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"name\":\"process_name\","
                         "\"args\":{\"name\":\"libsf\"}}\n",
                         chrome_pid);
        write_all(fd, open_array, (size_t)n);
    } else {
        static const char header[] = SF_TRACE_HEADER "\n";
        write_all(fd, header, sizeof header - 1);
    }
    sf__trace_on = true;
    return 0;
}

void sf__trace_restart_clock(void) { t0_ns = sf__now_ns(); }

void sf__trace_close(void)
{
    for (int i = 0, n = sf__registry_count(); i < n; i++)
        sf__trace_flush(sf__registry_get(i));
    if (chrome)
        write_all(trace_fd, "]\n", 2);
    if (trace_fd > 2)
        close(trace_fd);
    trace_fd = 2;
    sf__trace_on = false;
}

void sf__trace_at_exit(struct sf__thread *me, bool others)
{
    if (!sf__trace_on || trace_fd <= 2)
        return;
    /* Other threads may still flush into trace_fd (a worker's idle wake,
     * a task): from now on their writes go to /dev/null, and the file,
     * reached through its own descriptor, ends with the lines written so
     * far, the buffers flushed here and the closing "]". A write already
     * under way when the descriptor is replaced may still land after it:
     * the one window left, a few microseconds at the process's exit. */
    int file = dup(trace_fd), null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (file < 0 || null < 0 || dup2(null, trace_fd) < 0) {
        if (file >= 0)
            close(file);
        if (null >= 0)
            close(null);
        return;
    }
    close(null);
    for (int i = 0, n = sf__registry_count(); i < n; i++) {
        struct sf__thread *t = sf__registry_get(i);
        if (t == me || (others && !__atomic_load_n(&t->is_worker, __ATOMIC_RELAXED)))
            flush_to(file, t);
    }
    if (chrome)
        write_all(file, "]\n", 2);
    close(file);
}

void sf__trace_after_fork(void)
{
    /* Closing the child's copy of the descriptor leaves the parent's open;
     * the parent's buffered lines are the parent's to write. */
    if (trace_fd > 2)
        close(trace_fd);
    trace_fd = 2;
    sf__trace_on = false;
}

void sf__trace_flush(struct sf__thread *t) { flush_to(trace_fd, t); }

/* Writes t's buffered lines to fd. */
static void flush_to(int fd, struct sf__thread *t)
{
    /* Writes of at most PIPE_BUF bytes that end a line: a pipe (stderr to
     * a pager, say) keeps each of them whole even with other writers. */
    size_t done = 0;
    while (done < sf__sched(t)->tlen) {
        size_t n = sf__sched(t)->tlen - done;
        if (n > PIPE_BUF) {
            n = PIPE_BUF;
            while (n > 0 && sf__sched(t)->tbuf[done + n - 1] != '\n')
                n--;
            if (n == 0) /* cannot happen (lines are < LINE_MAX_BYTES); never loop */
                n = PIPE_BUF;
        }
        write_all(fd, sf__sched(t)->tbuf + done, n);
        done += n;
    }
    sf__sched(t)->tlen = 0;
}

/* The Queue and Asleep columns: thread.h (sf__threads_queued, whose sum
 * is clamped, and sf__threads_asleep). */
static long long queued(void) { return (long long)sf__threads_queued(); }

static int asleep(void) { return sf__threads_asleep(); }

/* ---- Names: a task's function, for the Chrome trace's slices ----
 *
 * A slice is named by its task's function, resolved once per function and
 * kept in `names`. dladdr names the functions a module exports; the others
 * (static functions, and every function of a program linked without
 * -rdynamic) are looked up in the module's own symbol table (.symtab), read
 * from its file the first time one of its functions misses. A function
 * neither knows (a stripped binary) is named by its address, "0x...".
 *
 * The cost: a probe of `names` per slice (lock-free); the first slice of
 * each function takes names_lock and resolves it. Nothing of this runs
 * untraced, nor for the text trace.
 */

#define FN_NAME_BYTES 128 /* the longest name kept, with its NUL */
#define FN_SLOTS 4096     /* a power of two */
#define FN_MAX_USED (FN_SLOTS / 4 * 3)

struct fn_name {
    const void *fn;
    char name[FN_NAME_BYTES];
};

/* Open addressing, linear probing. Invariant: a slot goes from NULL to an
 * entry once, under names_lock, by a release store; an entry is never
 * changed, moved nor freed after (nor are the slots ever cleared, which
 * keeps every probe chain whole). So a reader probing without the lock
 * (acquire loads, pairing with that store) sees NULL or a whole entry, and
 * a function not found before the first NULL is not in the table (or is
 * being added, which the lock settles). */
static _Atomic(struct fn_name *) names[FN_SLOTS];
static int names_used; /* under names_lock */
static struct sf__lock names_lock = SF__LOCK_INITIALIZER(SF__RANK_LEAF, "trace names_lock");

/* A module's symbol table, mapped from its file; under names_lock, kept
 * for the process's life (a program traces the functions of a few). */
struct module {
    char path[PATH_MAX];
    const ElfW(Sym) *sym; /* NULL: the file has no symbol table we read */
    size_t nsym;
    const char *str;
    size_t nstr;
    struct module *next;
};
static struct module *modules;

#if __ELF_NATIVE_CLASS == 64
#define NATIVE_CLASS ELFCLASS64
#else
#define NATIVE_CLASS ELFCLASS32
#endif

static unsigned fn_slot(const void *fn)
{
    return (unsigned)(((uintptr_t)fn * UINT64_C(0x9e3779b97f4a7c15)) >> 40) & (FN_SLOTS - 1);
}

/* Reads path's .symtab into m; leaves m->sym NULL if it has none or the
 * file is not an ELF file of this machine's class. Each offset is checked
 * against the file's size before it is followed. */
static void module_read(struct module *m, const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    struct stat st;
    void *map = MAP_FAILED;
    if (fstat(fd, &st) == 0 && (size_t)st.st_size >= sizeof(ElfW(Ehdr)))
        map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED)
        return;
    size_t len = (size_t)st.st_size;
    const unsigned char *b = map;
    const ElfW(Ehdr) *eh = map;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != NATIVE_CLASS ||
        eh->e_shentsize != sizeof(ElfW(Shdr)) || eh->e_shoff > len ||
        eh->e_shnum > (len - eh->e_shoff) / sizeof(ElfW(Shdr))) {
        munmap(map, len);
        return;
    }
    const ElfW(Shdr) *sh = (const ElfW(Shdr) *)(b + eh->e_shoff);
    for (unsigned i = 0; i < eh->e_shnum; i++) {
        if (sh[i].sh_type != SHT_SYMTAB || sh[i].sh_link >= eh->e_shnum)
            continue;
        const ElfW(Shdr) *ss = &sh[i], *strs = &sh[ss->sh_link];
        if (ss->sh_offset > len || ss->sh_size > len - ss->sh_offset ||
            strs->sh_offset > len || strs->sh_size > len - strs->sh_offset || strs->sh_size == 0)
            break;
        m->sym = (const ElfW(Sym) *)(b + ss->sh_offset);
        m->nsym = ss->sh_size / sizeof(ElfW(Sym));
        m->str = (const char *)(b + strs->sh_offset);
        m->nstr = strs->sh_size;
        return; /* mapped for the process's life: its later misses look here */
    }
    munmap(map, len);
}

/* The module read from path, read now if it was not. Under names_lock. */
static struct module *module_of(const char *path)
{
    for (struct module *m = modules; m != NULL; m = m->next)
        if (strcmp(m->path, path) == 0)
            return m;
    struct module *m = calloc(1, sizeof *m);
    if (m == NULL)
        return NULL;
    snprintf(m->path, sizeof m->path, "%s", path);
    module_read(m, path);
    m->next = modules;
    modules = m;
    return m;
}

/* The name of the function at offset `off` of module m (its address less
 * the module's load bias), or NULL. Of several names at one address, a
 * global one wins, then one without a '.': GCC's local aliases
 * ("tu_fib.localalias") and clones ("f.constprop.0") are named after the
 * function. */
static const char *module_lookup(const struct module *m, uintptr_t off)
{
    const char *best = NULL;
    int best_rank = 0;
    for (size_t i = 0; i < m->nsym; i++) {
        const ElfW(Sym) *y = &m->sym[i];
        int type = y->st_info & 0xf, bind = y->st_info >> 4; /* ELF32_ and ELF64_ST_* alike */
        if ((type != STT_FUNC && type != STT_GNU_IFUNC) || y->st_shndx == SHN_UNDEF ||
            y->st_value != off || y->st_name >= m->nstr ||
            memchr(m->str + y->st_name, '\0', m->nstr - y->st_name) == NULL ||
            m->str[y->st_name] == '\0')
            continue;
        const char *name = m->str + y->st_name;
        int rank = bind != STB_LOCAL ? 3 : strchr(name, '.') == NULL ? 2 : 1;
        if (rank > best_rank) {
            best = name;
            best_rank = rank;
        }
    }
    return best;
}

/* Copies name to out as a JSON string's contents: a character JSON would
 * have escaped (or that is not ASCII) becomes '?'; a long name is cut. */
static void name_copy(char *out, const char *name)
{
    size_t i = 0;
    for (; name[i] != '\0' && i < FN_NAME_BYTES - 1; i++) {
        unsigned char c = (unsigned char)name[i];
        out[i] = c < 0x20 || c > 0x7e || c == '"' || c == '\\' ? '?' : (char)c;
    }
    out[i] = '\0';
}

/* Resolves fn into e->name from what dladdr1 said of it (info NULL: it
 * found no module), the module's .symtab if need be. Under names_lock. The
 * pointers dladdr1 gave stay good while fn's module is loaded, which it is
 * while a task of fn starts. */
static void fn_resolve(struct fn_name *e, const void *fn, const Dl_info *info,
                       const struct link_map *lm)
{
    if (info != NULL) {
        if (info->dli_sname != NULL && info->dli_saddr == fn) {
            name_copy(e->name, info->dli_sname);
            return;
        }
        /* Not exported: the module's own symbol table, whose values are
         * addresses less the load bias (l_addr). The program itself has
         * the empty name. */
        if (lm != NULL) {
            struct module *m = module_of(lm->l_name[0] != '\0' ? lm->l_name : "/proc/self/exe");
            const char *name = m != NULL ? module_lookup(m, (uintptr_t)fn - lm->l_addr) : NULL;
            if (name != NULL) {
                name_copy(e->name, name);
                return;
            }
        }
    }
    snprintf(e->name, sizeof e->name, "%p", fn);
}

/* fn's name for a slice; NULL when there is no memory or no slot for it
 * (the slice is then named by its kind). */
static const char *fn_name(const void *fn)
{
    unsigned i = fn_slot(fn);
    for (;; i = (i + 1) & (FN_SLOTS - 1)) {
        /* Acquire: pairs with the release store below (the invariant). */
        struct fn_name *e = atomic_load_explicit(&names[i], memory_order_acquire);
        if (e == NULL)
            break;
        if (e->fn == fn)
            return e->name;
    }
    /* Not there when probed: added under the lock, unless another thread
     * has added it meanwhile (probed again, from the start, under it).
     * Deadlock-freedom: dladdr1 takes the dynamic linker's lock, which
     * dlopen holds while a module's constructors run - and they may run
     * tasks, whose starts take names_lock. So dladdr1 is asked before
     * names_lock is taken, never under it; under it only files are read
     * (open, mmap), which take no lock a task start may hold. */
    Dl_info info;
    struct link_map *lm = NULL;
    bool found = dladdr1(fn, &info, (void **)&lm, RTLD_DL_LINKMAP) != 0;
    const char *name = NULL;
    sf__lock(&names_lock);
    for (i = fn_slot(fn);; i = (i + 1) & (FN_SLOTS - 1)) {
        struct fn_name *e = atomic_load_explicit(&names[i], memory_order_relaxed);
        if (e != NULL && e->fn == fn) {
            name = e->name;
            break;
        }
        if (e == NULL) {
            if (names_used >= FN_MAX_USED || (e = malloc(sizeof *e)) == NULL)
                break;
            e->fn = fn;
            fn_resolve(e, fn, found ? &info : NULL, lm);
            names_used++;
            /* Release: a reader that loads e (acquire) sees it whole. */
            atomic_store_explicit(&names[i], e, memory_order_release);
            name = e->name;
            break;
        }
    }
    sf__unlock(&names_lock);
    return name;
}

const char *sf__trace_fn_name(const void *fn, char *buf, size_t size)
{
    const char *name = fn != NULL ? fn_name(fn) : NULL;
    if (name != NULL)
        return name;
    snprintf(buf, size, "%p", fn);
    return buf;
}

/* The Chrome trace. A task's slice is named by its function (Names); its
 * kind, the how of its FStart as people say it, is in its args. */
static const char *const kind_name[SF__HOW_COUNT + 1] = {
    [SF__HOW_INLINE] = "inline", [SF__HOW_POOL] = "pool",      [SF__HOW_STEAL] = "stolen",
    [SF__HOW_DRAIN] = "drained", [SF__HOW_WAIT] = "batch-wait",
    [SF__HOW_WAIT_INLINE] = "wait-inlined",
};

/* A flow's id: the task's name T.N as one number, T in the bits from 36 up
 * (T < 2^17, SF__MAX_THREAD_IDS), N below: a JSON number stays exact below
 * 2^53. Ids are unique while a thread has queued fewer than 2^36 tasks;
 * past that two flows may share an id, which misdraws an arrow, nothing
 * more. */
static unsigned long long flow_id(uint64_t s)
{
    _Static_assert(SF__MAX_THREAD_IDS <= (1 << 17), "T fits 17 bits");
    return ((unsigned long long)sf__tag_thread(s) << 36) |
           ((unsigned long long)sf__tag_seq(s) & ((1ull << 36) - 1));
}

/* A promise's completion (Set) as a Chrome instant event: the promise, and
 * its failure code (0: set). tid < 0: completed outside libsf's calls, by a
 * thread with no track - a global instant ("s":"g", drawn across every
 * track), tid 0 for the format's sake. */
static int chrome_set(char *p, int room, int tid, uint64_t a, uint64_t b, uint64_t ns)
{
    return snprintf(p, (size_t)room,
                    ",{\"ph\":\"i\",\"s\":\"%s\",\"pid\":%d,\"tid\":%d,\"ts\":%llu.%03llu,"
                    "\"name\":\"set\",\"cat\":\"promise\",\"args\":{\"task\":\"%d.%llu\","
                    "\"code\":%llu}}\n",
                    tid < 0 ? "g" : "t", chrome_pid, tid < 0 ? 0 : tid,
                    (unsigned long long)(ns / 1000), (unsigned long long)(ns % 1000),
                    sf__tag_thread(a), (unsigned long long)sf__tag_seq(a),
                    (unsigned long long)b);
}

/* Formats event ev of thread t at ns as JSON objects at p (room for
 * LINE_MAX_BYTES); returns the bytes written, 0 for an event the Chrome
 * trace leaves out (Do, Get, Submit...: the slices say what they did). */
static int chrome_event(struct sf__thread *t, char *p, enum sf__event ev, uint64_t a,
                        uint64_t b, uint64_t ns, const void *fn)
{
    /* A thread's own stack is its id's track; each fiber its waits parked
     * work on (park.c) is a track of its own, the fiber's number above the
     * id's 17 bits: a fiber's slices nest, a thread's need not. */
    int fiber = sf__sched(t)->fiber->index;
    int n = 0, pid = chrome_pid, tid = fiber == 0 ? t->id : fiber << 17 | t->id;
    unsigned long long us = ns / 1000, frac = ns % 1000;
#define OUT(...) (n += snprintf(p + n, (size_t)(LINE_MAX_BYTES - n), __VA_ARGS__))
    if (fiber != 0 && !(sf__sched(t)->tfibers_named & (UINT64_C(1) << (fiber - 1)))) {
        sf__sched(t)->tfibers_named |= UINT64_C(1) << (fiber - 1);
        if (t->id == 0)
            OUT(",{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"thread_name\","
                "\"args\":{\"name\":\"main fiber %d\"}}\n", pid, tid, fiber);
        else
            OUT(",{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"thread_name\","
                "\"args\":{\"name\":\"%s %d fiber %d\"}}\n",
                pid, tid, t->is_worker ? "worker" : "thread", t->id, fiber);
        OUT(",{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"thread_sort_index\","
            "\"args\":{\"sort_index\":%d}}\n", pid, tid, t->id * 100 + fiber);
    }
    if (fiber == 0 && !sf__sched(t)->tnamed) {
        sf__sched(t)->tnamed = true;
        if (tid == 0)
            OUT(",{\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"name\":\"thread_name\","
                "\"args\":{\"name\":\"main\"}}\n", pid);
        else
            OUT(",{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"thread_name\","
                "\"args\":{\"name\":\"%s %d\"}}\n",
                pid, tid, t->is_worker ? "worker" : "thread", tid);
        OUT(",{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"thread_sort_index\","
            "\"args\":{\"sort_index\":%d}}\n", pid, tid, tid * 100);
    }
    switch (ev) {
    case SF__EV_INIT:
        OUT(",{\"ph\":\"i\",\"s\":\"p\",\"pid\":%d,\"tid\":%d,\"ts\":%llu.%03llu,"
            "\"name\":\"init\",\"args\":{\"threads\":%llu,\"workers\":%llu}}\n",
            pid, tid, us, frac, (unsigned long long)a, (unsigned long long)b);
        break;
    case SF__EV_FSTART: {
        int from = sf__tag_thread(a);
        unsigned long long seq = (unsigned long long)sf__tag_seq(a);
        const char *kind = kind_name[b <= SF__HOW_COUNT ? b : SF__HOW_INLINE];
        const char *name = fn != NULL ? fn_name(fn) : NULL;
        /* The arrow from the queuing thread: its start 1 ns before the
         * slice, so that viewers that sort by time see it first; it binds
         * to the slice running there then, if any. A batch task was in no
         * thread's queue (SF__NO_THREAD_ID): no arrow. */
        bool flow = from != t->id && from != SF__NO_THREAD_ID;
        if (flow) {
            uint64_t s_ns = ns > 0 ? ns - 1 : 0;
            OUT(",{\"ph\":\"s\",\"id\":%llu,\"pid\":%d,\"tid\":%d,\"ts\":%llu.%03llu,"
                "\"name\":\"queued\",\"cat\":\"flow\"}\n",
                flow_id(a), pid, from, (unsigned long long)(s_ns / 1000),
                (unsigned long long)(s_ns % 1000));
        }
        OUT(",{\"ph\":\"B\",\"pid\":%d,\"tid\":%d,\"ts\":%llu.%03llu,\"name\":\"%s\","
            "\"cat\":\"task\",\"args\":{\"task\":\"%d.%llu\",\"kind\":\"%s\",\"depth\":%d}}\n",
            pid, tid, us, frac, name != NULL ? name : kind, from, seq, kind,
            sf__sched(t)->tdepth);
        sf__sched(t)->tdepth++;
        /* bp "e": the arrow ends on the slice just begun (enclosing). */
        if (flow)
            OUT(",{\"ph\":\"f\",\"bp\":\"e\",\"id\":%llu,\"pid\":%d,\"tid\":%d,"
                "\"ts\":%llu.%03llu,\"name\":\"queued\",\"cat\":\"flow\"}\n",
                flow_id(a), pid, tid, us, frac);
        break;
    }
    case SF__EV_FDONE:
    case SF__EV_WAKE:
    case SF__EV_NAP_END: /* a slice's end names nothing */
        if (ev == SF__EV_FDONE)
            sf__sched(t)->tdepth--;
        OUT(",{\"ph\":\"E\",\"pid\":%d,\"tid\":%d,\"ts\":%llu.%03llu}\n", pid, tid, us,
            frac);
        break;
    case SF__EV_SLEEP:
        OUT(",{\"ph\":\"B\",\"pid\":%d,\"tid\":%d,\"ts\":%llu.%03llu,\"name\":\"asleep\","
            "\"cat\":\"sleep\",\"args\":{\"task\":\"%d.%llu\"}}\n",
            pid, tid, us, frac, sf__tag_thread(a), (unsigned long long)sf__tag_seq(a));
        break;
    case SF__EV_NAP: /* a sleep, as a get's, of no one task */
        OUT(",{\"ph\":\"B\",\"pid\":%d,\"tid\":%d,\"ts\":%llu.%03llu,\"name\":\"nap\","
            "\"cat\":\"sleep\"}\n", pid, tid, us, frac);
        break;
    case SF__EV_PARK:
        OUT(",{\"ph\":\"i\",\"s\":\"t\",\"pid\":%d,\"tid\":%d,\"ts\":%llu.%03llu,"
            "\"name\":\"park\",\"cat\":\"park\",\"args\":{\"task\":\"%d.%llu\"}}\n",
            pid, tid, us, frac, sf__tag_thread(a), (unsigned long long)sf__tag_seq(a));
        break;
    case SF__EV_FIBER:
        OUT(",{\"ph\":\"i\",\"s\":\"t\",\"pid\":%d,\"tid\":%d,\"ts\":%llu.%03llu,"
            "\"name\":\"resume\",\"cat\":\"park\",\"args\":{\"fiber\":%llu}}\n",
            pid, tid, us, frac, (unsigned long long)a);
        break;
    case SF__EV_TIMEOUT:
        OUT(",{\"ph\":\"i\",\"s\":\"t\",\"pid\":%d,\"tid\":%d,\"ts\":%llu.%03llu,"
            "\"name\":\"timeout\",\"cat\":\"wait\",\"args\":{\"task\":\"%d.%llu\"}}\n",
            pid, tid, us, frac, sf__tag_thread(a), (unsigned long long)sf__tag_seq(a));
        break;
    case SF__EV_BATCH_TIMEOUT:
        OUT(",{\"ph\":\"i\",\"s\":\"t\",\"pid\":%d,\"tid\":%d,\"ts\":%llu.%03llu,"
            "\"name\":\"timeout\",\"cat\":\"wait\",\"args\":{\"batch\":true}}\n",
            pid, tid, us, frac);
        break;
    case SF__EV_IDLE:
        OUT(",{\"ph\":\"i\",\"s\":\"t\",\"pid\":%d,\"tid\":%d,\"ts\":%llu.%03llu,"
            "\"name\":\"idle\",\"cat\":\"idle\"}\n", pid, tid, us, frac);
        break;
    case SF__EV_DISCARD: /* a task that never runs: no slice, this mark */
        OUT(",{\"ph\":\"i\",\"s\":\"t\",\"pid\":%d,\"tid\":%d,\"ts\":%llu.%03llu,"
            "\"name\":\"discard\",\"cat\":\"task\",\"args\":{\"task\":\"%d.%llu\"}}\n",
            pid, tid, us, frac, sf__tag_thread(a), (unsigned long long)sf__tag_seq(a));
        break;
    case SF__EV_SET: n += chrome_set(p + n, LINE_MAX_BYTES - n, tid, a, b, ns); break;
    case SF__EV_SHUTDOWN:
        OUT(",{\"ph\":\"i\",\"s\":\"p\",\"pid\":%d,\"tid\":%d,\"ts\":%llu.%03llu,"
            "\"name\":\"shutdown\",\"args\":{\"drained\":%llu}}\n",
            pid, tid, us, frac, (unsigned long long)a);
        break;
    default: break;
    }
#undef OUT
    return n;
}

static size_t text_line(char *p, int id, enum sf__event ev, uint64_t a, uint64_t b,
                        uint64_t ns);

static void trace_event(struct sf__thread *t, enum sf__event ev, uint64_t a, uint64_t b,
                        const void *fn)
{
    if (sf__sched(t)->tbuf == NULL && (sf__sched(t)->tbuf = malloc(TBUF_BYTES)) == NULL)
        return; /* no memory for tracing: the program goes on untraced */
    if (sf__sched(t)->tlen > TBUF_BYTES - LINE_MAX_BYTES)
        sf__trace_flush(t);
    uint64_t ns = sf__now_ns() - t0_ns;
    char *p = sf__sched(t)->tbuf + sf__sched(t)->tlen;
    if (chrome) {
        sf__sched(t)->tlen += (size_t)chrome_event(t, p, ev, a, b, ns, fn);
        return;
    }
    if (ev == SF__EV_FSTART && b == SF__HOW_WAIT_INLINE)
        b = SF__HOW_INLINE; /* the text trace does not tell them apart */
    sf__sched(t)->tlen += text_line(p, t->id, ev, a, b, ns);
}

void sf__trace_event(struct sf__thread *t, enum sf__event ev, uint64_t a, uint64_t b)
{
    trace_event(t, ev, a, b, NULL);
}

void sf__trace_start(struct sf__thread *t, uint64_t claimed, enum sf__how how, const void *fn)
{
    trace_event(t, SF__EV_FSTART, claimed, (uint64_t)how, fn);
}

/* Formats event ev of thread `id` at ns as a text line at p (room for
 * LINE_MAX_BYTES); returns its bytes. */
static size_t text_line(char *p, int id, enum sf__event ev, uint64_t a, uint64_t b, uint64_t ns)
{
    /* Every argument is short (at most 20 digits twice, or a key and a
     * number), so a line always fits LINE_MAX_BYTES. */
    int n = snprintf(p, LINE_MAX_BYTES, "%d\t%lld\t%d\t%llu.%03llu\t%s", id, queued(),
                     asleep(), (unsigned long long)(ns / 1000000),
                     (unsigned long long)(ns / 1000 % 1000), event_name[ev]);
    uint64_t arg[SF__TRACE_MAX_ARGS] = {a, b};
    for (int i = 0; i < layout[ev].n; i++) {
        char *o = p + n;
        size_t room = LINE_MAX_BYTES - (size_t)n;
        switch (layout[ev].kind[i]) {
        case SF__TK_TASK:
            n += snprintf(o, room, "\t%d.%llu", sf__tag_thread(arg[i]),
                          (unsigned long long)sf__tag_seq(arg[i]));
            break;
        case SF__TK_THREAD: n += snprintf(o, room, "\t%d", (int)arg[i]); break;
        case SF__TK_HOW: n += snprintf(o, room, "\t%s", how_name[arg[i]]); break;
        case SF__TK_KEY:
            n += snprintf(o, room, "\t%s%llu", layout[ev].key[i], (unsigned long long)arg[i]);
            break;
        case SF__TK_COUNT: n += snprintf(o, room, "\t%llu", (unsigned long long)arg[i]); break;
        }
    }
    p[n++] = '\n';
    return (size_t)n;
}

void sf__trace_outside(enum sf__event ev, uint64_t a, uint64_t b)
{
    char line[LINE_MAX_BYTES];
    uint64_t ns = sf__now_ns() - t0_ns;
    size_t n;
    if (chrome) {
        n = ev == SF__EV_SET ? (size_t)chrome_set(line, (int)sizeof line, -1, a, b, ns) : 0;
    } else {
        n = text_line(line, SF__NO_THREAD_ID, ev, a, b, ns);
    }
    /* One write of whole lines: it stays whole in the file (O_APPEND) or
     * a pipe, among the threads' buffers. */
    write_all(trace_fd, line, n);
}
