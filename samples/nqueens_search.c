/*
 * nqueens_search - a speculative search with libsf: the first solution of
 * the n-queens puzzle wins, and the branches still looking are cancelled;
 * branches without a solution fail, and their parent handles that.
 *
 * The search space is split by the queens of the first two rows: one branch
 * task per safe placement of those two, each a plain backtracking search of
 * the rows below that asks sf_cancelled() at every node. The search task
 * makes every branch at once, so idle pool workers start on the later ones
 * speculatively, and then gets them in order:
 *   - a branch whose rows hold no solution fails with sf_fail(ENOENT, ...).
 *     The failure goes no further than the parent's sf_wait(), which sees
 *     it and goes on to the next branch: the failure is handled.
 *   - the first branch with a solution wins. The parent sf_cancel()s every
 *     later branch: one that has not started never runs, one that runs sees
 *     sf_cancelled() and stops (its getters see ECANCELED), one already done
 *     keeps its result. The parent still collects each with sf_wait(), so
 *     it learns how each ended and no failure goes unseen.
 *   - with no solution at all (n = 2 or 3) the parent fails in turn, with
 *     the code it chose, and main reports that failure.
 * Because the branches are taken in order, the solution found is the first
 * in lexicographic order, whatever the number of threads; only the split of
 * the cancelled branches (not started, stopped while running, done anyway)
 * depends on the schedule. At SF_THREADS=1 nothing runs before it is got,
 * so every cancelled branch is one that never started.
 *
 *     usage: nqueens_search [n]       n in 1..MAX_N, default 10
 *     SF_THREADS=2 ./nqueens_search 12
 *
 * Exit status: 0 a valid solution (or, for n = 2 or 3, none, which is
 * right), 1 a wrong answer or a runtime failure, 2 bad usage.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sf.h"

#define DEFAULT_N 8
/* The search is plain backtracking: beyond this a branch with no solution
 * takes too long to rule out for a demo. */
#define MAX_N 14
#define SPLIT_ROWS 2
#define STR(x) #x
#define XSTR(x) STR(x)

/* One branch: the columns of the queens of its first rows, then the
 * search's findings. */
struct branch {
    int n, first;    /* board size; rows fixed by the split (1 or 2) */
    int col[MAX_N];  /* col[r]: the column of row r's queen */
    atomic_int started;
};

static int safe(const int *col, int row, int c)
{
    for (int r = 0; r < row; r++)
        if (col[r] == c || abs(col[r] - c) == row - r)
            return 0;
    return 1;
}

/* 1: found (col[] holds it); 0: none below this placement; -1: cancelled. */
static int place(struct branch *b, int row)
{
    if (row == b->n)
        return 1;
    for (int c = 0; c < b->n; c++) {
        if (sf_cancelled())
            return -1; /* nobody needs this branch any more: stop early */
        if (!safe(b->col, row, c))
            continue;
        b->col[row] = c;
        int found = place(b, row + 1);
        if (found != 0)
            return found;
    }
    return 0;
}

/* A branch task: its solution, or a failure. */
static void *search_branch(void *arg)
{
    struct branch *b = arg;
    atomic_store(&b->started, 1);
    int found = place(b, b->first);
    if (found == 0)
        sf_fail(ENOENT, "no solution with the first queens at columns %d and %d", b->col[0],
                b->first > 1 ? b->col[1] : -1);
    /* found == -1: cancelled; what it returns is not seen (ECANCELED). */
    return found == 1 ? b : NULL;
}

/* What the search reports to main. */
struct search {
    int n;
    int nbranches;
    struct branch *branches;
    int winner;          /* index of the winning branch, -1: none */
    int handled;         /* failed branches (ENOENT) the parent went past */
    int never_started;   /* cancelled before they started */
    int stopped;         /* cancelled while running, and stopped */
    int finished_anyway; /* asked to stop too late: finished regardless */
    int done_before;     /* already done when cancelled */
    int errors;          /* anything sf.h does not allow here */
};

/* The parent: makes every branch, gets them in order, cancels the rest. */
static void *search_task(void *arg)
{
    struct search *s = arg;
    int n = s->n, first = n < SPLIT_ROWS ? n : SPLIT_ROWS;
    /* Every safe placement of the first rows, in lexicographic order. */
    int max = n * n;
    s->branches = calloc((size_t)max, sizeof *s->branches);
    sf_future **f = calloc((size_t)max, sizeof *f);
    if (s->branches == NULL || f == NULL) {
        free(f);
        sf_fail(ENOMEM, "no memory for %d branches", max);
        return NULL;
    }
    int nb = 0;
    for (int c0 = 0; c0 < n; c0++)
        for (int c1 = 0; c1 < (first > 1 ? n : 1); c1++) {
            struct branch *b = &s->branches[nb];
            b->n = n;
            b->first = first;
            b->col[0] = c0;
            if (first > 1) {
                if (!safe(b->col, 1, c1))
                    continue;
                b->col[1] = c1;
            }
            nb++;
        }
    s->nbranches = nb;
    for (int i = 0; i < nb; i++)
        f[i] = sf_do(search_branch, &s->branches[i]); /* NULL: searched inline below */

    s->winner = -1;
    for (int i = 0; i < nb; i++) {
        if (s->winner >= 0) {
            /* Speculation lost: nobody needs this branch. */
            if (f[i] == NULL) { /* never made, so never started */
                s->never_started++;
                continue;
            }
            int was_done = sf_cancel(f[i]);
            int rc = sf_wait(f[i], NULL);
            if (was_done == 1)
                s->done_before++;
            else if (rc == ECANCELED && !atomic_load(&s->branches[i].started))
                s->never_started++;
            else if (rc == ECANCELED)
                s->stopped++;
            else if (rc == 0 || rc == ENOENT)
                s->finished_anyway++;
            else
                s->errors++;
        } else {
            void *r = NULL;
            int rc;
            if (f[i] != NULL) {
                rc = sf_wait(f[i], &r);
            } else { /* sf_do failed: search it here (no sf_fail: that is ours) */
                struct branch *b = &s->branches[i];
                rc = place(b, b->first) == 1 ? 0 : ENOENT;
            }
            if (rc == 0) {
                s->winner = i;
            } else if (rc == ENOENT) {
                /* The failure is handled: say so, and try the next branch. */
                const char *why = f[i] != NULL ? sf_error_message(f[i]) : NULL;
                printf("branch %d failed (ENOENT: %s); the search goes on\n", i + 1,
                       why != NULL ? why : "no solution");
                s->handled++;
            } else {
                s->errors++;
            }
        }
        sf_release(f[i]);
    }
    free(f);
    if (s->winner < 0 && nb == 0)
        sf_fail(ENOENT, "no way to place %d queens: not even the first two fit", n);
    else if (s->winner < 0)
        sf_fail(ENOENT, "all %d branches failed: no way to place %d queens", nb, n);
    return s;
}

/* Checked apart from the search: n queens, one per row and column, no two
 * on a diagonal. */
static int valid(const int *col, int n)
{
    for (int r = 0; r < n; r++) {
        if (col[r] < 0 || col[r] >= n)
            return 0;
        for (int q = 0; q < r; q++)
            if (col[q] == col[r] || abs(col[q] - col[r]) == r - q)
                return 0;
    }
    return 1;
}

static void usage_error(const char *why)
{
    fprintf(stderr, "nqueens_search: %s; usage: nqueens_search [n] (n: 1..%d, default %d)\n",
            why, MAX_N, DEFAULT_N);
    exit(2);
}

int main(int argc, char **argv)
{
    int n = DEFAULT_N;
    if (argc > 2)
        usage_error("too many arguments");
    if (argc == 2) {
        char *end;
        errno = 0;
        long v = strtol(argv[1], &end, 10);
        if (argv[1][0] == '\0' || *end != '\0' || errno != 0 || v < 1 || v > MAX_N)
            usage_error("n must be a number from 1 to " XSTR(MAX_N));
        n = (int)v;
    }
    if (sf_init(NULL) < 0) {
        fprintf(stderr, "nqueens_search: sf_init: %s\n", strerror(errno));
        return 1;
    }

    struct search s;
    memset(&s, 0, sizeof s);
    s.n = n;
    printf("n-queens, n = %d\n", n);
    sf_future *f = sf_do(search_task, &s);
    if (f == NULL) {
        fprintf(stderr, "nqueens_search: sf_do: %s\n", strerror(errno));
        return 1;
    }
    int rc = sf_wait(f, NULL);
    int bad = 0;
    if (rc == ENOENT) {
        /* The parent failed in turn: here, that is the answer. */
        printf("no solution: %s\n", sf_error_message(f));
        if (n != 2 && n != 3) {
            fprintf(stderr, "nqueens_search: WRONG: %d queens do fit\n", n);
            bad = 1;
        }
    } else if (rc != 0) {
        fprintf(stderr, "nqueens_search: the search failed: %s (%s)\n", strerror(rc),
                sf_error_message(f) != NULL ? sf_error_message(f) : "no message");
        bad = 1;
    } else {
        struct branch *w = &s.branches[s.winner];
        int ok = valid(w->col, n);
        printf("first solution, from branch %d of %d:", s.winner + 1, s.nbranches);
        for (int r = 0; r < n; r++)
            printf(" %d", w->col[r]);
        printf("\n");
        for (int r = 0; r < n; r++) {
            for (int c = 0; c < n; c++)
                printf(c == w->col[r] ? " Q" : " .");
            printf("\n");
        }
        printf("solution valid: %s\n", ok ? "yes" : "NO");
        int later = s.nbranches - s.winner - 1;
        printf("branches: %d failed and handled, 1 won, %d cancelled\n", s.handled, later);
        printf("cancelled: %d before they started, %d while running, %d finished anyway, "
               "%d already done\n",
               s.never_started, s.stopped, s.finished_anyway, s.done_before);
        if (!ok || s.handled != s.winner ||
            s.never_started + s.stopped + s.finished_anyway + s.done_before != later) {
            fprintf(stderr, "nqueens_search: WRONG: an invalid solution or counts that do "
                    "not add up\n");
            bad = 1;
        }
    }
    if (s.errors) {
        fprintf(stderr, "nqueens_search: WRONG: %d branches ended in a way sf.h rules out\n",
                s.errors);
        bad = 1;
    }
    sf_release(f);
    free(s.branches);
    sf_shutdown();
    return bad;
}
