/*
 * fiber_cross.c - runtime/platform/fiber.c's switch on another architecture, where
 * Check (tests/test_fiber) is not at hand: a standalone driver with the
 * main cases of tests/test_fiber, reporting in TAP. tools/check-fiber-cross
 * builds it statically with a cross compiler and runs it under qemu-user
 * (aarch64), and natively; it is not part of make check.
 */
#include "platform/fiber.h"

#include <errno.h>
#include <fenv.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define STACK (256 * 1024)

static int test_no, failed;

static void report(int ok, const char *name, const char *why)
{
    test_no++;
    printf("%s %d - %s%s%s\n", ok ? "ok" : "not ok", test_no, name, ok ? "" : ": ", ok ? "" : why);
    failed += !ok;
}

static struct sf__ctx main_ctx, ctx_a, ctx_b;
static struct sf__stack stack_a, stack_b;

static void need_stack(struct sf__stack *s, size_t size)
{
    if (sf__stack_alloc(s, size) != 0) {
        printf("Bail out! sf__stack_alloc: %s\n", strerror(errno));
        exit(1);
    }
}

/* ---- ping-pong ---- */

#define PINGS 1000000L
static long pings;
static int stop;

static void pong(void *arg)
{
    (void)arg;
    for (;;) {
        if (stop)
            sf__ctx_switch_final(&ctx_a, &main_ctx);
        pings++;
        sf__ctx_switch(&ctx_a, &main_ctx);
    }
}

static void ping_pong(void)
{
    need_stack(&stack_a, STACK);
    sf__ctx_make(&ctx_a, &stack_a, pong, NULL);
    long wrong = 0;
    for (long i = 0; i < PINGS; i++) {
        wrong += pings != i;
        sf__ctx_switch(&main_ctx, &ctx_a);
    }
    stop = 1;
    sf__ctx_switch(&main_ctx, &ctx_a);
    report(wrong == 0 && pings == PINGS, "ping-pong a million times", "counts differ");
    sf__stack_free(&stack_a);
}

/* ---- a ring ---- */

#define RING 100
#define ROUNDS 1000
static struct sf__ctx ring[RING];
static struct sf__stack ring_stacks[RING];
static long step, out_of_turn;

static struct sf__ctx *next_of(long i) { return i + 1 < RING ? &ring[i + 1] : &main_ctx; }

static void ring_member(void *arg)
{
    long i = (long)(intptr_t)arg;
    for (long r = 0; r < ROUNDS; r++) {
        out_of_turn += step != r * RING + i;
        step++;
        sf__ctx_switch(&ring[i], next_of(i));
    }
    sf__ctx_switch_final(&ring[i], next_of(i));
}

static void ring_of_fibers(void)
{
    for (long i = 0; i < RING; i++) {
        need_stack(&ring_stacks[i], 64 * 1024);
        sf__ctx_make(&ring[i], &ring_stacks[i], ring_member, (void *)(intptr_t)i);
    }
    for (long r = 0; r < ROUNDS; r++)
        sf__ctx_switch(&main_ctx, &ring[0]);
    sf__ctx_switch(&main_ctx, &ring[0]);
    report(out_of_turn == 0 && step == (long)ROUNDS * RING, "a ring of 100 fibers",
           "out of turn");
    for (long i = 0; i < RING; i++) {
        sf__ctx_destroy(&ring[i]);
        sf__stack_free(&ring_stacks[i]);
    }
}

/* ---- registers ---- */

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
    hop = no_hop;
    sf__ctx_switch_final(&ctx_a, &main_ctx);
}

static void registers(void)
{
    hop = no_hop;
    for (int s = 0; s < SEEDS; s++) {
        want_main[s] = mix((uint64_t)s * 7919u + 1);
        want_partner[s] = mix(1000003u * (uint64_t)s + 99);
    }
    need_stack(&stack_a, STACK);
    sf__ctx_make(&ctx_a, &stack_a, partner, NULL);
    hop_from = &main_ctx;
    hop_to = &ctx_a;
    hop = hop_switch;
    int bad = 0;
    for (int s = 0; s < SEEDS; s++)
        bad += mix((uint64_t)s * 7919u + 1) != want_main[s];
    if (hop == hop_switch)
        sf__ctx_switch(&main_ctx, &ctx_a);
    for (int s = 0; s < SEEDS; s++)
        bad += got_partner[s] != want_partner[s];
    report(bad == 0, "registers and doubles survive switches", "a value changed");
    sf__stack_free(&stack_a);
}

/* ---- rounding ---- */

static volatile double one = 1.0, three = 3.0;
static double third_down;
static int mode_seen, mode_after;

static void rounding_fiber(void *arg)
{
    (void)arg;
    mode_seen = fegetround();
    fesetround(FE_DOWNWARD);
    third_down = one / three;
    sf__ctx_switch(&ctx_a, &main_ctx);
    mode_after = fegetround();
    sf__ctx_switch_final(&ctx_a, &main_ctx);
}

static void rounding(void)
{
    need_stack(&stack_a, STACK);
    fesetround(FE_TOWARDZERO);
    sf__ctx_make(&ctx_a, &stack_a, rounding_fiber, NULL);
    fesetround(FE_UPWARD);
    sf__ctx_switch(&main_ctx, &ctx_a);
    int ok = mode_seen == FE_TOWARDZERO && fegetround() == FE_UPWARD && one / three > third_down;
    sf__ctx_switch(&main_ctx, &ctx_a);
    ok = ok && mode_after == FE_DOWNWARD && fegetround() == FE_UPWARD;
    fesetround(FE_TONEAREST);
    report(ok, "the rounding mode is each context's own", "a mode leaked");
    sf__stack_free(&stack_a);
}

/* ---- the thread's ---- */

static __thread int tls_value;

struct tls_run {
    struct sf__ctx main, fib;
    struct sf__stack stack;
    int base, failures;
    pthread_t self;
    int *tls_addr, *errno_addr;
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

static void *tls_thread(void *arg)
{
    struct tls_run *t = arg;
    t->self = pthread_self();
    t->tls_addr = &tls_value;
    t->errno_addr = &errno;
    sf__ctx_init_thread(&t->main, 0, 0);
    if (sf__stack_alloc(&t->stack, STACK) != 0) {
        t->failures++;
        return NULL;
    }
    sf__ctx_make(&t->fib, &t->stack, tls_fiber, t);
    for (int i = 0; i < 20000; i++) {
        tls_value = t->base + i;
        errno = t->base + i;
        sf__ctx_switch(&t->main, &t->fib);
        if (tls_value != -(t->base + i) || errno != -(t->base + i))
            t->failures++;
    }
    sf__ctx_destroy(&t->fib);
    sf__stack_free(&t->stack);
    return NULL;
}

static void thread_state(void)
{
    struct tls_run runs[3] = {{.base = 1000000}, {.base = 2000001}, {.base = 3000002}};
    pthread_t th[2];
    int ok = 1;
    for (int i = 0; i < 2; i++)
        ok = ok && pthread_create(&th[i], NULL, tls_thread, &runs[i]) == 0;
    tls_thread(&runs[2]);
    for (int i = 0; i < 2; i++)
        ok = ok && pthread_join(th[i], NULL) == 0;
    for (int i = 0; i < 3; i++)
        ok = ok && runs[i].failures == 0;
    report(ok, "errno, TLS and pthread_self are the thread's", "another thread's seen");
}

/* ---- stack use ---- */

static uintptr_t lowest_frame, first_frame;
static long recursed;

__attribute__((noinline)) static long recurse(long depth)
{
    volatile char buf[512];
    buf[0] = (char)depth;
    buf[511] = (char)(depth >> 8);
    uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
    if (fp < lowest_frame)
        lowest_frame = fp;
    if (depth == 0)
        return buf[0];
    return recurse(depth - 1) + depth + buf[511] - (char)(depth >> 8);
}

static void deep_fiber(void *arg)
{
    first_frame = (uintptr_t)__builtin_frame_address(0);
    recursed = recurse((long)(intptr_t)arg);
    sf__ctx_switch_final(&ctx_a, &main_ctx);
}

static void deep_recursion(void)
{
    need_stack(&stack_a, STACK);
    lowest_frame = UINTPTR_MAX;
    sf__ctx_make(&ctx_a, &stack_a, deep_fiber, (void *)(intptr_t)200);
    sf__ctx_switch(&main_ctx, &ctx_a);
    int ok = recursed == 200L * 201 / 2 && first_frame % 16 == 0 && lowest_frame > stack_a.lo &&
             stack_a.lo + stack_a.size - lowest_frame > 200 * 512;
    report(ok, "deep recursion within the stack, 16-byte aligned frames", "out of bounds");
    sf__stack_free(&stack_a);
}

static void overflow_fiber(void *arg)
{
    (void)arg;
    recursed = recurse(1000000000L);
    sf__ctx_switch_final(&ctx_a, &main_ctx);
}

static void guard_page(void)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGSEGV, SIG_DFL);
        need_stack(&stack_a, STACK);
        lowest_frame = UINTPTR_MAX;
        sf__ctx_make(&ctx_a, &stack_a, overflow_fiber, NULL);
        sf__ctx_switch(&main_ctx, &ctx_a);
        _exit(0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    report(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV, "an overflow dies on the guard page",
           "no SIGSEGV");
}

/* ---- made again ---- */

#define REMAKES 100000L
static long ends, relays;

static void end_at_once(void *arg)
{
    (void)arg;
    ends++;
    sf__ctx_switch_final(&ctx_a, &main_ctx);
}

static void relay(void *arg)
{
    struct sf__ctx *self = arg, *other = self == &ctx_a ? &ctx_b : &ctx_a;
    struct sf__stack *other_stack = self == &ctx_a ? &stack_b : &stack_a;
    if (++relays == REMAKES)
        sf__ctx_switch_final(self, &main_ctx);
    sf__ctx_make(other, other_stack, relay, other);
    sf__ctx_switch_final(self, other);
}

static void remakes(void)
{
    need_stack(&stack_a, STACK);
    need_stack(&stack_b, STACK);
    for (long i = 0; i < REMAKES; i++) {
        sf__ctx_make(&ctx_a, &stack_a, end_at_once, NULL);
        sf__ctx_switch(&main_ctx, &ctx_a);
    }
    report(ends == REMAKES, "a stack made again 100,000 times", "count differs");
    sf__ctx_make(&ctx_a, &stack_a, relay, &ctx_a);
    sf__ctx_switch(&main_ctx, &ctx_a);
    report(relays == REMAKES, "contexts relay across two stacks 100,000 times", "count differs");
    sf__stack_free(&stack_a);
    sf__stack_free(&stack_b);
}

int main(void)
{
    printf("# fibers: %s\n", sf__fiber_impl);
    sf__ctx_init_thread(&main_ctx, 0, 0);
    ping_pong();
    ring_of_fibers();
    registers();
    rounding();
    thread_state();
    deep_recursion();
    guard_page();
    remakes();
    printf("1..%d\n", test_no);
    return failed != 0;
}
