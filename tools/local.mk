# tools/local.mk - included by the top Makefile.am (paths are from the top
# directory). sftrace reads libsf traces; it is plain C11 and does not link
# libsf, so it is installed and can read a trace copied from anywhere.
# tools/bench/ has its own build (tools/bench/build/ is git-ignored).

# '=', not '+=': the top Makefile.am does not set bin_PROGRAMS, and automake
# refuses '+=' on a variable nobody set. Anything else installed as a program
# must be added here with '+=' after this line.
bin_PROGRAMS = tools/sftrace/sftrace
tools_sftrace_sftrace_SOURCES = tools/sftrace/sftrace.c

# The test compares sftrace's output on a hand-written trace with the output
# worked out by hand; test.sh finds its data through $srcdir (VPATH builds).
TESTS += tools/sftrace/test.sh
EXTRA_DIST += \
	tools/sftrace/test.sh \
	tools/sftrace/sample.trace \
	tools/sftrace/sample.expected
