#!/usr/bin/env bash
# scripts/package.sh — build the Debian package postgresql-15-weir, install
# it, and run the demo's checks against the installed package.
#
#   scripts/package.sh                  # build, install, check, purge
#   WEIR_PACKAGE_KEEP=1 scripts/package.sh   # ... and leave it installed
#
# The steps, numbered as in its output:
# 1. copies the checkout without build products (the files git knows, with
#    their uncommitted edits, or a tar copy without *.o, *.so, test output
#    when there is no git) into a temporary directory;
# 2. installs the build dependencies (dpkg-dev, then debian/control's
#    Build-Depends with `apt-get build-dep`) unless they are there or
#    WEIR_SKIP_APT=1; checks that debian/changelog has weir.control's version;
# 3. runs `dpkg-buildpackage -us -uc -b` in the copy: debian/rules builds
#    with pg_buildext for the PostgreSQL versions of debian/pgversions (15);
# 4. saves the files of the system's PostgreSQL 15 that the package will
#    replace (a `make install` of weir writes the same paths), then installs
#    the package (`apt-get install ./postgresql-15-weir_*.deb`, `dpkg -i`
#    under WEIR_SKIP_APT=1);
# 5. checks that the installed files are the package's (dpkg -S, dpkg -L,
#    dpkg --verify);
# 6. starts a throwaway cluster with weir preloaded as the postgres OS user,
#    creates the extension, checks its version and the library the server
#    maps, and runs Debian's test of the installed package
#    (debian/tests/pipeline-smoke, an autopkgtest);
# 7. runs scripts/demo.sh against the installed package
#    (WEIR_USE_INSTALLED=1): producers read back exactly once, a window
#    pipeline against SQL before and after kill -9 of its worker, a capture;
# 8. purges the package and puts the saved files back, unless
#    WEIR_PACKAGE_KEEP=1, or the package was installed before the script
#    ran (it then stays installed, as this build).
# The last line is `N passed, N failed`; the exit status is non-zero if any
# check failed.  Needs root (or sudo): it installs packages.
#
# Knobs: WEIR_SKIP_APT=1 (never call apt-get), WEIR_PACKAGE_KEEP=1,
#        WEIR_MAKE_JOBS (build parallelism, default: the number of cores).

# shellcheck disable=SC2317  # functions run indirectly (trap)
set -euo pipefail

PASSED=0
FAILED=0
SUMMARY_PRINTED=0
START=$(date +%s)
declare -a FAILURES=()

# The package installs into the system's PostgreSQL 15, whatever PG_CONFIG
# the caller builds with (scripts/test.sh may use a private copy).
PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config
export PG_CONFIG
# Only the helpers of setup.sh: nothing is built or installed from the tree.
# shellcheck source=scripts/setup.sh
WEIR_USE_INSTALLED=1 . "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

PACKAGE=postgresql-15-weir
VERSION="$(sed -n "s/^default_version *= *'\(.*\)'.*/\1/p" "$WEIR_SRC/weir.control")"
ARCH="$(dpkg --print-architecture)"
WORK="$(mktemp -d /tmp/weir-package.XXXXXX)"
TREE="$WORK/weir-$VERSION"
DEB="$WORK/${PACKAGE}_${VERSION}_${ARCH}.deb"
SAVED="$WORK/replaced-files.tar"
INSTALLED_BEFORE=0
INSTALLED_BY_US=0
CLUSTER_DIR="$WORK/cluster"

pass() {
	echo "    PASS  $1"
	PASSED=$((PASSED + 1))
}
fail() {
	echo "    FAIL  $1${2:+ ($2)}"
	FAILED=$((FAILED + 1))
	FAILURES+=("$1")
}
# check DESCRIPTION command...: the command's exit status decides
check() {
	local desc="$1"
	shift
	if "$@" >/dev/null 2>&1; then
		pass "$desc"
	else
		fail "$desc"
	fi
}
step() {
	echo
	echo "=== $*"
}

is_installed() {
	dpkg-query -W -f='${Status}' "$PACKAGE" 2>/dev/null | grep -q 'install ok installed'
}

# Remove the package and put back the files it had replaced.  Runs once,
# from the main flow or, if the script stops early, from the exit trap.
remove_package() {
	[ "$INSTALLED_BY_US" = 1 ] || return 0
	INSTALLED_BY_US=0
	if [ "${WEIR_SKIP_APT:-0}" = 1 ]; then
		weir_as_root dpkg --purge "$PACKAGE" >"$WORK/purge.log" 2>&1 || true
	else
		weir_as_root env DEBIAN_FRONTEND=noninteractive \
			apt-get purge -y -qq "$PACKAGE" >"$WORK/purge.log" 2>&1 || true
	fi
	if [ -s "$SAVED" ]; then
		weir_as_root tar -C / -xpf "$SAVED"
	fi
}

on_exit() {
	local rc=$?
	weir_cluster_stop
	remove_package
	if [ "$SUMMARY_PRINTED" = 0 ]; then
		[ "$FAILED" -gt 0 ] || FAILED=1
		echo "package.sh stopped early (exit status $rc); build and logs kept in $WORK"
		echo "$PASSED passed, $FAILED failed"
		[ "$rc" -ne 0 ] || rc=1
	fi
	exit "$rc"
}
trap on_exit EXIT
trap 'exit 130' INT TERM

# ---------------------------------------------------------------------------
step "1. a clean copy of the tree in $TREE"
mkdir -p "$TREE"
if git -C "$WEIR_SRC" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	# the files git tracks or would track (uncommitted edits included, no
	# build products: .gitignore lists them); files deleted but not yet
	# committed are skipped
	(cd "$WEIR_SRC" && git ls-files -z --cached --others --exclude-standard |
		while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
		tar --null -T - -cf -) | tar -C "$TREE" -xf -
else
	tar -C "$WEIR_SRC" --exclude-vcs \
		--exclude=./tmp_regress --exclude=./tmp_isolation --exclude=./tmp_check \
		--exclude=./results --exclude=./output_iso --exclude=./log \
		--exclude=./regression.diffs --exclude=./regression.out \
		--exclude=./demo_data --exclude='*.o' --exclude='*.so' --exclude='*.bc' \
		--exclude=./debian/.debhelper --exclude=./debian/"$PACKAGE" \
		-cf - . | tar -C "$TREE" -xf -
fi

# ---------------------------------------------------------------------------
step "2. build dependencies"
if ! command -v dpkg-buildpackage >/dev/null 2>&1 && [ "${WEIR_SKIP_APT:-0}" != 1 ]; then
	weir_as_root apt-get update -qq || echo "--- apt-get update reported errors; trying anyway"
	weir_as_root env DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -qq --no-install-recommends build-essential dpkg-dev
fi
if (cd "$TREE" && dpkg-checkbuilddeps) >/dev/null 2>&1; then
	echo "--- all installed"
elif [ "${WEIR_SKIP_APT:-0}" = 1 ]; then
	echo "--- missing, and WEIR_SKIP_APT=1: dpkg-buildpackage will say which"
else
	weir_as_root apt-get update -qq || echo "--- apt-get update reported errors; trying anyway"
	(cd "$TREE" && weir_as_root env DEBIAN_FRONTEND=noninteractive \
		apt-get build-dep -y -qq --no-install-recommends ./)
fi

CHANGELOG_VERSION="$(cd "$TREE" && dpkg-parsechangelog -S Version)"
if [ "$CHANGELOG_VERSION" = "$VERSION" ]; then
	pass "debian/changelog's version ($CHANGELOG_VERSION) is weir.control's default_version"
else
	fail "debian/changelog's version is weir.control's default_version" \
		"changelog $CHANGELOG_VERSION, weir.control $VERSION"
fi

# ---------------------------------------------------------------------------
step "3. dpkg-buildpackage -us -uc -b (log: $WORK/build.log)"
BUILD_START=$(date +%s)
if (cd "$TREE" && dpkg-buildpackage -us -uc -b -j"${WEIR_MAKE_JOBS:-$(nproc)}") \
	>"$WORK/build.log" 2>&1; then
	pass "dpkg-buildpackage built the package ($(($(date +%s) - BUILD_START)) s)"
else
	fail "dpkg-buildpackage built the package"
	tail -n 60 "$WORK/build.log"
	exit 1
fi
check "it made $(basename "$DEB")" test -f "$DEB"
WARNINGS=$(grep -c 'warning:' "$WORK/build.log" || true)
if [ "$WARNINGS" -eq 0 ]; then
	pass "the build log has no warning (compiler, dpkg tools)"
else
	fail "the build log has no warning (compiler, dpkg tools)" "$WARNINGS"
	grep -m 20 'warning:' "$WORK/build.log"
fi
DEPENDS="$(dpkg-deb -f "$DEB" Depends)"
echo "--- Depends: $DEPENDS"
check "it depends on postgresql-15" grep -qE '(^|, )postgresql-15( |,|$)' <<<"$DEPENDS"
check "it depends on libpq5" grep -qE '(^|, )libpq5( |,|$)' <<<"$DEPENDS"

# ---------------------------------------------------------------------------
step "4. install the package"
if is_installed; then
	INSTALLED_BEFORE=1
	echo "--- $PACKAGE is installed already: it is replaced by this build and stays"
else
	# The regular files of the package that exist on the system now (from a
	# `make install`): saved, to be put back after the purge.
	dpkg-deb --fsys-tarfile "$DEB" | tar -tf - | sed -n 's|^\./|/|p' |
		while IFS= read -r f; do [ -f "$f" ] && printf '%s\n' "${f#/}"; done >"$WORK/replaced-files"
	if [ -s "$WORK/replaced-files" ]; then
		tar -C / -cpf "$SAVED" -T "$WORK/replaced-files"
		echo "--- saved the $(wc -l <"$WORK/replaced-files") files it replaces in $SAVED"
	fi
fi
INSTALLED_BY_US=$((1 - INSTALLED_BEFORE))
if [ "${WEIR_SKIP_APT:-0}" = 1 ]; then
	weir_as_root dpkg -i "$DEB" >"$WORK/install.log" 2>&1 || true
else
	weir_as_root env DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -qq --no-install-recommends "$DEB" >"$WORK/install.log" 2>&1 || true
fi
if is_installed; then
	pass "$PACKAGE $VERSION is installed"
else
	fail "$PACKAGE $VERSION is installed"
	cat "$WORK/install.log"
	exit 1
fi

# ---------------------------------------------------------------------------
step "5. the installed files are the package's"
PKGLIB="$("$PG_CONFIG" --pkglibdir)"
SHAREDIR="$("$PG_CONFIG" --sharedir)/extension"
echo "--- dpkg -S $PKGLIB/weir.so: $(dpkg -S "$PKGLIB/weir.so" 2>&1)"
check "dpkg -S says $PKGLIB/weir.so belongs to $PACKAGE" \
	grep -qx "$PACKAGE: $PKGLIB/weir.so" <(dpkg -S "$PKGLIB/weir.so")
dpkg -L "$PACKAGE" >"$WORK/files"
check "dpkg -L $PACKAGE lists weir.so" grep -qx "$PKGLIB/weir.so" "$WORK/files"
check "dpkg -L $PACKAGE lists weir.control" grep -qx "$SHAREDIR/weir.control" "$WORK/files"
# every SQL script the Makefile installs (DATA), the upgrade scripts too
read -ra DATA_FILES <<<"$(sed -n 's/^DATA *= *//p' "$TREE/Makefile")"
for f in "${DATA_FILES[@]}"; do
	check "dpkg -L $PACKAGE lists $f" grep -qx "$SHAREDIR/$f" "$WORK/files"
done
check "dpkg --verify: every installed file has the package's checksum" \
	weir_as_root dpkg --verify "$PACKAGE"
check "the installed weir.control says default_version '$VERSION'" \
	grep -qx "default_version = '$VERSION'" "$SHAREDIR/weir.control"

# ---------------------------------------------------------------------------
step "6. a fresh cluster with weir preloaded, run by the postgres OS user"
mkdir -p "$CLUSTER_DIR"
chmod 755 "$WORK"
weir_cluster_start "$CLUSTER_DIR" "$(weir_free_port 5433 5499)"
weir_psql -c "CREATE EXTENSION weir"
check "CREATE EXTENSION weir installs version $VERSION" \
	grep -qx "$VERSION" <(weir_psql -At -c "SELECT extversion FROM pg_extension WHERE extname = 'weir'")
LAUNCHER_PID="$(weir_psql -At -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'weir launcher'")"
# the server maps the packaged library, not one from some other directory
check "the weir launcher (pid ${LAUNCHER_PID:-none}) runs $PKGLIB/weir.so" \
	weir_as_root grep -q " $PKGLIB/weir.so\$" "/proc/${LAUNCHER_PID:-0}/maps"
weir_cluster_stop

# Debian's own test of the installed package (autopkgtest), run directly:
# pg_virtualenv's cluster, a window pipeline against GROUP BY.
if (cd "$WORK" && "$TREE/debian/tests/pipeline-smoke") >"$WORK/autopkgtest.log" 2>&1; then
	pass "debian/tests/pipeline-smoke (autopkgtest): the sink equals GROUP BY"
else
	fail "debian/tests/pipeline-smoke (autopkgtest): the sink equals GROUP BY"
	tail -n 30 "$WORK/autopkgtest.log"
fi

# ---------------------------------------------------------------------------
step "7. the demo's checks against the installed package (log: $WORK/demo.log)"
DEMO_START=$(date +%s)
set +e
(cd "$WORK" && WEIR_USE_INSTALLED=1 bash "$TREE/scripts/demo.sh") >"$WORK/demo.log" 2>&1
DEMO_RC=$?
set -e
grep -E '^    (PASS|FAIL)  ' "$WORK/demo.log" || true
DEMO_PASSED=$(grep -cE '^    PASS  ' "$WORK/demo.log" || true)
DEMO_FAILED=$(grep -cE '^    FAIL  ' "$WORK/demo.log" || true)
PASSED=$((PASSED + DEMO_PASSED))
FAILED=$((FAILED + DEMO_FAILED))
if [ "$DEMO_RC" -ne 0 ] && [ "$DEMO_FAILED" -eq 0 ]; then
	fail "scripts/demo.sh finished" "exit status $DEMO_RC"
fi
if [ "$DEMO_PASSED" -eq 0 ] && [ "$DEMO_FAILED" -eq 0 ] && [ "$DEMO_RC" -eq 0 ]; then
	fail "scripts/demo.sh ran its checks" "no PASS or FAIL line"
fi
if [ "$DEMO_RC" -ne 0 ]; then
	echo "--- tail of $WORK/demo.log:"
	tail -n 40 "$WORK/demo.log"
fi
echo "--- demo: $DEMO_PASSED passed, $DEMO_FAILED failed in $(($(date +%s) - DEMO_START)) s"

# ---------------------------------------------------------------------------
if [ "$INSTALLED_BEFORE" = 1 ]; then
	step "8. $PACKAGE was installed before: it stays installed (this build)"
elif [ "${WEIR_PACKAGE_KEEP:-0}" = 1 ]; then
	step "8. WEIR_PACKAGE_KEEP=1: $PACKAGE stays installed"
	INSTALLED_BY_US=0
	echo "--- the files it replaced are in $SAVED; after"
	echo "---   apt-get purge $PACKAGE"
	echo "--- put them back with: tar -C / -xpf $SAVED"
else
	step "8. purge the package and put back the files it replaced"
	remove_package
	check "$PACKAGE is purged" bash -c "! dpkg-query -W -f='\${Status}' $PACKAGE 2>/dev/null | grep -q installed"
	if [ -s "$SAVED" ]; then
		check "the $(wc -l <"$WORK/replaced-files") files it replaced are back as they were" \
			weir_as_root tar -C / --compare -f "$SAVED"
	else
		check "nothing of weir is left in $PKGLIB" test ! -e "$PKGLIB/weir.so"
	fi
fi

echo
echo "package.sh took $(($(date +%s) - START)) s"
SUMMARY_PRINTED=1
if [ "$FAILED" -eq 0 ]; then
	echo "package: all checks passed"
	if [ "${WEIR_PACKAGE_KEEP:-0}" = 1 ] && [ -s "$SAVED" ]; then
		echo "(build directory kept for the saved files: $WORK)"
	else
		rm -rf "$WORK"
	fi
	RC_FINAL=0
else
	echo "package FAILED: ${#FAILURES[@]} check(s) of this script failed, $DEMO_FAILED of the demo"
	printf '  - %s\n' "${FAILURES[@]}"
	echo "build and logs kept in $WORK"
	RC_FINAL=1
fi
echo "$PASSED passed, $FAILED failed"
exit "$RC_FINAL"
