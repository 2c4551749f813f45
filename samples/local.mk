# samples/local.mk - included by the top Makefile.am (paths are from the top
# directory). The samples are demos and smoke tests of the public API, so they
# are built but not installed.

noinst_PROGRAMS += samples/fib samples/meh samples/nqueens_search samples/batches

samples_fib_SOURCES = samples/fib.c
samples_fib_LDADD = libsf.la

samples_meh_SOURCES = samples/meh.c
samples_meh_LDADD = libsf.la

samples_nqueens_search_SOURCES = samples/nqueens_search.c
samples_nqueens_search_LDADD = libsf.la

samples_batches_SOURCES = samples/batches.c
samples_batches_LDADD = libsf.la

# make check runs nqueens_search and checks its output: exact where the
# schedule cannot change it (SF_THREADS=1), its invariants elsewhere.
TESTS += samples/test-nqueens_search.sh
EXTRA_DIST += samples/test-nqueens_search.sh
