# sf_pkg.m4 - finding an optional library through pkg-config, without
# pkg-config's own pkg.m4: a machine with only a compiler, make and autotools
# lacks pkg.m4 (Debian ships it with pkgconf), and autoreconf must not need
# it to build the library, which uses no optional library.

# SF_PKG(VAR, MODULE, [IF-FOUND], [IF-NOT-FOUND])
# ----------------------------------------------
# Sets VAR_CFLAGS and VAR_LIBS (AC_SUBST) from `pkg-config MODULE`, or takes
# them as the user gave them (./configure VAR_CFLAGS=... VAR_LIBS=...): given
# either, MODULE counts as found. Without pkg-config, a module not given by
# hand is not found, and the summary's reason says to install it.
AC_DEFUN([SF_PKG],
[AC_REQUIRE([SF_PROG_PKG_CONFIG])dnl
AC_ARG_VAR([$1][_CFLAGS], [C compiler flags for $2, instead of pkg-config's])dnl
AC_ARG_VAR([$1][_LIBS], [linker flags for $2, instead of pkg-config's])dnl
AC_MSG_CHECKING([for $2])
AS_IF([test -n "$$1[]_CFLAGS$$1[]_LIBS"],
  [sf_pkg_found="yes (given)"],
  [test -n "$PKG_CONFIG" && $PKG_CONFIG --exists --print-errors "$2" >&AS_MESSAGE_LOG_FD 2>&1],
  [$1[]_CFLAGS=`$PKG_CONFIG --cflags "$2" 2>/dev/null`
   $1[]_LIBS=`$PKG_CONFIG --libs "$2" 2>/dev/null`
   sf_pkg_found=yes],
  [sf_pkg_found=no])
AC_MSG_RESULT([$sf_pkg_found])
AS_IF([test "x$sf_pkg_found" != xno], [$3], [$4])dnl
])

# SF_PROG_PKG_CONFIG
# ------------------
# PKG_CONFIG: pkg-config (or the host's prefixed one when cross-compiling),
# or empty.
AC_DEFUN([SF_PROG_PKG_CONFIG],
[AC_ARG_VAR([PKG_CONFIG], [path to pkg-config])dnl
AS_IF([test -z "$PKG_CONFIG"], [AC_PATH_TOOL([PKG_CONFIG], [pkg-config])])dnl
])
