/*
 * classic.h - the sequential pieces of the classic workloads (UTS trees,
 * cilksort, matmul, knapsack, pi), shared by every benchmark program (C and C++)
 * so that each runtime parallelises the very same algorithm with the very
 * same base cases. Only the spawning and joining differs between programs.
 *
 * UTS (uts-t1, uts-t3): an unbalanced tree made by a splittable deterministic
 * hash. A node is its 64-bit state; child i of a node with state s has state
 * uts_child(s, i) = splitmix64 finalizer of (s + (i + 1) * golden), so the
 * tree (and its node count) is a function of the seed alone, whatever order
 * or thread visits the nodes.
 *   T3 (binomial): the root has b0 children; every other node has m = 8
 *   children with probability q (q_ppm / 10^6, 0.124875 by default: 8q =
 *   0.999, ~87.5% leaves), else none. A near-critical branching process: a
 *   few deep, narrow subtrees hold most of the nodes.
 *   T1 (geometric): a node at depth d < depth has X children, X geometric
 *   with mean 4 (P(X >= k) = 0.8^k, truncated at UTS_MAX_CHILDREN); nodes at
 *   depth `depth` are leaves. Bushy and shallow.
 * The uniform draw is the top 53 bits of the node's state; the geometric
 * draw counts the k with u < 0.8^k by repeated multiplication, exact IEEE
 * arithmetic, so no libm and the same tree from gcc and clang.
 *
 * cilksort: sort in four quarters (in parallel), merge them pairwise into a
 * temporary array (two merges in parallel), merge the halves back; a merge
 * of two sorted runs splits the longer one at its middle, finds the split
 * point of the other by binary search, places the middle element and merges
 * the two lower and the two upper parts in parallel. Below the cutoffs
 * (SORT_QUICK_CUTOFF elements: sort_seq, quicksort + insertion sort;
 * SORT_MERGE_CUTOFF: sort_merge_seq) everything is sequential.
 *
 * matmul: C += A * B on n x n row-major doubles (leading dimension
 * MM_LD(n)), by
 * quadrants: phase 1 C11 += A11 B11, C12 += A11 B12, C21 += A21 B11,
 * C22 += A21 B12 (4 in parallel), phase 2 the same with A12/A22 and
 * B21/B22; base case MM_BASE x MM_BASE, a plain i-k-j triple loop. Every
 * element sums its k-blocks in the same order whatever the schedule, and
 * the entries are small integers, so every product and sum is exact: the
 * result is bit-identical for every runtime. Checked in O(n^2) (Freivalds
 * with a fixed integer vector, exact): C x == A (B x).
 *
 * knapsack: 0/1 knapsack by depth-first branch and bound over the items
 * sorted by value/weight, descending. A node (item i, capacity left c,
 * value so far v) is pruned when its bound v + c * value[i] / weight[i]
 * (the fractional relaxation's first step: no item after i is denser) is
 * not above the best value found so far; else it tries "take item i" (when
 * it fits) and "skip item i". The parallel versions run both as tasks and
 * share the best with an atomic CAS-max, so the nodes visited (speculative
 * work) depend on the schedule; the optimum does not.
 *
 * pi: the midpoint rule for the integral of 4 / (1 + x^2) over [0, 1) with
 * n steps, as a loop split by halving: a range [lo, hi) of more than one
 * index splits at m = lo + (hi - lo) / 2 into two tasks and returns the sum
 * of their sums, left + right; a range of one index i is a leaf, the term
 * 4 / (1 + x^2) at x = (i + 0.5) / n. n leaves, n - 1 inner nodes, and a
 * leaf a few ns, so the runtime's cost per task is most of the time. The
 * summation tree is the halving tree whatever the schedule, so every program
 * returns the same double, bit for bit.
 */
#ifndef BENCH_CLASSIC_H
#define BENCH_CLASSIC_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- UTS ------------------------------------------------------------------ */

#define UTS_MAX_CHILDREN 64
#define UTS_T3_M 8

static inline uint64_t uts_mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static inline uint64_t uts_root(uint64_t seed)
{
    return uts_mix(seed + 0x9E3779B97F4A7C15ULL);
}

static inline uint64_t uts_child(uint64_t s, int i)
{
    return uts_mix(s + (uint64_t)(i + 1) * 0x9E3779B97F4A7C15ULL);
}

/* The node's uniform draw in [0, 1). */
static inline double uts_uniform(uint64_t s)
{
    return (double)(s >> 11) * (1.0 / 9007199254740992.0);
}

/* Children of a T3 node (not the root): m with probability q_ppm / 10^6. */
static inline int uts_t3_children(uint64_t s, long q_ppm)
{
    return uts_uniform(s) < (double)q_ppm * 1e-6 ? UTS_T3_M : 0;
}

/* Children of a T1 node at depth d: geometric, mean 4, none at max_depth. */
static inline int uts_t1_children(uint64_t s, long d, long max_depth)
{
    if (d >= max_depth)
        return 0;
    double u = uts_uniform(s), t = 0.8;
    int k = 0;
    while (u < t && k < UTS_MAX_CHILDREN) {
        k++;
        t *= 0.8;
    }
    return k;
}

/*
 * A UTS node as one 64-bit word, for runtimes whose task argument is one
 * word: the state with its low 8 bits replaced by the depth (T1 depths are
 * small; T3 needs no depth, only "root or not", which is depth 0). The hash
 * of the child uses the whole word, so the tree is still a function of the
 * seed.
 */
#define UTS_NODE(state, depth) (((state) & ~(uint64_t)0xff) | (uint64_t)((depth) & 0xff))
#define UTS_DEPTH(node) ((long)((node)&0xff))

/* Children of a node: kind 1 = T1, 3 = T3. */
static inline int uts_children(uint64_t node, int kind, long b0, long q_ppm, long max_depth)
{
    long d = UTS_DEPTH(node);
    if (kind == 3)
        return d == 0 ? (int)b0 : uts_t3_children(node, q_ppm);
    return uts_t1_children(node, d, max_depth);
}

/* Child i of a node: depth + 1 (saturating at 255; T3 only cares about 0). */
static inline uint64_t uts_child_node(uint64_t node, int i)
{
    long d = UTS_DEPTH(node);
    return UTS_NODE(uts_child(node, i), d < 255 ? d + 1 : 255);
}

/*
 * The node count of a tree, by an explicit-stack walk (no recursion, no
 * tasks): the expected answer every program checks against.
 */
static inline uint64_t uts_expect(int kind, long b0, long q_ppm, long max_depth, uint64_t seed)
{
    size_t cap = 1024, top = 0;
    uint64_t *st = (uint64_t *)malloc(cap * sizeof *st), count = 0;
    if (!st)
        exit(3);
    st[top++] = UTS_NODE(uts_root(seed), 0);
    while (top) {
        uint64_t node = st[--top];
        count++;
        int k = uts_children(node, kind, b0, q_ppm, max_depth);
        if (top + (size_t)k > cap) {
            while (top + (size_t)k > cap)
                cap *= 2;
            st = (uint64_t *)realloc(st, cap * sizeof *st);
            if (!st)
                exit(3);
        }
        for (int i = 0; i < k; i++)
            st[top++] = uts_child_node(node, i);
    }
    free(st);
    return count;
}

/* ---- cilksort ---------------------------------------------------------------- */

#define SORT_QUICK_CUTOFF 2048
#define SORT_MERGE_CUTOFF 2048

typedef int32_t sort_elem;

/* The input: a fixed-seed stream of 32-bit values. */
static inline void sort_fill(sort_elem *a, long n, uint64_t seed)
{
    uint64_t s = seed;
    for (long i = 0; i < n; i++) {
        s += 0x9E3779B97F4A7C15ULL;
        a[i] = (sort_elem)(uint32_t)(uts_mix(s) >> 32);
    }
}

/* Multiset fingerprint: sum and xor of the elements (order-free), mixed. */
static inline uint64_t sort_fingerprint(const sort_elem *a, long n)
{
    uint64_t sum = 0, x = 0;
    for (long i = 0; i < n; i++) {
        sum += (uint64_t)(int64_t)a[i];
        x ^= uts_mix((uint64_t)(uint32_t)a[i]);
    }
    return uts_mix(sum) ^ x;
}

/* The fingerprint if a[0..n) is sorted, else its complement. */
static inline uint64_t sort_check(const sort_elem *a, long n)
{
    int sorted = 1;
    for (long i = 1; i < n; i++)
        if (a[i - 1] > a[i])
            sorted = 0;
    uint64_t f = sort_fingerprint(a, n);
    return sorted ? f : ~f;
}

static inline void sort_insertion(sort_elem *a, long n)
{
    for (long i = 1; i < n; i++) {
        sort_elem v = a[i];
        long j = i - 1;
        while (j >= 0 && a[j] > v) {
            a[j + 1] = a[j];
            j--;
        }
        a[j + 1] = v;
    }
}

/* Quicksort (median of three, Hoare partition) down to insertion sort. */
static inline void sort_seq(sort_elem *a, long n)
{
    while (n > 16) {
        sort_elem x = a[0], y = a[n / 2], z = a[n - 1], p;
        if (x < y)
            p = y < z ? y : (x < z ? z : x);
        else
            p = x < z ? x : (y < z ? z : y);
        long i = -1, j = n;
        for (;;) {
            do
                i++;
            while (a[i] < p);
            do
                j--;
            while (a[j] > p);
            if (i >= j)
                break;
            sort_elem t = a[i];
            a[i] = a[j];
            a[j] = t;
        }
        /* [0, j] <= p <= [j + 1, n): recurse on the smaller side. */
        long left = j + 1;
        if (left < n - left) {
            sort_seq(a, left);
            a += left;
            n -= left;
        } else {
            sort_seq(a + left, n - left);
            n = left;
        }
    }
    sort_insertion(a, n);
}

/* Merge sorted a[0..na) and b[0..nb) into dst. */
static inline void sort_merge_seq(const sort_elem *a, long na, const sort_elem *b, long nb,
                                  sort_elem *dst)
{
    long i = 0, j = 0, k = 0;
    while (i < na && j < nb)
        dst[k++] = b[j] < a[i] ? b[j++] : a[i++];
    while (i < na)
        dst[k++] = a[i++];
    while (j < nb)
        dst[k++] = b[j++];
}

/* The number of elements of sorted b[0..nb) that are < v. */
static inline long sort_lower_bound(const sort_elem *b, long nb, sort_elem v)
{
    long lo = 0, hi = nb;
    while (lo < hi) {
        long mid = lo + (hi - lo) / 2;
        if (b[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The input and the scratch array, both touched before the clock starts. */
static inline void sort_setup(long n, uint64_t seed, sort_elem **a, sort_elem **tmp,
                              uint64_t *want)
{
    *a = (sort_elem *)malloc((size_t)n * sizeof **a);
    *tmp = (sort_elem *)malloc((size_t)n * sizeof **tmp);
    if (!*a || !*tmp)
        exit(3);
    sort_fill(*a, n, seed);
    memset(*tmp, 0, (size_t)n * sizeof **tmp);
    *want = sort_fingerprint(*a, n);
}

/* ---- matmul ---------------------------------------------------------------- */

#define MM_BASE 64
/*
 * The leading dimension of an n x n matrix: n + 8 doubles. With a power of
 * two (8 KiB rows at n = 1024) the rows of a base block all fall into the
 * same few cache sets, and the time then depends on where malloc put the
 * three matrices (1.8 x between two programs with the same loop); one cache
 * line more per row spreads them.
 */
#define MM_LD(n) ((n) + 8)

/* Entries: small integers in [-4, 4] (exact products and sums). */
static inline void mm_fill(double *m, long n, uint64_t seed)
{
    uint64_t s = seed;
    for (long i = 0; i < n; i++)
        for (long j = 0; j < n; j++) {
            s += 0x9E3779B97F4A7C15ULL;
            m[i * MM_LD(n) + j] = (double)((long)(uts_mix(s) % 9) - 4);
        }
}

/*
 * C += A * B, n x n blocks inside matrices of leading dimension ld. Scalar
 * in every program: gcc -O2 does not vectorize it (it would need a runtime
 * alias check), and clang (bench_llomp) is told not to, so that the base
 * case costs the same under every runtime.
 */
static inline void mm_base(double *c, const double *a, const double *b, long n, long ld)
{
    for (long i = 0; i < n; i++)
        for (long k = 0; k < n; k++) {
            double aik = a[i * ld + k];
            const double *bk = b + k * ld;
            double *ci = c + i * ld;
#ifdef __clang__
#pragma clang loop vectorize(disable) interleave(disable) unroll(disable)
#endif
            for (long j = 0; j < n; j++)
                ci[j] += aik * bk[j];
        }
}

/* The eight quadrant products of one level: phase (0 or 1), index q (0..3). */
static inline void mm_quadrant(double *c, const double *a, const double *b, long n, long ld,
                               int phase, int q, double **cq, const double **aq,
                               const double **bq)
{
    long h = n / 2;
    int ci = q >> 1, cj = q & 1;   /* C quadrant row, column */
    int k = phase;                 /* A column block = B row block */
    *cq = c + ci * h * ld + cj * h;
    *aq = a + ci * h * ld + k * h;
    *bq = b + k * h * ld + cj * h;
}

/* Tasks of the recursion on an n x n product: 8 per split. */
static inline uint64_t mm_tasks(long n)
{
    return n <= MM_BASE ? 0 : 8 + 8 * mm_tasks(n / 2);
}

/*
 * Freivalds, exact: with x a fixed vector of small integers, C x and
 * A (B x) are sums of integers below 2^53, so a right C gives the same
 * fingerprint bit for bit, and a wrong block almost surely does not.
 * Returns (fingerprint of C x, fingerprint of A (B x)).
 */
static inline void mm_check(const double *a, const double *b, const double *c, long n,
                            uint64_t *got, uint64_t *want)
{
    double *x = (double *)malloc((size_t)n * 3 * sizeof *x);
    long ld = MM_LD(n);
    if (!x)
        exit(3);
    double *bx = x + n, *t = x + 2 * n;
    for (long i = 0; i < n; i++)
        x[i] = (double)((long)(uts_mix((uint64_t)i + 77) % 7) - 3);
    uint64_t g = 0, w = 0;
    for (long i = 0; i < n; i++) {
        double s = 0, u = 0;
        for (long j = 0; j < n; j++) {
            s += c[i * ld + j] * x[j];
            u += b[i * ld + j] * x[j];
        }
        t[i] = s;
        bx[i] = u;
    }
    for (long i = 0; i < n; i++) {
        double s = 0;
        for (long j = 0; j < n; j++)
            s += a[i * ld + j] * bx[j];
        g = uts_mix(g + (uint64_t)(int64_t)t[i]);
        w = uts_mix(w + (uint64_t)(int64_t)s);
    }
    free(x);
    *got = g;
    *want = w;
}

/*
 * A and B filled, C zeroed (touched before the clock starts), in one
 * 4 KiB-aligned block, so every program has the same layout; mm_free(a).
 */
static inline void mm_setup(long n, uint64_t seed, double **a, double **b, double **c)
{
    size_t one = (size_t)n * (size_t)MM_LD(n) * sizeof(double);
    one = (one + 4095) & ~(size_t)4095;
    char *block = (char *)aligned_alloc(4096, 3 * one);
    if (!block)
        exit(3);
    memset(block, 0, 3 * one);
    *a = (double *)block;
    *b = (double *)(block + one);
    *c = (double *)(block + 2 * one);
    mm_fill(*a, n, seed);
    mm_fill(*b, n, seed + 1);
}

static inline void mm_free(double *a)
{
    free(a);
}

/* ---- knapsack ---------------------------------------------------------------- */

#define KS_MAX_ITEMS 40

struct ks_item {
    long weight, value;
};

/*
 * A fixed-seed instance of `items` items, weights 10^6..1.1 x 10^7 and
 * values weight + up to 0.002% of it: every ratio is within 2 x 10^-5 of 1,
 * so the bound prunes only near-full knapsacks and weights that large leave
 * no exact fill (a hard instance for this bound); sorted by value/weight
 * descending; capacity half the total weight.
 */
static inline long ks_instance(struct ks_item *it, long items, uint64_t seed)
{
    uint64_t s = seed;
    long total = 0;
    for (long i = 0; i < items; i++) {
        s += 0x9E3779B97F4A7C15ULL;
        uint64_t r = uts_mix(s);
        long w = 1000000 + (long)(r % 10000000);
        long v = w + (long)((r >> 32) % (uint64_t)(w / 50000 + 1));
        it[i].weight = w;
        it[i].value = v;
        total += w;
    }
    /* Insertion sort by value/weight descending (cross-multiplied, exact). */
    for (long i = 1; i < items; i++) {
        struct ks_item v = it[i];
        long j = i - 1;
        while (j >= 0 && it[j].value * v.weight < v.value * it[j].weight) {
            it[j + 1] = it[j];
            j--;
        }
        it[j + 1] = v;
    }
    return total / 2;
}

/* The bound of a node: v + c * value[i] / weight[i] (no denser item after i). */
static inline long ks_bound(const struct ks_item *it, long i, long c, long v)
{
    return v + (long)((double)c * (double)it[i].value / (double)it[i].weight);
}

struct ks_subset {
    long weight, value;
};

static inline int ks_by_weight(const void *x, const void *y)
{
    const struct ks_subset *a = (const struct ks_subset *)x, *b = (const struct ks_subset *)y;
    return a->weight < b->weight ? -1 : a->weight > b->weight;
}

/* Every subset of it[0..n): its weight and value (2^n entries). */
static inline struct ks_subset *ks_subsets(const struct ks_item *it, long n)
{
    size_t m = (size_t)1 << n;
    struct ks_subset *s = (struct ks_subset *)malloc(m * sizeof *s);
    if (!s)
        exit(3);
    s[0].weight = s[0].value = 0;
    for (long i = 0; i < n; i++) {
        size_t half = (size_t)1 << i;
        for (size_t j = 0; j < half; j++) {
            s[half + j].weight = s[j].weight + it[i].weight;
            s[half + j].value = s[j].value + it[i].value;
        }
    }
    return s;
}

/*
 * The optimum by meet in the middle (no branch and bound, no bound): every
 * subset of the first half against the best subset of the second half that
 * fits beside it (sorted by weight, running maximum of value, binary search).
 * 2 x 2^(items/2) subsets: the expected answer every program checks against.
 */
static inline long ks_expect(const struct ks_item *it, long items, long cap)
{
    long h = items / 2;
    struct ks_subset *lo = ks_subsets(it, h), *hi = ks_subsets(it + h, items - h);
    size_t nlo = (size_t)1 << h, nhi = (size_t)1 << (items - h);
    qsort(hi, nhi, sizeof *hi, ks_by_weight);
    for (size_t j = 1; j < nhi; j++)
        if (hi[j].value < hi[j - 1].value)
            hi[j].value = hi[j - 1].value;
    long best = 0;
    for (size_t i = 0; i < nlo; i++) {
        long room = cap - lo[i].weight;
        if (room < 0)
            continue;
        size_t a = 0, b = nhi; /* the first entry heavier than room */
        while (a < b) {
            size_t m = a + (b - a) / 2;
            if (hi[m].weight <= room)
                a = m + 1;
            else
                b = m;
        }
        if (a > 0 && lo[i].value + hi[a - 1].value > best)
            best = lo[i].value + hi[a - 1].value;
    }
    free(lo);
    free(hi);
    return best;
}

/* ---- pi ---------------------------------------------------------------------- */

/*
 * A range [lo, hi) of pi's indices as one 64-bit word, for runtimes whose
 * task argument is one word (as NQ_PACK and UTS_NODE): lo in the high half,
 * hi in the low, so n < 2^32 (bench_parse checks).
 */
#define PI_RANGE(lo, hi) (((uint64_t)(lo) << 32) | (uint64_t)(hi))
#define PI_LO(r) ((long)((r) >> 32))
#define PI_HI(r) ((long)((r)&0xffffffffULL))

/* Leaf i of n: the integrand at the middle of step i. */
static inline double pi_term(long i, long n)
{
    double x = ((double)i + 0.5) / (double)n;
    return 4.0 / (1.0 + x * x);
}

/* A sum as a task's one-word result, and back: its bits. */
static inline uint64_t pi_bits(double s)
{
    uint64_t v;
    memcpy(&v, &s, sizeof v);
    return v;
}

static inline double pi_double(uint64_t v)
{
    double s;
    memcpy(&s, &v, sizeof s);
    return s;
}

/*
 * The halving tree's sum over [0, n) (n >= 1) without recursion: a walk with
 * an explicit stack of the inner nodes whose left half is being summed or
 * done, each adding left + right once its right half is. The same additions
 * in the same order as the recursion, so the same bits: the expected answer
 * every program checks against. The depth is at most 32 for n < 2^32.
 */
static inline double pi_expect(long n)
{
    struct {
        long m, hi;   /* the right half, [m, hi) */
        double left;  /* the left half's sum, once right is set */
        int right;    /* 1: summing the right half */
    } st[64];
    int top = 0;
    long lo = 0, hi = n;
    for (;;) {
        while (hi - lo > 1) { /* down the left edge of [lo, hi) */
            long m = lo + (hi - lo) / 2;
            st[top].m = m;
            st[top].hi = hi;
            st[top].right = 0;
            top++;
            hi = m;
        }
        double v = pi_term(lo, n);
        while (top > 0 && st[top - 1].right) { /* up past every finished right half */
            v = st[top - 1].left + v;
            top--;
        }
        if (top == 0)
            return v;
        st[top - 1].left = v; /* a left half done: sum the right one */
        st[top - 1].right = 1;
        lo = st[top - 1].m;
        hi = st[top - 1].hi;
    }
}

/*
 * 1 when s / n is pi to within the midpoint rule's error, |E| <= max|f''| /
 * (24 n^2) = 1 / (3 n^2) for f = 4 / (1 + x^2) (|f''| <= 8), plus 10^-12 for
 * the rounding of n terms and their sums: a check of pi_expect against the
 * answer itself, not against the code it shares with the programs.
 */
static inline int pi_plausible(double s, long n)
{
    double err = s / (double)n - 3.14159265358979323846;
    if (err < 0)
        err = -err;
    return err <= 1.0 / (3.0 * (double)n * (double)n) + 1e-12;
}

#endif /* BENCH_CLASSIC_H */
