/*
 * fiber.c - stacks and context switches. See fiber.h for the API.
 *
 * What a switch saves, and why that set. sf__ctx_switch is an ordinary
 * function call as far as the compiler of its caller knows, so the caller
 * has already saved every register a call may clobber (the caller-saved
 * ones). The switch saves exactly what a call must preserve, and no more:
 *  - x86-64 (System V AMD64 ABI, 3.2.1 and Figure 3.4): rbx, rbp, r12-r15
 *    and rsp; the x87 control word and the control bits of MXCSR, which the
 *    ABI makes callee-saved (rounding mode, exception masks, flush-to-zero).
 *    All xmm registers are caller-saved; the direction flag is clear at
 *    every call and return, so it needs nothing.
 *  - aarch64 (AAPCS64, 6.1.1 and 6.1.2): x19-x28, the frame pointer x29,
 *    the link register x30, sp, and the low 64 bits of v8-v15 (d8-d15). The
 *    FPCR is not callee-saved there but global state that only "specific
 *    support functions" (fesetround and kin) may change; a get that
 *    returned with the rounding mode of whatever else ran meanwhile on the
 *    thread would break that, so it is saved too, and written back only
 *    when it differs (a write of FPCR may be slow). x18 is left alone: on
 *    Linux it is an ordinary temporary.
 * Nothing else: not the signal mask (swapcontext saves it with a
 * sigprocmask system call; contexts never leave their thread, so the mask
 * is the thread's in all of them), not the thread pointer (fs / tpidr_el0,
 * the same thread).
 *
 * Cost (x86-64, tools/bench/src/switch_sf.c): 21 instructions per switch
 * (callgrind), no system call (strace), and a round trip of two switches
 * in some 23 ns on the AMD EPYC guest it was measured on - mostly the two
 * mispredicted returns: each `ret` goes elsewhere than the return stack
 * predicts, which is inherent to switching stacks. Ending with pop and an
 * indirect jmp instead measured 9 ns in a bare loop but 35 ns (against
 * 22) when the switch is called two frames deep on both sides, the return
 * stack then being off by one for every later return; it was not kept.
 * The FP control save and restore costs about 2 ns of the 23.
 *
 * The switch (sf__ctx_jump below, assembly at file scope) pushes the
 * registers on the running stack, stores the stack pointer in from->sp,
 * loads to->sp and pops the same frame from there, ending with a return:
 * into the caller of the switch that suspended `to`, or, the first time, into
 * the trampoline a made context was given. The frame, lowest address first:
 *   x86-64  (64 bytes) MXCSR (4 bytes), x87 control word (2), 2 unused;
 *                      r15 r14 r13 r12 rbx rbp; the return address
 *   aarch64 (176)      x19..x28; x29 x30 (x30 is where `ret` goes);
 *                      d8..d15; FPCR, 8 unused
 *
 * A made context (sf__ctx_make) gets that frame written at the top of its
 * stack, as if it had been suspended by a switch:
 *   top -  16 .. top        16 zero bytes (nothing above the first frame)
 *   top -  16 - frame ..    the frame: zero registers except
 *                             x86-64:  rbx = ctx_begin, r12 = the context,
 *                                      return address = the trampoline
 *                             aarch64: x19 = ctx_begin, x20 = the context,
 *                                      x30 = the trampoline
 *                           and the floating-point control state of the
 *                           maker, as a new thread inherits its creator's.
 * Popping it leaves the stack pointer at top - 16, a multiple of 16, in the
 * trampoline, which calls ctx_begin(c) at once: the call is made with the stack
 * 16-byte aligned as both ABIs require, and the frame pointer is 0, so a
 * walk of frame pointers ends there; the trampoline's unwind information
 * marks its return address undefined (.cfi_undefined), which ends a DWARF
 * unwind (gdb, libunwind) there too. ctx_begin tells the sanitizers the switch
 * has arrived and calls fn(arg), which never returns.
 *
 * The sanitizers. A switch is done in three steps, leave - jump - arrive,
 * in every build; the first and last compile to nothing in a plain build,
 * and then sf__ctx_switch is the assembly itself (an alias of
 * sf__ctx_jump), so a switch costs one call.
 *  - AddressSanitizer (<sanitizer/common_interface_defs.h>): leave calls
 *    __sanitizer_start_switch_fiber(&from->asan_fake_stack, to's stack),
 *    which puts the running context's fake stack (use-after-return
 *    detection) aside; arrive calls __sanitizer_finish_switch_fiber with
 *    the fake stack of the context arriving (NULL on its first arrival),
 *    which also tells us the bounds of the stack just left: a thread's own
 *    context with unknown bounds learns them there, before anything can
 *    switch back to it. A final switch passes NULL instead of
 *    &from->asan_fake_stack: the fake stack of frames that will never
 *    return is freed. The real stack of a made context is unpoisoned when
 *    it is made: the frames abandoned there left their redzones poisoned.
 *  - ThreadSanitizer (<sanitizer/tsan_interface.h>): a made context has a
 *    fiber of its own (__tsan_create_fiber), a thread's own context the
 *    thread's (__tsan_get_current_fiber); leave calls
 *    __tsan_switch_to_fiber(to, 0) just before the jump - flag 0
 *    synchronises, so everything before the switch happens before
 *    everything after it, which is true on one thread. A final switch
 *    destroys `from`'s fiber once it has switched away from it: the fiber's
 *    shadow call stack still holds the abandoned frames (no return will
 *    ever pop them), so reusing it for the next sf__ctx_make would grow it
 *    with every reuse until it overflowed. The next make creates a new one.
 *  - Valgrind (<valgrind/valgrind.h>, when configure found it): each stack
 *    is registered (VALGRIND_STACK_REGISTER), so memcheck takes a move of
 *    the stack pointer into it as a switch of stacks, not as a huge frame.
 *    A client request costs a few instructions outside Valgrind and is made
 *    only when a stack is mapped or unmapped.
 *
 * The fallback (ucontext: getcontext, makecontext, swapcontext) runs
 * wherever the assembly is missing, and on x86-64 with configure
 * --enable-ucontext-fibers, with the same three steps around swapcontext.
 * It saves the signal mask, with a system call at every switch.
 *
 * Not supported: x86 CET shadow stacks, where a return must go where its
 * call came from. Linux enables them only on request, for programs whose
 * every object is marked compatible - and this object's mark is what the
 * compiler's -fcf-protection says, whatever the assembly does. On aarch64,
 * `ret` needs no BTI landing pad, and ctx_begin, reached by blr, has the
 * compiler's.
 *
 * Read for this file: the System V AMD64 ABI and AAPCS64 (above), the
 * comments of the sanitizer headers named above, valgrind.h. The code is
 * this project's own.
 */
#include "platform/fiber.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifdef HAVE_VALGRIND_VALGRIND_H
#include <valgrind/valgrind.h>
#else
#define VALGRIND_STACK_REGISTER(lo, hi) 0u
#define VALGRIND_STACK_DEREGISTER(id) ((void)(id))
#endif

/* gcc says __SANITIZE_*__, clang __has_feature. */
#if defined(__SANITIZE_ADDRESS__)
#define ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ASAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TSAN 1
#endif
#endif
#ifndef ASAN
#define ASAN 0
#endif
#ifndef TSAN
#define TSAN 0
#endif
#if ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#if TSAN
#include <sanitizer/tsan_interface.h>
#endif

/* The assembly switch is sf__ctx_switch itself: no sanitizer to tell. */
#define BARE (!SF__FIBER_UCONTEXT && !ASAN && !TSAN)

#if SF__FIBER_UCONTEXT
const char sf__fiber_impl[] = "ucontext";
#elif defined(__x86_64__)
const char sf__fiber_impl[] = "x86-64";
#else
const char sf__fiber_impl[] = "aarch64";
#endif

/* ---- Stacks ---- */

static size_t page_size(void)
{
    long pg = sysconf(_SC_PAGESIZE);
    return pg > 0 ? (size_t)pg : 4096;
}

int sf__stack_alloc(struct sf__stack *s, size_t size)
{
    memset(s, 0, sizeof *s);
    size_t page = page_size();
    if (size == 0) {
        errno = EINVAL;
        return -1;
    }
    if (size > SIZE_MAX - 2 * page) {
        errno = ENOMEM;
        return -1;
    }
    size_t usable = (size + page - 1) & ~(page - 1);
    size_t total = usable + page;
    /* MAP_STACK: the kernel may treat it as a stack (no transparent huge
     * pages since Linux 6.7). MAP_NORESERVE: untouched pages cost nothing,
     * not even commit charge. */
    void *m = mmap(NULL, total, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (m == MAP_FAILED) {
        errno = ENOMEM; /* what Linux says; Valgrind says EINVAL past the address space */
        return -1;
    }
    if (mprotect(m, page, PROT_NONE) != 0) {
        int e = errno; /* ENOMEM: the split would pass the mapping count limit */
        munmap(m, total);
        errno = e;
        return -1;
    }
    s->map = m;
    s->map_size = total;
    s->lo = (uintptr_t)m + page;
    s->size = usable;
    s->vg_id = VALGRIND_STACK_REGISTER(s->lo, s->lo + s->size - 1);
    return 0;
}

void sf__stack_free(struct sf__stack *s)
{
    if (s->map == NULL)
        return;
    int saved = errno;
    VALGRIND_STACK_DEREGISTER(s->vg_id);
#if ASAN
    /* Abandoned frames leave poisoned redzones; whatever is mapped here
     * next must not inherit them (not every ASan unpoisons at munmap). */
    ASAN_UNPOISON_MEMORY_REGION((void *)s->lo, s->size);
#endif
    munmap(s->map, s->map_size); /* cannot fail: a whole mapping of ours */
    errno = saved;
    memset(s, 0, sizeof *s);
}

/* ---- The switch, in assembly ---- */

#if !SF__FIBER_UCONTEXT
/* Saves the callee-saved registers on the running stack, from->sp = the
 * stack pointer, then loads to->sp and restores what is there (a switch's
 * frame, or a made context's). `sp` is the first member of the context. */
void sf__ctx_jump(struct sf__ctx *from, struct sf__ctx *to);
/* Where a made context's first switch returns to: calls ctx_begin(c), with
 * ctx_begin in rbx / x19 and c in r12 / x20. Never called from C. */
void sf__ctx_trampoline(void);
_Static_assert(offsetof(struct sf__ctx, sp) == 0, "the assembly reads sp at offset 0");

#if BARE
/* No sanitizer: the switches are the jump itself. */
#define SWITCH_ALIASES                                                                   \
    ".globl sf__ctx_switch\n"                                                            \
    ".hidden sf__ctx_switch\n"                                                           \
    ".set sf__ctx_switch, sf__ctx_jump\n"                                                \
    ".globl sf__ctx_switch_final\n"                                                      \
    ".hidden sf__ctx_switch_final\n"                                                     \
    ".set sf__ctx_switch_final, sf__ctx_jump\n"
#else
#define SWITCH_ALIASES ""
#endif

#if defined(__x86_64__)
/* Pushes then pops: the order of the pops mirrors the pushes exactly, and
 * struct frame below is that layout. The stack is 8 mod 16 at the entry
 * (after the call) and 0 mod 16 once the frame is pushed. */
__asm__(".pushsection .text\n"
        ".p2align 4\n"
        ".globl sf__ctx_jump\n"
        ".hidden sf__ctx_jump\n"
        ".type sf__ctx_jump, @function\n"
        "sf__ctx_jump:\n"
        "    pushq %rbp\n"
        "    pushq %rbx\n"
        "    pushq %r12\n"
        "    pushq %r13\n"
        "    pushq %r14\n"
        "    pushq %r15\n"
        "    subq $8, %rsp\n"
        "    stmxcsr (%rsp)\n"
        "    fnstcw 4(%rsp)\n"
        "    movq %rsp, (%rdi)\n"
        "    movq (%rsi), %rsp\n"
        "    ldmxcsr (%rsp)\n"
        "    fldcw 4(%rsp)\n"
        "    addq $8, %rsp\n"
        "    popq %r15\n"
        "    popq %r14\n"
        "    popq %r13\n"
        "    popq %r12\n"
        "    popq %rbx\n"
        "    popq %rbp\n"
        "    ret\n"
        ".size sf__ctx_jump, .-sf__ctx_jump\n"
        "\n"
        ".p2align 4\n"
        ".globl sf__ctx_trampoline\n"
        ".hidden sf__ctx_trampoline\n"
        ".type sf__ctx_trampoline, @function\n"
        "sf__ctx_trampoline:\n"
        "    .cfi_startproc\n"
        "    .cfi_undefined rip\n"
        "    movq %r12, %rdi\n"
        "    callq *%rbx\n"
        "    ud2\n"
        "    .cfi_endproc\n"
        ".size sf__ctx_trampoline, .-sf__ctx_trampoline\n"
        SWITCH_ALIASES
        ".popsection\n");

struct frame {
    uint32_t mxcsr;
    uint16_t fpucw;
    uint16_t unused;
    uint64_t r15, r14, r13, r12, rbx, rbp;
    uint64_t ret;
};
_Static_assert(sizeof(struct frame) == 64, "7 pushes, 8 bytes of FP control, 8 mod 16 at entry");

static void fill_frame(struct frame *f, struct sf__ctx *c, void (*start)(struct sf__ctx *))
{
    memset(f, 0, sizeof *f);
    __asm__ volatile("stmxcsr %0" : "=m"(f->mxcsr));
    __asm__ volatile("fnstcw %0" : "=m"(f->fpucw));
    f->rbx = (uint64_t)(uintptr_t)start;
    f->r12 = (uint64_t)(uintptr_t)c;
    f->ret = (uint64_t)(uintptr_t)sf__ctx_trampoline;
}

#elif defined(__aarch64__)
/* One 176-byte frame (a multiple of 16: sp must stay 16-aligned whenever it
 * is used for a memory access), stored and loaded in pairs. */
__asm__(".pushsection .text\n"
        ".p2align 4\n"
        ".globl sf__ctx_jump\n"
        ".hidden sf__ctx_jump\n"
        ".type sf__ctx_jump, %function\n"
        "sf__ctx_jump:\n"
        "    sub sp, sp, #176\n"
        "    stp x19, x20, [sp, #0]\n"
        "    stp x21, x22, [sp, #16]\n"
        "    stp x23, x24, [sp, #32]\n"
        "    stp x25, x26, [sp, #48]\n"
        "    stp x27, x28, [sp, #64]\n"
        "    stp x29, x30, [sp, #80]\n"
        "    stp d8, d9, [sp, #96]\n"
        "    stp d10, d11, [sp, #112]\n"
        "    stp d12, d13, [sp, #128]\n"
        "    stp d14, d15, [sp, #144]\n"
        "    mrs x9, fpcr\n"
        "    str x9, [sp, #160]\n"
        "    mov x10, sp\n"
        "    str x10, [x0]\n"
        "    ldr x10, [x1]\n"
        "    mov sp, x10\n"
        "    ldp x19, x20, [sp, #0]\n"
        "    ldp x21, x22, [sp, #16]\n"
        "    ldp x23, x24, [sp, #32]\n"
        "    ldp x25, x26, [sp, #48]\n"
        "    ldp x27, x28, [sp, #64]\n"
        "    ldp x29, x30, [sp, #80]\n"
        "    ldp d8, d9, [sp, #96]\n"
        "    ldp d10, d11, [sp, #112]\n"
        "    ldp d12, d13, [sp, #128]\n"
        "    ldp d14, d15, [sp, #144]\n"
        "    ldr x10, [sp, #160]\n"
        "    cmp x9, x10\n" /* x9: the FPCR in force now */
        "    b.eq 1f\n"
        "    msr fpcr, x10\n"
        "1:  add sp, sp, #176\n"
        "    ret\n"
        ".size sf__ctx_jump, .-sf__ctx_jump\n"
        "\n"
        ".p2align 4\n"
        ".globl sf__ctx_trampoline\n"
        ".hidden sf__ctx_trampoline\n"
        ".type sf__ctx_trampoline, %function\n"
        "sf__ctx_trampoline:\n"
        "    .cfi_startproc\n"
        "    .cfi_undefined x30\n"
        "    mov x0, x20\n"
        "    blr x19\n"
        "    brk #0\n"
        "    .cfi_endproc\n"
        ".size sf__ctx_trampoline, .-sf__ctx_trampoline\n"
        SWITCH_ALIASES
        ".popsection\n");

struct frame {
    uint64_t x19_x28[10];
    uint64_t x29, x30;
    uint64_t d8_d15[8];
    uint64_t fpcr, unused;
};
_Static_assert(sizeof(struct frame) == 176, "the frame the assembly pushes");

static void fill_frame(struct frame *f, struct sf__ctx *c, void (*start)(struct sf__ctx *))
{
    memset(f, 0, sizeof *f);
    uint64_t fpcr;
    __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
    f->fpcr = fpcr;
    f->x19_x28[0] = (uint64_t)(uintptr_t)start;
    f->x19_x28[1] = (uint64_t)(uintptr_t)c;
    f->x30 = (uint64_t)(uintptr_t)sf__ctx_trampoline;
}
#endif
#endif /* !SF__FIBER_UCONTEXT */

/* ---- The sanitizers' halves of a switch ---- */

#if !BARE
/* Before the jump, on `from`'s stack. (A bare build's switch is the jump
 * alone, SWITCH_ALIASES: nothing calls this there.) */
static inline void leave(struct sf__ctx *from, struct sf__ctx *to, bool final)
{
#if ASAN
    to->asan_from = from;
    __sanitizer_start_switch_fiber(final ? NULL : &from->asan_fake_stack,
                                   (const void *)to->stack_lo, to->stack_size);
#endif
#if TSAN
    void *gone = final && !from->thread_own ? from->tsan_fiber : NULL;
    __tsan_switch_to_fiber(to->tsan_fiber, 0);
    if (gone != NULL) {
        /* No longer the running fiber: it may go. */
        from->tsan_fiber = NULL;
        __tsan_destroy_fiber(gone);
    }
#endif
    (void)from, (void)to, (void)final;
}
#endif

/* After the jump, on `self`'s stack: `self` has just been switched to.
 * fake_stack: what leave saved when self was left; NULL at its start. */
static inline void arrive(struct sf__ctx *self, void *fake_stack)
{
#if ASAN
    const void *bottom = NULL;
    size_t size = 0;
    __sanitizer_finish_switch_fiber(fake_stack, &bottom, &size);
    struct sf__ctx *prev = self->asan_from;
    if (prev != NULL && prev->stack_size == 0) {
        prev->stack_lo = (uintptr_t)bottom;
        prev->stack_size = size;
    }
#endif
    (void)self, (void)fake_stack;
}

/* The first code of a made context, on its own stack. */
static _Noreturn void ctx_begin(struct sf__ctx *c)
{
    arrive(c, NULL);
    c->fn(c->arg);
    abort(); /* fn returned: there is nothing to return to */
}

/* ---- The fallback ---- */

#if SF__FIBER_UCONTEXT
/* makecontext passes int arguments: the context's address in two halves. */
static void uc_entry(unsigned lo, unsigned hi)
{
    uintptr_t p = (uintptr_t)(((uint64_t)hi << 32) | lo);
    ctx_begin((struct sf__ctx *)p);
}

static void jump(struct sf__ctx *from, struct sf__ctx *to)
{
    if (swapcontext(&from->uc, &to->uc) != 0)
        abort(); /* only for a bad context */
}
#else
#define jump sf__ctx_jump
#endif

/* ---- Contexts ---- */

void sf__ctx_init_thread(struct sf__ctx *c, uintptr_t stack_lo, size_t stack_size)
{
    memset(c, 0, sizeof *c);
    c->stack_lo = stack_lo;
    c->stack_size = stack_lo != 0 ? stack_size : 0;
    c->thread_own = true;
#if TSAN
    c->tsan_fiber = __tsan_get_current_fiber();
#endif
}

void sf__ctx_make(struct sf__ctx *c, struct sf__stack *s, void (*fn)(void *arg), void *arg)
{
    /* Not memset whole: under the fallback that would be a kilobyte. */
    c->sp = NULL;
    c->stack_lo = s->lo;
    c->stack_size = s->size;
    c->fn = fn;
    c->arg = arg;
    c->tsan_fiber = NULL;
    c->asan_fake_stack = NULL;
    c->asan_from = NULL;
    c->thread_own = false;
#if ASAN
    ASAN_UNPOISON_MEMORY_REGION((void *)s->lo, s->size);
#endif
#if TSAN
    c->tsan_fiber = __tsan_create_fiber(0);
#endif
#if SF__FIBER_UCONTEXT
    if (getcontext(&c->uc) != 0)
        abort(); /* cannot fail on Linux */
    c->uc.uc_stack.ss_sp = (void *)s->lo;
    c->uc.uc_stack.ss_size = s->size;
    c->uc.uc_link = NULL; /* fn never returns */
    uint64_t p = (uint64_t)(uintptr_t)c;
    makecontext(&c->uc, (void (*)(void))uc_entry, 2, (unsigned)p, (unsigned)(p >> 32));
#else
    /* Top-down: 16 zero bytes, then the frame (top comment). The top is
     * page aligned, so the frame is 16-aligned. */
    uintptr_t top = s->lo + s->size;
    memset((void *)(top - 16), 0, 16);
    struct frame *f = (struct frame *)(top - 16 - sizeof(struct frame));
    fill_frame(f, c, ctx_begin);
    c->sp = f;
#endif
}

#if !BARE
void sf__ctx_switch(struct sf__ctx *from, struct sf__ctx *to)
{
    leave(from, to, false);
    jump(from, to);
    arrive(from, from->asan_fake_stack);
}

void sf__ctx_switch_final(struct sf__ctx *from, struct sf__ctx *to)
{
    leave(from, to, true);
#if SF__FIBER_UCONTEXT
    setcontext(&to->uc); /* returns only for a bad context */
#else
    jump(from, to);
#endif
    abort(); /* `from` was resumed: the caller broke the contract */
}
#endif

void sf__ctx_destroy(struct sf__ctx *c)
{
#if TSAN
    if (c->tsan_fiber != NULL && !c->thread_own)
        __tsan_destroy_fiber(c->tsan_fiber);
#endif
    c->tsan_fiber = NULL;
}
