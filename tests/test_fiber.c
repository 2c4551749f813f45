/*
 * test_fiber.c - stacks and context switches (runtime/platform/fiber.h) alone: no
 * runtime is started. Linked against libsfcore.la, as test_pending is, to
 * call the sf__ functions directly. Every count is checked exactly; values
 * computed across switches are compared with the same computation without
 * them. The cases run in the plain build (assembly switch), with
 * --enable-ucontext-fibers, under both sanitizers and under Valgrind.
 */
#include "testutil.h"

#include "platform/fiber.h"

#include <errno.h>
#include <sched.h>
#include <execinfo.h>
#include <fenv.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

#define STACK (256 * 1024)

/* ThreadSanitizer: each context made costs a fiber of its own, created and
 * destroyed with an mmap and a munmap (some 0.3 ms): fewer of them. */
#if defined(__SANITIZE_THREAD__)
#define TU_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TU_TSAN 1
#endif
#endif
#ifndef TU_TSAN
#define TU_TSAN 0
#endif

static size_t page(void) { return (size_t)sysconf(_SC_PAGESIZE); }

/* The thread's own context and up to two made ones, shared by a case's
 * functions (each case runs in a process of its own). */
static struct sf__ctx main_ctx, ctx_a, ctx_b;
static struct sf__stack stack_a, stack_b;

static void init_main(void)
{
    uintptr_t lo = 0;
    size_t size = 0;
    /* The bounds are optional: half the cases leave them to be learnt. */
    sf__ctx_init_thread(&main_ctx, lo, size);
}

static void alloc_ok(struct sf__stack *s, size_t size)
{
    ck_assert_msg(sf__stack_alloc(s, size) == 0, "sf__stack_alloc(%zu): %s", size, strerror(errno));
}

/* ---- Stacks ---- */

START_TEST(stack_alloc_rounds_to_pages_and_fails_cleanly)
{
    struct sf__stack s;
    alloc_ok(&s, 1);
    ck_assert_uint_eq(s.size, page());
    ck_assert_uint_eq(s.lo % page(), 0);
    ck_assert_uint_eq((uintptr_t)s.map + page(), s.lo); /* the guard page below */
    ck_assert_uint_eq(s.map_size, s.size + page());
    /* The usable part is all writable. */
    memset((void *)s.lo, 0xab, s.size);
    sf__stack_free(&s);
    ck_assert_ptr_null(s.map);
    sf__stack_free(&s); /* a freed stack: nothing */

    alloc_ok(&s, 3 * page() + 1);
    ck_assert_uint_eq(s.size, 4 * page());
    sf__stack_free(&s);

    errno = 0;
    ck_assert_int_eq(sf__stack_alloc(&s, 0), -1);
    ck_assert_int_eq(errno, EINVAL);
    ck_assert_ptr_null(s.map);
    errno = 0;
    ck_assert_int_eq(sf__stack_alloc(&s, SIZE_MAX - 10), -1);
    ck_assert_int_eq(errno, ENOMEM);
    sf__stack_free(&s);
    /* Bigger than the address space, but not near SIZE_MAX: mmap refuses. */
    errno = 0;
    ck_assert_int_eq(sf__stack_alloc(&s, (size_t)1 << 60), -1);
    ck_assert_int_eq(errno, ENOMEM);

    errno = 77;
    alloc_ok(&s, STACK);
    sf__stack_free(&s);
    ck_assert_int_eq(errno, 77); /* free keeps errno */
}
END_TEST

static int count_maps(void)
{
    char *m = tu_read_file("/proc/self/maps");
    ck_assert_ptr_nonnull(m);
    int n = (int)tu_count_lines(m);
    free(m);
    return n;
}

#define NSTACKS 500
static struct sf__stack many[NSTACKS];

static void alloc_many(void)
{
    for (int i = 0; i < NSTACKS; i++) {
        alloc_ok(&many[i], 64 * 1024);
        ((volatile char *)many[i].lo)[many[i].size - 1] = 1; /* touched at the top */
    }
}

static void free_many(void)
{
    for (int i = NSTACKS - 1; i >= 0; i -= 2)
        sf__stack_free(&many[i]); /* every other one first: holes between mappings */
    for (int i = NSTACKS - 2; i >= 0; i -= 2)
        sf__stack_free(&many[i]);
}

/* Mappings come back: the count of /proc/self/maps lines returns to where
 * it was (after one round to warm up whatever the allocator and the tools
 * map once). The sanitizers map and split memory of their own as they go,
 * a few mappings either way: there, fewer than one stack's in ten. */
START_TEST(many_stacks_allocated_and_freed_leave_no_mapping)
{
    alloc_many();
    free_many();
    int before = count_maps();
    for (int round = 0; round < 3; round++) {
        alloc_many();
        int during = count_maps();
        ck_assert_msg(during >= before + NSTACKS, "%d mappings with %d stacks, %d without",
                      during, NSTACKS, before);
        free_many();
        int after = count_maps();
        if (TU_SANITIZED)
            ck_assert_msg(abs(after - before) < NSTACKS / 10, "%d mappings after, %d before",
                          after, before);
        else
            ck_assert_int_eq(after, before);
    }
}
END_TEST

/* ---- Ping-pong ---- */

#define PINGS 1000000
static long pings;
static bool stop;

static void pong(void *arg)
{
    ck_assert_ptr_eq(arg, &pings);
    for (;;) {
        if (stop)
            sf__ctx_switch_final(&ctx_a, &main_ctx);
        pings++;
        sf__ctx_switch(&ctx_a, &main_ctx);
    }
}

START_TEST(ping_pong_a_million_times)
{
    init_main();
    alloc_ok(&stack_a, STACK);
    sf__ctx_make(&ctx_a, &stack_a, pong, &pings);
    long wrong = 0; /* no ck_assert in the loop: each records its place (a write) */
    for (long i = 0; i < PINGS; i++) {
        wrong += pings != i;
        sf__ctx_switch(&main_ctx, &ctx_a);
    }
    ck_assert_int_eq(wrong, 0);
    ck_assert_int_eq(pings, PINGS);
    stop = true;
    sf__ctx_switch(&main_ctx, &ctx_a);
    ck_assert_int_eq(pings, PINGS);
    sf__stack_free(&stack_a);
}
END_TEST

/* ---- A ring of fibers ---- */

#define RING 100
#define ROUNDS 1000
static struct sf__ctx ring[RING];
static struct sf__stack ring_stacks[RING];
static long step, out_of_turn;
static long ring_runs[RING];

static struct sf__ctx *next_of(long i) { return i + 1 < RING ? &ring[i + 1] : &main_ctx; }

static void ring_member(void *arg)
{
    long i = (long)(intptr_t)arg;
    for (long r = 0; r < ROUNDS; r++) {
        /* Round-robin, in order: thread, 0, 1, ..., 99, thread, 0, ... */
        out_of_turn += step != r * RING + i;
        step++;
        ring_runs[i]++;
        sf__ctx_switch(&ring[i], next_of(i));
    }
    /* The last pass: each ends, handing over to the next for good. */
    sf__ctx_switch_final(&ring[i], next_of(i));
}

START_TEST(a_ring_of_100_fibers_round_robin)
{
    init_main();
    for (long i = 0; i < RING; i++) {
        alloc_ok(&ring_stacks[i], 64 * 1024);
        sf__ctx_make(&ring[i], &ring_stacks[i], ring_member, (void *)(intptr_t)i);
    }
    for (long r = 0; r < ROUNDS; r++) {
        out_of_turn += step != r * RING;
        sf__ctx_switch(&main_ctx, &ring[0]);
    }
    ck_assert_int_eq(out_of_turn, 0);
    ck_assert_int_eq(step, (long)ROUNDS * RING);
    sf__ctx_switch(&main_ctx, &ring[0]); /* the last pass */
    ck_assert_int_eq(step, (long)ROUNDS * RING);
    for (long i = 0; i < RING; i++) {
        ck_assert_int_eq(ring_runs[i], ROUNDS);
        sf__ctx_destroy(&ring[i]); /* nothing left after a final switch */
        sf__stack_free(&ring_stacks[i]);
    }
}
END_TEST

/* ---- Registers ---- */

/* mix() keeps a dozen integers and ten doubles live across each call of
 * hop: at -O2 the integers sit in callee-saved registers (and d8-d15 hold
 * doubles on aarch64), the rest in the frame. Run with hop switching to a
 * partner that runs mix() too, with other values, it must give what it
 * gives with hop doing nothing. */
static void (*volatile hop)(void);

static void no_hop(void) {}

__attribute__((noinline)) static uint64_t mix(uint64_t seed)
{
    volatile uint64_t vs = seed;
    volatile double vd = (double)seed + 0.25;
    uint64_t a = vs, b = vs * 3 + 1, c = vs ^ 0x5555, d = vs << 3, e = vs + 77, f = vs * vs,
             g = ~vs, h = vs >> 2, i = vs * 11, j = vs - 5, k = vs | 0x100, l = vs * 13 + 7;
    double x0 = vd, x1 = vd * 0.5, x2 = vd + 1.5, x3 = vd * vd, x4 = vd - 3.25, x5 = 1.0 / vd,
           x6 = vd * 1.125, x7 = vd + 0.0625, x8 = vd * 3.0, x9 = vd - 0.5;
    for (int n = 0; n < 16; n++) {
        hop();
        a += b ^ c;
        b = b * 31 + d;
        c ^= e + f;
        d += g >> 3;
        e = e * 7 + h;
        f ^= i << 1;
        g += j;
        h = h * 5 + k;
        i ^= l;
        j += a;
        k = k * 3 + b;
        l ^= c + d;
        hop();
        x0 = x0 * 1.0000001 + x1;
        x1 = x1 * 0.999 - x2 * 0.001;
        x2 += x3 * 1e-9;
        x3 = x3 * 0.5 + x4;
        x4 -= x5 * 0.25;
        x5 = x5 * 1.01 + x6 * 1e-3;
        x6 += x7 * 0.125;
        x7 = x7 * 0.75 + x8 * 0.01;
        x8 -= x9 * 1e-4;
        x9 = x9 * 1.5 - x0 * 1e-6;
    }
    double s = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7 + x8 + x9;
    uint64_t bits;
    memcpy(&bits, &s, sizeof bits);
    return (a ^ b ^ c ^ d ^ e ^ f ^ g ^ h ^ i ^ j ^ k ^ l) * 0x9e3779b97f4a7c15u + bits;
}

static struct sf__ctx *hop_from, *hop_to;

static void hop_switch(void)
{
    struct sf__ctx *from = hop_from, *to = hop_to;
    hop_from = to;
    hop_to = from;
    sf__ctx_switch(from, to);
}

#define SEEDS 64
static uint64_t want_main[SEEDS], want_partner[SEEDS], got_partner[SEEDS];

static void partner(void *arg)
{
    (void)arg;
    for (int s = 0; s < SEEDS; s++)
        got_partner[s] = mix(1000003u * (uint64_t)s + 99);
    hop = no_hop; /* the main context finishes its last mix alone */
    sf__ctx_switch_final(&ctx_a, &main_ctx);
}

START_TEST(registers_and_doubles_survive_switches)
{
    init_main();
    hop = no_hop;
    for (int s = 0; s < SEEDS; s++) {
        want_main[s] = mix((uint64_t)s * 7919u + 1);
        want_partner[s] = mix(1000003u * (uint64_t)s + 99);
    }
    alloc_ok(&stack_a, STACK);
    sf__ctx_make(&ctx_a, &stack_a, partner, NULL);
    hop_from = &main_ctx;
    hop_to = &ctx_a;
    hop = hop_switch;
    /* Both sides call hop 32 times per mix, so each of our mixes runs
     * interleaved with one of the partner's. */
    for (int s = 0; s < SEEDS; s++) {
        uint64_t got = mix((uint64_t)s * 7919u + 1);
        ck_assert_msg(got == want_main[s], "seed %d: %#llx, want %#llx", s,
                      (unsigned long long)got, (unsigned long long)want_main[s]);
    }
    if (hop == hop_switch) /* the partner's last mix ends in our last hop */
        sf__ctx_switch(&main_ctx, &ctx_a);
    for (int s = 0; s < SEEDS; s++)
        ck_assert_msg(got_partner[s] == want_partner[s], "partner seed %d: %#llx, want %#llx",
                      s, (unsigned long long)got_partner[s], (unsigned long long)want_partner[s]);
    sf__stack_free(&stack_a);
}
END_TEST

/* The floating-point control state (x87 control word and MXCSR; FPCR) is
 * each context's own, and a made context starts with its maker's. The
 * mode is read back (fegetround reads the x87 word on x86-64, so MXCSR is
 * read too) and seen in a division's rounding - but not under Valgrind,
 * whose SSE arithmetic rounds to nearest whatever the mode. */
static volatile double one = 1.0, three = 3.0;
static double third_down, third_up;
static int fiber_mode_seen, fiber_mode_after;

static int sse_mode(void)
{
#if defined(__x86_64__)
    /* MXCSR's RC field: 0 nearest, 1 down, 2 up, 3 toward zero */
    static const int modes[4] = {FE_TONEAREST, FE_DOWNWARD, FE_UPWARD, FE_TOWARDZERO};
    return modes[(_mm_getcsr() >> 13) & 3];
#else
    return fegetround();
#endif
}

static int mode(void)
{
    int m = fegetround();
    return m == sse_mode() ? m : -1;
}

#ifdef HAVE_VALGRIND_VALGRIND_H
#include <valgrind/valgrind.h>
#else
#define RUNNING_ON_VALGRIND 0
#endif

static void rounding_fiber(void *arg)
{
    (void)arg;
    fiber_mode_seen = mode(); /* the maker's: FE_TOWARDZERO */
    fesetround(FE_DOWNWARD);
    third_down = one / three;
    sf__ctx_switch(&ctx_a, &main_ctx);
    fiber_mode_after = mode();
    third_down = one / three;
    sf__ctx_switch_final(&ctx_a, &main_ctx);
}

START_TEST(rounding_mode_is_each_contexts_own)
{
    init_main();
    alloc_ok(&stack_a, STACK);
    ck_assert_int_eq(fesetround(FE_TOWARDZERO), 0);
    sf__ctx_make(&ctx_a, &stack_a, rounding_fiber, NULL);
    ck_assert_int_eq(fesetround(FE_UPWARD), 0);
    sf__ctx_switch(&main_ctx, &ctx_a);
    ck_assert_int_eq(fiber_mode_seen, FE_TOWARDZERO);
    ck_assert_int_eq(mode(), FE_UPWARD);
    third_up = one / three;
    if (!RUNNING_ON_VALGRIND)
        ck_assert(third_up > third_down);
    double down_before = third_down;
    sf__ctx_switch(&main_ctx, &ctx_a);
    ck_assert_int_eq(fiber_mode_after, FE_DOWNWARD);
    ck_assert(third_down == down_before);
    ck_assert_int_eq(mode(), FE_UPWARD);
    ck_assert(one / three == third_up);
    fesetround(FE_TONEAREST);
    sf__stack_free(&stack_a);
}
END_TEST

/* ---- The thread's in every context ---- */

static __thread int tls_value;

struct tls_run {
    struct sf__ctx main, fib;
    struct sf__stack stack;
    int base;           /* this thread's values: base + i */
    pthread_t self;
    int *tls_addr, *errno_addr;
    int failures;
};

static void tls_fiber(void *arg)
{
    struct tls_run *t = arg;
    for (int i = 0;; i++) {
        if (!pthread_equal(pthread_self(), t->self) || &tls_value != t->tls_addr ||
            &errno != t->errno_addr || tls_value != t->base + i || errno != t->base + i)
            t->failures++;
        tls_value = -(t->base + i);
        errno = -(t->base + i);
        sf__ctx_switch(&t->fib, &t->main);
    }
}

#define TLS_ROUNDS 20000
static void *tls_thread(void *arg)
{
    struct tls_run *t = arg;
    t->self = pthread_self();
    t->tls_addr = &tls_value;
    t->errno_addr = &errno;
    uintptr_t lo = 0;
    size_t size = 0;
    if (t->base % 2 == 0) {
        /* This one knows its bounds (pthread_getattr_np). */
        pthread_attr_t a;
        void *addr;
        if (pthread_getattr_np(pthread_self(), &a) == 0) {
            if (pthread_attr_getstack(&a, &addr, &size) == 0)
                lo = (uintptr_t)addr;
            pthread_attr_destroy(&a);
        }
    }
    sf__ctx_init_thread(&t->main, lo, size);
    if (sf__stack_alloc(&t->stack, STACK) != 0)
        return (void *)1;
    sf__ctx_make(&t->fib, &t->stack, tls_fiber, t);
    for (int i = 0; i < TLS_ROUNDS; i++) {
        tls_value = t->base + i;
        errno = t->base + i;
        sf__ctx_switch(&t->main, &t->fib);
        if (tls_value != -(t->base + i) || errno != -(t->base + i) ||
            !pthread_equal(pthread_self(), t->self))
            t->failures++;
    }
    /* The fiber stays suspended: forgotten, its stack unmapped. */
    sf__ctx_destroy(&t->fib);
    sf__stack_free(&t->stack);
    return NULL;
}

START_TEST(errno_tls_and_thread_are_the_threads)
{
    struct tls_run runs[3] = {{.base = 1000000}, {.base = 2000001}, {.base = 3000002}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, tls_thread, &runs[i]), 0);
    ck_assert_ptr_null(tls_thread(&runs[2])); /* and the main thread, alongside */
    for (int i = 0; i < 2; i++) {
        void *r;
        ck_assert_int_eq(pthread_join(th[i], &r), 0);
        ck_assert_ptr_null(r);
    }
    for (int i = 0; i < 3; i++)
        ck_assert_msg(runs[i].failures == 0, "thread %d: %d rounds saw another thread's", i,
                      runs[i].failures);
}
END_TEST

/* ---- Stack use ---- */

static uintptr_t lowest_frame;

/* Writes the frame's buffer through its address, so that every compiler
 * keeps all 512 bytes of it in the frame (clang 14 kept 64 bytes of a
 * volatile array whose address never escaped). */
__attribute__((noinline)) static void touch(volatile char *buf, size_t n, long depth)
{
    for (size_t i = 0; i < n; i += 64)
        buf[i] = (char)(depth + (long)i);
    buf[n - 1] = (char)(depth >> 8);
}

__attribute__((noinline)) static long recurse(long depth)
{
    volatile char buf[512];
    touch(buf, sizeof buf, depth);
    buf[0] = (char)depth;
    uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
    if (fp < lowest_frame)
        lowest_frame = fp;
    if (depth == 0)
        return buf[0];
    return recurse(depth - 1) + depth + buf[511] - (char)(depth >> 8);
}

static long recursed;
static uintptr_t first_frame;

static void deep_fiber(void *arg)
{
    first_frame = (uintptr_t)__builtin_frame_address(0);
    recursed = recurse((long)(intptr_t)arg);
    sf__ctx_switch_final(&ctx_a, &main_ctx);
}

/* 200 levels of 512-byte frames on a 256 KiB stack: within its bounds,
 * well past its first half, and fn ran with a 16-byte aligned frame. */
START_TEST(deep_recursion_within_the_stack)
{
    init_main();
    alloc_ok(&stack_a, STACK);
    lowest_frame = UINTPTR_MAX;
    sf__ctx_make(&ctx_a, &stack_a, deep_fiber, (void *)(intptr_t)200);
    sf__ctx_switch(&main_ctx, &ctx_a);
    ck_assert_int_eq(recursed, 200L * 201 / 2);
    ck_assert_uint_eq(first_frame % 16, 0);
    ck_assert(first_frame > stack_a.lo && first_frame < stack_a.lo + stack_a.size);
    ck_assert(lowest_frame > stack_a.lo);
    ck_assert_msg(stack_a.lo + stack_a.size - lowest_frame > 200 * 512,
                  "200 frames of 512 bytes took only %zu bytes",
                  (size_t)(stack_a.lo + stack_a.size - lowest_frame));
    sf__stack_free(&stack_a);
}
END_TEST

/* Running off the bottom of a fiber's stack hits the guard page: the
 * process dies of SIGSEGV (default action restored, so that neither a
 * sanitizer's handler nor anything else turns it into an exit). */
static void overflow_fiber(void *arg)
{
    (void)arg;
    recursed = recurse(1000000000L);
    sf__ctx_switch_final(&ctx_a, &main_ctx);
}

static void write_below_fiber(void *arg)
{
    struct sf__stack *s = arg;
    ((volatile char *)s->lo)[-1] = 1;
    sf__ctx_switch_final(&ctx_a, &main_ctx);
}

static void child_overflow(void)
{
    signal(SIGSEGV, SIG_DFL);
    init_main();
    alloc_ok(&stack_a, STACK);
    lowest_frame = UINTPTR_MAX;
    sf__ctx_make(&ctx_a, &stack_a, overflow_fiber, NULL);
    sf__ctx_switch(&main_ctx, &ctx_a);
}

static void child_write_below(void)
{
    signal(SIGSEGV, SIG_DFL);
    init_main();
    alloc_ok(&stack_a, STACK);
    sf__ctx_make(&ctx_a, &stack_a, write_below_fiber, &stack_a);
    sf__ctx_switch(&main_ctx, &ctx_a);
}

START_TEST(the_guard_page_stops_an_overflow)
{
    int sig, status;
    char *err = tu_run_in_child(child_write_below, &sig, &status);
    ck_assert_msg(sig == SIGSEGV, "a write below the stack: signal %d, status %d, stderr \"%s\"",
                  sig, status, err);
    free(err);
    err = tu_run_in_child(child_overflow, &sig, &status);
    ck_assert_msg(sig == SIGSEGV, "unbounded recursion: signal %d, status %d, stderr \"%s\"", sig,
                  status, err);
    free(err);
}
END_TEST

/* ---- Final switches and stacks made again ---- */

#define REMAKES (TU_TSAN ? 5000 : 100000)
static long ends;

static void end_at_once(void *arg)
{
    (*(long *)arg)++;
    sf__ctx_switch_final(&ctx_a, &main_ctx);
}

static long resident_kib(void)
{
    char *s = tu_read_file("/proc/self/statm");
    ck_assert_ptr_nonnull(s);
    long size = 0, rss = 0;
    ck_assert_int_eq(sscanf(s, "%ld %ld", &size, &rss), 2);
    free(s);
    return rss * (long)(page() / 1024);
}

/* The thread makes a context on the same stack again and again (100,000
 * times; 5,000 under ThreadSanitizer); each runs and leaves for good.
 * Memory stays flat: the sanitizers' per-context state is released at each
 * final switch. */
START_TEST(a_stack_made_again_100000_times)
{
    init_main();
    alloc_ok(&stack_a, STACK);
    for (long i = 0; i < 1000; i++) { /* warm-up */
        sf__ctx_make(&ctx_a, &stack_a, end_at_once, &ends);
        sf__ctx_switch(&main_ctx, &ctx_a);
    }
    long before = resident_kib();
    for (long i = 0; i < REMAKES; i++) {
        sf__ctx_make(&ctx_a, &stack_a, end_at_once, &ends);
        sf__ctx_switch(&main_ctx, &ctx_a);
    }
    long after = resident_kib();
    ck_assert_int_eq(ends, REMAKES + 1000);
    ck_assert_msg(after - before < 8 * 1024, "resident memory grew by %ld KiB over %d remakes",
                  after - before, REMAKES);
    sf__stack_free(&stack_a);
}
END_TEST

/* Two stacks taking turns with no thread in between: the context on one
 * makes the next on the other and leaves for good into it. */
static long relays;

static void relay(void *arg)
{
    struct sf__ctx *self = arg, *other = self == &ctx_a ? &ctx_b : &ctx_a;
    struct sf__stack *other_stack = self == &ctx_a ? &stack_b : &stack_a;
    if (++relays == REMAKES)
        sf__ctx_switch_final(self, &main_ctx);
    sf__ctx_make(other, other_stack, relay, other);
    sf__ctx_switch_final(self, other);
}

START_TEST(contexts_relay_across_two_stacks_100000_times)
{
    init_main();
    alloc_ok(&stack_a, STACK);
    alloc_ok(&stack_b, STACK);
    sf__ctx_make(&ctx_a, &stack_a, relay, &ctx_a);
    long before = resident_kib();
    sf__ctx_switch(&main_ctx, &ctx_a);
    long after = resident_kib();
    ck_assert_int_eq(relays, REMAKES);
    ck_assert_msg(after - before < 8 * 1024, "resident memory grew by %ld KiB over %d relays",
                  after - before, REMAKES);
    sf__stack_free(&stack_a);
    sf__stack_free(&stack_b);
}
END_TEST

/* A context made and never run is destroyed; the thread's own context is
 * never left. */
static void never_runs(void *arg)
{
    (void)arg;
    abort();
}

START_TEST(a_context_never_run_is_destroyed)
{
    init_main();
    alloc_ok(&stack_a, STACK);
    for (int i = 0; i < 1000; i++) {
        sf__ctx_make(&ctx_a, &stack_a, never_runs, NULL);
        sf__ctx_destroy(&ctx_a);
    }
    sf__ctx_destroy(&main_ctx); /* keeps the thread's */
    sf__stack_free(&stack_a);
}
END_TEST

/* ---- Unwinding ---- */

#if !SF__FIBER_UCONTEXT
void sf__ctx_trampoline(void); /* fiber.c: where a made context starts */
#endif
static int frames;
static void *frame_pcs[64];

static void unwind_fiber(void *arg)
{
    (void)arg;
    frames = backtrace(frame_pcs, 64);
    sf__ctx_switch_final(&ctx_a, &main_ctx);
}

/* A backtrace taken on a made context ends at its first frame instead of
 * running into garbage above it. */
START_TEST(a_backtrace_ends_at_the_trampoline)
{
    init_main();
    alloc_ok(&stack_a, STACK);
    sf__ctx_make(&ctx_a, &stack_a, unwind_fiber, NULL);
    sf__ctx_switch(&main_ctx, &ctx_a);
    /* backtrace, unwind_fiber, start, the trampoline (or ucontext's). */
    ck_assert_msg(frames >= 3 && frames <= 6, "%d frames", frames);
#if !SF__FIBER_UCONTEXT
    uintptr_t last = (uintptr_t)frame_pcs[frames - 1];
    uintptr_t tramp = (uintptr_t)sf__ctx_trampoline;
    ck_assert_msg(last > tramp && last < tramp + 16,
                  "the outermost frame is %#lx, the trampoline at %#lx", (unsigned long)last,
                  (unsigned long)tramp);
#endif
    sf__stack_free(&stack_a);
}
END_TEST

/* ---- What the tools see ---- */

#if defined(__SANITIZE_ADDRESS__)
#define TU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TU_ASAN 1
#endif
#endif
#ifndef TU_ASAN
#define TU_ASAN 0
#endif

static void quiet_fiber(void *arg)
{
    (void)arg;
    recursed = recurse(50);
    sf__ctx_switch(&ctx_b, &main_ctx);
    recursed += recurse(50);
    sf__ctx_switch_final(&ctx_b, &main_ctx);
}

/* Switches of every kind, in a child whose stderr is read. */
static void child_quiet(void)
{
    init_main();
    alloc_ok(&stack_a, STACK);
    alloc_ok(&stack_b, STACK);
    sf__ctx_make(&ctx_b, &stack_b, quiet_fiber, NULL);
    sf__ctx_switch(&main_ctx, &ctx_b);
    sf__ctx_switch(&main_ctx, &ctx_b);
    relays = REMAKES - 100;
    sf__ctx_make(&ctx_a, &stack_a, relay, &ctx_a);
    sf__ctx_switch(&main_ctx, &ctx_a);
    (void)recurse(100); /* on the thread's stack again, below where it was */
    sf__stack_free(&stack_a);
    sf__stack_free(&stack_b);
    if (recursed != 2 * (50L * 51 / 2) || relays != REMAKES)
        _exit(3);
}

/* The sanitizers understand the switches: they say nothing about them
 * (AddressSanitizer warns of a stack it does not know - "ignoring requested
 * __asan_handle_no_return", "False positive error reports may follow" - when
 * it is not told; with ucontext it warns once that it does not fully
 * support swapcontext: the only line allowed). */
START_TEST(the_sanitizers_say_nothing)
{
    int sig, status;
    char *err = tu_run_in_child(child_quiet, &sig, &status);
    ck_assert_msg(sig == 0 && status == 0, "signal %d, status %d, stderr \"%s\"", sig, status,
                  err);
    const char *rest = err;
    if (SF__FIBER_UCONTEXT && strstr(err, "doesn't fully support makecontext/swapcontext") != NULL &&
        tu_count_lines(err) == 1)
        rest = ""; /* its only line */
    ck_assert_msg(rest[0] == '\0', "stderr: \"%s\"", err);
    free(err);
}
END_TEST

/* AddressSanitizer finds an overflow of a fiber's frame and names the
 * frame: it knows which stack runs. This case and the next check nothing
 * in the builds without their sanitizer (a SKIP would count as a failure
 * in CI). */
/* UBSan would see it first (bounds, object size): only ASan looks here. */
__attribute__((noinline, no_sanitize("undefined"))) static char overflow_a_local(int at)
{
    volatile char buf[16];
    buf[0] = 0;
    buf[at] = 1;
    return buf[0];
}

static volatile int sixteen = 16;

static void asan_fiber(void *arg)
{
    (void)arg;
    (void)overflow_a_local(sixteen);
    sf__ctx_switch_final(&ctx_a, &main_ctx);
}

static void child_asan(void)
{
    init_main();
    alloc_ok(&stack_a, STACK);
    sf__ctx_make(&ctx_a, &stack_a, asan_fiber, NULL);
    sf__ctx_switch(&main_ctx, &ctx_a);
}

START_TEST(asan_sees_a_fiber_frame)
{
    if (!TU_ASAN)
        return;
    int sig, status;
    char *err = tu_run_in_child(child_asan, &sig, &status);
    ck_assert_msg(strstr(err, "stack-buffer-overflow") != NULL &&
                      strstr(err, "overflow_a_local") != NULL &&
                      strstr(err, "is located in stack of thread") != NULL,
                  "stderr: \"%s\"", err);
    free(err);
}
END_TEST

/* ThreadSanitizer reports a race between a fiber and another thread, with
 * the fiber's own stack. The other thread writes, then raises a relaxed
 * flag (no happens-before); the fiber waits for it and reads. */
static int racy;
static atomic_int racy_flag;

static void *racy_writer(void *arg)
{
    (void)arg;
    racy = 42;
    atomic_store_explicit(&racy_flag, 1, memory_order_relaxed);
    return NULL;
}

__attribute__((noinline)) static void racy_reader_in_fiber(void)
{
    while (atomic_load_explicit(&racy_flag, memory_order_relaxed) == 0)
        sched_yield();
    recursed = racy;
}

static void tsan_fiber(void *arg)
{
    (void)arg;
    racy_reader_in_fiber();
    sf__ctx_switch_final(&ctx_a, &main_ctx);
}

static void child_tsan(void)
{
    init_main();
    alloc_ok(&stack_a, STACK);
    pthread_t t;
    if (pthread_create(&t, NULL, racy_writer, NULL) != 0)
        _exit(3);
    sf__ctx_make(&ctx_a, &stack_a, tsan_fiber, NULL);
    sf__ctx_switch(&main_ctx, &ctx_a);
    pthread_join(t, NULL);
}

START_TEST(tsan_sees_a_race_on_a_fiber)
{
    if (!TU_TSAN)
        return;
    int sig, status;
    char *err = tu_run_in_child(child_tsan, &sig, &status);
    ck_assert_msg(strstr(err, "ThreadSanitizer: data race") != NULL &&
                      strstr(err, "racy_reader_in_fiber") != NULL &&
                      strstr(err, "racy_writer") != NULL,
                  "stderr: \"%s\"", err);
    free(err);
}
END_TEST

static Suite *fiber_suite(void)
{
    Suite *s = suite_create("fiber");
    const struct { /* Check's tests are variables, not constants: not static */
        const char *name;
        const TTest *tests[6];
    } cases[] = {
        {"stacks",
         {stack_alloc_rounds_to_pages_and_fails_cleanly,
          many_stacks_allocated_and_freed_leave_no_mapping, deep_recursion_within_the_stack,
          the_guard_page_stops_an_overflow}},
        {"switches",
         {ping_pong_a_million_times, a_ring_of_100_fibers_round_robin,
          registers_and_doubles_survive_switches, rounding_mode_is_each_contexts_own,
          a_backtrace_ends_at_the_trampoline}},
        {"threads", {errno_tls_and_thread_are_the_threads}},
        {"tools", {the_sanitizers_say_nothing, asan_sees_a_fiber_frame, tsan_sees_a_race_on_a_fiber}},
        {"remakes",
         {a_stack_made_again_100000_times, contexts_relay_across_two_stacks_100000_times,
          a_context_never_run_is_destroyed}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        TCase *tc = tcase_create(cases[c].name);
        tcase_set_timeout(tc, TU_SANITIZED ? 240 : 120);
        for (int t = 0; t < 6 && cases[c].tests[t] != NULL; t++)
            tcase_add_test(tc, cases[c].tests[t]);
        suite_add_tcase(s, tc);
    }
    return s;
}

TU_MAIN(fiber_suite)
