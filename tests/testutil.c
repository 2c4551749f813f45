/*
 * testutil.c - helpers shared by libsf's Check tests; see testutil.h.
 */
#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

double tu_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void tu_sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

int tu_wait_flag(atomic_int *flag, long timeout_ms)
{
    double end = tu_now_ms() + (double)timeout_ms;
    for (unsigned i = 0;; i++) {
        if (atomic_load(flag) != 0)
            return 1;
        if (tu_now_ms() > end)
            return 0;
        if (i < 1000) {
            sched_yield();
        } else {
            struct timespec ts = {0, 100000L}; /* 0.1 ms */
            nanosleep(&ts, NULL);
        }
    }
}

int tu_wait_count(atomic_int *n, int want, long timeout_ms)
{
    double end = tu_now_ms() + (double)timeout_ms;
    while (atomic_load(n) < want) {
        if (tu_now_ms() > end)
            return 0;
        tu_sleep_ms(1);
    }
    return 1;
}

void tu_spin_us(double us)
{
    double end = tu_now_ms() + us / 1000.0;
    while (tu_now_ms() < end)
        ;
}

void tu_env_clean(void)
{
    unsetenv("SF_THREADS");
    unsetenv("SF_TRACE");
    unsetenv("SF_TRACE_FILE");
    unsetenv("SF_STATS");
}

void tu_env_threads(int n)
{
    char buf[32];
    tu_env_clean();
    snprintf(buf, sizeof buf, "%d", n);
    setenv("SF_THREADS", buf, 1);
}

int tu_online_cpus(void)
{
    cpu_set_t set;
    long n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
    if (n < 1)
        n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1)
        return 1;
    return n > SF_MAX_THREADS ? SF_MAX_THREADS : (int)n;
}

void tu_capture_begin(struct tu_capture *c)
{
    char path[256];
    tu_tmp_path(path, sizeof path, "stderr");
    fflush(stderr);
    c->tmp_fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    ck_assert_msg(c->tmp_fd >= 0, "cannot create %s: %s", path, strerror(errno));
    unlink(path);
    c->saved_fd = dup(2);
    ck_assert_int_ge(c->saved_fd, 0);
    ck_assert_int_eq(dup2(c->tmp_fd, 2), 2);
}

char *tu_capture_end(struct tu_capture *c)
{
    fflush(stderr);
    ck_assert_int_eq(dup2(c->saved_fd, 2), 2);
    close(c->saved_fd);
    off_t len = lseek(c->tmp_fd, 0, SEEK_END);
    ck_assert_int_ge(len, 0);
    char *buf = malloc((size_t)len + 1);
    ck_assert_ptr_nonnull(buf);
    ssize_t got = pread(c->tmp_fd, buf, (size_t)len, 0);
    ck_assert_int_eq(got, len);
    buf[len] = '\0';
    close(c->tmp_fd);
    return buf;
}

size_t tu_count_lines(const char *s)
{
    size_t n = 0;
    const char *p = s;
    for (; *p; p++)
        if (*p == '\n')
            n++;
    if (p != s && p[-1] != '\n')
        n++;
    return n;
}

size_t tu_count_prefixed(const char *s, const char *prefix)
{
    size_t n = 0, len = strlen(prefix);
    for (const char *p = s; *p;) {
        if (strncmp(p, prefix, len) == 0)
            n++;
        const char *nl = strchr(p, '\n');
        if (nl == NULL)
            break;
        p = nl + 1;
    }
    return n;
}

int tu_run_capture(char *const argv[], char **out, char **err)
{
    char outp[256], errp[256];
    tu_tmp_path(outp, sizeof outp, "run-out");
    tu_tmp_path(errp, sizeof errp, "run-err");
    posix_spawn_file_actions_t fa;
    ck_assert_int_eq(posix_spawn_file_actions_init(&fa), 0);
    ck_assert_int_eq(posix_spawn_file_actions_addopen(&fa, 1, outp, O_WRONLY | O_CREAT | O_TRUNC,
                                                      0600), 0);
    if (err != NULL)
        ck_assert_int_eq(posix_spawn_file_actions_addopen(&fa, 2, errp,
                                                          O_WRONLY | O_CREAT | O_TRUNC, 0600), 0);
    else
        ck_assert_int_eq(posix_spawn_file_actions_adddup2(&fa, 1, 2), 0);
    pid_t pid;
    int rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    ck_assert_msg(rc == 0, "cannot run %s: %s", argv[0], strerror(rc));
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    *out = tu_read_file(outp);
    unlink(outp);
    if (err != NULL) {
        *err = tu_read_file(errp);
        unlink(errp);
    }
    return status;
}

void tu_sftrace_check(const char *bin, const char *option, const char *trace)
{
    char *argv[] = {(char *)bin, (char *)"--check", (char *)(option != NULL ? option : trace),
                    option != NULL ? (char *)trace : NULL, NULL};
    char *o;
    int status = tu_run_capture(argv, &o, NULL);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "sftrace --check %s%s%s: %s",
                  option != NULL ? option : "", option != NULL ? " " : "", trace,
                  o != NULL ? o : "(no output)");
    free(o);
}

char *tu_read_file(const char *path)
{
    FILE *fp = fopen(path, "rb");
    if (fp == NULL)
        return NULL;
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    ck_assert_ptr_nonnull(buf);
    size_t n;
    while ((n = fread(buf + len, 1, cap - len - 1, fp)) > 0) {
        len += n;
        if (cap - len - 1 == 0) {
            cap *= 2;
            buf = realloc(buf, cap);
            ck_assert_ptr_nonnull(buf);
        }
    }
    fclose(fp);
    buf[len] = '\0';
    return buf;
}

void tu_tmp_path(char *buf, size_t size, const char *tag)
{
    static atomic_int serial;
    const char *dir = getenv("TMPDIR");
    if (dir == NULL || *dir == '\0')
        dir = "/tmp";
    snprintf(buf, size, "%s/libsf-test-%s-%ld-%d-%d", dir, tag, (long)getpid(),
             atomic_fetch_add(&serial, 1), rand());
    unlink(buf);
}

int tu_file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* ---- which pthreads ran tasks ---- */

#define TU_MAX_NOTED 256
static pthread_mutex_t noted_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_t noted[TU_MAX_NOTED];
static int nnoted;
static atomic_int noted_gen = 1;
static __thread int my_noted_gen;

void tu_threads_reset(void)
{
    pthread_mutex_lock(&noted_lock);
    nnoted = 0;
    atomic_fetch_add(&noted_gen, 1);
    pthread_mutex_unlock(&noted_lock);
}

void tu_threads_note(void)
{
    int g = atomic_load_explicit(&noted_gen, memory_order_relaxed);
    if (my_noted_gen == g)
        return;
    pthread_mutex_lock(&noted_lock);
    g = atomic_load(&noted_gen);
    if (my_noted_gen != g) {
        my_noted_gen = g;
        if (nnoted < TU_MAX_NOTED)
            noted[nnoted] = pthread_self();
        nnoted++;
    }
    pthread_mutex_unlock(&noted_lock);
}

int tu_threads_count(void)
{
    pthread_mutex_lock(&noted_lock);
    int n = nnoted;
    pthread_mutex_unlock(&noted_lock);
    return n;
}

int tu_threads_contains(pthread_t t)
{
    int found = 0;
    pthread_mutex_lock(&noted_lock);
    for (int i = 0; i < nnoted && i < TU_MAX_NOTED; i++)
        if (pthread_equal(noted[i], t))
            found = 1;
    pthread_mutex_unlock(&noted_lock);
    return found;
}

static void *tid_thread(void *arg)
{
    *(pid_t *)arg = (pid_t)syscall(SYS_gettid);
    return NULL;
}

static int count_tasks(void)
{
    DIR *d = opendir("/proc/self/task");
    ck_assert_ptr_nonnull(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n;
}

/* pthread_join returns when the kernel clears the thread's tid word, which
 * is before the thread leaves the thread group: for a moment after a join,
 * /proc/self/task still lists it. Counts are therefore taken only once the
 * joined thread is gone (warm-up) or polled until they settle. */
int tu_os_threads(void)
{
    /* Sanitizer runtimes start a helper thread of their own at the first
     * pthread_create: make that happen before anything is counted, and wait
     * until the warm-up thread itself has left /proc/self/task. */
    static int warmed;
    if (!warmed) {
        warmed = 1;
        pthread_t t;
        pid_t tid = 0;
        ck_assert_int_eq(pthread_create(&t, NULL, tid_thread, &tid), 0);
        ck_assert_int_eq(pthread_join(t, NULL), 0);
        char path[64];
        snprintf(path, sizeof path, "/proc/self/task/%d", (int)tid);
        for (int i = 0; i < 10000 && tu_file_exists(path); i++)
            tu_sleep_ms(1);
        ck_assert_msg(!tu_file_exists(path), "joined thread %d never left", (int)tid);
    }
    /* A count is taken when three reads 2 ms apart agree: threads joined
     * just before leave within microseconds, even on a loaded machine. */
    int n = count_tasks();
    for (int same = 0, i = 0; same < 2 && i < 5000; i++) {
        tu_sleep_ms(2);
        int m = count_tasks();
        same = m == n ? same + 1 : 0;
        n = m;
    }
    return n;
}

int tu_os_threads_expect(int expected)
{
    (void)tu_os_threads(); /* the warm-up, once */
    int n = count_tasks();
    for (int i = 0; n != expected && i < 10000; i++) {
        tu_sleep_ms(1);
        n = count_tasks();
    }
    return n;
}

void *tu_run_on_thread(void *(*fn)(void *), void *arg, size_t stack)
{
    pthread_attr_t attr;
    pthread_t tid;
    void *ret = NULL;
    ck_assert_int_eq(pthread_attr_init(&attr), 0);
    if (stack != 0)
        ck_assert_int_eq(pthread_attr_setstacksize(&attr, stack), 0);
    ck_assert_int_eq(pthread_create(&tid, &attr, fn, arg), 0);
    pthread_attr_destroy(&attr);
    ck_assert_int_eq(pthread_join(tid, &ret), 0);
    return ret;
}

/* ---- a child process ---- */

char *tu_run_in_child(void (*fn)(void), int *sig, int *status)
{
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(p[0]);
        dup2(p[1], 2);
        close(p[1]);
        tu_env_clean();
        fn();
        _exit(0);
    }
    close(p[1]);
    size_t len = 0, cap = 4096;
    char *out = malloc(cap);
    ck_assert_ptr_nonnull(out);
    ssize_t n;
    while ((n = read(p[0], out + len, cap - len - 1)) > 0)
        if ((len += (size_t)n) == cap - 1)
            ck_assert_ptr_nonnull(out = realloc(out, cap *= 2));
    out[len] = '\0';
    close(p[0]);
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    *sig = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
    if (status != NULL)
        *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return out;
}

void tu_expect_abort(void (*fn)(void), const char *const *parts)
{
    int sig;
    char *err = tu_run_in_child(fn, &sig, NULL);
    ck_assert_msg(sig == SIGABRT, "the child ended with signal %d, stderr \"%s\"", sig, err);
    ck_assert_msg(tu_count_lines(err) == 1 && strncmp(err, "libsf: ", 7) == 0,
                  "want one \"libsf: \" line, got \"%s\"", err);
    for (; *parts != NULL; parts++)
        ck_assert_msg(strstr(err, *parts) != NULL, "\"%s\" not in \"%s\"", *parts, err);
    free(err);
}

/* ---- fib ---- */

void *tu_fib(void *arg)
{
    long n = (long)arg;
    if (n < 2)
        return (void *)n;
    sf_future *a = sf_do(tu_fib, (void *)(n - 1));
    long b = (long)tu_fib((void *)(n - 2));
    long r = (long)sf_get(a) + b; /* sf_get(NULL) is NULL: a failed sf_do shows */
    sf_release(a);
    return (void *)r;
}

long tu_fib_exact(int n)
{
    long a = 0, b = 1;
    for (int i = 0; i < n; i++) {
        long t = a + b;
        a = b;
        b = t;
    }
    return a;
}

uint64_t tu_fib_tasks(int n) { return (uint64_t)tu_fib_exact(n + 1) - 1; }

sf_stats tu_stats_quiet(void) { return tu_stats_pending(0); }

sf_stats tu_stats_pending(uint64_t pending)
{
    sf_stats s;
    memset(&s, 0xa5, sizeof s);
    ck_assert_int_eq(sf_stats_read(&s), 0);
    ck_assert_msg(s.created == s.run_inline + s.run_pool + s.run_stolen + s.discarded +
                                   s.cancelled + pending,
                  "stats of a quiet runtime: created %llu != run_inline %llu + run_pool %llu + "
                  "run_stolen %llu + discarded %llu + cancelled %llu + pending %llu",
                  (unsigned long long)s.created, (unsigned long long)s.run_inline,
                  (unsigned long long)s.run_pool, (unsigned long long)s.run_stolen,
                  (unsigned long long)s.discarded, (unsigned long long)s.cancelled,
                  (unsigned long long)pending);
    ck_assert_int_ge(s.peak_busy, 0);
    ck_assert_int_le(s.peak_busy, s.workers);
    ck_assert_int_eq(s.workers, s.threads - 1);
    return s;
}
