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

cleanup() {
	local rc=$?
	weir_cluster_stop
	rm -rf "$DIR"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

progress() { echo "bench: $*" >&2; }

# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# WEIR_BENCH_HUGE_PAGES=1: shared memory in huge pages (the machine needs
# vm.nr_hugepages of about 300 free; the cluster does not start otherwise).
# Every pipeline worker, checkpoint writer and psql session is a new
# process, which faults in each 4 kB page of shared memory it touches: on
# the virtual machines here that is ~4 us a page, and a large share of a
# backlog's figures (README, Performance).
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
progress "starting a cluster in $DIR (port $PORT, huge_pages = $HUGE_PAGES)"
weir_cluster_start "$DIR" "$PORT" \
	"shared_buffers = 512MB" "max_wal_size = 8GB" "checkpoint_timeout = 1h" \
	"autovacuum = off" "jit = off" "huge_pages = $HUGE_PAGES" ${READ_AHEAD_CONF[@]+"${READ_AHEAD_CONF[@]}"}
