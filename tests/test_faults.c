/*
 * test_faults.c - fault injection: every allocation, thread creation and
 * other fallible call libsf makes is made to fail in turn, and each failure
 * must surface as a documented errno (or the documented degraded start),
 * never as a crash, a hang, a wrong value or a leak; the runtime works
 * exactly once the fault is gone.
 *
 * How. libsf.so calls malloc & co. and pthread_create through its PLT, so
 * definitions in this executable interpose on them (for glibc's own callers
 * too: strdup, fopen, pthread_getattr_np). Each wrapper counts its calls while
 * armed and fails exactly the Nth call from arming (or every call):
 *   allocations (malloc, calloc, realloc, aligned_alloc, posix_memalign,
 *     memalign, valloc, pvalloc)       NULL with errno ENOMEM
 *   pthread_create                     EAGAIN (glibc's code for no memory
 *                                      or a thread limit)
 *   pthread_attr_init                  ENOMEM (POSIX allows it; glibc's never
 *                                      fails)
 *   pthread_key_create                 EAGAIN
 *   open                               -1 with errno EMFILE
 * The allocation wrappers forward to glibc's __libc_* entry points; the others
 * to the next definition (dlsym RTLD_NEXT). Allocations count whoever makes
 * them on libsf's behalf (glibc's strdup, fopen, pthread_getattr_np, the TLS
 * of a new thread); the other calls count only when libsf itself makes them
 * (its return address). The test's own calls (Check, its threads, its
 * bookkeeping) are marked exempt per thread: they neither fail nor count. No
 * Check assertion runs while a fault is armed (Check allocates in every
 * assertion); problems are written down and asserted afterwards. Threads
 * libsf creates start in a trampoline of ours, which marks them, so that a
 * fault can be aimed at them alone.
 *
 * Leaks. Every allocation made while not exempt is entered in a ledger of
 * live blocks (an address set) and removed when freed; the ledger's size
 * before sf_init() and after sf_shutdown() must be the same. Allocations
 * made inside pthread_create (a new thread's TLS and DTV) are glibc's, not
 * libsf's: they may be failed but are not entered, because glibc keeps them
 * with its cache of thread stacks after the join and frees them when it
 * pleases. Frees of blocks not in the ledger are ignored.
 *
 * Sanitizer builds (ThreadSanitizer, AddressSanitizer: TU_SANITIZED) replace
 * malloc themselves, so this program cannot. They are plain configures with
 * other CFLAGS (.ci/run), so no automake conditional could leave the program
 * out of them; instead it is built there without the allocation wrappers and
 * runs the cases that need none (thread creation; under AddressSanitizer
 * also pthread_attr_init, keys, open), with no leak ledger (AddressSanitizer
 * checks leaks at exit). The allocation cases run in the plain and debug
 * builds.
 */
#undef _FORTIFY_SOURCE /* this file defines open(); a fortified header inlines it */

#include "testutil.h"

#include <dlfcn.h>
#include <sys/mman.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FAULTS_ALLOC (!TU_SANITIZED)
/* ThreadSanitizer's runtime calls pthread_key_create through the dynamic
 * symbol while it initialises, before instrumented code such as a wrapper
 * of ours may run: there only pthread_create is interposed. */
#if defined(__SANITIZE_THREAD__)
#define FAULTS_OTHER 0
#else
#define FAULTS_OTHER 1
#endif

/* ------------------------------------------------------------------------
 * The fault switchboard.
 */

/* F_STACK: a fiber's stack (an mmap with MAP_STACK, runtime/platform/fiber.c); the
 * other mappings are F_ALLOC's. */
enum fault { F_ALLOC, F_THREAD, F_ATTR, F_KEY, F_OPEN, F_STACK, F_COUNT };

#define FAIL_EVERY LONG_MAX
/* 0: disarmed; n: the nth call since arming fails; FAIL_EVERY: every call. */
static _Atomic long fault_at[F_COUNT];
static _Atomic long fault_calls[F_COUNT]; /* calls since arming */
static _Atomic long fault_hits[F_COUNT];  /* failures injected since arming */

/* The test's own calls on this thread: never failed, never in the ledger. */
static __thread int tl_exempt;
/* Inside pthread_create: allocations that glibc keeps with the thread's
 * stack (TLS, DTV) are failed like any, but not entered in the ledger. */
static __thread int tl_machinery;

static void arm(enum fault k, long n)
{
    atomic_store(&fault_calls[k], 0);
    atomic_store(&fault_hits[k], 0);
    atomic_store(&fault_at[k], n);
}

static void disarm(enum fault k) { atomic_store(&fault_at[k], 0); }

/* Threads libsf creates (pool workers, fresh stacks) start in a trampoline
 * of ours that marks them; a fault may be limited to them, or to threads
 * the test marks as its target. */
static __thread bool tl_libsf_thread, tl_target;
static atomic_bool fault_libsf_threads_only, fault_target_only;
static atomic_int libsf_threads_ended;

static bool inject(enum fault k)
{
    if (tl_exempt > 0 || (atomic_load(&fault_libsf_threads_only) && !tl_libsf_thread) ||
        (atomic_load(&fault_target_only) && !tl_target))
        return false;
    long at = atomic_load(&fault_at[k]);
    if (at == 0)
        return false;
    long n = atomic_fetch_add(&fault_calls[k], 1) + 1;
    if (at != FAIL_EVERY && n != at)
        return false;
    atomic_fetch_add(&fault_hits[k], 1);
    return true;
}

/* The calls other than allocations count only when libsf makes them: a
 * sanitizer's interceptors, say, call pthread_attr_init too. */
static bool from_libsf(const void *ret)
{
    Dl_info info;
    return dladdr(ret, &info) != 0 && info.dli_fname != NULL &&
           strstr(info.dli_fname, "/libsf.so") != NULL;
}

#if FAULTS_OTHER
static bool inject_libsf(enum fault k, const void *ret)
{
    return atomic_load(&fault_at[k]) != 0 && tl_exempt == 0 && from_libsf(ret) && inject(k);
}
#endif

/* ------------------------------------------------------------------------
 * Problems found while armed: the first is kept and asserted afterwards.
 */

static atomic_int bad;
static char bad_text[1024];

__attribute__((format(printf, 1, 2))) static void bad_note(const char *fmt, ...)
{
    tl_exempt++;
    if (atomic_fetch_add(&bad, 1) == 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(bad_text, sizeof bad_text, fmt, ap);
        va_end(ap);
    }
    tl_exempt--;
}

static void bad_reset(void)
{
    atomic_store(&bad, 0);
    bad_text[0] = '\0';
}

/* The errnos sf.h documents for each function, in the conditions these tests
 * can produce (no NULL argument, no released future, no running runtime at
 * sf_init, no trace file that cannot be opened unless open is failed). */
static const int do_errnos[] = {ENOMEM, EAGAIN, 0};
static const int get_errnos[] = {EAGAIN, ENOMEM, 0};
static const int init_errnos[] = {ENOMEM, EAGAIN, 0};

static atomic_long documented_failures; /* calls that failed as documented */

static void check_errno(const char *call, int err, const int *allowed)
{
    for (const int *a = allowed; *a != 0; a++)
        if (err == *a) {
            atomic_fetch_add(&documented_failures, 1);
            return;
        }
    bad_note("%s failed with errno %d (%s), which sf.h does not document for it", call, err,
             strerror(err));
}

/* ------------------------------------------------------------------------
 * The ledger of live allocations: an open-addressing set of addresses with
 * linear probing and backward-shift deletion, under a mutex (glibc's mutexes
 * do not allocate).
 */

#if FAULTS_ALLOC
#define LEDGER_BITS 16
#define LEDGER_SIZE ((size_t)1 << LEDGER_BITS)
#define LEDGER_MASK (LEDGER_SIZE - 1)
static uintptr_t ledger[LEDGER_SIZE];
static size_t ledger_n;
static bool ledger_overflow;
static pthread_mutex_t ledger_lock = PTHREAD_MUTEX_INITIALIZER;

static size_t ledger_home(uintptr_t p)
{
    return (size_t)(((uint64_t)p >> 4) * 0x9e3779b97f4a7c15ull >> (64 - LEDGER_BITS));
}

static void ledger_add(void *ptr)
{
    uintptr_t p = (uintptr_t)ptr;
    pthread_mutex_lock(&ledger_lock);
    if (ledger_n >= LEDGER_SIZE / 4 * 3) {
        ledger_overflow = true;
    } else {
        size_t i = ledger_home(p);
        while (ledger[i] != 0)
            i = (i + 1) & LEDGER_MASK;
        ledger[i] = p;
        ledger_n++;
    }
    pthread_mutex_unlock(&ledger_lock);
}

/* Returns whether ptr was in the ledger. */
static bool ledger_remove(void *ptr)
{
    uintptr_t p = (uintptr_t)ptr;
    pthread_mutex_lock(&ledger_lock);
    size_t i = ledger_home(p);
    while (ledger[i] != 0 && ledger[i] != p)
        i = (i + 1) & LEDGER_MASK;
    bool found = ledger[i] == p;
    if (found) {
        ledger[i] = 0;
        ledger_n--;
        /* Backward shift: move up every later entry of the run whose home
         * is not cyclically in (i, j]. */
        for (size_t j = (i + 1) & LEDGER_MASK; ledger[j] != 0; j = (j + 1) & LEDGER_MASK) {
            size_t h = ledger_home(ledger[j]);
            bool stays = i < j ? (h > i && h <= j) : (h > i || h <= j);
            if (!stays) {
                ledger[i] = ledger[j];
                ledger[j] = 0;
                i = j;
            }
        }
    }
    pthread_mutex_unlock(&ledger_lock);
    return found;
}

static size_t ledger_live(void)
{
    pthread_mutex_lock(&ledger_lock);
    size_t n = ledger_n;
    bool over = ledger_overflow;
    pthread_mutex_unlock(&ledger_lock);
    ck_assert_msg(!over, "the ledger of live allocations overflowed");
    return n;
}

static void *noted(void *p)
{
    if (p != NULL && tl_exempt == 0 && tl_machinery == 0)
        ledger_add(p);
    return p;
}

/* ------------------------------------------------------------------------
 * The allocation wrappers (glibc's "Replacing malloc": these are the
 * functions a replacement defines; the rest of glibc's allocator, such as
 * malloc_usable_size, works on the same heap since every block is glibc's).
 */

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t size);
extern void __libc_free(void *p);
extern void *__libc_memalign(size_t align, size_t size);
extern void *__libc_valloc(size_t size);
extern void *__libc_pvalloc(size_t size);

void *malloc(size_t size)
{
    if (inject(F_ALLOC)) {
        errno = ENOMEM;
        return NULL;
    }
    return noted(__libc_malloc(size));
}

void *calloc(size_t n, size_t size)
{
    if (inject(F_ALLOC)) {
        errno = ENOMEM;
        return NULL;
    }
    return noted(__libc_calloc(n, size));
}

void *realloc(void *p, size_t size)
{
    if (p == NULL)
        return malloc(size);
    if (size == 0) { /* glibc: frees p and returns NULL */
        free(p);
        return NULL;
    }
    if (inject(F_ALLOC)) {
        errno = ENOMEM;
        return NULL;
    }
    /* The block keeps its standing: in the ledger if p was. */
    bool was = ledger_remove(p);
    void *q = __libc_realloc(p, size);
    if (was)
        ledger_add(q != NULL ? q : p);
    return q;
}

void free(void *p)
{
    if (p == NULL)
        return;
    ledger_remove(p); /* before the block can be handed out again */
    __libc_free(p);
}

void *memalign(size_t align, size_t size)
{
    if (inject(F_ALLOC)) {
        errno = ENOMEM;
        return NULL;
    }
    return noted(__libc_memalign(align, size));
}

void *aligned_alloc(size_t align, size_t size)
{
    if (align == 0 || (align & (align - 1)) != 0) {
        errno = EINVAL;
        return NULL;
    }
    return memalign(align, size);
}

int posix_memalign(void **out, size_t align, size_t size)
{
    if (align % sizeof(void *) != 0 || (align & (align - 1)) != 0 || align == 0)
        return EINVAL;
    if (inject(F_ALLOC))
        return ENOMEM;
    void *p = noted(__libc_memalign(align, size));
    if (p == NULL)
        return ENOMEM;
    *out = p;
    return 0;
}

void *valloc(size_t size)
{
    if (inject(F_ALLOC)) {
        errno = ENOMEM;
        return NULL;
    }
    return noted(__libc_valloc(size));
}

void *pvalloc(size_t size)
{
    if (inject(F_ALLOC)) {
        errno = ENOMEM;
        return NULL;
    }
    return noted(__libc_pvalloc(size));
}
#endif /* FAULTS_ALLOC */

/* ------------------------------------------------------------------------
 * The other wrappers, forwarding to the next definition (glibc's, or a
 * sanitizer's interceptor).
 */

typedef int create_fn(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
typedef int attr_init_fn(pthread_attr_t *);
typedef int key_create_fn(pthread_key_t *, void (*)(void *));
typedef int open_fn(const char *, int, ...);
typedef void *mmap_fn(void *, size_t, int, int, int, off_t);
static create_fn *real_create;
#if FAULTS_ALLOC
static mmap_fn *real_mmap;
#endif
#if FAULTS_OTHER
static attr_init_fn *real_attr_init;
static key_create_fn *real_key_create;
static open_fn *real_open;
#endif
static pthread_once_t resolve_once = PTHREAD_ONCE_INIT;

static void *next_symbol(const char *name)
{
    void *p = dlsym(RTLD_NEXT, name);
    if (p == NULL) {
        fprintf(stderr, "test_faults: dlsym(RTLD_NEXT, %s): %s\n", name, dlerror());
        abort();
    }
    return p;
}

static void resolve(void)
{
    tl_exempt++;
    real_create = (create_fn *)next_symbol("pthread_create");
#if FAULTS_ALLOC
    real_mmap = (mmap_fn *)next_symbol("mmap");
#endif
#if FAULTS_OTHER
    real_attr_init = (attr_init_fn *)next_symbol("pthread_attr_init");
    real_key_create = (key_create_fn *)next_symbol("pthread_key_create");
    real_open = (open_fn *)next_symbol("open");
#endif
    tl_exempt--;
}

struct trampoline {
    void *(*fn)(void *);
    void *arg;
};

static void *trampoline_main(void *p)
{
    struct trampoline tr = *(struct trampoline *)p;
    tl_exempt++;
    free(p);
    tl_exempt--;
    tl_libsf_thread = true;
    void *ret = tr.fn(tr.arg);
    atomic_fetch_add(&libsf_threads_ended, 1);
    return ret;
}

int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    pthread_once(&resolve_once, resolve);
    bool libsf = tl_exempt == 0 && from_libsf(__builtin_return_address(0));
    if (libsf && inject(F_THREAD))
        return EAGAIN;
    struct trampoline *tr = NULL;
    if (libsf) {
        tl_exempt++;
        tr = malloc(sizeof *tr);
        tl_exempt--;
        if (tr == NULL)
            return EAGAIN;
        tr->fn = fn;
        tr->arg = arg;
    }
    tl_machinery++;
    int rc = libsf ? real_create(t, attr, trampoline_main, tr) : real_create(t, attr, fn, arg);
    tl_machinery--;
    if (rc != 0 && tr != NULL) {
        tl_exempt++;
        free(tr);
        tl_exempt--;
    }
    return rc;
}

#if FAULTS_ALLOC
/* libsf maps the arenas of its futures' slabs itself: an allocation too. */
void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    pthread_once(&resolve_once, resolve);
    if ((flags & MAP_STACK) && tl_exempt == 0 && atomic_load(&fault_at[F_STACK]) != 0 &&
        from_libsf(__builtin_return_address(0)) && inject(F_STACK)) {
        errno = ENOMEM;
        return MAP_FAILED;
    }
    if (tl_exempt == 0 && atomic_load(&fault_at[F_ALLOC]) != 0 &&
        from_libsf(__builtin_return_address(0)) && inject(F_ALLOC)) {
        errno = ENOMEM;
        return MAP_FAILED;
    }
    return real_mmap(addr, len, prot, flags, fd, off);
}
#endif

#if FAULTS_OTHER
int pthread_attr_init(pthread_attr_t *attr)
{
    pthread_once(&resolve_once, resolve);
    if (inject_libsf(F_ATTR, __builtin_return_address(0)))
        return ENOMEM;
    return real_attr_init(attr);
}

int pthread_key_create(pthread_key_t *key, void (*destructor)(void *))
{
    pthread_once(&resolve_once, resolve);
    if (inject_libsf(F_KEY, __builtin_return_address(0)))
        return EAGAIN;
    return real_key_create(key, destructor);
}

int open(const char *path, int flags, ...)
{
    pthread_once(&resolve_once, resolve);
    mode_t mode = 0;
    if ((flags & O_CREAT) != 0 || (flags & O_TMPFILE) == O_TMPFILE) {
        va_list ap;
        va_start(ap, flags);
        mode = (mode_t)va_arg(ap, int);
        va_end(ap);
    }
    if (inject_libsf(F_OPEN, __builtin_return_address(0))) {
        errno = EMFILE;
        return -1;
    }
    return real_open(path, flags, mode);
}
#endif /* FAULTS_OTHER */

/* ------------------------------------------------------------------------
 * The test's own threads: created and joined exempt, problems noted.
 */

static int spawn(pthread_t *t, void *(*fn)(void *), void *arg, size_t stack)
{
    tl_exempt++;
    pthread_attr_t attr;
    int rc = pthread_attr_init(&attr);
    if (rc == 0 && stack != 0)
        rc = pthread_attr_setstacksize(&attr, stack);
    if (rc == 0)
        rc = pthread_create(t, &attr, fn, arg);
    pthread_attr_destroy(&attr);
    tl_exempt--;
    if (rc != 0)
        bad_note("the test cannot start a thread: %s", strerror(rc));
    return rc;
}

static void *join(pthread_t t)
{
    void *ret = NULL;
    tl_exempt++;
    int rc = pthread_join(t, &ret);
    tl_exempt--;
    if (rc != 0)
        bad_note("the test cannot join a thread: %s", strerror(rc));
    return ret;
}

/* ------------------------------------------------------------------------
 * Tasks that stay exact under failures: a failed sf_do or sf_get is checked
 * against sf.h and the work is then done without the runtime.
 */

static atomic_long made; /* futures sf_do returned */

static sf_future *do_checked(void *(*fn)(void *), void *arg)
{
    errno = 0;
    sf_future *f = sf_do(fn, arg);
    if (f != NULL)
        atomic_fetch_add(&made, 1);
    else
        check_errno("sf_do", errno, do_errnos);
    return f;
}

static long plain_fib(long n) { return n < 2 ? n : plain_fib(n - 1) + plain_fib(n - 2); }

static void *ffib(void *arg);

/* fib(n) through f (queued by sf_do(ffib, n)); f NULL: its sf_do failed.
 * Releases f. */
static long get_fib(sf_future *f, long n)
{
    if (f == NULL)
        return plain_fib(n);
    errno = 0;
    void *v = sf_get(f);
    long r = (long)v;
    if (v == NULL) { /* fib(n >= 1) is not 0: the get failed */
        if (n >= 1) {
            if (errno == 0)
                bad_note("sf_get of fib(%ld) returned NULL with errno 0", n);
            else
                check_errno("sf_get", errno, get_errnos);
            r = plain_fib(n);
        }
    } else if (r != plain_fib(n)) {
        bad_note("sf_get of fib(%ld) returned %ld", n, r);
    }
    sf_release(f);
    return r;
}

/* The header's fib, exact whatever fails. */
static void *ffib(void *arg)
{
    long n = (long)arg;
    if (n < 2)
        return (void *)n;
    sf_future *a = do_checked(ffib, (void *)(n - 1));
    long b = (long)ffib((void *)(n - 2));
    return (void *)(get_fib(a, n - 1) + b);
}

/* The same with the task in the frame (sf_task): exact whatever fails. */
static void *task_fib(void *arg)
{
    long n = (long)arg;
    if (n < 2)
        return (void *)n;
    sf_task t;
    errno = 0;
    bool queued = sf_task_do(&t, task_fib, (void *)(n - 1)) == 0;
    if (queued)
        atomic_fetch_add(&made, 1);
    else
        check_errno("sf_task_do", errno, do_errnos);
    long b = (long)task_fib((void *)(n - 2));
    if (!queued)
        return (void *)(plain_fib(n - 1) + b);
    errno = 0;
    void *v = sf_task_get(&t);
    long a = (long)v;
    if (v == NULL && n - 1 >= 1) {
        if (errno == 0)
            bad_note("sf_task_get of fib(%ld) returned NULL with errno 0", n - 1);
        else
            check_errno("sf_task_get", errno, get_errnos);
        a = plain_fib(n - 1);
    } else if (a != plain_fib(n - 1)) {
        bad_note("sf_task_get of fib(%ld) returned %ld", n - 1, a);
    }
    return (void *)(a + b);
}

static atomic_long counted; /* count_task runs */

static void *count_task(void *arg)
{
    atomic_fetch_add(&counted, 1);
    return arg;
}

/* Chains: chain(k) is k nested gets returning k; the first failure comes
 * back up as CHAIN_FAILED, its errno checked against sf.h. */
#define CHAIN_FAILED (-1L)
static atomic_long chain_fail_level; /* the level whose call failed, 0: none */
static atomic_int chain_fail_errno;

static void chain_failed(long k, const char *call, int err, const int *allowed)
{
    long none = 0;
    if (atomic_compare_exchange_strong(&chain_fail_level, &none, k))
        atomic_store(&chain_fail_errno, err);
    if (err == 0)
        bad_note("%s in a chain failed with errno 0 at level %ld", call, k);
    else
        check_errno(call, err, allowed);
}

static void *chain(void *arg)
{
    long k = (long)arg;
    if (k <= 1)
        return (void *)1L;
    errno = 0;
    sf_future *c = sf_do(chain, (void *)(k - 1));
    if (c == NULL) {
        chain_failed(k, "sf_do", errno, do_errnos);
        return (void *)CHAIN_FAILED;
    }
    atomic_fetch_add(&made, 1);
    errno = 0;
    long r = (long)sf_get(c);
    if (r == 0) {
        chain_failed(k, "sf_get", errno, get_errnos);
        sf_release(c); /* not run by the get: discarded (or orphaned, if another started it) */
        return (void *)CHAIN_FAILED;
    }
    sf_release(c);
    return (void *)(r < 0 ? r : r + 1);
}

/* The same chain with each level's task in its frame (sf_task): past the
 * red line each get moves its task to a libsf future and a fresh stack. */
static void *task_chain(void *arg)
{
    long k = (long)arg;
    if (k <= 1)
        return (void *)1L;
    sf_task t;
    errno = 0;
    if (sf_task_do(&t, task_chain, (void *)(k - 1)) != 0) {
        chain_failed(k, "sf_task_do", errno, do_errnos);
        return (void *)CHAIN_FAILED;
    }
    atomic_fetch_add(&made, 1);
    errno = 0;
    long r = (long)sf_task_get(&t);
    if (r == 0) {
        chain_failed(k, "sf_task_get", errno, get_errnos);
        return (void *)CHAIN_FAILED;
    }
    return (void *)(r < 0 ? r : r + 1);
}

/* Its root, as chain_root's below. */
static void *task_chain_root(void *arg)
{
    long depth = (long)arg;
    long r = (long)task_chain((void *)depth);
    if (r != depth && !(r == CHAIN_FAILED && atomic_load(&chain_fail_level) != 0))
        bad_note("a chain of sf_tasks %ld deep returned %ld", depth, r);
    return (void *)r;
}

/* The root of a chain, on a thread of its own (its stack size chosen by the
 * caller): the chain's result, exact or CHAIN_FAILED with a failure noted. */
static void *chain_root(void *arg)
{
    long depth = (long)arg;
    sf_future *f = do_checked(chain, (void *)depth);
    if (f == NULL)
        return (void *)CHAIN_FAILED;
    errno = 0;
    long r = (long)sf_get(f);
    if (r == 0) {
        chain_failed(depth, "sf_get", errno, get_errnos);
        r = CHAIN_FAILED;
    }
    sf_release(f);
    if (r != depth && !(r == CHAIN_FAILED && atomic_load(&chain_fail_level) != 0))
        bad_note("a chain %ld deep returned %ld", depth, r);
    return (void *)r;
}

/* ------------------------------------------------------------------------
 * Workloads.
 */

struct variant {
    const char *name;
    int threads;        /* sf_config.threads (SF_THREADS for an implicit start) */
    bool implicit;      /* no sf_init: the first sf_do starts the runtime */
    bool trace;         /* trace to a temporary file */
    bool foreign;       /* a second pthread of the test gets a future of main's */
    int pending;        /* tasks queued and never got: half released, half drained */
    bool elsewhere;     /* the work is done by a thread that has exited when the
                         * main thread, never registered, calls sf_shutdown */
    long chain;         /* a chain this deep, rooted on a 256 KiB thread, with
                         * 128 KiB pool and fresh stacks */
};

#define CHAIN_ROOT_STACK ((size_t)256 << 10)
#define CHAIN_STACKS ((size_t)128 << 10)

struct foreign_arg {
    sf_future *g; /* fib(11), made by main, not yet got */
};

static void *foreign_main(void *arg)
{
    struct foreign_arg *fa = arg;
    sf_future *own = do_checked(ffib, (void *)12L);
    if (fa->g != NULL) {
        errno = 0;
        void *v = sf_get(fa->g); /* main's: not released here */
        if (v == NULL)
            check_errno("sf_get", errno, get_errnos);
        else if ((long)v != 89)
            bad_note("a foreign sf_get of fib(11) returned %ld", (long)v);
    }
    if (get_fib(own, 12) != 144)
        bad_note("fib(12) on a foreign thread was not 144");
    return NULL;
}

struct run {
    char trace_path[256];
    long pending_made;   /* pending tasks queued and not released */
};

/* Queues v->pending count_tasks and releases every other one unstarted. */
static void leave_pending(const struct variant *v, struct run *r)
{
    sf_future *keep[512];
    int n = v->pending < 512 ? v->pending : 512;
    for (int i = 0; i < n; i++) {
        sf_future *f = do_checked(count_task, NULL);
        keep[i] = f;
        if (f != NULL && i % 2 == 1) {
            sf_release(f); /* pending: discarded, never runs */
            keep[i] = NULL;
        }
    }
    for (int i = 0; i < n; i++)
        if (keep[i] != NULL)
            r->pending_made++;
    /* The rest stay queued (their handles die with sf_shutdown). */
}

static void start(const struct variant *v, struct run *r)
{
    if (v->implicit)
        return;
    sf_config c;
    memset(&c, 0, sizeof c);
    c.threads = v->threads;
    c.trace = v->trace ? SF_TRACE_ON : SF_TRACE_OFF;
    c.trace_file = v->trace ? r->trace_path : NULL;
    c.stack_size = v->chain != 0 ? CHAIN_STACKS : 0;
    errno = 0;
    if (sf_init(&c) != 0) {
        check_errno("sf_init", errno, init_errnos);
        /* Nothing started: the first sf_do starts a runtime from SF_THREADS. */
        sf_stats s;
        errno = 0;
        if (sf_stats_read(&s) != -1 || errno != ESRCH)
            bad_note("sf_init failed, yet sf_stats_read says a runtime runs");
    }
}

/* The work, on whichever thread does it (main or, for v->elsewhere, a
 * thread that exits before sf_shutdown). */
static void work(const struct variant *v, struct run *r)
{
    start(v, r);
    if (v->chain != 0) {
        pthread_t t;
        if (spawn(&t, chain_root, (void *)v->chain, CHAIN_ROOT_STACK) == 0)
            join(t);
        if (spawn(&t, task_chain_root, (void *)v->chain, CHAIN_ROOT_STACK) == 0)
            join(t);
    }
    if ((long)task_fib((void *)12L) != 144)
        bad_note("fib(12) with sf_tasks was not 144");
    sf_future *f1 = do_checked(ffib, (void *)12L);
    struct foreign_arg fa = {NULL};
    pthread_t t;
    bool foreign = false;
    if (v->foreign) {
        fa.g = do_checked(ffib, (void *)11L);
        foreign = spawn(&t, foreign_main, &fa, 0) == 0;
    }
    if (get_fib(f1, 12) != 144)
        bad_note("fib(12) was not 144");
    if (foreign)
        join(t);
    if (v->foreign && get_fib(fa.g, 11) != 89)
        bad_note("fib(11) was not 89");
    if (v->pending > 0)
        leave_pending(v, r);
}

struct elsewhere {
    const struct variant *v;
    struct run *r;
};

static void *elsewhere_main(void *arg)
{
    struct elsewhere *e = arg;
    work(e->v, e->r);
    return NULL;
}

/* One run: start, work, check the counters, sf_shutdown. Problems are noted
 * (bad_note), not asserted: a fault may be armed. */
static void workload(const struct variant *v, struct run *r)
{
    atomic_store(&made, 0);
    atomic_store(&counted, 0);
    atomic_store(&chain_fail_level, 0);
    atomic_store(&chain_fail_errno, 0);
    r->pending_made = 0;
    if (v->elsewhere) {
        struct elsewhere e = {v, r};
        pthread_t t;
        if (spawn(&t, elsewhere_main, &e, 0) == 0)
            join(t);
    } else {
        work(v, r);
    }
    long ran_before = atomic_load(&counted); /* pending tasks some get ran */
    long pending = r->pending_made - ran_before;
    sf_stats s;
    errno = 0;
    int rc = sf_stats_read(&s);
    /* A get that failed while another thread had started its task (a
     * blocked getter helping) released a running future: the task goes on,
     * orphaned, and the runtime is quiet only once it ends. */
    for (int i = 0; rc == 0 && i < 10000; i++) {
        if (s.created == s.run_inline + s.run_pool + s.run_stolen + s.discarded + (uint64_t)pending)
            break;
        tu_sleep_ms(1);
        rc = sf_stats_read(&s);
    }
    if (rc == 0) {
        uint64_t done = s.run_inline + s.run_pool + s.run_stolen + s.discarded;
        if (s.created != (uint64_t)atomic_load(&made))
            bad_note("stats: created %llu, but sf_do returned %ld futures",
                     (unsigned long long)s.created, atomic_load(&made));
        if (s.created != done + (uint64_t)pending)
            bad_note("stats: created %llu != run_inline %llu + run_pool %llu + run_stolen %llu "
                     "+ discarded %llu + pending %ld",
                     (unsigned long long)s.created, (unsigned long long)s.run_inline,
                     (unsigned long long)s.run_pool, (unsigned long long)s.run_stolen,
                     (unsigned long long)s.discarded, pending);
        if (s.threads != v->threads || s.workers < 0 || s.workers > v->threads - 1 ||
            s.peak_busy < 0 || s.peak_busy > s.workers)
            bad_note("stats: threads %d, workers %d, peak_busy %d for %d threads", s.threads,
                     s.workers, s.peak_busy, v->threads);
    } else if (errno != ESRCH) {
        bad_note("sf_stats_read failed with errno %d", errno);
    } else if (atomic_load(&made) > 0) {
        bad_note("sf_stats_read: ESRCH, yet sf_do made futures");
    }
    sf_shutdown();
    /* No queued task is lost: the drain ran every one left pending. */
    if (atomic_load(&counted) != r->pending_made)
        bad_note("%ld tasks were left pending at sf_shutdown; %ld of them ran",
                 r->pending_made, atomic_load(&counted));
    errno = 0;
    if (sf_stats_read(&s) != -1 || errno != ESRCH)
        bad_note("after sf_shutdown, sf_stats_read does not say ESRCH");
}

/* Prints a TAP comment into the test's log. */
__attribute__((format(printf, 1, 2))) static void note(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("# ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    fflush(stdout);
}

#if FAULTS_ALLOC
/* A trace written under faults: whatever lines it has are whole, after the
 * header (a thread without memory for its buffer goes untraced). */
static void check_trace(const char *path)
{
    char *t = tu_read_file(path);
    unlink(path);
    if (t == NULL)
        return; /* sf_init failed before it opened the file */
    size_t n = strlen(t);
    ck_assert_msg(n == 0 || strncmp(t, "Thread\tQueue\t", 13) == 0,
                  "trace does not start with its header: %.80s", t);
    ck_assert_msg(n == 0 || t[n - 1] == '\n', "trace ends mid-line");
    free(t);
}

/* What stderr may hold after a run under faults: at most one line saying
 * the pool started short, for a documented reason. */
static void check_stderr(const char *err, int threads, int *short_starts)
{
    const char *p = err;
    int lines = 0;
    while (*p != '\0') {
        const char *nl = strchr(p, '\n');
        ck_assert_msg(nl != NULL, "stderr ends mid-line: \"%s\"", err);
        int got = -1, want = -1, with = -1, end = 0;
        char reason[128] = "";
        int ok = sscanf(p, "libsf: started %d of %d pool workers (%127[^)]); running with %d%n",
                        &got, &want, reason, &with, &end) == 4 &&
                 p + end == nl;
        ck_assert_msg(ok && want == threads - 1 && got >= 0 && got < want && with == got &&
                          (strcmp(reason, strerror(EAGAIN)) == 0 ||
                           strcmp(reason, strerror(ENOMEM)) == 0),
                      "unexpected stderr line: \"%.*s\"", (int)(nl - p), p);
        lines++;
        p = nl + 1;
    }
    ck_assert_msg(lines <= 1, "%d lines on stderr: \"%s\"", lines, err);
    *short_starts += lines;
}

/* ------------------------------------------------------------------------
 * 1. Every allocation fails in turn.
 */

static const struct variant alloc_variants[] = {
    {.name = "init 2 threads", .threads = 2},
    {.name = "init 4 threads, traced to a file, a foreign thread", .threads = 4, .trace = true,
     .foreign = true},
    {.name = "implicit start at 3 threads, a foreign thread, 300 tasks left pending",
     .threads = 3, .implicit = true, .foreign = true, .pending = 300},
    {.name = "chain 6000 deep on small stacks", .threads = 2, .chain = 6000},
    {.name = "work on a thread that exits, sf_shutdown from an unregistered one", .threads = 2,
     .elsewhere = true, .pending = 20},
};

/* One run of v under the armed faults (or none), fully checked afterwards:
 * its problems, stderr, the trace, no leak, no thread left behind. */
static void checked_run(const struct variant *v, long n, int threads_before, int *short_starts)
{
    struct run r;
    memset(&r, 0, sizeof r);
    if (v->trace)
        tu_tmp_path(r.trace_path, sizeof r.trace_path, "faults-trace");
    size_t live = ledger_live();
    bad_reset();
    struct tu_capture cap;
    tu_capture_begin(&cap);
    /* Check names the last mark point when a test dies of a signal: make it
     * say which run crashed. */
    char label[200], where[256];
    if (n != 0)
        snprintf(label, sizeof label, "\"%s\", allocation %ld failing", v->name, n);
    else
        snprintf(label, sizeof label, "\"%s\", no fault", v->name);
    snprintf(where, sizeof where, "test_faults.c: %s", label);
    _mark_point(where, __LINE__);
    if (n != 0)
        arm(F_ALLOC, n);
    workload(v, &r);
    disarm(F_ALLOC);
    char *err = tu_capture_end(&cap);
    ck_assert_msg(atomic_load(&bad) == 0, "%s: %s (%d problems)", label, bad_text,
                  atomic_load(&bad));
    if (n == 0)
        ck_assert_msg(*err == '\0', "%s: stderr \"%s\"", label, err);
    else
        check_stderr(err, v->threads, short_starts);
    free(err);
    if (v->trace)
        check_trace(r.trace_path);
    long leaked = (long)ledger_live() - (long)live;
    ck_assert_msg(leaked == 0, "%s: %ld blocks leaked", label, leaked);
    tu_assert_os_threads(threads_before);
}

START_TEST(every_allocation_fails_in_turn)
{
    const struct variant *v = &alloc_variants[_i];
    tu_env_threads(v->threads);
    int threads_before = tu_os_threads();
    int short_starts = 0;
    long n = 1, failures = 0;
    checked_run(v, 0, threads_before, &short_starts); /* the workload works */
    for (;; n++) {
        atomic_store(&documented_failures, 0);
        checked_run(v, n, threads_before, &short_starts);
        long hits = atomic_load(&fault_hits[F_ALLOC]);
        failures += atomic_load(&documented_failures);
        ck_assert_int_le(hits, 1);
        /* The runtime recovered: the same work, no fault, exact. */
        checked_run(v, 0, threads_before, &short_starts);
        if (hits == 0)
            break; /* the run made fewer than n allocations */
        ck_assert_int_lt(n, 100000);
    }
    ck_assert_int_ge(n - 1, 8); /* the wrappers do see libsf's allocations */
    note("%s: %ld allocations, each failed in turn; %ld libsf calls failed as documented, "
         "%d starts with a short pool",
         v->name, n - 1, failures, short_starts);
}
END_TEST

/* The wrappers are in libsf's way: its memory shows in the ledger while it
 * runs, and an armed fault fails its calls. */
START_TEST(interposition_works)
{
    tu_env_threads(1); /* no worker registering meanwhile */
    size_t live = ledger_live();
    ck_assert_int_eq(sf_init(NULL), 0);
    ck_assert_uint_gt(ledger_live(), live);
    arm(F_ALLOC, FAIL_EVERY);
    errno = 0;
    sf_future *f = sf_do(count_task, NULL); /* a new slab: no memory */
    int err = errno;
    disarm(F_ALLOC);
    ck_assert_ptr_null(f);
    ck_assert_int_eq(err, ENOMEM);
    ck_assert_int_ge(atomic_load(&fault_hits[F_ALLOC]), 1);
    sf_shutdown();
    ck_assert_uint_eq(ledger_live(), live);
}
END_TEST

/* A pool worker is created, but its registration finds no memory: it ends
 * at once (pool.c, worker_main). sf.h: sf_stats_read() reports the pool
 * workers running, and workers that cannot start are said in one line. */
START_TEST(worker_cannot_register)
{
    tu_env_threads(2);
    int before = tu_os_threads();
    size_t live = ledger_live();
    sf_config c;
    memset(&c, 0, sizeof c);
    c.threads = 2;
    struct tu_capture cap;
    tu_capture_begin(&cap);
    atomic_store(&libsf_threads_ended, 0);
    atomic_store(&fault_libsf_threads_only, true);
    arm(F_ALLOC, 1); /* the worker's first allocation: its thread struct */
    int rc = sf_init(&c);
    for (int i = 0; i < 10000 && atomic_load(&libsf_threads_ended) == 0; i++)
        tu_sleep_ms(1);
    disarm(F_ALLOC);
    atomic_store(&fault_libsf_threads_only, false);
    char *err = tu_capture_end(&cap);
    ck_assert_int_eq(rc, 0);
    ck_assert_int_eq(atomic_load(&fault_hits[F_ALLOC]), 1);
    ck_assert_int_eq(atomic_load(&libsf_threads_ended), 1); /* the worker is gone */
    tu_assert_os_threads(before);
    int short_starts = 0;
    check_stderr(err, 2, &short_starts);
    sf_stats s;
    ck_assert_int_eq(sf_stats_read(&s), 0);
    ck_assert_msg(s.workers == 0,
                  "sf_stats_read: %d workers running, but the only one ended at once (its "
                  "registration found no memory); stderr \"%s\"",
                  s.workers, err);
    free(err);
    const struct variant v = {.name = "no worker", .threads = 2, .implicit = true};
    struct run r;
    memset(&r, 0, sizeof r);
    bad_reset();
    workload(&v, &r);
    ck_assert_msg(atomic_load(&bad) == 0, "%s", bad_text);
    tu_assert_os_threads(before);
    ck_assert_uint_eq(ledger_live(), live);
}
END_TEST
/* sf_shutdown from a thread that never used libsf registers that thread to
 * drain; when the registration finds no memory, the tasks still pending
 * must not be lost (sf.h: every pending task is run first, "no queued task
 * is lost"). */
START_TEST(shutdown_cannot_register)
{
    tu_env_threads(2);
    int before = tu_os_threads();
    size_t live = ledger_live();
    const struct variant v = {.name = "shutdown without memory", .threads = 2,
                              .elsewhere = true, .pending = 20};
    struct run r;
    memset(&r, 0, sizeof r);
    bad_reset();
    atomic_store(&made, 0);
    atomic_store(&counted, 0);
    struct elsewhere e = {&v, &r};
    pthread_t t;
    ck_assert_int_eq(spawn(&t, elsewhere_main, &e, 0), 0);
    join(t);
    ck_assert_msg(atomic_load(&bad) == 0, "%s", bad_text);
    ck_assert_int_eq(r.pending_made, 10);
    ck_assert_int_eq(atomic_load(&counted), 0);
    tl_target = true;
    atomic_store(&fault_target_only, true);
    arm(F_ALLOC, FAIL_EVERY); /* on this thread only */
    sf_shutdown();
    disarm(F_ALLOC);
    atomic_store(&fault_target_only, false);
    tl_target = false;
    ck_assert_int_ge(atomic_load(&fault_hits[F_ALLOC]), 1);
    ck_assert_msg(atomic_load(&counted) == r.pending_made,
                  "sf_shutdown ran %ld of the %ld tasks left pending (its thread could not "
                  "register)",
                  atomic_load(&counted), r.pending_made);
    tu_assert_os_threads(before);
    ck_assert_uint_eq(ledger_live(), live);
}
END_TEST

#endif /* FAULTS_ALLOC */

/* ------------------------------------------------------------------------
 * 2. Thread creation fails.
 */

static size_t live_now(void)
{
#if FAULTS_ALLOC
    return ledger_live();
#else
    return 0;
#endif
}

/* The Nth of the pool's three pthread_creates fails: sf_init succeeds with
 * N - 1 workers and says so in one line; everything works. */
START_TEST(pool_starts_short)
{
    int n = _i + 1;
    tu_env_threads(4);
    int before = tu_os_threads();
    size_t live = live_now();
    sf_config c;
    memset(&c, 0, sizeof c);
    c.threads = 4;
    struct tu_capture cap;
    tu_capture_begin(&cap);
    arm(F_THREAD, n);
    int rc = sf_init(&c);
    disarm(F_THREAD);
    char *err = tu_capture_end(&cap);
    ck_assert_int_eq(rc, 0);
    ck_assert_int_eq(atomic_load(&fault_hits[F_THREAD]), 1);
    char want[256];
    snprintf(want, sizeof want, "libsf: started %d of 3 pool workers (%s); running with %d\n",
             n - 1, strerror(EAGAIN), n - 1);
    ck_assert_str_eq(err, want);
    free(err);
    tu_assert_os_threads(before + n - 1);
    sf_stats s;
    ck_assert_int_eq(sf_stats_read(&s), 0);
    ck_assert_int_eq(s.threads, 4);
    ck_assert_int_eq(s.workers, n - 1);
    /* The work, and its counters. */
    const struct variant v = {.name = "short pool", .threads = 4, .implicit = true,
                              .foreign = true, .pending = 10};
    struct run r;
    memset(&r, 0, sizeof r);
    bad_reset();
    workload(&v, &r); /* implicit: the runtime runs already; ends with sf_shutdown */
    ck_assert_msg(atomic_load(&bad) == 0, "%s", bad_text);
    tu_assert_os_threads(before);
    ck_assert_uint_eq(live_now(), live);
}
END_TEST

/* Fresh stacks of a chain (docs/waiting.md, Deep chains) when no fiber can be had
 * (every fiber stack fails to map: F_STACK) and threads must do: the Nth
 * pthread_create fails, for every N the chain has. The get goes on in place
 * and the next level below the red line gets its fresh stack: the chain is
 * exact. Without mmap to interpose (a sanitizer), fibers are the fresh
 * stacks: no pthread_create, and the chain is as exact. */
START_TEST(fresh_stack_fails_in_turn)
{
    enum { DEPTH = 20000 };
    tu_env_threads(1);
    if (FAULTS_ALLOC)
        arm(F_STACK, FAIL_EVERY);
    int before = tu_os_threads();
    long n = 1;
    uint64_t fresh = 0;
    for (;; n++) {
        size_t live = live_now();
        sf_config c;
        memset(&c, 0, sizeof c);
        c.threads = 1; /* no worker: every pthread_create is a fresh stack's */
        c.stack_size = CHAIN_STACKS;
        ck_assert_int_eq(sf_init(&c), 0);
        bad_reset();
        atomic_store(&chain_fail_level, 0);
        atomic_store(&made, 0);
        arm(F_THREAD, n);
        pthread_t t;
        long r = spawn(&t, chain_root, (void *)(long)DEPTH, CHAIN_ROOT_STACK) == 0
                     ? (long)join(t)
                     : 0;
        disarm(F_THREAD);
        long hits = atomic_load(&fault_hits[F_THREAD]);
        ck_assert_msg(atomic_load(&bad) == 0, "pthread_create %ld failed: %s", n, bad_text);
        ck_assert_msg(r == DEPTH, "pthread_create %ld failed: the chain returned %ld (level %ld, "
                                  "errno %d)",
                      n, r, atomic_load(&chain_fail_level), atomic_load(&chain_fail_errno));
        sf_stats s = tu_stats_quiet();
        ck_assert_uint_eq(s.created, DEPTH);
        ck_assert_uint_ge(s.fresh_stacks, 1);
        if (hits == 0)
            fresh = s.fresh_stacks;
        sf_shutdown();
        tu_assert_os_threads(before);
        ck_assert_uint_eq(live_now(), live);
        if (hits == 0)
            break;
        ck_assert_int_lt(n, 10000);
    }
    disarm(F_STACK);
    if (FAULTS_ALLOC) {
        note("a chain %d deep on 128 KiB stacks: %ld fresh stacks, each pthread_create failed "
             "in turn", DEPTH, n - 1);
        ck_assert_uint_eq(fresh, (uint64_t)(n - 1));
    } else {
        ck_assert_int_eq(n, 1); /* fibers: no pthread_create to fail */
    }
}
END_TEST

#if FAULTS_ALLOC
/* docs/waiting.md's promise: a million-deep chain with no fiber and no thread to be had
 * (every fiber stack fails to map, every pthread_create fails, the pool's
 * too) goes on in place and fails with
 * EAGAIN at some level, with no overflow; once threads can be had again, the
 * same chain completes. */
START_TEST(million_chain_without_threads)
{
    const long depth = TU_SANITIZED ? 100000 : 1000000;
    tu_env_threads(2);
    int before = tu_os_threads();
    size_t live = live_now();
    sf_config c;
    memset(&c, 0, sizeof c);
    c.threads = 2;
    struct tu_capture cap;
    tu_capture_begin(&cap);
    arm(F_STACK, FAIL_EVERY);
    arm(F_THREAD, FAIL_EVERY);
    ck_assert_int_eq(sf_init(&c), 0);
    char *err = tu_capture_end(&cap);
    char want[256];
    snprintf(want, sizeof want, "libsf: started 0 of 1 pool workers (%s); running with 0\n",
             strerror(EAGAIN));
    ck_assert_str_eq(err, want);
    free(err);
    bad_reset();
    atomic_store(&chain_fail_level, 0);
    atomic_store(&chain_fail_errno, 0);
    atomic_store(&made, 0);
    long r = (long)chain_root((void *)depth);
    disarm(F_THREAD);
    disarm(F_STACK);
    long tries = atomic_load(&fault_hits[F_THREAD]);
    ck_assert_msg(atomic_load(&bad) == 0, "%s", bad_text);
    ck_assert_int_eq(r, CHAIN_FAILED);
    ck_assert_int_eq(atomic_load(&chain_fail_errno), EAGAIN);
    long level = atomic_load(&chain_fail_level);
    /* It failed deep in the main thread's stack, not at the first get below
     * the red line. */
    ck_assert_int_gt(level, 0);
    ck_assert_int_lt(level, depth);
    sf_stats s;
    ck_assert_int_eq(sf_stats_read(&s), 0);
    ck_assert_uint_eq(s.fresh_stacks, 0);
    ck_assert_int_eq(s.workers, 0);
    ck_assert_uint_eq(s.created, (uint64_t)atomic_load(&made));
    ck_assert_uint_eq(s.run_inline + s.discarded, s.created);
    ck_assert_uint_eq(s.discarded, 1); /* the failed get's task, released */
    note("a chain %ld deep without threads: EAGAIN at level %ld (%ld levels ran in place), "
         "after %ld failed pthread_creates",
         depth, level, depth - level, tries);
    /* Threads again: the same chain completes on fresh stacks. */
    atomic_store(&made, 0);
    ck_assert_int_eq((long)chain_root((void *)depth), depth);
    ck_assert_msg(atomic_load(&bad) == 0, "%s", bad_text);
    ck_assert_int_eq(sf_stats_read(&s), 0);
    ck_assert_uint_ge(s.fresh_stacks, 1);
    sf_shutdown();
    tu_assert_os_threads(before);
    ck_assert_uint_eq(live_now(), live);
}
END_TEST
#endif

#if FAULTS_OTHER
/* ------------------------------------------------------------------------
 * 3. The other fallible calls.
 */

/* pthread_attr_init fails (glibc's never does; POSIX allows ENOMEM): at
 * sf_init the pool does not start, said in one line; for a fresh stack the
 * get fails with ENOMEM. */
START_TEST(attr_init_fails)
{
    tu_env_threads(3);
    int before = tu_os_threads();
    size_t live = live_now();
    sf_config c;
    memset(&c, 0, sizeof c);
    c.threads = 3;
    c.stack_size = CHAIN_STACKS;
    struct tu_capture cap;
    tu_capture_begin(&cap);
    arm(F_ATTR, 1);
    ck_assert_int_eq(sf_init(&c), 0);
    disarm(F_ATTR);
    char *err = tu_capture_end(&cap);
    char want[256];
    snprintf(want, sizeof want, "libsf: started 0 of 2 pool workers (%s); running with 0\n",
             strerror(ENOMEM));
    ck_assert_str_eq(err, want);
    free(err);
    sf_stats s;
    ck_assert_int_eq(sf_stats_read(&s), 0);
    ck_assert_int_eq(s.workers, 0);
    tu_assert_os_threads(before);
    /* A chain whose first fresh stack cannot be set up: it goes on in place
     * (room is left), and a later get takes a fresh stack (docs/waiting.md, "Deep
     * chains"). Fresh stacks are threads only when no fiber can be had:
     * none here, where mmap can be interposed; elsewhere (a sanitizer)
     * fibers take the chain and no attribute is ever made. */
    if (!FAULTS_ALLOC) {
        sf_shutdown();
        return;
    }
    arm(F_STACK, FAIL_EVERY);
    bad_reset();
    atomic_store(&chain_fail_level, 0);
    atomic_store(&chain_fail_errno, 0);
    arm(F_ATTR, 1);
    pthread_t t;
    ck_assert_int_eq(spawn(&t, chain_root, (void *)20000L, CHAIN_ROOT_STACK), 0);
    long r = (long)join(t);
    disarm(F_ATTR);
    ck_assert_int_eq(atomic_load(&fault_hits[F_ATTR]), 1);
    ck_assert_msg(atomic_load(&bad) == 0, "%s", bad_text);
    ck_assert_int_eq(r, 20000);
    ck_assert_int_eq(atomic_load(&chain_fail_errno), 0);
    /* Afterwards the chain completes. */
    atomic_store(&chain_fail_level, 0);
    ck_assert_int_eq(spawn(&t, chain_root, (void *)20000L, CHAIN_ROOT_STACK), 0);
    ck_assert_int_eq((long)join(t), 20000);
    disarm(F_STACK);
    ck_assert_msg(atomic_load(&bad) == 0, "%s", bad_text);
    sf_shutdown();
    tu_assert_os_threads(before);
    ck_assert_uint_eq(live_now(), live);
}
END_TEST

/* No pthread key is left: sf_init fails with EAGAIN, and so does the
 * implicit start of sf_do; nothing is started, nothing leaks, and the next
 * start works. */
START_TEST(key_create_fails)
{
    tu_env_threads(3);
    int before = tu_os_threads();
    size_t live = live_now();
    arm(F_KEY, 1);
    errno = 0;
    ck_assert_int_eq(sf_init(NULL), -1);
    ck_assert_int_eq(errno, EAGAIN);
    arm(F_KEY, 1);
    errno = 0;
    ck_assert_ptr_null(sf_do(count_task, NULL));
    ck_assert_int_eq(errno, EAGAIN);
    disarm(F_KEY);
    sf_stats s;
    errno = 0;
    ck_assert_int_eq(sf_stats_read(&s), -1);
    ck_assert_int_eq(errno, ESRCH);
    tu_assert_os_threads(before);
    ck_assert_uint_eq(live_now(), live);
    const struct variant v = {.name = "after no key", .threads = 3, .foreign = true};
    struct run r;
    memset(&r, 0, sizeof r);
    bad_reset();
    workload(&v, &r);
    ck_assert_msg(atomic_load(&bad) == 0, "%s", bad_text);
    tu_assert_os_threads(before);
    ck_assert_uint_eq(live_now(), live);
}
END_TEST

/* The trace file cannot be opened: an sf_config path fails sf_init with
 * open's errno; an SF_TRACE_FILE path is reported in one line and the trace
 * goes to stderr. */
START_TEST(trace_open_fails)
{
    tu_env_threads(2);
    char path[256];
    tu_tmp_path(path, sizeof path, "faults-trace");
    /* Set before the ledger is read: setenv's memory is glibc's to keep. The
     * sf_config path below wins over it. */
    setenv("SF_TRACE_FILE", path, 1);
    int before = tu_os_threads();
    size_t live = live_now();
    sf_config c;
    memset(&c, 0, sizeof c);
    c.threads = 2;
    c.trace = SF_TRACE_ON;
    c.trace_file = path;
    arm(F_OPEN, 1);
    errno = 0;
    ck_assert_int_eq(sf_init(&c), -1);
    ck_assert_int_eq(errno, EMFILE);
    disarm(F_OPEN);
    ck_assert_int_eq(atomic_load(&fault_hits[F_OPEN]), 1);
    ck_assert(!tu_file_exists(path));
    tu_assert_os_threads(before);
    ck_assert_uint_eq(live_now(), live);
    /* From the environment. */
    c.trace_file = NULL;
    struct tu_capture cap;
    tu_capture_begin(&cap);
    arm(F_OPEN, 1);
    int rc = sf_init(&c);
    disarm(F_OPEN);
    sf_future *f = sf_do(count_task, (void *)7L);
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_eq(sf_get(f), (void *)7L);
    sf_release(f);
    sf_shutdown();
    char *err = tu_capture_end(&cap);
    ck_assert_int_eq(rc, 0);
    char want[512];
    snprintf(want, sizeof want,
             "libsf: SF_TRACE_FILE='%s' cannot be opened (%s); tracing to stderr\n"
             "Thread\tQueue\tAsleep\tTime\t",
             path, strerror(EMFILE));
    ck_assert_msg(strncmp(err, want, strlen(want)) == 0, "stderr: \"%s\"", err);
    ck_assert_uint_gt(tu_count_lines(err), 3); /* trace lines followed */
    free(err);
    ck_assert(!tu_file_exists(path));
    unsetenv("SF_TRACE_FILE");
    tu_assert_os_threads(before);
    ck_assert_uint_eq(live_now(), live);
}
END_TEST
#endif /* FAULTS_OTHER */

static Suite *faults_suite(void)
{
    Suite *s = suite_create("faults");
#if FAULTS_ALLOC
    TCase *alloc = tcase_create("alloc");
    tcase_set_timeout(alloc, 300);
    tcase_add_test(alloc, interposition_works);
    tcase_add_loop_test(alloc, every_allocation_fails_in_turn, 0,
                        (int)(sizeof alloc_variants / sizeof alloc_variants[0]));
    tcase_add_test(alloc, worker_cannot_register);
    tcase_add_test(alloc, shutdown_cannot_register);
    suite_add_tcase(s, alloc);
#endif
    TCase *threads = tcase_create("threads");
    tcase_set_timeout(threads, 120);
    tcase_add_loop_test(threads, pool_starts_short, 0, 3);
    tcase_add_test(threads, fresh_stack_fails_in_turn);
#if FAULTS_ALLOC
    tcase_add_test(threads, million_chain_without_threads);
#endif
    suite_add_tcase(s, threads);
#if FAULTS_OTHER
    TCase *other = tcase_create("other");
    tcase_set_timeout(other, 60);
    tcase_add_test(other, attr_init_fails);
    tcase_add_test(other, key_create_fails);
    tcase_add_test(other, trace_open_fails);
    suite_add_tcase(s, other);
#endif
    return s;
}

TU_MAIN(faults_suite)
