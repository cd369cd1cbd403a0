# shellcheck shell=bash
# bench/common.sh — what every bench script does first, sourced by them.
#
#   . bench/common.sh NAME
#
# Builds and installs weir (scripts/setup.sh; build output goes to stderr,
# stdout is kept for figures; with WEIR_BENCH_INSTALLED=1 it uses the weir
# already installed, building and installing nothing), then starts a
# throwaway cluster in /tmp/weir-bench-NAME-PID on a free port (or
# WEIR_PORT), with memory and WAL enough that checkpoints and autovacuum do
# not land inside one measurement and not another (and huge pages with
# WEIR_BENCH_HUGE_PAGES=1); the cluster is stopped and removed on exit.  Defines DIR, PORT and progress(), and sources
# bench/lib.sh, the helpers the pipeline benches share.
#
# BASELINE=<git rev> (scripts that set BENCH_WITH_BASELINE=1 before sourcing
# this: window, join, dedup, last_value, chain; the others ignore it): a second
# build to compare with, run side by side in the same invocation.  The
# weir of that revision of the checkout (git archive, never touching the
# working tree) is built and installed into a relocated copy of the
# PostgreSQL installation under /tmp/weir-baseline.XXXXXX (PostgreSQL finds
# its lib and share directories relative to its binaries, so the copy's
# pg_config, initdb and postgres use the copy's; checked), and a second
# cluster with the same settings runs from the copy's binaries in
# /tmp/weir-bench-NAME-baseline-PID on a port of its own.  The scripts load
# their data into both clusters (bench_builds, bench_use) and run each
# round's pipelines on both back to back (lib.sh: baseline_before,
# baseline_after); the figures of the baseline come out as baseline.X and
# ratio.X_vs_baseline (lib.sh: baseline_figures).  Both clusters and the
# copy are removed on exit.

if [ "${WEIR_BENCH_INSTALLED:-0}" = 1 ]; then
	# WEIR_BENCH_INSTALLED=1: bench the weir already installed, as it is: no
	# apt, no build, no install; only the helpers of scripts/setup.sh (all
	# of it but its main part)
	# shellcheck source=/dev/null
	. <(sed '/^# --- main/,$d' "$(dirname "${BASH_SOURCE[0]}")/../scripts/setup.sh")
	WEIR_SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
	WEIR_BUILD="$WEIR_SRC"
	WEIR_TEMP_BUILD=0
	WEIR_PG_HOME="${WEIR_PG_HOME:-/tmp}"
	if weir_is_root; then
		WEIR_PG_HOME="$(getent passwd "$WEIR_DB_OS_USER" | cut -d: -f6)"
		[ -d "$WEIR_PG_HOME" ] || WEIR_PG_HOME=/tmp
	fi
	[ -f "$("$PG_CONFIG" --pkglibdir)/weir.so" ] || {
		weir_log "WEIR_BENCH_INSTALLED=1 but weir is not installed"
		exit 1
	}
	weir_log "using the installed weir ($("$PG_CONFIG" --pkglibdir)/weir.so)"
else
	# shellcheck source=scripts/setup.sh
	. "$(dirname "${BASH_SOURCE[0]}")/../scripts/setup.sh" >&2
	[ "$WEIR_TEMP_BUILD" != 1 ] || rm -rf "$WEIR_BUILD"
fi

DIR="/tmp/weir-bench-$1-$$"
PORT="${WEIR_PORT:-$(weir_free_port 5433 5499)}"

# BASELINE: only for the scripts that run their pipelines on it
if [ -n "${BASELINE:-}" ] && [ "${BENCH_WITH_BASELINE:-0}" != 1 ]; then
	weir_log "BASELINE=$BASELINE: bench/$1.sh does not compare with a baseline; ignored"
	BASELINE=""
fi
BASELINE="${BASELINE:-}"
BASELINE_TMP=""		# the baseline's build and PostgreSQL copy
BASELINE_DIR=""		# its cluster
BASELINE_PORT=""
BASELINE_PG_BIN=""
CURRENT_DIR=$DIR
CURRENT_PG_BIN=$PG_BIN
BENCH_BUILD=current

# bench_use current|baseline: point weir_psql, q, weir_cluster_start and
# weir_cluster_stop (and DIR, PG_BIN) at that build's cluster.
bench_use() {
	case $1 in
	current)
		DIR=$CURRENT_DIR PG_BIN=$CURRENT_PG_BIN
		WEIR_CLUSTER_DIR=$CURRENT_DIR WEIR_CLUSTER_PORT=$PORT
		;;
	baseline)
		DIR=$BASELINE_DIR PG_BIN=$BASELINE_PG_BIN
		WEIR_CLUSTER_DIR=$BASELINE_DIR WEIR_CLUSTER_PORT=$BASELINE_PORT
		;;
	*) echo "bench_use: no build $1" >&2; return 2 ;;
	esac
	BENCH_BUILD=$1
}

cleanup() {
	local rc=$?
	if [ -n "$BASELINE_DIR" ]; then
		bench_use baseline
		weir_cluster_stop
	fi
	bench_use current
	weir_cluster_stop
	rm -rf "$CURRENT_DIR" ${BASELINE_DIR:+"$BASELINE_DIR"} ${BASELINE_TMP:+"$BASELINE_TMP"}
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

progress() { echo "bench: $*" >&2; }

# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# baseline_build: weir of revision BASELINE, built and installed into a
# copy of the PostgreSQL installation in BASELINE_TMP/pg (the same absolute
# paths below it: bindir, pkglibdir and sharedir copied, the include
# directories linked); sets BASELINE_PG_BIN, BASELINE_SHA, BASELINE_DESC.
baseline_build() {
	local pg="" d want got config jobs="${WEIR_MAKE_JOBS:-$(nproc 2>/dev/null || echo 2)}"
	local -a git=(git -c safe.directory="$WEIR_SRC" -C "$WEIR_SRC")

	BASELINE_SHA=$("${git[@]}" rev-parse --verify --quiet "$BASELINE^{commit}") || {
		weir_log "BASELINE=$BASELINE is not a revision of $WEIR_SRC"
		exit 1
	}
	BASELINE_DESC=$("${git[@]}" log -1 --format='%h %s' "$BASELINE_SHA")
	BASELINE_TMP=$(mktemp -d /tmp/weir-baseline.XXXXXX)
	chmod 755 "$BASELINE_TMP"
	pg="$BASELINE_TMP/pg"
	progress "baseline: copying the PostgreSQL installation to $pg"
	for d in "$("$PG_CONFIG" --bindir)" "$("$PG_CONFIG" --pkglibdir)" "$("$PG_CONFIG" --sharedir)"; do
		[ -e "$pg$d" ] && continue	# inside one copied already
		mkdir -p "$(dirname "$pg$d")"
		cp -a "$d" "$pg$d"
	done
	for d in "$("$PG_CONFIG" --includedir)" "$("$PG_CONFIG" --pkgincludedir)" "$("$PG_CONFIG" --includedir-server)"; do
		[ -e "$pg$d" ] && continue
		mkdir -p "$(dirname "$pg$d")"
		ln -s "$d" "$pg$d"
	done
	chmod -R a+rX "$BASELINE_TMP"
	config="$pg$("$PG_CONFIG" --bindir)/pg_config"
	for d in bindir pkglibdir sharedir includedir-server pgxs; do
		want="$pg$("$PG_CONFIG" --"$d")"
		got=$("$config" --"$d")
		if [ "$got" != "$want" ]; then
			weir_log "baseline: the copy's pg_config --$d is $got, not $want: this PostgreSQL does not relocate"
			exit 1
		fi
	done
	BASELINE_PG_BIN="$pg$("$PG_CONFIG" --bindir)"

	progress "baseline: building weir $BASELINE ($BASELINE_SHA) in $BASELINE_TMP/src"
	mkdir "$BASELINE_TMP/src"
	"${git[@]}" archive "$BASELINE_SHA" | tar -x -C "$BASELINE_TMP/src"
	if weir_is_root; then
		chown -R "$WEIR_DB_OS_USER": "$BASELINE_TMP/src"
	fi
	(cd "$BASELINE_TMP/src" && weir_as_pg make -s -j"$jobs" PG_CONFIG="$config") >&2
	# the copy is ours (root's, or the user's): no sudo
	(cd "$BASELINE_TMP/src" && make -s install PG_CONFIG="$config") >&2
	[ -f "$("$config" --pkglibdir)/weir.so" ] || {
		weir_log "baseline: no weir.so in $("$config" --pkglibdir) after make install"
		exit 1
	}
}

# loaded_weir: the weir.so the postmaster of the cluster in use has loaded
# (shared_preload_libraries).
loaded_weir() {
	local pid
	pid=$(head -n 1 "$WEIR_CLUSTER_DIR/data/postmaster.pid")
	awk '$6 ~ /\/weir\.so$/ { print $6; exit }' "/proc/$pid/maps"
}

# WEIR_BENCH_HUGE_PAGES=1: shared memory in huge pages (the machine needs
# vm.nr_hugepages of about 300 free; the cluster does not start otherwise).
# Every pipeline worker, checkpoint writer and psql session is a new
# process, which faults in each 4 kB page of shared memory it touches: on
# the virtual machines here that is ~4 us a page, and a large share of a
# backlog's figures (README, Performance).  With BASELINE, each of the two
# clusters needs as many.
HUGE_PAGES=try
if [ "${WEIR_BENCH_HUGE_PAGES:-0}" = 1 ]; then
	HUGE_PAGES=on
	echo "# huge_pages = on (WEIR_BENCH_HUGE_PAGES=1)"
fi
# WEIR_BENCH_READ_AHEAD=on|off: weir.read_ahead for every pipeline of the
# run (unset: weir's default, off; bench/join.sh measures both anyway).
READ_AHEAD_CONF=()
if [ -n "${WEIR_BENCH_READ_AHEAD:-}" ]; then
	READ_AHEAD_CONF=("weir.read_ahead = $WEIR_BENCH_READ_AHEAD")
	echo "# weir.read_ahead = $WEIR_BENCH_READ_AHEAD (WEIR_BENCH_READ_AHEAD)"
fi
CLUSTER_CONF=("shared_buffers = 512MB" "max_wal_size = 8GB" "checkpoint_timeout = 1h"
	"autovacuum = off" "jit = off" "huge_pages = $HUGE_PAGES" ${READ_AHEAD_CONF[@]+"${READ_AHEAD_CONF[@]}"})
if [ -n "$BASELINE" ]; then
	baseline_build
fi
progress "starting a cluster in $DIR (port $PORT, huge_pages = $HUGE_PAGES)"
weir_cluster_start "$DIR" "$PORT" "${CLUSTER_CONF[@]}"
if [ -n "$BASELINE" ]; then
	BASELINE_DIR="/tmp/weir-bench-$1-baseline-$$"
	BASELINE_PORT=$(weir_free_port $((PORT + 1)) $((PORT + 100)))
	bench_use baseline
	progress "baseline: starting its cluster in $BASELINE_DIR (port $BASELINE_PORT, $BASELINE_PG_BIN)"
	weir_cluster_start "$BASELINE_DIR" "$BASELINE_PORT" "${CLUSTER_CONF[@]}"
	BASELINE_SO=$(loaded_weir)
	bench_use current
	CURRENT_SO=$(loaded_weir)
	if [ "$BASELINE_SO" != "$("$BASELINE_PG_BIN/pg_config" --pkglibdir)/weir.so" ] || [ "$CURRENT_SO" = "$BASELINE_SO" ]; then
		weir_log "baseline: its cluster loaded '$BASELINE_SO', the current one '$CURRENT_SO'"
		exit 1
	fi
	progress "baseline: its cluster runs $BASELINE_SO, the current one $CURRENT_SO"
	echo "# baseline: BASELINE=$BASELINE ($BASELINE_DESC); its figures (baseline.*, ratio.*_vs_baseline) at the end"
fi
