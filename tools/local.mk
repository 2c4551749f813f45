# tools/local.mk - included by the top Makefile.am (paths are from the top
# directory). sftrace reads libsf traces; it is plain C11 and does not link
# libsf, so it is installed and can read a trace copied from anywhere.
# tools/bench/ has its own build (tools/bench/build/ is git-ignored).

# sftrace is installed unless --disable-tools; the tests build it for
# themselves when it is not (configure: SF_TOOLS, SF_SFTRACE). Both need
# json-c.
if SF_SFTRACE
if SF_TOOLS
bin_PROGRAMS = tools/sftrace/sftrace
pkglibexec_SCRIPTS = tools/sftrace/sftrace-plot
else
check_PROGRAMS += tools/sftrace/sftrace
check_SCRIPTS = tools/sftrace/sftrace-plot
endif
# sftrace takes the trace format, and the parser of its argument specs, from
# the runtime's trace_format.h, a freestanding header (macros and one static
# inline function: nothing to link); it is listed in SOURCES so that `make
# dist` ships it with sftrace.
tools_sftrace_sftrace_SOURCES = tools/sftrace/sftrace.c runtime/sched/trace_format.h \
	tools/sftrace/schedule.h tools/sftrace/schedule.c
tools_sftrace_sftrace_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/runtime \
	-I$(top_builddir)/tools/sftrace
# sftrace finds sftrace-plot from its own file's directory (sftrace.c,
# plot_path): next to it in the build tree, ../libexec/libsf/ once installed
# under any prefix. plot-path.h holds the configured pkglibexecdir for a
# --libexecdir of its own. A header, not a -D flag: make does not see a flag
# change, so a new --prefix left sftrace.o with the old path. The stamp is
# remade with the Makefile, and the header rewritten only when its text
# changes, so that sftrace.o is rebuilt only then.
nodist_tools_sftrace_sftrace_SOURCES = tools/sftrace/plot-path.h
tools/sftrace/sftrace-sftrace.$(OBJEXT): tools/sftrace/plot-path.h
tools/sftrace/plot-path.h: tools/sftrace/plot-path.stamp
	@:
tools/sftrace/plot-path.stamp: Makefile
	$(AM_V_GEN)$(MKDIR_P) tools/sftrace && \
	echo '#define SFTRACE_PLOT "$(pkglibexecdir)/sftrace-plot"' >tools/sftrace/plot-path.tmp && \
	if cmp -s tools/sftrace/plot-path.tmp tools/sftrace/plot-path.h; then \
	rm -f tools/sftrace/plot-path.tmp; else mv tools/sftrace/plot-path.tmp tools/sftrace/plot-path.h; fi && \
	touch $@
CLEANFILES += tools/sftrace/plot-path.h tools/sftrace/plot-path.stamp
tools_sftrace_sftrace_CFLAGS = $(AM_CFLAGS) $(JSONC_CFLAGS)
tools_sftrace_sftrace_LDADD = $(JSONC_LIBS) -lm

# sftrace-plot draws the schedule that sftrace writes as JSON Lines, with
# matplotlib: sftrace-plot.py with the python3 configure found (SF_PYTHON,
# the one with matplotlib) in its first line; without one, the python3 on
# PATH, and the script says that matplotlib is missing.
CLEANFILES += tools/sftrace/sftrace-plot
EXTRA_DIST += tools/sftrace/sftrace-plot.py tools/sftrace/README.md
tools/sftrace/sftrace-plot: tools/sftrace/sftrace-plot.py Makefile
	$(AM_V_GEN)$(MKDIR_P) tools/sftrace && py='$(SF_PYTHON)' && \
	sed "1s|.*|#!$${py:-/usr/bin/env python3}|" $(srcdir)/tools/sftrace/sftrace-plot.py >$@.tmp && \
	chmod +x $@.tmp && mv $@.tmp $@

# The test compares sftrace's output on a hand-written trace with the output
# worked out by hand, and docs/trace-format.md's tables with sftrace --events;
# test.sh finds its data through $srcdir (VPATH builds).
TESTS += tools/sftrace/test.sh
EXTRA_DIST += \
	tools/sftrace/test.sh \
	tools/sftrace/sample.trace \
	tools/sftrace/cancelled.trace \
	tools/sftrace/sample.expected \
	tools/sftrace/sample.counts \
	tools/sftrace/sample.json \
	tools/sftrace/sample.json.expected \
	tools/sftrace/sample.schedule \
	tools/sftrace/sample.json.schedule \
	tools/sftrace/sample.profile \
	tools/sftrace/sample.json.profile \
	tools/sftrace/waits.trace \
	tools/sftrace/waits.expected \
	tools/sftrace/waits.json \
	tools/sftrace/waits.json.expected \
	docs/trace-format.md

# A libFuzzer target for sftrace's readers, built and run by hand or by
# .ci/run with clang outside automake: tools/sftrace/fuzz-run [SECONDS].
EXTRA_DIST += tools/sftrace/fuzz.c tools/sftrace/fuzz-run

endif

# The layering of runtime/ (runtime/LAYERS, one folder per layer), proved on
# the sources and on the objects just built: every file in its layer's
# folder, no include, call or callback to a higher layer or to an unlisted
# unit of the same one, no static function name in two files, and
# ARCHITECTURE.md's table the one LAYERS makes.
TESTS += tools/check-layers
EXTRA_DIST += tools/check-layers runtime/LAYERS

# check-layers' source checks each catch a violation planted in a copy of
# runtime/ (an include upward from every folder, a file in the wrong
# folder, a static name twice, an unlisted slot, a stale ARCHITECTURE.md
# table) and pass the copy as it is.
TESTS += tools/check-layers-test.sh
EXTRA_DIST += tools/check-layers-test.sh

# A long run of tests/test_stress (SF_STRESS_SECONDS); it builds nothing.
EXTRA_DIST += tools/soak

# runtime/platform/fiber.c on aarch64 under qemu-user, with a standalone driver (no
# Check there); run by hand, it needs a cross compiler (its top comment).
EXTRA_DIST += tools/check-fiber-cross tools/fiber_cross.c

# The whole suite on aarch64 under qemu-user, each failure checked against
# the x86-64 program under qemu-x86_64; run by hand (tools/deps --arm64).
EXTRA_DIST += tools/check-arm64
