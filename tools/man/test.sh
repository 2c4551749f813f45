#!/bin/sh
# tools/man/test.sh - TAP test of the generated man pages (tools/man/sf-man),
# run by `make check` from the build directory, where man/ holds the pages
# that `make` generated and tools/sftrace/sftrace the program.
#
# It reads sf.h and the pages on its own, not through sf-man's parser, so a
# bug there cannot hide itself: every SF_EXPORT function of sf.h has a page
# (or a .so page leading to one) whose SYNOPSIS holds its prototype exactly
# (whitespace aside); every page has NAME, SYNOPSIS and DESCRIPTION; a second
# run writes the same bytes; groff renders every page without a warning (with
# no groff, every request is one of the macros the pages use); sftrace.1 is
# made of the text `sftrace --help` prints and lists its every option; and a
# call group becomes one page with a .so page for each other call.
srcdir=${srcdir:-.}
gen=$srcdir/tools/man/sf-man
sf_h=$srcdir/include/sf.h
sftrace_c=$srcdir/tools/sftrace/sftrace.c
perl=${SF_PERL:-perl}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); echo "not ok $n - $1"; }
check() { # check DESCRIPTION COMMAND...: ok when COMMAND succeeds
    d=$1; shift
    if "$@"; then ok "$d"; else not_ok "$d"; fi
}

if [ ! -f man/pages.list ]; then
    echo "1..1"
    echo "not ok 1 - man/pages.list is missing: run make first"
    exit 0
fi

# A page's SYNOPSIS as plain text on one line: requests and font changes
# dropped, escapes undone, runs of blanks made one space.
synopsis() {
    sed -n '/^\.SH SYNOPSIS/,/^\.SH/p' "$1" | grep -v '^\.' |
        sed -e 's/\\f[BIRP]//g' -e 's/\\-/-/g' -e 's/\\e/\\/g' -e 's/^\\&//' | tr -s ' \n' '  '
}

# The page that documents NAME: man/man3/NAME.3, or where its .so leads.
page_of() {
    p=man/man3/$1.3
    if [ -f "$p" ] && so=$(sed -n 's/^\.so //p' "$p") && [ -n "$so" ]; then
        p=man/$so
    fi
    echo "$p"
}

# Every SF_EXPORT declaration of sf.h, one a line, SF_EXPORT dropped and its
# whitespace folded, as the SYNOPSIS shows it.
"$perl" -0ne 'while (/^SF_EXPORT\s+(.*?;)/msg) { (my $d = $1) =~ s/\s+/ /g; print "$d\n" }' \
    "$sf_h" >"$tmp/protos"
check "sf.h declares SF_EXPORT functions" test -s "$tmp/protos"
while IFS= read -r proto; do
    name=$(printf '%s\n' "$proto" | sed 's/^[^(]*[^a-zA-Z0-9_(]\([a-zA-Z0-9_]*\)(.*/\1/')
    page=$(page_of "$name")
    if [ -f "$page" ] && synopsis "$page" | grep -qF -- "$proto"; then
        ok "$name: $page has its prototype"
    else
        not_ok "$name: no page whose SYNOPSIS has: $proto"
    fi
done <"$tmp/protos"

# Every page, the .so pages aside (groff follows those below).
while read -r page; do
    f=man/$page
    grep -q '^\.so ' "$f" && continue
    missing=
    for s in NAME SYNOPSIS DESCRIPTION; do
        grep -q "^\.SH $s\$" "$f" || missing="$missing $s"
    done
    if [ -z "$missing" ]; then ok "$page has NAME, SYNOPSIS and DESCRIPTION"
    else not_ok "$page lacks:$missing"; fi
done <man/pages.list

# Determinism: two runs write the same bytes, and the same as man/ (so the
# pages installed are these), given the footer's source that man/ has.
src=$(sed -n 's/^\.TH sf 3 "" "\(.*\)" "libsf Manual"$/\1/p' man/man3/sf.3)
mkdir -p "$tmp/a" "$tmp/b"
"$perl" "$gen" --source "$src" -o "$tmp/a" "$sf_h" "$sftrace_c" >"$tmp/a/pages.list" &&
    "$perl" "$gen" --source "$src" -o "$tmp/b" "$sf_h" "$sftrace_c" >"$tmp/b/pages.list"
check "two runs of sf-man write the same pages" diff -r "$tmp/a" "$tmp/b"
check "the pages in man/ are those sf-man writes now" diff -r -x pages.stamp man "$tmp/a"


# Rendering: groff -ww -z prints nothing for a clean page. Without groff the
# same question is asked more simply: every request is a macro the pages use.
if command -v groff >/dev/null 2>&1; then
    while read -r page; do
        warn=$(cd man && groff -man -ww -z "$page" 2>&1)
        if [ -z "$warn" ]; then ok "groff renders $page without a warning"
        else not_ok "groff on $page: $warn"; fi
    done <man/pages.list
else
    while read -r page; do
        bad=$(grep '^\.' "man/$page" | grep -v -E '^\.(\\"|(TH|SH|SS|PP|TP|IP|B|BR|nf|fi|EX|EE|in|br|so)( |$))' | head -1)
        if [ -z "$bad" ]; then ok "$page uses only known macros (no groff here)"
        else not_ok "$page: unknown request: $bad"; fi
    done <man/pages.list
fi

# sftrace(1): sf-man's reading of usage() is what the program prints, and
# every option of that text is an item of OPTIONS.
if [ -x tools/sftrace/sftrace ]; then
    tools/sftrace/sftrace --help >"$tmp/help"
    "$perl" "$gen" --usage "$sftrace_c" >"$tmp/usage"
    check "sf-man reads sftrace.c's usage() as sftrace --help prints it" \
        cmp -s "$tmp/help" "$tmp/usage"
    sed -n '/^\.SH OPTIONS/,/^\.SH/p' man/man1/sftrace.1 | sed -e 's/\\f[BIRP]//g' -e 's/\\-/-/g' \
        >"$tmp/options"
    for o in $(grep -o -E -- '(^|[^a-z-])--[a-z][a-z-]*' "$tmp/help" | sed 's/^[^-]//' | sort -u); do
        if grep -q -E -- "(^|[ ,])$o( |,|\$)" "$tmp/options"; then ok "sftrace.1 OPTIONS has $o"
        else not_ok "sftrace.1 OPTIONS lacks $o"; fi
    done
else
    not_ok "tools/sftrace/sftrace is not built"
fi

# A call group: two declarations under one comment make one page, named
# after the first, that shows both, and a .so page for the second.
cat >"$tmp/g.h" <<'EOF'
/*
 * sf.h - a header with a group.
 */
/* Gets the two of them. Returns 0. */
SF_EXPORT int sf_one(int a);
SF_EXPORT int sf_two(int a,
                     int b);
EOF
"$perl" "$gen" -o "$tmp/g" "$tmp/g.h" >/dev/null
check "a group's second call is a .so page" \
    test "$(cat "$tmp/g/man3/sf_two.3" 2>/dev/null)" = ".so man3/sf_one.3"
check "a group's page is named for every call of the group" \
    grep -q '^sf_one, sf_two \\- ' "$tmp/g/man3/sf_one.3"
synopsis "$tmp/g/man3/sf_one.3" >"$tmp/g.synopsis"
check "a group's page shows every prototype of the group" \
    sh -c "grep -qF 'int sf_one(int a);' '$tmp/g.synopsis' &&
           grep -qF 'int sf_two(int a, int b);' '$tmp/g.synopsis'"

echo "1..$n"
