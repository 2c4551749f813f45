/*
 * deque.h - one stack's deque of light tasks (sf.h, Light tasks), as a
 * data structure on its own: the owner pushes and pops at the head with
 * plain stores (inline in sf.h), thieves claim the oldest shared slot by
 * one CAS (spmc). It knows nothing of futures or the runtime.
 *
 * Algorithm: Lace's split deque (T. van Dijk and J. van de Pol, "Lace:
 * non-blocking split deque for work-stealing", Euro-Par 2014 workshops),
 * with tasks by value in an array of slots [base, end):
 *
 *   base ............ tail ........ split ........ head ........ end
 *        stolen or       shared:         private:        free
 *        synced          thieves CAS     the owner alone
 *
 * The owner's part. head is the next free slot; sf_spawn writes fn and arg
 * there and moves head up, sf_sync moves it down and calls the task when
 * head - 1 is at or above split (private). Neither reads or writes anything
 * a thief writes but `limit` (below): no atomic read-modify-write, no
 * fence. pub.split is the owner's copy of split; the debug build and the
 * trace keep it at the top of the address space, so every sync goes to
 * the library (sf__deque_set_slow), and o_split keeps the real one.
 *
 * The shared part. ts packs two slot indices, tail (high half) and split
 * (low half), in one word: thieves claim slot tail by a CAS of (t, s) to
 * (t + 1, s) with t < s; the owner moves split up (sharing: a CAS that keeps
 * tail) and down (a sync below split: a CAS to (t, i), or a plain store
 * once every shared slot was claimed). Invariants:
 *   (I1) tail <= split, and ts's split == o_split: only the owner moves split.
 *   (I2) every slot of [tail, split) holds a task not yet claimed by anyone
 *        but through ts: the owner takes one only by moving split below it.
 *   (I3) a slot below tail was claimed by a thief unless the owner synced
 *        it: tail passes only slots a thief's CAS claimed, and the owner's
 *        sync of slot i with tail > i finds it stolen.
 *   (I4) a slot's fn and arg do not change from the publication that
 *        shares it until the owner syncs it: the owner writes only slots
 *        at or above head, and head stays above a slot until its sync.
 * A thief that reads stale (t, s) fails its CAS; one whose CAS succeeds on
 * a word that went away and came back (ABA) claims the task slot t holds
 * now, which (I2) says is shared and unclaimed: the claim is still exactly
 * one. It reads the slot only after its CAS.
 *
 * Asking for work. A thief that finds no shared slot sets `ask` and lowers
 * pub.limit to base: the owner's next sf_spawn then fails its `head < limit` test and
 * shares (sf__deque_share_range / _commit): half of its private slots,
 * oldest first - the biggest tasks of a fork-join - and limit back to end.
 * An ask that comes while the owner shares may be lost (the CAS that resets
 * limit swallows it): asks are hints, the owner syncs every task it does
 * not share, and the thief asks again. What must never happen is an ask
 * that cannot be repeated: the owner resets limit before it lowers the
 * flag, and a thief lowers limit whatever the flag says (deque.c). A slow
 * deque keeps limit at base, so its every spawn is the library's, which
 * reads `ask`.
 *
 * Overflow. A deque holds SF__DEQUE_SLOTS tasks, reserved as address space
 * and touched only as deep as it is used. The slot at end - 1 is never
 * filled by the inline spawn, which tests head against limit <= end - 1:
 * the library decides what a spawn past the room does (light.c).
 */
#ifndef SF_DEQUE_H
#define SF_DEQUE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "sf.h"

#define SF__DEQUE_SLOTS (UINT32_C(1) << 18) /* 8 MiB of address space a deque */

struct sf__light_root; /* light.h: the run a shared slot belongs to */

/* What a slot's sf_opaque_ words hold. Both by __atomic builtins. */
#define SF__SLOT_ROOT 0 /* the run of the task, written by the owner as it shares it */
#define SF__SLOT_FUT 1  /* the claimer's future, written after its claim */

struct sf__deque {
    sf_worker pub;                /* sf.h: head, split, limit */
    /* Owner only. */
    struct sf_light_slot *base;   /* slot 0 */
    struct sf_light_slot *end;    /* past the last slot */
    struct sf_light_slot *o_split;/* the real split (pub.split may be held high) */
    bool slow;                    /* debug or trace: pub.split and limit held */
    /* Thieves and owner: tail << 32 | split, as slot indices. */
    _Alignas(64) _Atomic uint64_t ts;
    _Atomic bool ask;             /* a thief asks for a share (with limit) */
};

static inline uint32_t sf__deque_index(const struct sf__deque *d, const struct sf_light_slot *t)
{
    return (uint32_t)(t - d->base);
}

/* Maps d's slots and empties it; slow: every spawn and sync goes to the
 * library. 0, or -1 with errno ENOMEM. */
int sf__deque_init(struct sf__deque *d, bool slow);
void sf__deque_destroy(struct sf__deque *d);

/* Owner: is a thief asking for a share? Relaxed: a hint (Asking for work). */
static inline bool sf__deque_asked(const struct sf__deque *d)
{
    return atomic_load_explicit(&d->ask, memory_order_relaxed);
}

/* Owner: the private slots a share would publish, [*lo, *hi): half of
 * them (all of them when `all`), oldest first, at least one; none (false)
 * if there is no private slot. The caller writes each slot's root, then
 * commits. */
bool sf__deque_share_range(const struct sf__deque *d, bool all, struct sf_light_slot **lo,
                           struct sf_light_slot **hi);
/* Owner: makes [o_split, hi) shared and answers the ask (limit back). */
void sf__deque_share_commit(struct sf__deque *d, struct sf_light_slot *hi);
/* Owner: answers an ask without sharing (nothing private). */
void sf__deque_unask(struct sf__deque *d);

/* Owner: takes back shared slot t = head - 1 (below o_split) for a sync:
 * true if it is the owner's now (split moved below it), false if a thief
 * claimed it (wait for the thief's future, then sf__deque_stolen_synced). */
bool sf__deque_take_back(struct sf__deque *d, struct sf_light_slot *t);
/* Owner: stolen slot t is synced; every shared slot was claimed (I3), so
 * the shared part restarts empty at t. */
void sf__deque_stolen_synced(struct sf__deque *d, struct sf_light_slot *t);

/* Any thread: the slot a claim would take now and the word to claim it
 * with, or NULL (nothing shared). Reading the slot's root before the claim
 * is a guess (it may change); after it, the claim's. */
struct sf_light_slot *sf__deque_peek(struct sf__deque *d, uint64_t *ts);
/* Any thread: claims the slot peek named with that word: true if it is the
 * caller's now (read its fn and arg, then publish its future in it). */
bool sf__deque_claim(struct sf__deque *d, uint64_t ts);
/* Any thread: asks d's owner to share (limit lowered). */
void sf__deque_ask(struct sf__deque *d);

#endif /* SF_DEQUE_H */
