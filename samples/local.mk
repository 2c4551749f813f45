# samples/local.mk - included by the top Makefile.am (paths are from the top
# directory). The samples are demos and smoke tests of the public API, so they
# are built but not installed.

noinst_PROGRAMS += samples/fib samples/meh

samples_fib_SOURCES = samples/fib.c
samples_fib_LDADD = libsf.la

samples_meh_SOURCES = samples/meh.c
samples_meh_LDADD = libsf.la
