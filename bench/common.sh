# bench/common.sh — what every bench script does first, sourced by them.
#
#   . bench/common.sh NAME
#
# Builds and installs weir (scripts/setup.sh; build output goes to stderr,
# stdout is kept for figures), then starts a throwaway cluster in
# /tmp/weir-bench-NAME-PID on a free port (or WEIR_PORT), with memory and WAL
# enough that checkpoints and autovacuum do not land inside one measurement
# and not another; the cluster is stopped and removed on exit.  Defines
# DIR, PORT and progress().

# shellcheck source=scripts/setup.sh
. "$(dirname "${BASH_SOURCE[0]}")/../scripts/setup.sh" >&2
[ "$WEIR_TEMP_BUILD" != 1 ] || rm -rf "$WEIR_BUILD"

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

progress "starting a cluster in $DIR (port $PORT)"
weir_cluster_start "$DIR" "$PORT" \
	"shared_buffers = 512MB" "max_wal_size = 8GB" "checkpoint_timeout = 1h" \
	"autovacuum = off" "jit = off"
