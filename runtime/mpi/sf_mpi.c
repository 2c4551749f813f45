/*
 * sf_mpi.c - libsf-mpi: MPI requests as libsf futures (include/sf_mpi.h).
 *
 * A library above libsf: it uses only the public sf.h and sf_mpi.h (it is
 * outside runtime/LAYERS; tools/check-layers proves it includes no runtime
 * header). Each request handed over becomes an sf_promise(); libsf-mpi keeps
 * the setter's right and completes it when MPI completes the request.
 *
 * The path of a request:
 *   1. sf_mpi_request() (or isend/irecv) makes the promise and a `struct
 *      req`, counts it in `inflight` and pushes it on `incoming`, a
 *      lock-free list any thread pushes to;
 *   2. a poller - the idle hook run by an idle libsf thread, the progress
 *      thread, or sf_mpi_finalize() - takes the poll lock (a try-lock: one
 *      poller at a time, the others go on), moves `incoming` into the
 *      window (an array of the requests in flight), and calls MPI_Testsome
 *      over the window;
 *   3. each request MPI completed completes its promise (set with its
 *      status, or failed with the MPI error) and is freed.
 *
 * A user's sf_cancel() completes the promise at once (libsf does that); the
 * request stays in the window until MPI completes it, when sf_promise_set()
 * answers ECANCELED and the request is simply freed, or until
 * sf_mpi_finalize() cancels it. libsf gives a setter no earlier sign: a
 * look at the promise's state (sf_is_done()) is a misuse once its holder
 * released it, and the holder may release it at any time.
 *
 * Progress modes (sf_mpi.h, enum sf_mpi_progress): the hook alone, the
 * thread alone, or both (AUTO), where the thread polls only once no hook
 * call has polled for HOOK_QUIET_NS - so an idle pool gives its cores to
 * MPI, and a busy one still has its messages progressed. The thread's
 * back-off: with nothing in flight it sleeps on a futex until a request
 * comes; after progress it polls without sleeping for SPIN_NS, then naps
 * from FIRST_NAP_NS, doubling up to cfg->max_nap; in AUTO, while the hook
 * polls, it looks again HOOK_QUIET_NS after the hook's last poll.
 */
#include <sf_mpi.h>

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* libsf-mpi is compiled with -fvisibility=hidden; its calls, and only
 * they, are exported (and versioned by runtime/mpi/libsf-mpi.sym). */
#define SF_MPI_EXPORT __attribute__((visibility("default")))

/* The progress thread polls only when no hook call polled for this long
 * (AUTO): a hook that polls often enough makes the thread unnecessary. */
#define HOOK_QUIET_NS 50000ull
/* After progress, the progress thread polls without sleeping for this
 * long: a reply in a ping-pong comes within microseconds. */
#define SPIN_NS 50000ull
/* Its first nap after the spin; each later one doubles, up to max_nap. */
#define FIRST_NAP_NS 1000ull
/* The window's first size (it doubles as requests come). */
#define FIRST_WINDOW 64

/* One request in flight: made by sf_mpi_request() and its conveniences,
 * freed by the poller that completes or cancels it. */
struct req {
    struct req *next;    /* on `incoming` only */
    MPI_Request mreq;    /* MPI's request, libsf-mpi's from the push on */
    MPI_Status *status;  /* the caller's (NULL for none), filled at completion */
    sf_future *p;        /* the promise: libsf-mpi holds its setter's right */
    const char *what;    /* the MPI call that made it, for messages */
};

/* The state, one per process. */
static struct {
    /* Serialises sf_mpi_init() and sf_mpi_finalize() (they start and stop
     * what follows). */
    pthread_mutex_t life;
    /* 1 between a successful sf_mpi_init() and the start of
     * sf_mpi_finalize(), else 0. Requests may be added only while it is 1
     * (`users`, below). */
    atomic_int running;
    /* Callers of sf_mpi_request() between their check of `running` and
     * their push. sf_mpi_finalize() clears `running`, then waits for this
     * to be 0: after that nobody pushes. Both sides are seq_cst (a store
     * then a load on each side: Dekker's pattern), so either the request
     * sees running 0, or finalize sees it counted. */
    atomic_int users;

    /* New requests. A Treiber stack: any thread pushes a fully written node
     * with a CAS (release, pairs with the poller's acquire exchange);
     * the poller, holding `poll_lock`, takes the whole list with one
     * exchange to NULL. Invariant: a node is on the list at most once, and
     * only the exchange removes nodes - no single pop, so no ABA. */
    _Atomic(struct req *) incoming;
    /* Requests made and not yet completed or cancelled (incoming and the
     * window): the hook's answer (< 0 when 0) and the progress thread's
     * reason to sleep on `wake`. */
    atomic_long inflight;

    /* One poller at a time: 0 free, 1 taken (acquire on taking, release
     * on freeing, so the window's plain fields pass from poller to
     * poller). */
    atomic_int poll_lock;
    /* The window, under poll_lock: n requests, MPI's handles in `reqs` and
     * ours at the same index in `nodes`; indices and statuses are
     * MPI_Testsome's outputs. */
    MPI_Request *reqs;
    struct req **nodes;
    int *indices;
    MPI_Status *statuses;
    int n, cap;

    /* Configuration, written by sf_mpi_init() before the hook and the
     * thread start (their start orders it before their reads). */
    int mode;
    uint64_t max_nap_ns;
    bool restore_errhandlers;
    MPI_Errhandler world_eh, self_eh;

    /* The progress thread. */
    bool have_thread;
    pthread_t thread;
    /* Its futex: bumped (release) by a request that finds it dozing
     * (below) and by sf_mpi_finalize() to stop it, each followed by a
     * wake; read (acquire) by the thread before it checks `inflight` and
     * `stop` and sleeps on it. The bump after the count, the read before
     * it: the thread sees the count, or sleeps on a word that moved and
     * returns at once (no lost wake). */
    atomic_uint wake;
    atomic_bool stop;
    /* The thread is going to sleep, or sleeps, with nothing in flight:
     * only then does a request wake it (a futex wake per request would
     * cost a system call and a context switch per message). Dekker's
     * pattern, seq_cst on both sides: the thread stores it, then reads
     * `inflight`; a request adds to `inflight`, then reads it. One of them
     * sees the other: the thread does not sleep, or the request kicks. */
    atomic_bool dozing;
    /* When a hook call last polled with requests in flight (the monotonic
     * clock, ns). Relaxed: a hint for the thread, which only decides
     * whether to poll itself. */
    _Atomic uint64_t last_hook_ns;
    bool hook_installed;
} g = {.life = PTHREAD_MUTEX_INITIALIZER};

/* Set while this thread polls (the idle hook, the progress thread, a
 * finalize) and completes promises: code a completion runs here (the
 * unhandled-failure hook of a released promise's failure) may not finalize
 * (EDEADLK: it would wait for its own poll to end) nor init (EALREADY). */
static _Thread_local bool in_poll;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}

/* FUTEX_WAIT on w while it holds `seen`, for at most ns (0: no limit). */
static void futex_wait(atomic_uint *w, unsigned seen, uint64_t ns)
{
    struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000ull),
                          .tv_nsec = (long)(ns % 1000000000ull)};
    syscall(SYS_futex, (unsigned *)w, FUTEX_WAIT_PRIVATE, seen, ns != 0 ? &ts : NULL, NULL, 0);
}

static void futex_wake(atomic_uint *w)
{
    syscall(SYS_futex, (unsigned *)w, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

/* Wakes the progress thread from its sleep on `wake`. */
static void kick(void)
{
    /* Release: pairs with the thread's acquire read of `wake`; orders the
     * count (or `stop`) written before it. */
    atomic_fetch_add_explicit(&g.wake, 1, memory_order_release);
    futex_wake(&g.wake);
}

/* Fails promise p with MPI error `err` from call `what`. */
static void fail_mpi(sf_future *p, int err, const char *what)
{
    int cls = MPI_ERR_UNKNOWN, len = 0;
    char text[MPI_MAX_ERROR_STRING];
    if (MPI_Error_class(err, &cls) != MPI_SUCCESS)
        cls = MPI_ERR_UNKNOWN;
    if (MPI_Error_string(err, text, &len) != MPI_SUCCESS)
        snprintf(text, sizeof text, "MPI error %d", err);
    /* -1 ECANCELED: the holder cancelled it first; nothing else to do. */
    (void)sf_promise_fail(p, SF_MPI_ERRNO(cls), "%s: %s", what, text);
}

/* ---- The poller's side, under poll_lock ------------------------------- */

static bool poll_trylock(void)
{
    /* Relaxed look first: a poller busy elsewhere costs no cache-line
     * ping-pong. Acquire on taking: pairs with poll_unlock's release. */
    return atomic_load_explicit(&g.poll_lock, memory_order_relaxed) == 0 &&
           atomic_exchange_explicit(&g.poll_lock, 1, memory_order_acquire) == 0;
}

static void poll_unlock(void)
{
    atomic_store_explicit(&g.poll_lock, 0, memory_order_release);
}

/* Grows the window to hold `want` requests. Returns false without memory
 * (the window is then as it was). */
static bool window_reserve(int want)
{
    if (want <= g.cap)
        return true;
    int cap = g.cap > 0 ? g.cap : FIRST_WINDOW;
    while (cap < want)
        cap *= 2;
    MPI_Request *reqs = realloc(g.reqs, (size_t)cap * sizeof *reqs);
    if (reqs != NULL)
        g.reqs = reqs;
    struct req **nodes = realloc(g.nodes, (size_t)cap * sizeof *nodes);
    if (nodes != NULL)
        g.nodes = nodes;
    int *indices = realloc(g.indices, (size_t)cap * sizeof *indices);
    if (indices != NULL)
        g.indices = indices;
    MPI_Status *statuses = realloc(g.statuses, (size_t)cap * sizeof *statuses);
    if (statuses != NULL)
        g.statuses = statuses;
    if (reqs == NULL || nodes == NULL || indices == NULL || statuses == NULL)
        return false; /* the arrays that grew keep their old contents */
    g.cap = cap;
    return true;
}

/* Requests taken from `incoming` that the window had no room for yet. */
static struct req *overflow;

/* Moves `incoming` (and any overflow) into the window, oldest first.
 * Returns how many it moved. */
static int take_incoming(void)
{
    /* Acquire: pairs with the pushers' release CAS; their nodes' fields. */
    struct req *list = atomic_exchange_explicit(&g.incoming, NULL, memory_order_acquire);
    /* The stack is newest first: reverse it onto the overflow (which is
     * older and oldest first), so the window keeps the order of posting. */
    struct req *fifo = NULL;
    while (list != NULL) {
        struct req *next = list->next;
        list->next = fifo;
        fifo = list;
        list = next;
    }
    if (overflow != NULL) {
        struct req *tail = overflow;
        while (tail->next != NULL)
            tail = tail->next;
        tail->next = fifo;
        fifo = overflow;
        overflow = NULL;
    }
    int moved = 0;
    while (fifo != NULL) {
        if (!window_reserve(g.n + 1)) {
            overflow = fifo; /* next time: memory may have come back */
            break;
        }
        struct req *r = fifo;
        fifo = r->next;
        r->next = NULL;
        g.reqs[g.n] = r->mreq;
        g.nodes[g.n] = r;
        g.n++;
        moved++;
    }
    return moved;
}

/* Completes window entry i, which MPI completed with status *st and error
 * err (MPI_SUCCESS: done), and frees its request. */
static void complete(int i, const MPI_Status *st, int err)
{
    struct req *r = g.nodes[i];
    g.nodes[i] = NULL;
    if (err != MPI_SUCCESS) {
        fail_mpi(r->p, err, r->what);
    } else {
        if (r->status != NULL)
            *r->status = *st;
        /* -1 ECANCELED: the holder's sf_cancel() came first; its getters
         * saw ECANCELED. Either way the setter's call is made. */
        (void)sf_promise_set(r->p, r->status);
    }
    free(r);
    /* Relaxed: a count; the promise's completion publishes the rest. */
    atomic_fetch_sub_explicit(&g.inflight, 1, memory_order_relaxed);
}

/* Drops the completed (NULL) entries of the window, keeping its order. */
static void compact(void)
{
    int k = 0;
    for (int i = 0; i < g.n; i++) {
        if (g.nodes[i] != NULL) {
            g.nodes[k] = g.nodes[i];
            g.reqs[k] = g.reqs[i];
            k++;
        }
    }
    g.n = k;
}

/* One MPI_Testsome over the window, its completions completed. Returns
 * how many completed. */
static int test_window(void)
{
    int outcount = 0;
    int rc = MPI_Testsome(g.n, g.reqs, &outcount, g.indices, g.statuses);
    if (rc == MPI_SUCCESS || rc == MPI_ERR_IN_STATUS) {
        if (outcount == MPI_UNDEFINED || outcount <= 0)
            return 0;
        for (int k = 0; k < outcount; k++) {
            int i = g.indices[k];
            /* MPI sets MPI_ERROR only when it returns MPI_ERR_IN_STATUS;
             * MPI_ERR_PENDING is no error of a completed request. */
            int err = rc == MPI_ERR_IN_STATUS ? g.statuses[k].MPI_ERROR : MPI_SUCCESS;
            if (err == MPI_ERR_PENDING)
                err = MPI_SUCCESS;
            complete(i, &g.statuses[k], err);
        }
        compact();
        return outcount;
    }
    /* Testsome itself failed (outcount unknown): test each request alone,
     * so that the faulty one fails its future and the others go on. */
    int done = 0;
    for (int i = 0; i < g.n; i++) {
        int flag = 0;
        MPI_Status st;
        memset(&st, 0, sizeof st);
        int err = MPI_Test(&g.reqs[i], &flag, &st);
        if (err != MPI_SUCCESS) {
            /* A request MPI refuses to test can never complete: drop MPI's
             * handle (it may still be active) and fail the future. */
            if (g.reqs[i] != MPI_REQUEST_NULL)
                MPI_Request_free(&g.reqs[i]);
            complete(i, &st, err);
            done++;
        } else if (flag) {
            complete(i, &st, MPI_SUCCESS);
            done++;
        }
    }
    if (done > 0)
        compact();
    return done;
}

/* One poll: new requests into the window, then MPI_Testsome. Returns > 0
 * when it completed requests or took new ones, 0 when requests are in
 * flight (or another poller holds the lock), < 0 when none is. */
static int poll_once(void)
{
    if (atomic_load_explicit(&g.inflight, memory_order_relaxed) == 0)
        return -1;
    if (!poll_trylock())
        return 0;
    bool was = in_poll;
    in_poll = true;
    int moved = take_incoming();
    int done = g.n > 0 ? test_window() : 0;
    in_poll = was;
    poll_unlock();
    if (done > 0 || moved > 0)
        return done + moved;
    return atomic_load_explicit(&g.inflight, memory_order_relaxed) > 0 ? 0 : -1;
}

/* The idle hook (sf_on_idle()): libsf's idle threads poll here. */
static int idle_poll(void *ctx)
{
    (void)ctx;
    if (atomic_load_explicit(&g.inflight, memory_order_relaxed) == 0)
        return -1;
    /* The hook runs inside the program's gets and waits: errno, which
     * MPI and a completion's code may set, is theirs. */
    int saved = errno;
    /* Relaxed: a hint for the progress thread (AUTO). */
    atomic_store_explicit(&g.last_hook_ns, now_ns(), memory_order_relaxed);
    int r = poll_once();
    errno = saved;
    return r;
}

/* ---- The progress thread ---------------------------------------------- */

static void *progress_main(void *arg)
{
    (void)arg;
    /* Short naps sleep as asked, not the default 50 us of timer slack. */
    prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
    uint64_t nap = 0;        /* the current nap (0: spinning) */
    uint64_t quiet_since = 0; /* when the spin began (0: not spinning) */
    for (;;) {
        /* Acquire: pairs with kick()'s release; then the count and stop. */
        unsigned seen = atomic_load_explicit(&g.wake, memory_order_acquire);
        if (atomic_load_explicit(&g.stop, memory_order_relaxed))
            break;
        /* The hook's time first: one stored after it by another CPU may
         * still be later than t, which then counts as "just now" (not as
         * a difference wrapped round to ages ago). */
        uint64_t last_hook = atomic_load_explicit(&g.last_hook_ns, memory_order_relaxed);
        uint64_t t = now_ns();
        uint64_t since_hook = t > last_hook ? t - last_hook : 0;
        if (g.mode == SF_MPI_PROGRESS_AUTO && since_hook < HOOK_QUIET_NS) {
            /* The hook polls: leave it the cores, and look again when it
             * would have been quiet for HOOK_QUIET_NS - its callers (a
             * get's spin, an idle worker) may go to sleep any time, and
             * then the thread takes over within that bound. Looked at
             * before `inflight`: while the hook polls, requests come and
             * go, and a doze would cost each new one a wake (a system
             * call and a context switch on its path). */
            futex_wait(&g.wake, seen, HOOK_QUIET_NS - since_hook + FIRST_NAP_NS);
            nap = 0;
            quiet_since = 0;
            continue;
        }
        if (atomic_load_explicit(&g.inflight, memory_order_relaxed) == 0) {
            /* Nothing in flight: the next request (a ping-pong's reply to
             * post, a pipeline's next block) often comes within
             * microseconds, and a dozing thread costs it a wake - on a VM,
             * milliseconds. So spin SPIN_NS first, as after progress. */
            if (quiet_since == 0)
                quiet_since = t;
            if (t - quiet_since < SPIN_NS) {
                cpu_relax();
                continue;
            }
            atomic_store(&g.dozing, true);
            if (atomic_load(&g.inflight) == 0 && !atomic_load_explicit(&g.stop, memory_order_relaxed))
                futex_wait(&g.wake, seen, 0); /* until a request comes */
            atomic_store_explicit(&g.dozing, false, memory_order_relaxed);
            nap = 0;
            quiet_since = 0;
            continue;
        }
        if (poll_once() > 0) {
            nap = 0;
            quiet_since = 0;
            continue;
        }
        if (quiet_since == 0)
            quiet_since = t;
        if (t - quiet_since < SPIN_NS) {
            cpu_relax();
            continue;
        }
        nap = nap == 0 ? FIRST_NAP_NS : nap * 2;
        if (nap > g.max_nap_ns)
            nap = g.max_nap_ns;
        futex_wait(&g.wake, seen, nap);
    }
    return NULL;
}

static int start_thread(void)
{
    sigset_t all, old;
    sigfillset(&all);
    /* The thread takes no signal of the program's. */
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&g.thread, NULL, progress_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        errno = rc; /* EAGAIN: no thread to be had */
        return -1;
    }
    g.have_thread = true;
    return 0;
}

static void stop_thread(void)
{
    if (!g.have_thread)
        return;
    atomic_store_explicit(&g.stop, true, memory_order_relaxed);
    kick(); /* its release orders stop before the bump */
    pthread_join(g.thread, NULL);
    g.have_thread = false;
    atomic_store_explicit(&g.stop, false, memory_order_relaxed);
}

/* ---- Configuration ---------------------------------------------------- */

/* The progress mode of cfg, SF_MPI_PROGRESS read if it says so. Returns
 * it, or -1 with errno EINVAL. */
static int read_mode(int progress)
{
    if (progress < SF_MPI_PROGRESS_FROM_ENV || progress > SF_MPI_PROGRESS_THREAD) {
        errno = EINVAL;
        return -1;
    }
    if (progress != SF_MPI_PROGRESS_FROM_ENV)
        return progress;
    const char *v = getenv("SF_MPI_PROGRESS");
    if (v == NULL || *v == '\0' || strcmp(v, "auto") == 0)
        return SF_MPI_PROGRESS_AUTO;
    if (strcmp(v, "hook") == 0)
        return SF_MPI_PROGRESS_HOOK;
    if (strcmp(v, "thread") == 0)
        return SF_MPI_PROGRESS_THREAD;
    fprintf(stderr, "libsf-mpi: SF_MPI_PROGRESS=%s: not auto, hook or thread\n", v);
    errno = EINVAL;
    return -1;
}

/* Starts libsf if nobody has. Returns 0, or -1 with sf_init()'s errno. */
static int start_libsf(void)
{
    sf_stats s;
    if (sf_stats_read(&s) == 0)
        return 0;
    if (sf_init(NULL) == 0)
        return 0;
    /* EBUSY: another thread started it meanwhile. */
    return errno == EBUSY ? 0 : -1;
}

static void restore_errhandlers(void)
{
    if (!g.restore_errhandlers)
        return;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, g.world_eh);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, g.self_eh);
    MPI_Errhandler_free(&g.world_eh);
    MPI_Errhandler_free(&g.self_eh);
    g.restore_errhandlers = false;
}

static int init_locked(const sf_mpi_config *cfg)
{
    static const sf_mpi_config zero;
    if (cfg == NULL)
        cfg = &zero;
    if (atomic_load_explicit(&g.running, memory_order_relaxed)) {
        errno = EALREADY;
        return -1;
    }
    double nap = cfg->max_nap;
    if (!(nap == 0 || (nap >= 1e-6 && nap <= 1))) { /* NaN fails too */
        errno = EINVAL;
        return -1;
    }
    int mode = read_mode(cfg->progress);
    if (mode < 0)
        return -1;
    int inited = 0, finalized = 0, provided = MPI_THREAD_SINGLE;
    if (MPI_Initialized(&inited) != MPI_SUCCESS || !inited ||
        MPI_Finalized(&finalized) != MPI_SUCCESS || finalized ||
        MPI_Query_thread(&provided) != MPI_SUCCESS || provided < MPI_THREAD_MULTIPLE) {
        errno = ENOTSUP;
        return -1;
    }
    if (start_libsf() != 0)
        return -1;
    g.mode = mode;
    g.max_nap_ns = nap == 0 ? 1000000ull : (uint64_t)(nap * 1e9);
    if (g.max_nap_ns < FIRST_NAP_NS)
        g.max_nap_ns = FIRST_NAP_NS;
    atomic_store_explicit(&g.last_hook_ns, 0, memory_order_relaxed);
    if (mode != SF_MPI_PROGRESS_THREAD) {
        if (sf_on_idle(idle_poll, NULL) != 0)
            return -1; /* EBUSY: another hook is installed */
        g.hook_installed = true;
    }
    if (mode != SF_MPI_PROGRESS_HOOK && start_thread() != 0) {
        int e = errno;
        if (g.hook_installed)
            sf_on_idle(NULL, NULL);
        g.hook_installed = false;
        errno = e;
        return -1;
    }
    if (!cfg->keep_errhandler &&
        MPI_Comm_get_errhandler(MPI_COMM_WORLD, &g.world_eh) == MPI_SUCCESS) {
        if (MPI_Comm_get_errhandler(MPI_COMM_SELF, &g.self_eh) == MPI_SUCCESS) {
            MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
            MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
            g.restore_errhandlers = true;
        } else {
            MPI_Errhandler_free(&g.world_eh);
        }
    }
    /* seq_cst: the requests' side of `users` (above). */
    atomic_store(&g.running, 1);
    return 0;
}

SF_MPI_EXPORT int sf_mpi_init(const sf_mpi_config *cfg)
{
    if (in_poll) { /* started, or stopping: this thread polls for it */
        errno = EALREADY;
        return -1;
    }
    pthread_mutex_lock(&g.life);
    int rc = init_locked(cfg);
    int e = errno;
    pthread_mutex_unlock(&g.life);
    errno = e;
    return rc;
}

/* ---- Finalize ----------------------------------------------------------- */

/* Cancels every request left (no poller runs now): MPI_Cancel, then a
 * short wait for MPI to complete it, else MPI_Request_free. A request that
 * completed anyway completes its future as usual. Returns how many it
 * cancelled. */
static long cancel_rest(void)
{
    while (!poll_trylock())
        cpu_relax(); /* a last finalize poll of another thread's? none: we hold `life` */
    take_incoming();
    while (overflow != NULL) { /* no memory for the window: cancel them from the list */
        struct req *r = overflow;
        overflow = r->next;
        MPI_Cancel(&r->mreq);
        MPI_Request_free(&r->mreq);
        (void)sf_promise_fail(r->p, ECANCELED, "sf_mpi_finalize: %s cancelled", r->what);
        free(r);
        atomic_fetch_sub_explicit(&g.inflight, 1, memory_order_relaxed);
    }
    long cancelled = 0;
    for (int i = 0; i < g.n; i++)
        MPI_Cancel(&g.reqs[i]);
    /* A cancelled receive completes at once; a send MPI cannot cancel
     * completes when delivered, or never: wait up to 100 ms in all. */
    uint64_t deadline = now_ns() + 100000000ull;
    for (int i = 0; i < g.n; i++) {
        struct req *r = g.nodes[i];
        MPI_Status st;
        memset(&st, 0, sizeof st);
        int flag = 0, was_cancelled = 1, err = MPI_SUCCESS;
        for (;;) {
            err = MPI_Test(&g.reqs[i], &flag, &st);
            if (err != MPI_SUCCESS || flag || now_ns() > deadline)
                break;
            cpu_relax();
        }
        if (err == MPI_SUCCESS && flag)
            MPI_Test_cancelled(&st, &was_cancelled);
        else if (g.reqs[i] != MPI_REQUEST_NULL)
            MPI_Request_free(&g.reqs[i]); /* MPI frees it once it is done */
        if (err == MPI_SUCCESS && flag && !was_cancelled) {
            complete(i, &st, MPI_SUCCESS); /* it completed before the cancel */
            continue;
        }
        g.nodes[i] = NULL;
        (void)sf_promise_fail(r->p, ECANCELED, "sf_mpi_finalize: %s cancelled", r->what);
        free(r);
        atomic_fetch_sub_explicit(&g.inflight, 1, memory_order_relaxed);
        cancelled++;
    }
    g.n = 0;
    free(g.reqs);
    free(g.nodes);
    free(g.indices);
    free(g.statuses);
    g.reqs = NULL;
    g.nodes = NULL;
    g.indices = NULL;
    g.statuses = NULL;
    g.cap = 0;
    poll_unlock();
    return cancelled;
}

SF_MPI_EXPORT long sf_mpi_finalize(double seconds)
{
    if (in_poll) {
        errno = EDEADLK;
        return -1;
    }
    if (!(seconds >= 0)) { /* negative or NaN */
        errno = EINVAL;
        return -1;
    }
    pthread_mutex_lock(&g.life);
    if (!atomic_load_explicit(&g.running, memory_order_relaxed)) {
        pthread_mutex_unlock(&g.life);
        errno = EINVAL;
        return -1;
    }
    in_poll = true; /* completions run here too (cancel_rest) */
    /* seq_cst, then wait for the requests already past their check. */
    atomic_store(&g.running, 0);
    while (atomic_load(&g.users) != 0)
        cpu_relax();
    /* Progress: this thread polls too, with the hook and the thread. */
    if (seconds > 0) {
        uint64_t t0 = now_ns();
        uint64_t limit = seconds >= 1e9 ? UINT64_MAX : (uint64_t)(seconds * 1e9);
        while (atomic_load_explicit(&g.inflight, memory_order_relaxed) > 0 &&
               now_ns() - t0 < limit) {
            if (poll_once() <= 0)
                sched_yield();
        }
    }
    if (g.hook_installed) {
        sf_on_idle(NULL, NULL); /* returns once no call of the hook runs */
        g.hook_installed = false;
    }
    stop_thread();
    long cancelled = cancel_rest();
    restore_errhandlers();
    in_poll = false;
    pthread_mutex_unlock(&g.life);
    return cancelled;
}

/* ---- Requests ------------------------------------------------------------ */

/* Enters a request call: 0, or -1 with errno EINVAL (not started). */
static int enter(void)
{
    atomic_fetch_add(&g.users, 1); /* seq_cst: Dekker's pattern with finalize */
    if (atomic_load(&g.running))
        return 0;
    atomic_fetch_sub_explicit(&g.users, 1, memory_order_release);
    errno = EINVAL;
    return -1;
}

static void leave(void)
{
    /* Release: the push before it is visible to finalize's drain. */
    atomic_fetch_sub_explicit(&g.users, 1, memory_order_release);
}

/* A new request node with its promise, or NULL with errno. */
static struct req *req_new(MPI_Status *status, const char *what)
{
    struct req *r = malloc(sizeof *r);
    if (r == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    r->p = sf_promise();
    if (r->p == NULL) {
        int e = errno;
        free(r);
        errno = e;
        return NULL;
    }
    r->next = NULL;
    r->mreq = MPI_REQUEST_NULL;
    r->status = status == MPI_STATUS_IGNORE ? NULL : status;
    r->what = what;
    return r;
}

/* Hands r (its mreq posted) to the pollers; returns its future. */
static sf_future *req_push(struct req *r)
{
    sf_future *p = r->p;
    if (r->mreq == MPI_REQUEST_NULL) { /* done already: as MPI_Wait leaves it */
        if (r->status != NULL) {
            MPI_Request null = MPI_REQUEST_NULL;
            MPI_Wait(&null, r->status);
        }
        (void)sf_promise_set(p, r->status);
        free(r);
        return p;
    }
    /* Counted before the push: a poller that takes it may uncount it.
     * seq_cst: Dekker's pattern with the thread's `dozing`. */
    atomic_fetch_add(&g.inflight, 1);
    struct req *head = atomic_load_explicit(&g.incoming, memory_order_relaxed);
    do {
        r->next = head;
        /* Release: r's fields before the poller's acquire exchange. */
    } while (!atomic_compare_exchange_weak_explicit(&g.incoming, &head, r, memory_order_release,
                                                    memory_order_relaxed));
    if (g.have_thread && atomic_load(&g.dozing))
        kick(); /* the thread sleeps with nothing in flight */
    return p;
}

SF_MPI_EXPORT sf_future *sf_mpi_request(MPI_Request *req, MPI_Status *status)
{
    if (req == NULL) {
        errno = EINVAL;
        return NULL;
    }
    if (enter() != 0)
        return NULL;
    struct req *r = req_new(status, "MPI request");
    if (r == NULL) {
        int e = errno;
        leave();
        errno = e;
        return NULL; /* *req is still the caller's */
    }
    r->mreq = *req;
    *req = MPI_REQUEST_NULL;
    sf_future *p = req_push(r);
    leave();
    return p;
}

SF_MPI_EXPORT sf_future *sf_mpi_isend(const void *buf, int count, MPI_Datatype type, int dest,
                                      int tag, MPI_Comm comm)
{
    if (enter() != 0)
        return NULL;
    struct req *r = req_new(NULL, "MPI_Isend");
    if (r == NULL) {
        int e = errno;
        leave();
        errno = e;
        return NULL;
    }
    int err = MPI_Isend(buf, count, type, dest, tag, comm, &r->mreq);
    sf_future *p = r->p;
    if (err != MPI_SUCCESS) {
        fail_mpi(p, err, "MPI_Isend");
        free(r);
    } else {
        p = req_push(r);
    }
    leave();
    return p;
}

SF_MPI_EXPORT sf_future *sf_mpi_irecv(void *buf, int count, MPI_Datatype type, int source,
                                      int tag, MPI_Comm comm, MPI_Status *status)
{
    if (enter() != 0)
        return NULL;
    struct req *r = req_new(status, "MPI_Irecv");
    if (r == NULL) {
        int e = errno;
        leave();
        errno = e;
        return NULL;
    }
    int err = MPI_Irecv(buf, count, type, source, tag, comm, &r->mreq);
    sf_future *p = r->p;
    if (err != MPI_SUCCESS) {
        fail_mpi(p, err, "MPI_Irecv");
        free(r);
    } else {
        p = req_push(r);
    }
    leave();
    return p;
}
