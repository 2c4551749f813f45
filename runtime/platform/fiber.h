/*
 * fiber.h - stacks and the switch between execution contexts of one
 * thread. The building block of waits that park instead of stacking: a get
 * that must wait will suspend its frame on its own stack and run other work
 * on another stack of the same thread. Nothing here knows about futures,
 * queues or the runtime's threads.
 *
 * A context (struct sf__ctx) is a stack plus the registers a function call
 * must keep. A thread describes its own stack as a context once
 * (sf__ctx_init_thread); a made context (sf__ctx_make) calls fn(arg) on a
 * stack of ours (sf__stack_alloc) the first time something switches to it.
 * sf__ctx_switch(from, to) is a function call that returns when something
 * switches back to `from`. Contexts are pinned to the thread that made them:
 * a context is only ever switched to on that thread, so thread-local
 * storage, errno and pthread_self() are the thread's in every context, and
 * none of the operations below needs any synchronisation. Switching
 * between threads is not supported (ThreadSanitizer's fibers and
 * AddressSanitizer's fake stacks are per thread, and TLS addresses a
 * compiler cached in a frame would go stale).
 *
 * How a switch is made (x86-64 and aarch64 in assembly, anything else with
 * ucontext), what is saved and why, the stack of a made context and the
 * sanitizer protocol are in fiber.c's top comment.
 */
#ifndef SF_FIBER_H
#define SF_FIBER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ucontext on architectures without a hand-written switch, and everywhere
 * with ./configure --enable-ucontext-fibers (which defines
 * SF_FIBER_UCONTEXT), so that the fallback is built and tested on x86-64. */
#if defined(SF_FIBER_UCONTEXT) || !(defined(__x86_64__) || defined(__aarch64__))
#define SF__FIBER_UCONTEXT 1
#include <ucontext.h>
#else
#define SF__FIBER_UCONTEXT 0
#endif

/* Which switch this build has, for tests and reports: "x86-64",
 * "aarch64" or "ucontext". */
extern const char sf__fiber_impl[];

/*
 * A stack of ours: [lo, lo + size) is usable, the page below lo is a guard
 * (PROT_NONE), so running off the bottom faults at once instead of
 * overwriting whatever is mapped below. Stacks grow down on every
 * architecture libsf runs on. The pages are reserved, not committed
 * (MAP_NORESERVE): a stack costs the memory its deepest frame touched.
 */
struct sf__stack {
    uintptr_t lo;      /* the usable part's lowest address (page aligned) */
    size_t size;       /* its size, a multiple of the page size */
    void *map;         /* the whole mapping, guard page first; NULL: no stack */
    size_t map_size;
    unsigned vg_id;    /* Valgrind's id for the registered stack (0 outside it) */
};

/* Maps a stack of `size` bytes (rounded up to whole pages) with its guard
 * page. 0, or -1 with errno: ENOMEM (no memory or address space, or a size
 * that cannot be mapped), EINVAL (size 0). */
int sf__stack_alloc(struct sf__stack *s, size_t size);

/* Unmaps s (no context may still run on it or be resumed on it). Keeps
 * errno. A stack that sf__stack_alloc failed to map may be freed too. */
void sf__stack_free(struct sf__stack *s);

/*
 * A context. `sp` is what the assembly switch saves and loads and must stay
 * the first member; the rest is what the sanitizers need, present in every
 * build so that the layout does not depend on the compiler's flags. Only
 * fiber.c reads or writes the fields. A context is never copied or moved
 * (ucontext_t points into itself).
 */
struct sf__ctx {
    void *sp;                  /* the saved stack pointer of a suspended context */
    uintptr_t stack_lo;        /* the context's stack, for AddressSanitizer; */
    size_t stack_size;         /*   0 and 0 while unknown */
    void (*fn)(void *arg);     /* a made context's entry, until it starts */
    void *arg;
    void *tsan_fiber;          /* ThreadSanitizer's fiber; NULL in other builds */
    void *asan_fake_stack;     /* AddressSanitizer's fake stack while suspended */
    struct sf__ctx *asan_from; /* the context that switched to this one last */
    bool thread_own;           /* the thread's own context (sf__ctx_init_thread) */
#if SF__FIBER_UCONTEXT
    ucontext_t uc;             /* the fallback's saved registers and stack */
#endif
};

/* Makes c the calling thread's own context (called on the thread's own
 * stack, not in a made context): the stack it runs on now,
 * [stack_lo, stack_lo + stack_size), which AddressSanitizer needs when it
 * is switched back to (0 and 0 when unknown: the first switch away learns
 * them from AddressSanitizer itself). Nothing is saved until c is switched
 * away from. */
void sf__ctx_init_thread(struct sf__ctx *c, uintptr_t stack_lo, size_t stack_size);

/*
 * Prepares c so that the first switch to it calls fn(arg) on s, from the top
 * of s, with the floating-point control state (rounding mode, exception
 * masks) of the calling thread now. fn must never return: it ends by
 * switching away for good (sf__ctx_switch_final); a return aborts the
 * process. c is written whole: it must be new, or destroyed
 * (sf__ctx_destroy), or left for good with sf__ctx_switch_final - then s
 * may be the stack it ran on, reused from its top.
 */
void sf__ctx_make(struct sf__ctx *c, struct sf__stack *s, void (*fn)(void *arg), void *arg);

/*
 * Saves the caller's callee-saved registers and floating-point control
 * state in `from` (which must be the context running now) and resumes `to`
 * (a made context not started yet, or one suspended in a switch), on this
 * thread. Returns when something switches back to `from`, with every
 * callee-saved register as it was. No system call with the assembly (one,
 * for the signal mask, with ucontext).
 */
void sf__ctx_switch(struct sf__ctx *from, struct sf__ctx *to);

/*
 * The same for a made context `from` (never a thread's own) that will never
 * be resumed as it is: its frames are abandoned, and it may be made again
 * at once (sf__ctx_make(from, its stack, ...)) by whatever runs next, or
 * destroyed, or its stack freed. Never returns. The sanitizers are told:
 * the frames' AddressSanitizer fake stack is freed, and `from`'s
 * ThreadSanitizer fiber is destroyed (it still holds the abandoned frames
 * on its shadow call stack, which would grow with every reuse until it
 * overflowed; the next sf__ctx_make creates a fresh one - under
 * ThreadSanitizer a make and a final switch cost an mmap and a munmap,
 * some 0.3 ms).
 */
_Noreturn void sf__ctx_switch_final(struct sf__ctx *from, struct sf__ctx *to);

/* Forgets c: ThreadSanitizer's fiber of a made context is destroyed (a
 * thread's own context keeps the thread's). c must not be running. Not
 * needed after sf__ctx_switch_final. A context destroyed while suspended
 * abandons its frames (under AddressSanitizer with use-after-return
 * detection, their fake stack is not freed). */
void sf__ctx_destroy(struct sf__ctx *c);

#endif /* SF_FIBER_H */
