# tools/install/local.mk - included by the top Makefile.am (paths are from
# the top directory): what `make install` adds around the library and
# header (pkg-config's sf.pc, the CMake package, the examples), and `make
# installcheck`, which builds programs against the installed tree.

pkgconfigdir = $(libdir)/pkgconfig
pkgconfig_DATA = sf.pc

# The CMake package: sfConfig.cmake (targets sf::sf, sf::sf_shared,
# sf::sf_static) and its version file, with the install's directories
# written in by make - not by configure, which leaves ${prefix} in them
# unexpanded.
cmakedir = $(libdir)/cmake/sf
cmake_DATA = tools/install/sfConfig.cmake tools/install/sfConfigVersion.cmake
CLEANFILES += $(cmake_DATA)
EXTRA_DIST += tools/install/sfConfig.cmake.in tools/install/sfConfigVersion.cmake.in
tools/install/sfConfig.cmake tools/install/sfConfigVersion.cmake: Makefile
	$(AM_V_GEN)$(MKDIR_P) tools/install && \
	sed -e 's|@libdir[@]|$(libdir)|g' -e 's|@includedir[@]|$(includedir)|g' \
	    -e 's|@PACKAGE_VERSION[@]|$(PACKAGE_VERSION)|g' -e 's|@SIZEOF_VOID_P[@]|$(SIZEOF_VOID_P)|g' \
	    $(srcdir)/$@.in >$@.tmp && mv $@.tmp $@
tools/install/sfConfig.cmake: $(srcdir)/tools/install/sfConfig.cmake.in
tools/install/sfConfigVersion.cmake: $(srcdir)/tools/install/sfConfigVersion.cmake.in

# The samples' sources, installed as examples with a Makefile that builds
# them against the installed libsf through pkg-config.
if SF_SAMPLES
examplesdir = $(docdir)/examples
examples_DATA = samples/fib.c samples/meh.c samples/nqueens_search.c \
	samples/mandelbrot.c samples/batches.c \
	samples/sfpiece.c samples/reverb.c samples/granular.c samples/stream.c samples/jack.c
examplesaudiodir = $(examplesdir)/audio
examplesaudio_DATA = samples/audio/args.h \
	samples/audio/fft.h samples/audio/fft.c \
	samples/audio/reverb.h samples/audio/reverb.c \
	samples/audio/granular.h samples/audio/granular.c \
	samples/audio/sound.h samples/audio/sound.c
install-examples-makefile:
	$(MKDIR_P) '$(DESTDIR)$(examplesdir)'
	$(INSTALL_DATA) $(srcdir)/tools/install/examples.mk '$(DESTDIR)$(examplesdir)/Makefile'
uninstall-examples-makefile:
	rm -f '$(DESTDIR)$(examplesdir)/Makefile'
else
install-examples-makefile:
uninstall-examples-makefile:
endif
install-data-local: install-examples-makefile
uninstall-local: uninstall-examples-makefile
.PHONY: install-examples-makefile uninstall-examples-makefile
EXTRA_DIST += tools/install/examples.mk

# make installcheck: programs built against the installed tree with
# pkg-config and with CMake, run with an empty environment; the man pages,
# the exports' versions and sftrace --png from the prefix (its top comment).
installcheck-local:
	srcdir='$(srcdir)' CC='$(CC)' CXX='$(CXX)' \
	  prefix='$(prefix)' bindir='$(bindir)' libdir='$(libdir)' includedir='$(includedir)' \
	  mandir='$(mandir)' docdir='$(docdir)' \
	  samples='$(enable_samples)' tools='$(enable_tools)' cxx17='$(sf_cv_cxx17)' python='$(SF_PYTHON)' \
	  mpi='$(have_mpi)' mpiexec='$(MPIEXEC)' \
	  $(SHELL) $(srcdir)/tools/install/installcheck
EXTRA_DIST += tools/install/installcheck tools/install/consumer.c tools/install/consumer.cpp \
	tools/install/CMakeLists.txt tools/install/consumer_mpi.c

# make check: the exports of libsf.so against sf.h, and their version.
TESTS += tests/test-exports.sh
EXTRA_DIST += tests/test-exports.sh
