#!/usr/bin/env bash
# Start (or stop) a throwaway PostgreSQL for the store tests.
#
#   scripts/start-postgres.sh          start a fresh cluster, print its URL
#   scripts/start-postgres.sh stop     stop it and remove its files
#
# Meant for a Debian machine with a PostgreSQL server package installed, run as root (the
# cluster runs as the `postgres` user) or as that user. The cluster lives in a new temporary
# folder, listens on 127.0.0.1 only (PGPORT, default 55432) with trust authentication, keeps
# its unix socket in that folder and holds one database, monitor_test. Its folder is recorded
# in $PG_STATE (default /tmp/retrieval-monitor-postgres.dir) so that `stop` can find it.
# Point the tests at it with: export MONITOR_POSTGRES_URL="$(scripts/start-postgres.sh)"
set -euo pipefail

PORT="${PGPORT:-55432}"
STATE="${PG_STATE:-/tmp/retrieval-monitor-postgres.dir}"
DATABASE=monitor_test

say() { printf '%s\n' "$*" >&2; }
die() { say "start-postgres: $*"; exit 1; }

find_bindir() {
    local dir
    # The newest installed major version wins.
    for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
        if [[ -x "$dir/initdb" && -x "$dir/pg_ctl" ]]; then
            printf '%s\n' "$dir"
            return 0
        fi
    done
    die "no PostgreSQL server found under /usr/lib/postgresql/*/bin (apt-get install postgresql)"
}

# Run a command as the postgres user (directly when we already are that user).
as_postgres() {
    if [[ "$(id -un)" == postgres ]]; then
        "$@"
    elif [[ "$(id -u)" == 0 ]]; then
        if command -v runuser >/dev/null; then
            runuser -u postgres -- "$@"
        else
            su postgres -s /bin/sh -c "$(printf '%q ' "$@")"
        fi
    else
        die "run as root or as the postgres user"
    fi
}

stop() {
    [[ -f "$STATE" ]] || { say "start-postgres: nothing to stop ($STATE not found)"; return 0; }
    local dir bindir
    dir="$(cat "$STATE")"
    bindir="$(find_bindir)"
    if [[ -d "$dir/data" ]]; then
        as_postgres "$bindir/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
    fi
    # Only remove what this script made: a folder named like its own temporary folders.
    case "$dir" in
        */retrieval-monitor-pg.*) rm -rf -- "$dir" ;;
    esac
    rm -f -- "$STATE"
    say "start-postgres: stopped"
}

start() {
    local bindir dir
    bindir="$(find_bindir)"
    if [[ -f "$STATE" ]]; then
        die "a cluster is already recorded in $STATE; run '$0 stop' first"
    fi
    id postgres >/dev/null 2>&1 || die "no postgres user (install the postgresql package)"

    dir="$(mktemp -d "${TMPDIR:-/tmp}/retrieval-monitor-pg.XXXXXX")"
    chown postgres: "$dir" 2>/dev/null || true
    chmod 700 "$dir"
    printf '%s\n' "$dir" >"$STATE"

    as_postgres "$bindir/initdb" -D "$dir/data" -U postgres --auth=trust \
        --encoding=UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 \
        || { cat "$dir/initdb.log" >&2; die "initdb failed"; }
    # Trust connections from 127.0.0.1 and the private socket only.
    cat >"$dir/data/pg_hba.conf" <<EOF
local all all trust
host  all all 127.0.0.1/32 trust
EOF
    chown postgres: "$dir/data/pg_hba.conf" 2>/dev/null || true

    as_postgres "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 \
        -o "-c listen_addresses=127.0.0.1 -p $PORT -k $dir -c fsync=off" start >/dev/null \
        || { cat "$dir/server.log" >&2; die "pg_ctl start failed"; }

    local tries=0
    until as_postgres "$bindir/pg_isready" -q -h 127.0.0.1 -p "$PORT"; do
        tries=$((tries + 1))
        ((tries < 60)) || die "the server did not become ready (see $dir/server.log)"
        sleep 0.5
    done
    as_postgres "$bindir/createdb" -h 127.0.0.1 -p "$PORT" -U postgres "$DATABASE"
    printf 'postgresql://postgres@127.0.0.1:%s/%s\n' "$PORT" "$DATABASE"
}

case "${1:-start}" in
    start) start ;;
    stop) stop ;;
    *) die "usage: $0 [start|stop]" ;;
esac
