#!/usr/bin/env bash
# scripts/test.sh — THE test command.
#
#   scripts/test.sh                      # regress, isolation, TAP and package
#   scripts/test.sh regress tap          # only some suites
#   scripts/test.sh package              # the Debian package only
#
# Installs dependencies, builds and installs weir (scripts/setup.sh), then
# runs each suite with `make installcheck` as the database OS user.  The
# Makefile gives every suite its own --temp-instance, so no running server
# is needed.  `make installcheck` alone would stop at the first failing
# suite, so each suite is a separate make call with the other two switched
# off (REGRESS=, ISOLATION=, TAP_TESTS= empty disable their `ifdef` in
# pgxs.mk).  On failure the diffs and logs are printed.  The last line is
# always `N passed, N failed`; the exit status is non-zero if anything failed.
#
# The package suite runs scripts/package.sh: it builds postgresql-15-weir,
# installs it over the system's PostgreSQL 15, runs the demo's checks against
# it, then purges it and puts back the files it replaced.  It runs last, so
# the other suites test the build this script installed from the checkout.
#
# Knobs: WEIR_TIMEOUT_REGRESS / _ISOLATION / _TAP / _PACKAGE (seconds per suite);
# PROVE_TESTS (TAP files to run, e.g. "test/t/012_chain_exactly_once.pl").

# shellcheck disable=SC2317  # functions run indirectly ("suite_$s", trap)
set -euo pipefail

PASSED=0
FAILED=0
SUMMARY_PRINTED=0
declare -a FAILED_SUITES=()

# If the build (or this script) dies early, still end with the closing line.
on_exit() {
	local rc=$?
	if [ "$SUMMARY_PRINTED" = 0 ]; then
		[ "$FAILED" -gt 0 ] || FAILED=1
		echo "test.sh stopped early (exit status $rc)"
		echo "$PASSED passed, $FAILED failed"
		[ "$rc" -ne 0 ] || rc=1
	fi
	exit "$rc"
}
trap on_exit EXIT

if [ "$#" -gt 0 ]; then
	SUITES=("$@")
else
	SUITES=(regress isolation tap package)
fi
for s in "${SUITES[@]}"; do
	case "$s" in
	regress | isolation | tap | package) ;;
	*)
		echo "unknown suite '$s' (regress, isolation, tap, package)" >&2
		exit 2
		;;
	esac
done

# shellcheck source=scripts/setup.sh
. "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

cd "$WEIR_BUILD"
# The runners' output is kept outside the tree (the checkout stays clean).
LOGS="$(mktemp -d /tmp/weir-test-logs.XXXXXX)"

# The value of a Makefile variable, e.g. the list of REGRESS tests.
make_var() {
	# shellcheck disable=SC2016  # $(...) is for make, not the shell
	printf 'weir-print-var:\n\t@echo $(%s)\n' "$1" |
		weir_as_pg make -s --no-print-directory -f Makefile -f - \
			PG_CONFIG="$PG_CONFIG" weir-print-var
}

# Print a file under a heading, at most $2 lines (diffs can be huge).
show() {
	local f="$1" max="${2:-1500}" n
	[ -f "$f" ] || return 0
	n=$(wc -l <"$f")
	echo "----- $f ($n lines) -----"
	head -n "$max" "$f"
	[ "$n" -le "$max" ] || echo "... ($((n - max)) more lines in $f)"
}

# Print the last $2 lines of a file under a heading.
show_tail() {
	[ -f "$1" ] || return 0
	echo "----- tail of $1 -----"
	tail -n "$2" "$1"
}

# run_make SUITE TIMEOUT make-overrides...: run `make installcheck`, output
# to the terminal and to $LOGS/SUITE.log; sets RC.
run_make() {
	local suite="$1" secs="$2"
	shift 2
	echo
	echo "======================== $suite ========================"
	set +e
	# timeout runs as the database user, so it may signal the whole group
	# (make, pg_regress, the temp server) if a suite hangs.
	weir_as_pg timeout -k 30 "$secs" make installcheck PG_CONFIG="$PG_CONFIG" "$@" 2>&1 |
		tee "$LOGS/$suite.log"
	RC=${PIPESTATUS[0]}
	set -e
	if [ "$RC" -eq 124 ]; then
		echo "!!! $suite timed out after ${secs}s"
	fi
}

# Count pg_regress / pg_isolation_regress results from their PG15 output:
#   "test name   ... ok   12 ms", "     name  ... FAILED   3 ms"
# If the runner failed before reporting any test (server did not start,
# build error), every test of the suite counts as failed.
count_pg_regress() {
	local suite="$1" tests="$2" ok bad
	ok=$(grep -cE '^ *(test +)?[^ ]+ +\.\.\. +(ok|failed \(ignored\))' "$LOGS/$suite.log" || true)
	bad=$(grep -cE '^ *(test +)?[^ ]+ +\.\.\. +FAILED' "$LOGS/$suite.log" || true)
	if [ "$RC" -ne 0 ] && [ "$bad" -eq 0 ]; then
		if [ "$ok" -eq 0 ]; then
			bad=$(wc -w <<<"$tests")
			[ "$bad" -gt 0 ] || bad=1
		else
			bad=1		# the runner failed after the tests passed
		fi
	fi
	echo "$suite: $ok passed, $bad failed"
	PASSED=$((PASSED + ok))
	FAILED=$((FAILED + bad))
	[ "$bad" -eq 0 ] || FAILED_SUITES+=("$suite")
}

suite_regress() {
	local tests
	tests="$(make_var REGRESS)"
	if [ -z "$tests" ]; then
		echo "regress: no REGRESS tests in the Makefile"
		return 0
	fi
	rm -rf results regression.diffs regression.out
	run_make regress "${WEIR_TIMEOUT_REGRESS:-600}" ISOLATION= TAP_TESTS=
	count_pg_regress regress "$tests"
	if [ "$RC" -ne 0 ]; then
		show regression.diffs
		show_tail tmp_regress/log/postmaster.log 60
	fi
}

suite_isolation() {
	local tests
	tests="$(make_var ISOLATION)"
	if [ -z "$tests" ]; then
		echo "isolation: no ISOLATION tests in the Makefile"
		return 0
	fi
	rm -rf output_iso
	run_make isolation "${WEIR_TIMEOUT_ISOLATION:-600}" REGRESS= TAP_TESTS=
	count_pg_regress isolation "$tests"
	if [ "$RC" -ne 0 ]; then
		show output_iso/regression.diffs
		show_tail tmp_isolation/log/postmaster.log 60
	fi
}

# A suite killed by its timeout leaves the servers its tests started with
# pg_ctl (they are not in make's process group) running, with their weir
# workers: stop them, so they load neither the next suite nor the machine.
stop_left_clusters() {
	local pidfile
	while IFS= read -r pidfile; do
		echo "!!! stopping a server the suite left running: $(dirname "$pidfile")"
		weir_as_pg "$("$PG_CONFIG" --bindir)/pg_ctl" stop -m immediate -D "$(dirname "$pidfile")" >/dev/null 2>&1 || true
	done < <(find "$1" -name postmaster.pid 2>/dev/null || true)
}

# prove prints "Files=F, Tests=T, ..." and, for each file that failed,
# "t/x.pl (Wstat: 256 (exited 1) Tests: 7 Failed: 2)".  Assertions count
# individually; a file that failed without a failing assertion (died, bad
# plan, non-zero exit) counts as one failure.
suite_tap() {
	local files total ok bad line f base log
	local -a failed_files=()
	files=$(compgen -G 'test/t/*.pl' | wc -l || true)
	if [ "$files" -eq 0 ]; then
		echo "tap: no test/t/*.pl"
		return 0
	fi
	rm -rf tmp_check
	# PROVE_TESTS="test/t/012_x.pl ..." runs only those: passed to make as an
	# argument, since the switch to the database user drops the environment
	local only=()
	if [ -n "${PROVE_TESTS:-}" ]; then
		only=("PROVE_TESTS=$PROVE_TESTS")
		files=$(wc -w <<<"$PROVE_TESTS")
	fi
	run_make tap "${WEIR_TIMEOUT_TAP:-1500}" REGRESS= ISOLATION= "${only[@]}"
	total=$(sed -n 's/^Files=[0-9]*, Tests=\([0-9]*\),.*/\1/p' "$LOGS/tap.log" | tail -n 1)
	bad=0
	ok=0
	if [ -z "$total" ]; then
		# prove never got to its summary (the suite timed out, or prove
		# died): count the files it reported ok, and every other file as
		# one failure, since their assertions were never all seen
		ok=$(grep -cE 'test/t/[^ ]+\.pl \.+ ok' "$LOGS/tap.log" || true)
		bad=$((files - ok))
		echo "!!! prove printed no summary: $ok of $files files reported ok, the others count as failed"
	else
		local failed_asserts=0
		while IFS= read -r line; do
			failed_files+=("${line%% *}")
			f=$(sed -n 's/.*Tests: [0-9]* Failed: \([0-9]*\)).*/\1/p' <<<"$line")
			if [ "${f:-0}" -gt 0 ]; then
				failed_asserts=$((failed_asserts + f))
				bad=$((bad + f))
			else
				bad=$((bad + 1))
			fi
		done < <(grep -E '\(Wstat: .*Tests: [0-9]+ Failed: [0-9]+\)' "$LOGS/tap.log" || true)
		ok=$((total - failed_asserts))
	fi
	if [ "$RC" -ne 0 ] && [ "$bad" -eq 0 ]; then
		bad=1
	fi
	stop_left_clusters tmp_check
	echo "tap: $ok passed, $bad failed"
	PASSED=$((PASSED + ok))
	FAILED=$((FAILED + bad))
	if [ "$bad" -ne 0 ]; then
		FAILED_SUITES+=(tap)
		# Cluster.pm logs per test file: regress_log_NNN_name (the test's
		# own log) and NNN_name_<node>.log (each server's log).
		[ "${#failed_files[@]}" -gt 0 ] || failed_files=(test/t/*.pl)
		for f in "${failed_files[@]}"; do
			base="$(basename "$f" .pl)"
			for log in "tmp_check/log/regress_log_$base" tmp_check/log/"$base"_*.log; do
				show_tail "$log" 80
			done
		done
	fi
}

# scripts/package.sh ends with its own `N passed, N failed`: its counts are
# added to ours.  It runs as root (it installs packages) from the checkout,
# where git can tell source from build products.
suite_package() {
	local line ok bad
	echo
	echo "======================== package ========================"
	set +e
	timeout -k 30 "${WEIR_TIMEOUT_PACKAGE:-900}" "$WEIR_SRC/scripts/package.sh" 2>&1 |
		tee "$LOGS/package.log"
	RC=${PIPESTATUS[0]}
	set -e
	[ "$RC" -ne 124 ] || echo "!!! package timed out after ${WEIR_TIMEOUT_PACKAGE:-900}s"
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$LOGS/package.log" | tail -n 1 || true)
	ok=$(sed -n 's/^\([0-9]*\) passed.*/\1/p' <<<"$line")
	bad=$(sed -n 's/.* \([0-9]*\) failed$/\1/p' <<<"$line")
	ok=${ok:-0}
	bad=${bad:-0}
	if [ "$RC" -ne 0 ] && [ "$bad" -eq 0 ]; then
		bad=1
	fi
	echo "package: $ok passed, $bad failed"
	PASSED=$((PASSED + ok))
	FAILED=$((FAILED + bad))
	[ "$bad" -eq 0 ] || FAILED_SUITES+=(package)
}

for s in "${SUITES[@]}"; do
	"suite_$s"
done

echo
if [ "$FAILED" -eq 0 ]; then
	echo "all suites passed"
	rm -rf "$LOGS"
	# Root ran in a private copy; nothing in it is needed any more.
	[ "$WEIR_TEMP_BUILD" != 1 ] || rm -rf "$WEIR_BUILD"
	RC_FINAL=0
else
	echo "failed suites: ${FAILED_SUITES[*]}"
	echo "build tree with results kept in $WEIR_BUILD; runner output in $LOGS"
	RC_FINAL=1
fi
SUMMARY_PRINTED=1
echo "$PASSED passed, $FAILED failed"
exit "$RC_FINAL"
