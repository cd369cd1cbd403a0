#!/usr/bin/env bash
# scripts/setup.sh — install build dependencies, build weir and install it.
#
#   scripts/setup.sh            # run on its own
#   . scripts/setup.sh          # from test.sh, demo.sh, bench/*.sh
#
# When sourced it also leaves these behind for the caller:
#   WEIR_SRC      the checkout (never written to when running as root)
#   WEIR_BUILD    the directory that was built; the database OS user can
#                 write to it, so `make installcheck` can run there
#   WEIR_TEMP_BUILD  1 if WEIR_BUILD is a private copy the caller may delete
#   PG_BIN, PG_CONFIG
#   weir_as_pg, weir_as_root, weir_free_port, weir_cluster_start,
#   weir_cluster_stop, weir_psql   (see below)
#
# PostgreSQL refuses to run as root.  So when we are root (CI), the tree is
# copied into a fresh postgres-owned directory under /tmp and built there as
# the postgres user: the checkout may live anywhere (/root/..., a 0700 home)
# that postgres cannot traverse, and root-owned build products in it would
# break later runs as postgres.  As an ordinary user the server runs as that
# user, so we build in place and only `make install` needs sudo.
#
# Knobs: PG_CONFIG (default /usr/lib/postgresql/15/bin/pg_config),
#        WEIR_SKIP_APT=1 (never call apt-get), WEIR_MAKE_JOBS,
#        WEIR_USE_INSTALLED=1 (no packages, no build, no install: only the
#        helpers, for the weir already installed, e.g. from the Debian
#        package by scripts/package.sh).

set -euo pipefail

WEIR_SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PG_CONFIG="${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}"
PG_BIN="$(dirname "$PG_CONFIG")"
WEIR_DB_OS_USER=postgres
# Every initdb on every machine gets the same locale, so expected outputs
# do not depend on the caller's LANG (C.UTF-8 is built into Debian 12 glibc).
export LC_ALL=C.UTF-8 LANG=C.UTF-8
unset LANGUAGE

weir_log() { printf '==> %s\n' "$*" >&2; }

weir_is_root() { [ "$(id -u)" -eq 0 ]; }

# Run a command as root: directly when we are root, else through sudo.
weir_as_root() {
	if weir_is_root; then
		"$@"
	else
		sudo "$@"
	fi
}

# Run a command as the OS user that owns database clusters: postgres when
# we are root (the server refuses root), else ourselves.  The command runs
# in the current directory, so callers cd somewhere that user can reach.
weir_as_pg() {
	if weir_is_root; then
		runuser -u "$WEIR_DB_OS_USER" -- env HOME="$WEIR_PG_HOME" "$@"
	else
		"$@"
	fi
}

# --- 1. packages ----------------------------------------------------------
# Build and test dependencies.  A fresh CI machine only has the PG15 server
# and client.  hll and tdigest are not used yet; a later issue needs them.
# prometheus-postgres-exporter serves contrib/postgres_exporter's queries in
# test/t/025_exporter_metrics.pl (which fails without it, unless WEIR_SKIP_APT=1).
weir_install_packages() {
	local core=(postgresql-server-dev-15 libipc-run-perl make gcc)
	local extra=(postgresql-15-hll postgresql-15-tdigest prometheus-postgres-exporter)
	local missing=() p

	if [ "${WEIR_SKIP_APT:-0}" = 1 ]; then
		return 0
	fi
	if ! command -v dpkg-query >/dev/null 2>&1; then
		weir_log "not a Debian system: install ${core[*]} ${extra[*]} yourself"
		return 0
	fi
	for p in "${core[@]}" "${extra[@]}"; do
		if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
			missing+=("$p")
		fi
	done
	if [ "${#missing[@]}" -eq 0 ]; then
		return 0			# the common case: nothing to do, no network
	fi

	weir_log "installing ${missing[*]}"
	# Third-party sources configured on the machine may be unreachable;
	# apt-get update then fails although the Debian mirror worked.
	weir_as_root apt-get update -qq || weir_log "apt-get update reported errors; trying anyway"
	if ! weir_as_root env DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -qq --no-install-recommends "${missing[@]}"; then
		# Only the build dependencies are fatal.
		weir_log "retrying with the build dependencies only"
		weir_as_root env DEBIAN_FRONTEND=noninteractive \
			apt-get install -y -qq --no-install-recommends "${core[@]}"
		weir_log "WARNING: could not install ${extra[*]}"
	fi
}

# --- 2. where to build ----------------------------------------------------
weir_prepare_build_dir() {
	if ! weir_is_root; then
		WEIR_BUILD="$WEIR_SRC"
		WEIR_TEMP_BUILD=0
		return 0
	fi
	if ! id "$WEIR_DB_OS_USER" >/dev/null 2>&1; then
		weir_log "no '$WEIR_DB_OS_USER' OS user: is postgresql-15 installed?"
		return 1
	fi
	WEIR_PG_HOME="$(getent passwd "$WEIR_DB_OS_USER" | cut -d: -f6)"
	[ -d "$WEIR_PG_HOME" ] || WEIR_PG_HOME=/tmp

	# /tmp is world-traversable, unlike the checkout's parents may be.
	WEIR_BUILD="$(mktemp -d /tmp/weir-build.XXXXXX)"
	WEIR_TEMP_BUILD=1
	# Copy the working tree (uncommitted files included), but not .git nor
	# products of earlier builds and test runs.
	tar -C "$WEIR_SRC" --exclude-vcs \
		--exclude=./tmp_regress --exclude=./tmp_isolation --exclude=./tmp_check \
		--exclude=./tmp_check_iso --exclude=./results --exclude=./output_iso \
		--exclude=./log --exclude=./regression.diffs --exclude=./regression.out \
		--exclude=./demo_data --exclude='*.o' --exclude='*.so' --exclude='*.bc' \
		-cf - . | tar -C "$WEIR_BUILD" -xf -
	chown -R "$WEIR_DB_OS_USER": "$WEIR_BUILD"
	chmod 755 "$WEIR_BUILD"
}

# --- 3. build and install -------------------------------------------------
weir_build_install() {
	local jobs="${WEIR_MAKE_JOBS:-$(nproc 2>/dev/null || echo 2)}"

	weir_log "building weir in $WEIR_BUILD"
	(cd "$WEIR_BUILD" && weir_as_pg make -s -j"$jobs" PG_CONFIG="$PG_CONFIG")

	weir_log "installing weir into $("$PG_CONFIG" --pkglibdir)"
	if weir_is_root || [ -w "$("$PG_CONFIG" --pkglibdir)" ]; then
		(cd "$WEIR_BUILD" && make -s install PG_CONFIG="$PG_CONFIG")
	else
		(cd "$WEIR_BUILD" && sudo make -s install PG_CONFIG="$PG_CONFIG")
	fi
}

# --- helpers for throwaway clusters (demo, bench) ---------------------------

# A free TCP port in 5433..5499 (or $1..$2).  The clusters listen on a
# private socket directory only, but a port is still part of their identity.
weir_free_port() {
	local p lo="${1:-5433}" hi="${2:-5499}"
	for ((p = lo; p <= hi; p++)); do
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null &&
			[ ! -e "/tmp/.s.PGSQL.$p" ] && [ ! -e "/var/run/postgresql/.s.PGSQL.$p" ]; then
			echo "$p"
			return 0
		fi
	done
	weir_log "no free port in $lo..$hi"
	return 1
}

# weir_cluster_start DIR PORT [postgresql.conf line...]
# initdb into DIR/data (DIR is created, postgres-owned when root) and start a
# server with weir preloaded, its socket in DIR.  Sets WEIR_CLUSTER_DIR and
# WEIR_CLUSTER_PORT for weir_psql and weir_cluster_stop.
weir_cluster_start() {
	local dir="$1" port="$2" line
	shift 2
	mkdir -p "$dir"
	if weir_is_root; then
		chown "$WEIR_DB_OS_USER": "$dir"
	fi
	chmod 700 "$dir"
	WEIR_CLUSTER_DIR="$dir"
	WEIR_CLUSTER_PORT="$port"

	(cd "$dir" && weir_as_pg "$PG_BIN/initdb" -D "$dir/data" -U postgres \
		-A trust -E UTF8 --locale=C.UTF-8 --no-sync >"$dir/initdb.log" 2>&1) || {
		cat "$dir/initdb.log" >&2
		return 1
	}
	{
		echo "# added by weir scripts"
		echo "port = $port"
		echo "listen_addresses = ''"
		echo "unix_socket_directories = '$dir'"
		echo "shared_preload_libraries = 'weir'"
		echo "weir.database = 'postgres'"
		echo "max_worker_processes = 40"
		echo "wal_level = logical"
		for line in "$@"; do
			echo "$line"
		done
	} | weir_as_pg tee -a "$dir/data/postgresql.conf" >/dev/null

	if ! (cd "$dir" && weir_as_pg "$PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" \
		-w -t 60 start >/dev/null); then
		weir_log "server did not start; its log:"
		tail -n 50 "$dir/server.log" >&2 || true
		return 1
	fi
}

# Stop the cluster started by weir_cluster_start (fast, then immediate).
weir_cluster_stop() {
	[ -n "${WEIR_CLUSTER_DIR:-}" ] || return 0
	[ -f "$WEIR_CLUSTER_DIR/data/postmaster.pid" ] || return 0
	(cd "$WEIR_CLUSTER_DIR" &&
		{ weir_as_pg "$PG_BIN/pg_ctl" -D "$WEIR_CLUSTER_DIR/data" -m fast -w -t 30 stop >/dev/null 2>&1 ||
			weir_as_pg "$PG_BIN/pg_ctl" -D "$WEIR_CLUSTER_DIR/data" -m immediate -w stop >/dev/null 2>&1; }) || true
}

# psql against that cluster as superuser postgres; stops on the first error.
weir_psql() {
	(cd "$WEIR_CLUSTER_DIR" && weir_as_pg "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 \
		-h "$WEIR_CLUSTER_DIR" -p "$WEIR_CLUSTER_PORT" -U postgres -d postgres "$@")
}

# --- main -----------------------------------------------------------------
WEIR_PG_HOME="${WEIR_PG_HOME:-/tmp}"
if [ "${WEIR_USE_INSTALLED:-0}" = 1 ]; then
	# Nothing is built: the helpers run against what is installed already.
	WEIR_BUILD="$WEIR_SRC"
	WEIR_TEMP_BUILD=0
	if weir_is_root; then
		WEIR_PG_HOME="$(getent passwd "$WEIR_DB_OS_USER" | cut -d: -f6)"
		[ -d "$WEIR_PG_HOME" ] || WEIR_PG_HOME=/tmp
	fi
	weir_log "using the weir installed in $("$PG_CONFIG" --pkglibdir) (WEIR_USE_INSTALLED=1)"
else
	weir_install_packages
	weir_prepare_build_dir
	weir_build_install
	weir_log "weir installed (built in $WEIR_BUILD)"
fi
export PG_CONFIG PG_BIN WEIR_SRC WEIR_BUILD WEIR_TEMP_BUILD

# Run on its own, as root, nothing needs the private build copy any more.
if [ "${BASH_SOURCE[0]}" = "$0" ] && [ "$WEIR_TEMP_BUILD" = 1 ]; then
	rm -rf "$WEIR_BUILD"
fi
