# tools/man/local.mk - included by the top Makefile.am (paths are from the
# top directory). The man pages are generated at build time by
# tools/man/sf-man from include/sf.h (section 3: one page per call or call
# group, .so pages for a group's other calls, and sf(3)) and from the usage
# text of tools/sftrace/sftrace.c (sftrace(1)), so they cannot drift from
# what they document.
#
# Which pages exist follows from sf.h, so automake cannot list them in
# man3_MANS: one stamp rule writes them all under man/ in the build
# directory (man/man3/*.3, man/man1/sftrace.1) with their names in
# man/pages.list, and the install and uninstall hooks below go by that list.

# Perl, which automake itself needs, so any machine that builds from git
# has it; `make SF_PERL=/path/to/perl` picks another.
SF_PERL = perl

sf_man_sources = $(srcdir)/tools/man/sf-man $(srcdir)/include/sf.h \
	$(srcdir)/tools/sftrace/sftrace.c

# The whole of man/ is rewritten each time, so a page whose call left sf.h
# does not linger; the stamp is touched last, so an interrupted run redoes it.
man/pages.stamp: $(sf_man_sources)
	$(AM_V_GEN)rm -rf man && $(MKDIR_P) man && \
	$(SF_PERL) $(srcdir)/tools/man/sf-man --source '$(PACKAGE_NAME) $(PACKAGE_VERSION)' \
		-o man $(srcdir)/include/sf.h $(srcdir)/tools/sftrace/sftrace.c >man/pages.tmp && \
	mv man/pages.tmp man/pages.list && touch $@

all-local: man/pages.stamp

# Every page goes to $(mandir)/manN as the list names it (man1/sftrace.1,
# man3/sf_do.3, ...); the .so pages are installed as they are, which man(1)
# resolves against $(mandir). sftrace(1) only goes with sftrace
# (--disable-tools installs neither).
install-data-local: install-sf-man
install-sf-man: man/pages.stamp
	@$(NORMAL_INSTALL)
	@while read page; do \
	  case $$page in man1/sftrace.1) test '$(enable_tools)' = yes || continue ;; esac; \
	  dir='$(DESTDIR)$(mandir)'/$${page%/*}; \
	  test -d "$$dir" || $(MKDIR_P) "$$dir" || exit 1; \
	  echo " $(INSTALL_DATA) man/$$page '$$dir'"; \
	  $(INSTALL_DATA) "man/$$page" "$$dir" || exit 1; \
	done <man/pages.list

uninstall-local: uninstall-sf-man
uninstall-sf-man: man/pages.stamp
	@$(NORMAL_UNINSTALL)
	@while read page; do \
	  echo " rm -f '$(DESTDIR)$(mandir)/$$page'"; \
	  rm -f '$(DESTDIR)$(mandir)'/"$$page"; \
	done <man/pages.list

clean-local: clean-sf-man
clean-sf-man:
	-rm -rf man

.PHONY: install-sf-man uninstall-sf-man clean-sf-man

# The test checks the pages just built against sf.h and `sftrace --help`.
TESTS += tools/man/test.sh
EXTRA_DIST += tools/man/sf-man tools/man/test.sh
