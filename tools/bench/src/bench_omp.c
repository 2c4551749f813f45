/*
 * bench_omp.c - the workloads on OpenMP tasks (`omp task` + `omp taskwait`,
 * started by one thread in `parallel` + `single`). Built twice: gcc/libgomp
 * (bench_gomp) and clang/libomp (bench_llomp). Threads: OMP_NUM_THREADS=N
 * (set by the harness) and num_threads(N). See common.h for the command line.
 */
#include "common.h"

#include <omp.h>

#ifndef OMP_RUNTIME_NAME
#define OMP_RUNTIME_NAME "omp"
#endif

static struct bench_params P;

/* ---- fib ------------------------------------------------------------------- */

__attribute__((noinline)) static long fib(long n)
{
    if (n < 2)
        return n;
    long a = 0, b;
#pragma omp task shared(a) firstprivate(n)
    a = fib(n - 1);
    b = fib(n - 2);
#pragma omp taskwait
    return a + b;
}

/* ---- tput -------------------------------------------------------------------- */

static uint64_t tput_child(uint64_t v)
{
    bench_spin(v, P.iters);
    return v;
}

static uint64_t run_tput(void)
{
    uint64_t *part = calloc((size_t)P.outer, sizeof *part);
    if (!part)
        exit(3);
    for (long i = 0; i < P.outer; i++) {
#pragma omp task firstprivate(i) shared(part)
        {
            uint64_t *res = malloc((size_t)P.inner * sizeof *res);
            if (!res)
                exit(3);
            for (long j = 0; j < P.inner; j++) {
#pragma omp task firstprivate(i, j) shared(res)
                res[j] = tput_child((uint64_t)(i * P.inner + j + 1));
            }
#pragma omp taskwait
            uint64_t s = 0;
            for (long j = 0; j < P.inner; j++)
                s += res[j];
            free(res);
            part[i] = s;
        }
    }
#pragma omp taskwait
    uint64_t sum = 0;
    for (long i = 0; i < P.outer; i++)
        sum += part[i];
    free(part);
    return sum;
}

/* ---- uneven: one task per item ------------------------------------------------ */

static uint64_t run_uneven(void)
{
    uint64_t *res = calloc((size_t)P.items, sizeof *res);
    if (!res)
        exit(3);
    for (long i = 0; i < P.items; i++) {
#pragma omp task firstprivate(i) shared(res)
        {
            bench_spin((uint64_t)(i + 1), bench_uneven_iters(&P, i));
            res[i] = (uint64_t)(i + 1);
        }
    }
#pragma omp taskwait
    uint64_t sum = 0;
    for (long i = 0; i < P.items; i++)
        sum += res[i];
    free(res);
    return sum;
}

/* ---- nqueens ---------------------------------------------------------------------- */

static uint64_t nqueens(uint64_t s)
{
    unsigned n = (unsigned)P.n;
    unsigned row = NQ_ROW(s), cols = NQ_COLS(s), d1 = NQ_D1(s), d2 = NQ_D2(s);
    if (row == n)
        return NQ_RES(1, 1);
    unsigned mask = (1u << n) - 1;
    unsigned avail = ~(cols | d1 | d2) & mask;
    uint64_t res[16];
    int k = 0;
    while (avail) {
        unsigned bit = avail & -avail;
        avail &= avail - 1;
        uint64_t child = NQ_PACK(row + 1, cols | bit, ((d1 | bit) << 1) & mask, (d2 | bit) >> 1);
        int slot = k++;
#pragma omp task firstprivate(child, slot) shared(res)
        res[slot] = nqueens(child);
    }
#pragma omp taskwait
    uint64_t sol = 0, nodes = 1;
    for (int i = 0; i < k; i++) {
        sol += NQ_SOL(res[i]);
        nodes += NQ_NODES(res[i]);
    }
    return NQ_RES(sol, nodes);
}

/* ---- meh ---------------------------------------------------------------------------- */

static long chain(long d)
{
    bench_spin((uint64_t)d, P.iters);
    if (d >= P.depth)
        return 1;
    long r = 0;
#pragma omp task shared(r) firstprivate(d)
    r = chain(d + 1);
#pragma omp taskwait
    return r + 1;
}

static uint64_t tree(long d)
{
    bench_spin((uint64_t)d, P.iters);
    if (d >= P.depth)
        return 1;
    uint64_t res[64];
    for (long i = 0; i < P.fanout; i++) {
#pragma omp task shared(res) firstprivate(i, d)
        res[i] = tree(d + 1);
    }
#pragma omp taskwait
    uint64_t sum = 1;
    for (long i = 0; i < P.fanout; i++)
        sum += res[i];
    return sum;
}

int main(int argc, char **argv)
{
    bench_parse(argc, argv, &P);
    const char *w = P.workload;
    int T = P.threads;
    omp_set_dynamic(0);
    omp_set_num_threads(T);

    /* Warm up: start the team. */
    long warm = 0;
#pragma omp parallel num_threads(T)
    {
#pragma omp single
        warm = fib(20);
    }
    if (warm != (long)bench_fib_expect(20))
        return 2;
    int team = 0;
#pragma omp parallel num_threads(T)
    {
#pragma omp single
        team = omp_get_num_threads();
    }
    if (team != T) {
        fprintf(stderr, "%s: asked for %d threads, got a team of %d\n", OMP_RUNTIME_NAME, T, team);
        return 3;
    }

    double t0 = 0, t1 = 0;
    uint64_t got = 0, want, tasks, nqr = 0;
    int kind;
    if (strcmp(w, "fib") == 0)
        kind = 0;
    else if (strcmp(w, "tput") == 0)
        kind = 1;
    else if (strcmp(w, "uneven") == 0)
        kind = 2;
    else if (strcmp(w, "nqueens") == 0)
        kind = 3;
    else if (strcmp(w, "chain") == 0)
        kind = 4;
    else if (strcmp(w, "tree") == 0)
        kind = 5;
    else if (strcmp(w, "pfor") == 0)
        kind = 6;
    else {
        bench_usage(argv[0]);
        return 64;
    }

    uint64_t *pres = NULL;
    if (kind == 6 && !(pres = calloc((size_t)P.items, sizeof *pres)))
        exit(3);
    t0 = bench_now();
    /* pfor: the whole team shares the loop (omp for), no single. */
#pragma omp parallel num_threads(T) if (kind == 6)
    if (kind == 6) {
        if (P.part == 0) {
#pragma omp for schedule(dynamic, 1)
            for (long i = 0; i < P.items; i++) {
                bench_spin((uint64_t)(i + 1), bench_pfor_iters(&P, i));
                pres[i] = (uint64_t)(i + 1);
            }
        } else {
#pragma omp for schedule(static)
            for (long i = 0; i < P.items; i++) {
                bench_spin((uint64_t)(i + 1), bench_pfor_iters(&P, i));
                pres[i] = (uint64_t)(i + 1);
            }
        }
    }
    if (kind == 6) {
        for (long i = 0; i < P.items; i++)
            got += pres[i];
        free(pres);
    }
#pragma omp parallel num_threads(T) if (kind != 6)
    if (kind != 6) {
#pragma omp single
        {
            switch (kind) {
            case 0:
                got = (uint64_t)fib(P.n);
                break;
            case 1:
                got = run_tput();
                break;
            case 2:
                got = run_uneven();
                break;
            case 3:
                nqr = nqueens(NQ_PACK(0, 0, 0, 0));
                got = NQ_SOL(nqr);
                break;
            case 4: {
                long r = 0;
#pragma omp task shared(r)
                r = chain(1);
#pragma omp taskwait
                got = (uint64_t)r;
                break;
            }
            case 5: {
                uint64_t r = 0;
#pragma omp task shared(r)
                r = tree(0);
#pragma omp taskwait
                got = r;
                break;
            }
            }
        }
    }
    t1 = bench_now();

    switch (kind) {
    case 0:
        want = bench_fib_expect(P.n);
        tasks = bench_fib_tasks(P.n);
        break;
    case 1:
        want = bench_tput_expect(P.outer, P.inner);
        tasks = (uint64_t)P.outer * (uint64_t)(P.inner + 1);
        break;
    case 2:
    case 6:
        want = bench_uneven_expect(P.items);
        tasks = (uint64_t)P.items;
        break;
    case 3:
        want = bench_nqueens_expect(P.n);
        tasks = NQ_NODES(nqr) - 1;
        break;
    case 4:
        want = (uint64_t)P.depth;
        tasks = (uint64_t)P.depth;
        break;
    default:
        want = bench_tree_nodes(P.fanout, P.depth);
        tasks = want;
        break;
    }
    return bench_report(OMP_RUNTIME_NAME, &P, t1 - t0, tasks, got, want, "");
}
