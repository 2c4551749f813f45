#!/bin/sh
# The typed light-task macros of sf.h (SF_LIGHT_TASK, SF_LIGHT_VOID_TASK,
# SF_SPAWN, SF_SYNC, SF_LIGHT_RUN) as a program compiles them: tasks of one
# to six parameters, structs, void, a task the program never spawns, with
# -Wall -Wextra -Wpedantic -Werror in C11 and C++17 - no warning of
# libsf's making reaches a program - and a task whose parameters or value
# do not fit a slot (SF_LIGHT_BYTES) refused at compile time, naming why.
# Their behaviour at run time is test_light's. TAP; CC and CXX from make.
set -u
srcdir=${srcdir:-.}
cc=${CC:-cc}
cxx=${CXX:-}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/test-light-macros.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
echo "1..4"

cat >"$tmp/tasks.c" <<'C'
#include <sf.h>
#include <stdint.h>
struct pair { long a, b; };
SF_LIGHT_TASK(long, fib, long, n);
static long fib(sf_worker *w, long n)
{
    if (n < 2)
        return n;
    SF_SPAWN(w, fib, n - 1);
    long b = fib(w, n - 2);
    return SF_SYNC(w, fib) + b;
}
SF_LIGHT_TASK(struct pair, six, char, a, short, b, int, c, long, d, float, e, double, f);
static struct pair six(sf_worker *w, char a, short b, int c, long d, float e, double f)
{
    (void)w;
    struct pair p = {a + b + c + d, (long)(e + f)};
    return p;
}
SF_LIGHT_VOID_TASK(walk, struct pair, range);
static void walk(sf_worker *w, struct pair range)
{
    if (range.b - range.a < 2)
        return;
    long m = range.a + (range.b - range.a) / 2;
    struct pair left = {range.a, m}, right = {m, range.b};
    SF_SPAWN(w, walk, left);
    walk(w, right);
    SF_SYNC(w, walk);
}
SF_LIGHT_TASK(uint64_t, never_spawned, uint64_t, x);
static uint64_t never_spawned(sf_worker *w, uint64_t x)
{
    (void)w;
    return x;
}
int run_all(void);
int run_all(void)
{
    long f;
    struct pair p, r = {0, 100};
    if (SF_LIGHT_RUN(fib, 10, &f) != 0 || SF_LIGHT_RUN(six, 1, 2, 3, 4, 5.0f, 6.0, &p) != 0)
        return -1;
    return SF_LIGHT_RUN(walk, r);
}
C
flags="-Wall -Wextra -Wpedantic -Werror -I$srcdir/include"
if $cc -std=c11 $flags -c "$tmp/tasks.c" -o "$tmp/tasks.o" 2>"$tmp/c.err"; then
    echo "ok 1 - $cc -std=c11 compiles typed tasks without a warning"
else
    echo "not ok 1 - $cc -std=c11 on typed tasks"
    sed 's/^/# /' "$tmp/c.err"
fi
if [ -z "$cxx" ] || ! command -v "${cxx%% *}" >/dev/null 2>&1; then
    echo "ok 2 # SKIP no C++ compiler here"
else
    cp "$tmp/tasks.c" "$tmp/tasks.cpp"
    if $cxx -std=c++17 $flags -c "$tmp/tasks.cpp" -o "$tmp/tasks-cpp.o" 2>"$tmp/cxx.err"; then
        echo "ok 2 - $cxx -std=c++17 compiles typed tasks without a warning"
    else
        echo "not ok 2 - $cxx -std=c++17 on typed tasks"
        sed 's/^/# /' "$tmp/cxx.err"
    fi
fi
# refused TEST NAME WHAT DECLARATION: the declaration must not compile, and
# the error must name WHAT.
refused() {
    printf '#include <sf.h>\nstruct big { char c[48]; };\n%s\n' "$4" >"$tmp/$2.c"
    if $cc -std=c11 -I"$srcdir/include" -c "$tmp/$2.c" -o "$tmp/$2.o" 2>"$tmp/$2.err"; then
        echo "not ok $1 - $2 compiled"
    elif grep -q "$3" "$tmp/$2.err"; then
        echo "ok $1 - $2 is refused, naming $3"
    else
        echo "not ok $1 - $2 is refused, but not naming $3"
        sed 's/^/# /' "$tmp/$2.err"
    fi
}
refused 3 "parameters past SF_LIGHT_BYTES" big_sf_args_fit_ \
    "SF_LIGHT_TASK(int, big, long, a, long, b, long, c, long, d, long, e, long, f);"
refused 4 "a value past SF_LIGHT_BYTES" big_sf_fits_ "SF_LIGHT_TASK(struct big, big, int, a);"
