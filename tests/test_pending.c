/*
 * test_pending.c - the pending queue alone (runtime/queue/pending.h), as a data
 * structure: no runtime is started. Linked against libsfcore.la, the
 * library's internal objects, so the test calls the sf__pending_ API
 * directly. Owner operations run on the thread that initialised the queue;
 * foreign ones (steal, foreign claim) on threads of their own.
 */
#include "testutil.h"

#include "queue/pending.h"

#include <stdlib.h>
#include <string.h>

#define ID 3
#define NF 1200

static _Alignas(64) sf_future fs[NF]; /* zeroed: every future FREE */
static struct sf__pending q;

static void *fn(void *arg) { return arg; }

static uint64_t tag_of(uint64_t seq) { return ((uint64_t)ID << SF__SEQ_BITS) | seq; }
static uint64_t st(const sf_future *f) { return atomic_load(&((sf_future *)f)->state); }
static uint64_t top(void) { return atomic_load(&q.top); }
static uint64_t bottom(void) { return atomic_load(&q.bottom); }

static void setup(void)
{
    memset(fs, 0, sizeof fs);
    ck_assert_int_eq(sf__pending_init(&q, ID, 0), 0);
}

static void teardown(void) { sf__pending_destroy(&q); }

static void push(sf_future *f)
{
    f->u.fn = fn;
    f->val = f;
    ck_assert(sf__pending_push(&q, f));
}

/* The owner claims f as sf_get does: to RUNNING, then trims. */
static void own_run(sf_future *f)
{
    uint64_t s = st(f);
    ck_assert(sf__pending_holds(&q, s));
    ck_assert(sf__pending_claim_own(&q, f, &s, sf__with_status(s, SF__RUNNING)));
    sf__pending_trim(&q, f);
}

START_TEST(push_tags_and_pop_lifo)
{
    for (int i = 0; i < 3; i++) {
        push(&fs[i]);
        ck_assert_uint_eq(st(&fs[i]), (tag_of((uint64_t)i) << SF__TAG_SHIFT) | SF__PENDING);
        ck_assert(sf__pending_holds(&q, st(&fs[i])));
        ck_assert_int_eq(sf__tag_thread(st(&fs[i])), ID);
        ck_assert_uint_eq(sf__tag_seq(st(&fs[i])), (uint64_t)i);
    }
    ck_assert_uint_eq(top(), 0);
    ck_assert_uint_eq(bottom(), 3);
    for (int i = 2; i >= 0; i--) {
        uint64_t claimed = 0;
        ck_assert_ptr_eq(sf__pending_pop(&q, 0, &claimed), &fs[i]);
        ck_assert_uint_eq(claimed, (tag_of((uint64_t)i) << SF__TAG_SHIFT) | SF__RUNNING);
        ck_assert_uint_eq(st(&fs[i]), claimed);
        ck_assert(!sf__pending_holds(&q, st(&fs[i])));
        ck_assert_uint_eq(bottom(), (uint64_t)i);
    }
    uint64_t claimed = 0;
    ck_assert_ptr_null(sf__pending_pop(&q, 0, &claimed));
    /* A future of another queue (another id in its tag) is not held here. */
    ck_assert(!sf__pending_holds(&q, (((uint64_t)(ID + 1) << SF__SEQ_BITS) << SF__TAG_SHIFT) |
                                         SF__PENDING));
}
END_TEST

/* Past SF__RING_MIN the ring doubles; every task stays in order. */
START_TEST(ring_grows)
{
    for (int i = 0; i < NF; i++)
        push(&fs[i]);
    struct sf__ring *r = atomic_load(&q.ring);
    ck_assert_uint_ge(r->mask + 1, NF);
    ck_assert_uint_eq((r->mask + 1) & r->mask, 0); /* a power of two */
    /* The old rings are kept as spares, one per size (scanners may read them). */
    for (uint64_t size = SF__RING_MIN; size < r->mask + 1; size *= 2)
        ck_assert_ptr_nonnull(q.spare[__builtin_ctzll(size)]);
    ck_assert_ptr_null(q.spare[__builtin_ctzll(r->mask + 1)]);
    ck_assert_uint_eq(bottom() - top(), NF);
    for (int i = NF - 1; i >= 0; i--) {
        uint64_t claimed;
        ck_assert_ptr_eq(sf__pending_pop(&q, 0, &claimed), &fs[i]);
        ck_assert_uint_eq(sf__tag_seq(claimed), (uint64_t)i);
    }
    ck_assert_uint_eq(bottom(), top());
}
END_TEST

/* After a burst the ring shrinks back, its big ring kept as a spare that
 * the next burst reuses: a queue's rings stay within twice its largest. */
#define BURST (SF__RING_MIN * 256)
static struct sf__ring *first_big;
START_TEST(ring_shrinks_after_a_burst_and_reuses_its_spare)
{
    sf_future *b = calloc(BURST, sizeof *b); /* zeroed: FREE */
    ck_assert_ptr_nonnull(b);
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < BURST; i++) {
            b[i].u.fn = fn;
            ck_assert(sf__pending_push(&q, &b[i]));
        }
        struct sf__ring *big = atomic_load(&q.ring);
        ck_assert_uint_eq(big->mask + 1, BURST);
        if (round > 0) /* the spare of the first burst, not a new ring */
            ck_assert_ptr_eq(big, first_big);
        first_big = big;
        for (int i = 0; i < BURST; i++) { /* oldest first, as a program would */
            uint64_t s = st(&b[i]);
            ck_assert(sf__pending_claim_own(&q, &b[i], &s, sf__with_status(s, SF__RUNNING)));
            sf__pending_trim(&q, &b[i]);
            atomic_store(&b[i].state, SF__FREE);
        }
        sf__pending_trim_top(&q, UINT64_MAX);
        struct sf__ring *r = atomic_load(&q.ring);
        ck_assert_uint_eq(bottom(), top());
        ck_assert_uint_lt(r->mask + 1, SF__RING_SHRINK_MIN);
        ck_assert_ptr_eq(q.spare[__builtin_ctzll(BURST)], big);
    }
    free(b);
}
END_TEST

/* Growth trims first: a full ring of finished tasks does not double. */
START_TEST(grow_reuses_a_trimmed_ring)
{
    for (int i = 0; i < SF__RING_MIN; i++) {
        push(&fs[i]);
        uint64_t s = st(&fs[i]);
        /* finished elsewhere: the slot stays until a trim */
        ck_assert(sf__claim_cas(&fs[i], &s, sf__with_status(s, SF__RUNNING)));
    }
    ck_assert_uint_eq(bottom(), SF__RING_MIN);
    push(&fs[SF__RING_MIN]);
    ck_assert_uint_eq(atomic_load(&q.ring)->mask + 1, SF__RING_MIN);
    ck_assert_uint_eq(top(), SF__RING_MIN);
    ck_assert_uint_eq(bottom(), SF__RING_MIN + 1);
}
END_TEST

/* A future claimed elsewhere, completed, freed and pushed here again (a
 * pipeline's producer, whose futures come back through the global stash)
 * leaves its old slot naming a future that is pending here under a later
 * push: a stale slot, which the top passes (pending.h, Stale slots). */
START_TEST(stale_slots_of_recycled_futures_are_trimmed)
{
    /* K futures pushed, then each claimed elsewhere, completed, freed and
     * pushed again: slots [0, K) are stale, [K, 2K) live. */
    enum { K = SF__RING_MIN / 2 - 8 };
    for (int round = 0; round < 2; round++)
        for (int i = 0; i < K; i++) {
            if (round == 1) {
                uint64_t s = st(&fs[i]);
                ck_assert(sf__claim_cas(&fs[i], &s, sf__with_status(s, SF__RUNNING)));
                atomic_store(&fs[i].state, SF__FREE);
            }
            push(&fs[i]);
        }
    ck_assert_uint_eq(bottom(), 2 * K);
    /* Each stale slot names a future that is PENDING here, under its later
     * push: the top passes them all and stops at the first live slot. */
    ck_assert(sf__pending_holds(&q, st(&fs[0])));
    sf__pending_trim_top(&q, UINT64_MAX);
    ck_assert_uint_eq(top(), K);
    /* Recycled over and over, with only growth trimming (a producer that
     * never gets): the ring never grows. */
    for (long k = 0; k < 100000; k++) {
        sf_future *f = &fs[k % K];
        uint64_t s = st(f);
        ck_assert(sf__claim_cas(f, &s, sf__with_status(s, SF__RUNNING)));
        atomic_store(&f->state, SF__FREE);
        push(f);
    }
    ck_assert_uint_eq(atomic_load(&q.ring)->mask + 1, SF__RING_MIN);
    /* Live slots still stop the top: each future is pending once. */
    sf__pending_trim_top(&q, UINT64_MAX);
    ck_assert_uint_eq(bottom() - top(), K);
    for (int i = 0; i < K; i++)
        ck_assert(sf__pending_holds(&q, st(&fs[i])));
}
END_TEST

START_TEST(trim_drops_the_newest_slot)
{
    push(&fs[0]);
    push(&fs[1]);
    own_run(&fs[1]);
    ck_assert_uint_eq(bottom(), 1);
    own_run(&fs[0]);
    ck_assert_uint_eq(bottom(), 0);
    ck_assert_uint_eq(top(), 0);
}
END_TEST

/* Tasks got oldest first: the top moves on, the bottom stays on pending work. */
START_TEST(trim_after_the_oldest)
{
    for (int i = 0; i < 4; i++)
        push(&fs[i]);
    own_run(&fs[0]);
    ck_assert_uint_eq(top(), 1);
    ck_assert_uint_eq(bottom(), 4);
    own_run(&fs[1]);
    ck_assert_uint_eq(top(), 2);
    /* The newest finished elsewhere, then one below it got: the bottom drops
     * every finished slot at once. */
    uint64_t s = st(&fs[3]);
    ck_assert(sf__claim_cas(&fs[3], &s, sf__with_status(s, SF__RUNNING)));
    ck_assert_uint_eq(bottom(), 4);
    own_run(&fs[2]);
    ck_assert_uint_eq(bottom(), top());
}
END_TEST

START_TEST(trim_top_skips_finished_slots)
{
    for (int i = 0; i < 5; i++)
        push(&fs[i]);
    for (int i = 0; i < 3; i++) { /* claimed by others */
        uint64_t s = st(&fs[i]);
        ck_assert(sf__claim_cas(&fs[i], &s, sf__with_status(s, SF__RUNNING)));
    }
    sf__pending_trim_top(&q, 2);
    ck_assert_uint_eq(top(), 2);
    sf__pending_trim_top(&q, UINT64_MAX);
    ck_assert_uint_eq(top(), 3); /* stops at the first pending task */
    ck_assert_uint_eq(bottom(), 5);
}
END_TEST

START_TEST(submit_counts_new_tasks)
{
    ck_assert_uint_eq(sf__pending_submit(&q), 0);
    for (int i = 0; i < 3; i++)
        push(&fs[i]);
    ck_assert_uint_eq(atomic_load(&q.sub_seq), tag_of(0));
    ck_assert_uint_eq(sf__pending_submit(&q), 3);
    ck_assert_uint_eq(atomic_load(&q.sub_seq), tag_of(3));
    ck_assert_uint_eq(sf__pending_submit(&q), 0);
    push(&fs[3]);
    ck_assert_uint_eq(sf__pending_submit(&q), 1);
}
END_TEST

/* want's two bits (pending.h): a new queue asks its owner to check its
 * starts until it settles; the thieves' request and the owner's publish
 * leave that bit alone, and a poll answers only the request. */
START_TEST(want_bits)
{
    ck_assert_uint_eq(atomic_load(&q.want), SF__WANT_CHECK);
    ck_assert(!sf__pending_poll(&q)); /* only CHECK: nothing to publish */
    ck_assert_uint_eq(atomic_load(&q.want), SF__WANT_CHECK);
    push(&fs[0]);
    ck_assert(sf__pending_publish(&q));
    ck_assert_uint_eq(atomic_load(&q.want), SF__WANT_CHECK);
    sf__pending_want_settle(&q);
    ck_assert_uint_eq(atomic_load(&q.want), 0);
    sf__pending_want_check(&q);
    atomic_fetch_or(&q.want, SF__WANT_PUBLISH);
    push(&fs[1]);
    ck_assert(sf__pending_poll(&q));
    ck_assert_uint_eq(atomic_load(&q.want), SF__WANT_CHECK);
    sf__pending_want_settle(&q);
    ck_assert_uint_eq(atomic_load(&q.want), 0);
}
END_TEST

START_TEST(publish_and_poll)
{
    ck_assert(!sf__pending_publish(&q)); /* nothing to publish */
    push(&fs[0]);
    push(&fs[1]);
    ck_assert(!sf__pending_poll(&q)); /* nobody asked */
    ck_assert_uint_eq(atomic_load(&q.pub_seq), tag_of(0));
    atomic_store(&q.want, 1);
    ck_assert(sf__pending_poll(&q));
    ck_assert_int_eq(atomic_load(&q.want), 0);
    ck_assert_uint_eq(atomic_load(&q.pub_seq), tag_of(2));
    ck_assert(!sf__pending_publish(&q));
    push(&fs[2]);
    ck_assert(sf__pending_publish(&q));
    /* A public task is claimed by CAS, by the owner too. */
    own_run(&fs[2]);
    ck_assert_uint_eq(sf__status(st(&fs[2])), SF__RUNNING);
}
END_TEST

/* Foreign scans, each from a thread that does not own the queue. */
struct steal_arg {
    unsigned flags;
    sf_future *got;
    uint64_t claimed;
};

static void *steal_thread(void *p)
{
    struct steal_arg *a = p;
    a->got = sf__pending_steal(&q, a->flags, 0, UINT64_MAX, &a->claimed);
    return NULL;
}

static sf_future *steal(unsigned flags, uint64_t *claimed)
{
    struct steal_arg a = {flags, NULL, 0};
    tu_run_on_thread(steal_thread, &a, 0);
    *claimed = a.claimed;
    return a.got;
}

START_TEST(steal_flags)
{
    uint64_t claimed;
    push(&fs[0]);
    push(&fs[1]);
    /* Private tasks: a plain steal fails and asks for them. */
    ck_assert_ptr_null(steal(0, &claimed));
    ck_assert_uint_eq(atomic_load(&q.want) & SF__WANT_PUBLISH, SF__WANT_PUBLISH);
    /* Not submitted: an idle worker's scan takes nothing, even private ones. */
    ck_assert_ptr_null(steal(SF__STEAL_SUBMITTED | SF__STEAL_PRIVATE, &claimed));
    ck_assert_uint_eq(sf__pending_submit(&q), 2);
    /* Submitted but private: SF__STEAL_PRIVATE claims the oldest through the
     * gate. */
    ck_assert_ptr_eq(steal(SF__STEAL_SUBMITTED | SF__STEAL_PRIVATE, &claimed), &fs[0]);
    ck_assert_uint_eq(claimed, (tag_of(0) << SF__TAG_SHIFT) | SF__RUNNING);
    ck_assert_uint_eq(st(&fs[0]), claimed);
    /* Published: a plain steal takes the next one by CAS. */
    ck_assert(sf__pending_poll(&q));
    ck_assert_ptr_eq(steal(0, &claimed), &fs[1]);
    ck_assert_ptr_null(steal(SF__STEAL_PRIVATE, &claimed));
    /* Pushed after the submit: public once published, but not submitted. */
    push(&fs[2]);
    ck_assert(sf__pending_publish(&q));
    ck_assert_ptr_null(steal(SF__STEAL_SUBMITTED, &claimed));
    ck_assert_ptr_eq(steal(0, &claimed), &fs[2]);
}
END_TEST

/* A getter of a private task by its handle asks for public pushes: every
 * later push publishes the whole queue (older private tasks included), and
 * publishing is still not submitting. */
START_TEST(ask_public_makes_pushes_public)
{
    uint64_t claimed;
    push(&fs[0]);
    ck_assert_uint_eq(atomic_load(&q.pub_seq), tag_of(0)); /* private */
    sf__pending_ask_public(&q);
    sf__pending_ask_public(&q); /* asking twice is asking once */
    ck_assert_int_eq(atomic_load(&q.push_public), 1);
    ck_assert_uint_eq(atomic_load(&q.pub_seq), tag_of(0)); /* until the next push */
    push(&fs[1]);
    ck_assert_uint_eq(atomic_load(&q.pub_seq), tag_of(2));
    push(&fs[2]);
    ck_assert_uint_eq(atomic_load(&q.pub_seq), tag_of(3));
    /* Public but not submitted: an idle worker's scan takes none. */
    ck_assert_ptr_null(steal(SF__STEAL_SUBMITTED, &claimed));
    /* Anyone claims them by CAS, no gate needed; the owner too. */
    ck_assert_ptr_eq(steal(0, &claimed), &fs[0]);
    own_run(&fs[2]);
    ck_assert_uint_eq(sf__status(st(&fs[2])), SF__RUNNING);
    /* A thread that takes the queue over starts with private pushes. */
    sf__pending_adopt(&q);
    ck_assert_int_eq(atomic_load(&q.push_public), 0);
    push(&fs[3]);
    ck_assert_uint_eq(atomic_load(&q.pub_seq), tag_of(3));
}
END_TEST

/* Local futures (pending.h): a marked slot is skipped by every other
 * thread, promoted at publish when the queue has a free list, and cleared
 * when its owner claims it between pending slots. */
static void push_local(sf_future *f)
{
    f->u.fn = fn;
    f->val = f;
    /* Caller storage may hold anything: sf_task_do's fill() resets the
     * state, as here, for the push's transition check. */
    atomic_store(&f->state, SF__FREE);
    ck_assert(sf__pending_push_local(&q, f));
}

static sf_future *slot_at(uint64_t i)
{
    struct sf__ring *r = atomic_load(&q.ring);
    return atomic_load(&r->slot[i & r->mask]);
}

START_TEST(local_slots_are_skipped_then_promoted)
{
    uint64_t claimed;
    /* Stand-ins for the stack: any memory that is not a slab future. */
    static _Alignas(64) sf_future local[2];
    memset(local, 0, sizeof local);
    push_local(&local[0]);
    push(&fs[0]);
    push_local(&local[1]);
    ck_assert_ptr_eq(slot_at(0), sf__slot_mark(&local[0]));
    ck_assert_ptr_eq(slot_at(1), &fs[0]);
    ck_assert_uint_eq(sf__pending_submit(&q), 3);
    /* Private or not, a thief never claims through a marked slot: even
     * through the gate it takes the slab future only, and asks. */
    ck_assert_ptr_eq(steal(SF__STEAL_SUBMITTED | SF__STEAL_PRIVATE, &claimed), &fs[0]);
    ck_assert_ptr_null(steal(SF__STEAL_SUBMITTED | SF__STEAL_PRIVATE, &claimed));
    ck_assert_uint_eq(atomic_load(&q.want) & SF__WANT_PUBLISH, SF__WANT_PUBLISH);
    /* No free list: publishing promotes nothing, and still nothing is
     * claimable through the marks. */
    q.fl = NULL;
    ck_assert(sf__pending_publish(&q));
    ck_assert_ptr_null(steal(SF__STEAL_SUBMITTED | SF__STEAL_PRIVATE, &claimed));
    ck_assert_uint_eq(sf__status(st(&local[0])), SF__PENDING);
    ck_assert_uint_eq(q.pub_idx, 0); /* stopped at the first local one */
    /* A free list of two slab futures: both locals move, keeping their tags. */
    struct sf__freelist fl;
    memset(&fl, 0, sizeof fl);
    SF__OWNER_SET(&fl);
    fs[10].u.next = &fs[11];
    fs[11].u.next = NULL;
    fl.head = &fs[10];
    fl.n = 2;
    q.fl = &fl;
    uint64_t s0 = st(&local[0]), s1 = st(&local[1]);
    ck_assert(sf__pending_publish(&q));
    ck_assert_uint_eq(q.pub_idx, 3);
    ck_assert_uint_eq(fl.n, 0);
    ck_assert_ptr_eq(slot_at(0), &fs[10]);
    ck_assert_ptr_eq(slot_at(2), &fs[11]);
    ck_assert_uint_eq(st(&fs[10]), s0);
    ck_assert_uint_eq(st(&fs[11]), s1);
    ck_assert_ptr_eq(fs[10].val, &local[0]);
    ck_assert_uint_eq(st(&local[0]), sf__with_status(s0, SF__MOVED));
    ck_assert_ptr_eq(local[0].val, &fs[10]);
    ck_assert_ptr_eq(local[1].val, &fs[11]);
    /* Now thieves take them, oldest first, by CAS. */
    ck_assert_ptr_eq(steal(SF__STEAL_SUBMITTED, &claimed), &fs[10]);
    ck_assert_uint_eq(claimed, sf__with_status(s0, SF__RUNNING));
    ck_assert_ptr_eq(steal(SF__STEAL_SUBMITTED, &claimed), &fs[11]);
    /* Nothing more to promote: publish says so. */
    ck_assert(!sf__pending_publish(&q));
}
END_TEST

START_TEST(local_slot_between_pending_ones_is_cleared)
{
    static _Alignas(64) sf_future local[3];
    memset(local, 0, sizeof local);
    push(&fs[0]);
    push_local(&local[0]);
    push(&fs[1]);
    /* The owner claims the local one, which is neither newest nor oldest. */
    uint64_t s = st(&local[0]);
    atomic_store(&local[0].state, sf__with_status(s, SF__RUNNING));
    sf__pending_trim_slot(&q, sf__slot_mark(&local[0]));
    ck_assert_ptr_null(slot_at(1));
    ck_assert_uint_eq(bottom(), 3);
    /* NULL slots are no tasks: the pop skips one, the trims drop them. */
    uint64_t claimed;
    ck_assert_ptr_eq(sf__pending_pop(&q, 0, &claimed), &fs[1]);
    ck_assert_ptr_eq(sf__pending_pop(&q, 0, &claimed), &fs[0]);
    ck_assert_uint_eq(bottom(), 0);
    /* Oldest first: each local slot is dropped from the top. */
    push_local(&local[1]);
    push_local(&local[2]);
    push(&fs[2]);
    s = st(&local[1]);
    atomic_store(&local[1].state, sf__with_status(s, SF__RUNNING));
    sf__pending_trim_slot(&q, sf__slot_mark(&local[1]));
    ck_assert_uint_eq(top(), 1);
    ck_assert_ptr_eq(slot_at(1), sf__slot_mark(&local[2]));
    /* pub_idx follows bottom down, so a promotion after the pops below sees
     * the local slot pushed there since. */
    q.fl = NULL;
    sf__pending_publish(&q);
    ck_assert_uint_eq(q.pub_idx, 1); /* stopped at local[2]: no memory */
    ck_assert_ptr_eq(sf__pending_pop(&q, 0, &claimed), &fs[2]);
    ck_assert_ptr_eq(sf__pending_pop(&q, 0, &claimed), &local[2]);
    ck_assert_uint_eq(bottom(), 1);
    ck_assert_uint_eq(q.pub_idx, 1);
    push(&fs[3]);
    ck_assert_ptr_eq(sf__pending_pop(&q, 0, &claimed), &fs[3]);
    ck_assert_uint_eq(q.pub_idx, 1);
    ck_assert_uint_eq(bottom(), 1);
    push_local(&local[0]); /* reused storage, index 1 again */
    ck_assert_ptr_eq(slot_at(1), sf__slot_mark(&local[0]));
    struct sf__freelist fl;
    memset(&fl, 0, sizeof fl);
    SF__OWNER_SET(&fl);
    fs[20].u.next = NULL;
    fl.head = &fs[20];
    fl.n = 1;
    q.fl = &fl;
    ck_assert(sf__pending_publish(&q));
    ck_assert_ptr_eq(slot_at(1), &fs[20]);
    ck_assert_uint_eq(q.pub_idx, 2);
}
END_TEST

/* The owner claims the local future f as sf_task_get does: plain stores,
 * then sf__pending_trim_local. */
static void own_run_local(sf_future *f)
{
    uint64_t s = st(f);
    ck_assert(sf__pending_holds(&q, s));
    atomic_store(&f->state, sf__with_status(s, SF__RUNNING));
    sf__pending_trim_local(&q, f);
}

/* A node's children got in the order they were made (UTS, a merge of
 * parts): every one but the last leaves the fast path, clears its slot, and
 * the slots it cleared go once nothing pending is above them. */
START_TEST(local_slots_got_oldest_first)
{
    static _Alignas(64) sf_future local[6];
    memset(local, 0, sizeof local);
    push(&fs[0]); /* an ancestor's task, pending at the top */
    for (int i = 0; i < 4; i++)
        push_local(&local[i]); /* slots 1..4 */
    /* Got in the order made: the newest local slot moves into the got
     * one's, with its push counter's bits and its new index, so no hole is
     * left; after two moves the rest are at the bottom, dropped by the fast
     * path. */
    own_run_local(&local[0]);
    ck_assert_ptr_eq(slot_at(1), sf__slot_mark(&local[3]));
    ck_assert_uint_eq(atomic_load(&local[3].local_slot), 1);
    ck_assert_uint_eq(atomic_load(&q.ring)->seq[1], 4);
    ck_assert_uint_eq(bottom(), 4);
    own_run_local(&local[1]);
    ck_assert_ptr_eq(slot_at(2), sf__slot_mark(&local[2]));
    ck_assert_uint_eq(atomic_load(&local[2].local_slot), 2);
    ck_assert_uint_eq(bottom(), 3);
    own_run_local(&local[2]);
    ck_assert_uint_eq(bottom(), 2);
    own_run_local(&local[3]);
    ck_assert_uint_eq(bottom(), 1);
    ck_assert_uint_eq(top(), 0);
    /* A moved slot is still a pending local future for the pop and the
     * publish (promoted in its new place). */
    push_local(&local[4]); /* slot 1 */
    push_local(&local[5]); /* slot 2 */
    own_run_local(&local[4]);
    ck_assert_ptr_eq(slot_at(1), sf__slot_mark(&local[5]));
    ck_assert_uint_eq(bottom(), 2);
    uint64_t claimed;
    ck_assert_ptr_eq(sf__pending_pop(&q, 0, &claimed), &local[5]);
    ck_assert_ptr_eq(sf__pending_pop(&q, 0, &claimed), &fs[0]);
    ck_assert_uint_eq(bottom(), 0);
    /* With a slab future newest, nothing moves: the got slot is cleared,
     * and the next out-of-order get drops the cleared slots below it. */
    push_local(&local[0]); /* slot 0 */
    push_local(&local[1]); /* slot 1 */
    push(&fs[1]);          /* slot 2 */
    own_run_local(&local[1]);
    ck_assert_ptr_null(slot_at(1));
    ck_assert_uint_eq(bottom(), 3);
    own_run(&fs[1]);
    ck_assert_uint_eq(bottom(), 2); /* the fast path drops the newest slot only */
    /* The oldest, a slab future newest: top moves past it and the hole. */
    push(&fs[2]); /* slot 2 */
    own_run_local(&local[0]);
    ck_assert_ptr_null(slot_at(0));
    ck_assert_uint_eq(top(), 2);
    ck_assert_uint_eq(bottom(), 3);
    own_run(&fs[2]);
    ck_assert_uint_eq(bottom(), 2);
    ck_assert(!sf__pending_has_pending(&q));
}
END_TEST

START_TEST(has_pending_and_discard)
{
    ck_assert(!sf__pending_has_pending(&q));
    push(&fs[0]);
    ck_assert(sf__pending_has_pending(&q));
    uint64_t s = st(&fs[0]);
    ck_assert(sf__pending_claim_own(&q, &fs[0], &s, SF__FREE)); /* discard */
    ck_assert_uint_eq(st(&fs[0]), SF__FREE);
    ck_assert(!sf__pending_has_pending(&q));
    /* A slot whose future was discarded is dropped by the next pop. */
    uint64_t claimed;
    ck_assert_ptr_null(sf__pending_pop(&q, 0, &claimed));
    ck_assert_uint_eq(bottom(), 0);
}
END_TEST

/*
 * The owner's private claim against a foreign claimer through the gate,
 * racing on the same future: exactly one of them wins, every round.
 */
#define ROUNDS (TU_SANITIZED ? 2000 : 20000)
static atomic_int round_no, foreign_done, foreign_wins;

static void *foreign_racer(void *arg)
{
    (void)arg;
    for (int r = 1; r <= ROUNDS; r++) {
        while (atomic_load(&round_no) < r)
            ;
        sf_future *f = &fs[r % NF];
        uint64_t s = st(f);
        if (sf__pending_holds(&q, s) &&
            sf__pending_claim_foreign(&q, f, &s, sf__with_status(s, SF__RUNNING)))
            atomic_fetch_add(&foreign_wins, 1);
        atomic_store(&foreign_done, r);
    }
    return NULL;
}

START_TEST(owner_and_foreign_claim_race)
{
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, foreign_racer, NULL), 0);
    int owner_wins = 0;
    for (int r = 1; r <= ROUNDS; r++) {
        sf_future *f = &fs[r % NF];
        atomic_store(&f->state, SF__FREE);
        push(f);
        atomic_store(&round_no, r);
        uint64_t s = st(f);
        if (sf__pending_holds(&q, s) &&
            sf__pending_claim_own(&q, f, &s, sf__with_status(s, SF__RUNNING)))
            owner_wins++;
        while (atomic_load(&foreign_done) < r)
            ;
        ck_assert_uint_eq(sf__status(st(f)), SF__RUNNING);
        int fw = atomic_load(&foreign_wins);
        ck_assert_msg(owner_wins + fw == r, "round %d: owner won %d, foreign %d: a double claim",
                      r, owner_wins, fw);
        sf__pending_trim(&q, f);
        ck_assert_uint_eq(bottom(), top());
    }
    pthread_join(th, NULL);
    int fw = atomic_load(&foreign_wins);
    ck_assert_int_eq(owner_wins + fw, ROUNDS);
}
END_TEST

/*
 * Opening the gate (claim.h): a claim by handle leaves it open, and from
 * then on every claim of a private task is a CAS - a foreign one with no
 * lock (the test holds flock while it claims: a claim that took it would
 * hang), the owner's through its contended path.
 */
START_TEST(handed_claim_opens_the_gate)
{
    for (int i = 0; i < 4; i++)
        push(&fs[i]);
    ck_assert_uint_eq(atomic_load(&q.pub_seq), tag_of(0)); /* all private */
    ck_assert_ptr_null(atomic_load(&q.gate.foreign));
    uint64_t s = st(&fs[0]);
    ck_assert(sf__pending_claim_handed(&q, &fs[0], &s, sf__with_status(s, SF__RUNNING)));
    ck_assert_uint_eq(sf__status(st(&fs[0])), SF__RUNNING);
    ck_assert_int_eq(atomic_load(&q.push_public), 1);
    ck_assert_ptr_eq(atomic_load(&q.gate.foreign), SF__GATE_OPEN);
    ck_assert_uint_eq(atomic_load(&q.pub_seq), tag_of(0)); /* open is not published */
    sf__lock(&q.gate.flock);
    s = st(&fs[1]);
    ck_assert(sf__pending_claim_foreign(&q, &fs[1], &s, sf__with_status(s, SF__RUNNING)));
    sf__unlock(&q.gate.flock);
    ck_assert_uint_eq(s, st(&fs[1]));
    ck_assert_uint_eq(sf__status(s), SF__RUNNING);
    /* The owner: a CAS through its contended path, which leaves no claim
     * announced; and a claim of a task taken already fails with its state. */
    s = st(&fs[2]);
    ck_assert(sf__pending_claim_own(&q, &fs[2], &s, sf__with_status(s, SF__RUNNING)));
    ck_assert_uint_eq(sf__status(st(&fs[2])), SF__RUNNING);
    ck_assert_ptr_null(atomic_load(&q.gate.claiming));
    uint64_t was = (tag_of(1) << SF__TAG_SHIFT) | SF__PENDING;
    s = was;
    ck_assert(!sf__pending_claim_own(&q, &fs[1], &s, sf__with_status(was, SF__RUNNING)));
    ck_assert_uint_eq(s, st(&fs[1]));
    /* A thief that must have private work takes it through the open gate. */
    uint64_t claimed;
    ck_assert_ptr_eq(sf__pending_steal(&q, SF__STEAL_PRIVATE, SF__REGION_ANY, UINT64_MAX, &claimed),
                     &fs[3]);
    ck_assert_uint_eq(sf__status(st(&fs[3])), SF__RUNNING);
    /* A thread that takes the queue over, empty, finds the gate closed. */
    sf__pending_adopt(&q);
    ck_assert_ptr_null(atomic_load(&q.gate.foreign));
    ck_assert_int_eq(atomic_load(&q.push_public), 0);
}
END_TEST

/*
 * The opening races the owner's plain claims: each round a fresh gate, two
 * private tasks; the opener claims the older by handle and then the newer,
 * while the owner, started at a varying point of the opening, claims the
 * newer and then the older. Every task is claimed exactly once.
 */
static atomic_int open_round, open_done, open_wins, openings;

static void *opener(void *arg)
{
    (void)arg;
    for (int r = 1; r <= ROUNDS; r++) {
        while (atomic_load(&open_round) < r)
            ;
        for (int k = 0; k < 2; k++) {
            sf_future *f = &fs[(2 * r + k) % NF];
            uint64_t s = st(f), to = sf__with_status(s, SF__RUNNING);
            if (!sf__pending_holds(&q, s))
                continue; /* the owner was first */
            if (k == 0)
                atomic_fetch_add(&openings, 1);
            if (k == 0 ? sf__pending_claim_handed(&q, f, &s, to)
                       : sf__pending_claim_foreign(&q, f, &s, to))
                atomic_fetch_add(&open_wins, 1);
        }
        atomic_store(&open_done, r);
    }
    return NULL;
}

START_TEST(opening_gate_races_owner_claims)
{
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, opener, NULL), 0);
    int owner_wins = 0;
    for (int r = 1; r <= ROUNDS; r++) {
        /* The opener is between rounds and the queue empty: taking it
         * over closes the gate and makes pushes private again. */
        sf__pending_adopt(&q);
        ck_assert_ptr_null(atomic_load(&q.gate.foreign));
        sf_future *f[2] = {&fs[(2 * r) % NF], &fs[(2 * r + 1) % NF]};
        for (int k = 0; k < 2; k++) {
            atomic_store(&f[k]->state, SF__FREE);
            push(f[k]);
        }
        atomic_store(&open_round, r);
        /* The opening spends a microsecond or more in membarrier: start at
         * varying points of it. */
        for (volatile int spin = r * 7919 % 3000; spin > 0; spin--)
            ;
        for (int k = 1; k >= 0; k--) {
            uint64_t s = st(f[k]);
            if (sf__pending_holds(&q, s) &&
                sf__pending_claim_own(&q, f[k], &s, sf__with_status(s, SF__RUNNING)))
                owner_wins++;
        }
        while (atomic_load(&open_done) < r)
            ;
        int ow = atomic_load(&open_wins);
        ck_assert_msg(owner_wins + ow == 2 * r, "round %d: owner won %d, opener %d: %s", r,
                      owner_wins, ow, owner_wins + ow > 2 * r ? "a double claim" : "a lost task");
        for (int k = 0; k < 2; k++) {
            ck_assert_uint_eq(sf__status(st(f[k])), SF__RUNNING);
            sf__pending_trim(&q, f[k]);
        }
        ck_assert_uint_eq(bottom(), top());
    }
    pthread_join(th, NULL);
    /* Both sides won some, and most rounds had an opening to race. */
    ck_assert_int_gt(owner_wins, 0);
    ck_assert_int_gt(atomic_load(&open_wins), 0);
    ck_assert_int_gt(atomic_load(&openings), ROUNDS / 4);
}
END_TEST

static Suite *pending_suite(void)
{
    Suite *s = suite_create("pending");
    TCase *tc = tcase_create("pending");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, TU_SANITIZED ? 240 : 60);
    tcase_add_test(tc, push_tags_and_pop_lifo);
    tcase_add_test(tc, ring_grows);
    tcase_add_test(tc, grow_reuses_a_trimmed_ring);
    tcase_add_test(tc, stale_slots_of_recycled_futures_are_trimmed);
    tcase_add_test(tc, ring_shrinks_after_a_burst_and_reuses_its_spare);
    tcase_add_test(tc, trim_drops_the_newest_slot);
    tcase_add_test(tc, trim_after_the_oldest);
    tcase_add_test(tc, trim_top_skips_finished_slots);
    tcase_add_test(tc, submit_counts_new_tasks);
    tcase_add_test(tc, want_bits);
    tcase_add_test(tc, publish_and_poll);
    tcase_add_test(tc, steal_flags);
    tcase_add_test(tc, ask_public_makes_pushes_public);
    tcase_add_test(tc, has_pending_and_discard);
    tcase_add_test(tc, local_slots_are_skipped_then_promoted);
    tcase_add_test(tc, local_slot_between_pending_ones_is_cleared);
    tcase_add_test(tc, local_slots_got_oldest_first);
    tcase_add_test(tc, owner_and_foreign_claim_race);
    tcase_add_test(tc, handed_claim_opens_the_gate);
    tcase_add_test(tc, opening_gate_races_owner_claims);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(pending_suite)
