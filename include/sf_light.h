/*
 * sf_light.h - a light task's slot, the layout the inline spawns and
 * syncs write and read (versioned by SF_LIGHT_ABI), the spawns' slow cases
 * out of line, and the machinery of the typed light tasks (SF_LIGHT_TASK,
 * SF_LIGHT_VOID_TASK). Their contract is sf.h's (Light tasks). Part of
 * sf.h, which includes it: include <sf.h>, not this.
 */
#ifndef SF_LIGHT_H_
#define SF_LIGHT_H_

#ifndef SF_LIGHT_ABI
#error "sf_light.h is part of sf.h: include <sf.h>"
#endif

/* The most bytes a typed light task's argument, and its value, may take. */
#define SF_LIGHT_BYTES 40

/* An sf_spawn() task in a deque. */
struct sf_light_call {
    sf_light_fn fn;
    void *arg;
};

/* A light task's data in a deque: the task, then its value once run. */
union sf_light_data {
    struct sf_light_call call;           /* sf_spawn()'s task */
    void *value;                         /* its value */
    unsigned char bytes[SF_LIGHT_BYTES]; /* a typed task's argument, then value */
};

/* A light task in a deque: what a spawn writes and its sync runs. */
struct sf_light_slot {
    /* A typed task's (SF_LIGHT_TASK): runs it, its argument read from u,
     * its value written there. NULL: an sf_spawn() task, u.call. */
    void (*run)(sf_worker *w, struct sf_light_slot *t);
    void *sf_opaque_[2]; /* libsf's */
    union sf_light_data u;
};

/* What the inline spawn and sync read and write of a deque. */
struct sf_worker {
    struct sf_light_slot *head;  /* next free slot; written by the owner only */
    struct sf_light_slot *split; /* a slot below it may be stolen (sync's test) */
    struct sf_light_slot *limit; /* spawn's test; libsf lowers it to be asked in */
    void *sf_opaque_[5];         /* libsf's; never touch */
};

static __attribute__((noinline, cold, unused)) void sf_spawn_cold_(sf_worker *w, sf_light_fn fn,
                                                           void *arg)
{
    /* sf_spawn()'s slow case, out of line: the spawner's frame holds no slot. */
    struct sf_light_slot s;
    s.run = 0;
    s.u.call.fn = fn;
    s.u.call.arg = arg;
    sf_spawn_slow(w, &s);
}

#define SF_LIGHT_TASK(R, name, ...)                                                   \
    static R name(sf_worker *, SF_LIGHT_EACH_(P, __VA_ARGS__));                       \
    SF_LIGHT_COMMON_(name, __VA_ARGS__)                                               \
    SF_LIGHT_FN_ void name##_sf_run_(sf_worker *sf_w_, struct sf_light_slot *sf_t_)   \
    {                                                                                 \
        struct name##_sf_args_ sf_a_;                                                 \
        R sf_r_;                                                                      \
        SF_LIGHT_LOAD_(name, sf_t_, __VA_ARGS__);                                     \
        sf_r_ = name(sf_w_, SF_LIGHT_EACH_(A, __VA_ARGS__));                          \
        __builtin_memcpy(sf_t_->u.bytes, &sf_r_, sizeof sf_r_);                       \
    }                                                                                 \
    SF_LIGHT_FN_ R name##_sf_sync_(sf_worker *sf_w_)                                  \
    {                                                                                 \
        struct sf_light_slot *sf_t_ = sf_w_->head - 1;                                \
        R sf_r_;                                                                      \
        if (__builtin_expect(sf_t_ >= sf_w_->split, 1)) {                             \
            struct name##_sf_args_ sf_a_;                                             \
            SF_LIGHT_LOAD_(name, sf_t_, __VA_ARGS__);                                 \
            sf_w_->head = sf_t_;                                                      \
            return name(sf_w_, SF_LIGHT_EACH_(A, __VA_ARGS__));                       \
        }                                                                             \
        sf_t_ = sf_sync_slow(sf_w_, name##_sf_run_);                                  \
        __builtin_memcpy(&sf_r_, sf_t_->u.bytes, sizeof sf_r_);                       \
        return sf_r_;                                                                 \
    }                                                                                 \
    SF_LIGHT_FN_ int name##_sf_light_(SF_LIGHT_EACH_(P, __VA_ARGS__), R *sf_r_)       \
    {                                                                                 \
        struct sf_light_slot sf_s_;                                                   \
        SF_LIGHT_FILL_(name, &sf_s_, __VA_ARGS__);                                    \
        if (sf_light(sf_light_slot_root_, &sf_s_) == 0)                               \
            return -1;                                                                \
        __builtin_memcpy(sf_r_, sf_s_.u.bytes, sizeof *sf_r_);                        \
        return 0;                                                                     \
    }                                                                                 \
    typedef char name##_sf_fits_[sizeof(R) <= SF_LIGHT_BYTES ? 1 : -1]

#define SF_LIGHT_VOID_TASK(name, ...)                                                 \
    static void name(sf_worker *, SF_LIGHT_EACH_(P, __VA_ARGS__));                    \
    SF_LIGHT_COMMON_(name, __VA_ARGS__)                                               \
    SF_LIGHT_FN_ void name##_sf_run_(sf_worker *sf_w_, struct sf_light_slot *sf_t_)   \
    {                                                                                 \
        struct name##_sf_args_ sf_a_;                                                 \
        SF_LIGHT_LOAD_(name, sf_t_, __VA_ARGS__);                                     \
        name(sf_w_, SF_LIGHT_EACH_(A, __VA_ARGS__));                                  \
    }                                                                                 \
    SF_LIGHT_FN_ void name##_sf_sync_(sf_worker *sf_w_)                               \
    {                                                                                 \
        struct sf_light_slot *sf_t_ = sf_w_->head - 1;                                \
        if (__builtin_expect(sf_t_ >= sf_w_->split, 1)) {                             \
            struct name##_sf_args_ sf_a_;                                             \
            SF_LIGHT_LOAD_(name, sf_t_, __VA_ARGS__);                                 \
            sf_w_->head = sf_t_;                                                      \
            name(sf_w_, SF_LIGHT_EACH_(A, __VA_ARGS__));                              \
            return;                                                                   \
        }                                                                             \
        (void)sf_sync_slow(sf_w_, name##_sf_run_);                                    \
    }                                                                                 \
    SF_LIGHT_FN_ int name##_sf_light_(SF_LIGHT_EACH_(P, __VA_ARGS__))                 \
    {                                                                                 \
        struct sf_light_slot sf_s_;                                                   \
        SF_LIGHT_FILL_(name, &sf_s_, __VA_ARGS__);                                    \
        return sf_light(sf_light_slot_root_, &sf_s_) == 0 ? -1 : 0;                   \
    }                                                                                 \
    typedef char name##_sf_fits_[1]

/* The typed tasks' parts: the arguments' struct, the spawn (its slow case
 * out of line, so that the spawner's frame holds no slot), a slot's fill
 * and load, field by field (a copy of the whole struct makes gcc build it on
 * the stack and read it back in wider loads, which store forwarding cannot
 * serve), and a run's root (s->run). SF_LIGHT_EACH_(K, T1, a1, ...) lists K
 * of each parameter: P `T1 a1`, N `a1`, A `sf_a_.a1`, F `T1 a1;`, S a1 into
 * the slot's bytes, L sf_a_.a1 from them. */
#define SF_LIGHT_FN_ static inline __attribute__((unused)) /* a task may use none of them */
#define SF_LIGHT_COMMON_(name, ...)                                                   \
    struct name##_sf_args_ {                                                          \
        SF_LIGHT_EACH_(F, __VA_ARGS__)                                                \
    };                                                                                \
    typedef char name##_sf_args_fit_[sizeof(struct name##_sf_args_) <= SF_LIGHT_BYTES \
                                         ? 1 : -1];                                   \
    SF_LIGHT_FN_ void name##_sf_run_(sf_worker *, struct sf_light_slot *);            \
    static __attribute__((noinline, cold, unused)) void                               \
    name##_sf_spawn_slow_(sf_worker *sf_w_, SF_LIGHT_EACH_(P, __VA_ARGS__))           \
    {                                                                                 \
        struct sf_light_slot sf_s_;                                                   \
        SF_LIGHT_FILL_(name, &sf_s_, __VA_ARGS__);                                    \
        sf_spawn_slow(sf_w_, &sf_s_);                                                 \
    }                                                                                 \
    SF_LIGHT_FN_ void name##_sf_spawn_(sf_worker *sf_w_, SF_LIGHT_EACH_(P, __VA_ARGS__)) \
    {                                                                                 \
        struct sf_light_slot *sf_t_ = sf_w_->head;                                    \
        if (__builtin_expect(sf_t_ >= __atomic_load_n(&sf_w_->limit, __ATOMIC_RELAXED), 0)) { \
            name##_sf_spawn_slow_(sf_w_, SF_LIGHT_EACH_(N, __VA_ARGS__));             \
            return;                                                                   \
        }                                                                             \
        SF_LIGHT_FILL_(name, sf_t_, __VA_ARGS__);                                     \
        sf_w_->head = sf_t_ + 1;                                                      \
    }
#define SF_LIGHT_FILL_(name, t, ...)                                                  \
    do {                                                                              \
        typedef struct name##_sf_args_ sf_args_t_;                                    \
        unsigned char *sf_b_ = (t)->u.bytes;                                          \
        (t)->run = name##_sf_run_;                                                    \
        SF_LIGHT_EACH_(S, __VA_ARGS__)                                                \
    } while (0)
#define SF_LIGHT_LOAD_(name, t, ...)                                                  \
    do {                                                                              \
        typedef struct name##_sf_args_ sf_args_t_;                                    \
        const unsigned char *sf_b_ = (t)->u.bytes;                                    \
        SF_LIGHT_EACH_(L, __VA_ARGS__)                                                \
    } while (0)
#define SF_LIGHT_EACH_(K, ...)                                                        \
    SF_LIGHT_CAT_(SF_LIGHT_##K, SF_LIGHT_COUNT_(__VA_ARGS__, 6, 6, 5, 5, 4, 4, 3, 3,  \
                                                2, 2, 1, 1, 0))(__VA_ARGS__)
#define SF_LIGHT_COUNT_(a, b, c, d, e, f, g, h, i, j, k, l, n, ...) n
#define SF_LIGHT_CAT_(a, n) SF_LIGHT_CAT2_(a, n)
#define SF_LIGHT_CAT2_(a, n) a##n##_
#define SF_LIGHT_P1_(T, a) T a
#define SF_LIGHT_P2_(T, a, ...) T a, SF_LIGHT_P1_(__VA_ARGS__)
#define SF_LIGHT_P3_(T, a, ...) T a, SF_LIGHT_P2_(__VA_ARGS__)
#define SF_LIGHT_P4_(T, a, ...) T a, SF_LIGHT_P3_(__VA_ARGS__)
#define SF_LIGHT_P5_(T, a, ...) T a, SF_LIGHT_P4_(__VA_ARGS__)
#define SF_LIGHT_P6_(T, a, ...) T a, SF_LIGHT_P5_(__VA_ARGS__)
#define SF_LIGHT_A1_(T, a) sf_a_.a
#define SF_LIGHT_A2_(T, a, ...) sf_a_.a, SF_LIGHT_A1_(__VA_ARGS__)
#define SF_LIGHT_A3_(T, a, ...) sf_a_.a, SF_LIGHT_A2_(__VA_ARGS__)
#define SF_LIGHT_A4_(T, a, ...) sf_a_.a, SF_LIGHT_A3_(__VA_ARGS__)
#define SF_LIGHT_A5_(T, a, ...) sf_a_.a, SF_LIGHT_A4_(__VA_ARGS__)
#define SF_LIGHT_A6_(T, a, ...) sf_a_.a, SF_LIGHT_A5_(__VA_ARGS__)
#define SF_LIGHT_F1_(T, a) T a;
#define SF_LIGHT_F2_(T, a, ...) T a; SF_LIGHT_F1_(__VA_ARGS__)
#define SF_LIGHT_F3_(T, a, ...) T a; SF_LIGHT_F2_(__VA_ARGS__)
#define SF_LIGHT_F4_(T, a, ...) T a; SF_LIGHT_F3_(__VA_ARGS__)
#define SF_LIGHT_F5_(T, a, ...) T a; SF_LIGHT_F4_(__VA_ARGS__)
#define SF_LIGHT_F6_(T, a, ...) T a; SF_LIGHT_F5_(__VA_ARGS__)
#define SF_LIGHT_N1_(T, a) a
#define SF_LIGHT_N2_(T, a, ...) a, SF_LIGHT_N1_(__VA_ARGS__)
#define SF_LIGHT_N3_(T, a, ...) a, SF_LIGHT_N2_(__VA_ARGS__)
#define SF_LIGHT_N4_(T, a, ...) a, SF_LIGHT_N3_(__VA_ARGS__)
#define SF_LIGHT_N5_(T, a, ...) a, SF_LIGHT_N4_(__VA_ARGS__)
#define SF_LIGHT_N6_(T, a, ...) a, SF_LIGHT_N5_(__VA_ARGS__)
#define SF_LIGHT_S1_(T, a) __builtin_memcpy(sf_b_ + __builtin_offsetof(sf_args_t_, a), &a, sizeof(T));
#define SF_LIGHT_S2_(T, a, ...) SF_LIGHT_S1_(T, a) SF_LIGHT_S1_(__VA_ARGS__)
#define SF_LIGHT_S3_(T, a, ...) SF_LIGHT_S1_(T, a) SF_LIGHT_S2_(__VA_ARGS__)
#define SF_LIGHT_S4_(T, a, ...) SF_LIGHT_S1_(T, a) SF_LIGHT_S3_(__VA_ARGS__)
#define SF_LIGHT_S5_(T, a, ...) SF_LIGHT_S1_(T, a) SF_LIGHT_S4_(__VA_ARGS__)
#define SF_LIGHT_S6_(T, a, ...) SF_LIGHT_S1_(T, a) SF_LIGHT_S5_(__VA_ARGS__)
#define SF_LIGHT_L1_(T, a) __builtin_memcpy(&sf_a_.a, sf_b_ + __builtin_offsetof(sf_args_t_, a), sizeof(T));
#define SF_LIGHT_L2_(T, a, ...) SF_LIGHT_L1_(T, a) SF_LIGHT_L1_(__VA_ARGS__)
#define SF_LIGHT_L3_(T, a, ...) SF_LIGHT_L1_(T, a) SF_LIGHT_L2_(__VA_ARGS__)
#define SF_LIGHT_L4_(T, a, ...) SF_LIGHT_L1_(T, a) SF_LIGHT_L3_(__VA_ARGS__)
#define SF_LIGHT_L5_(T, a, ...) SF_LIGHT_L1_(T, a) SF_LIGHT_L4_(__VA_ARGS__)
#define SF_LIGHT_L6_(T, a, ...) SF_LIGHT_L1_(T, a) SF_LIGHT_L5_(__VA_ARGS__)
static inline void *sf_light_slot_root_(sf_worker *w, void *s)
{
    ((struct sf_light_slot *)s)->run(w, (struct sf_light_slot *)s);
    return s;
}

#endif /* SF_LIGHT_H_ */
