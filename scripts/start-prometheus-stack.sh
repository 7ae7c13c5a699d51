#!/usr/bin/env bash
# Start (or stop) a throwaway Prometheus, Pushgateway and Alertmanager for the exporter tests.
#
#   scripts/start-prometheus-stack.sh [start]   start all three, print their URLs as exports
#   scripts/start-prometheus-stack.sh stop      stop them and remove their files
#
# Meant for a Debian machine with the packages prometheus, prometheus-pushgateway and
# prometheus-alertmanager installed (their own services stopped), run as root or any user.
# Everything listens on 127.0.0.1 only and lives in a new temporary folder, recorded in
# $PROM_STATE (default /tmp/retrieval-monitor-prometheus.dir) so that `stop` can find it:
#
#   Pushgateway   127.0.0.1:59091
#   Alertmanager  127.0.0.1:59093  no cluster; routes every alert to a webhook on
#                                  127.0.0.1:59089/alerts (a test listens there)
#   Prometheus    127.0.0.1:59090  scrapes every 1s the Pushgateway (honor_labels: true) and a
#                                  daemon-mode exporter on 127.0.0.1:59108 (job
#                                  retrieval-monitor); evaluates alerts/prometheus/*.rules.yml
#                                  every 1s and sends alerts to the Alertmanager;
#                                  --web.enable-lifecycle
#
# Point the tests at them with: eval "$(scripts/start-prometheus-stack.sh start)"
set -euo pipefail

STATE="${PROM_STATE:-/tmp/retrieval-monitor-prometheus.dir}"
HOST=127.0.0.1
PROMETHEUS_PORT=59090
PUSHGATEWAY_PORT=59091
ALERTMANAGER_PORT=59093
WEBHOOK_PORT=59089
EXPORTER_PORT=59108
REPO="$(cd "$(dirname "$0")/.." && pwd)"
RULES="$REPO/alerts/prometheus/retrieval-monitor.rules.yml"

STARTING=0

say() { printf '%s\n' "$*" >&2; }
die() {
    say "start-prometheus-stack: $*"
    # A start that fails half way stops what it started.
    if ((STARTING)); then
        STARTING=0
        stop
    fi
    exit 1
}

need() {
    command -v "$1" >/dev/null || die "$1 not found (apt-get install -y $2)"
}

# Return 0 once http://HOST:PORT/-/ready answers 200, 1 after about 30 s.
wait_ready() {
    local name="$1" port="$2" pid="$3" log="$4" tries=0
    until python3 - "$HOST" "$port" <<'EOF'
import sys, urllib.request
try:
    with urllib.request.urlopen(f"http://{sys.argv[1]}:{sys.argv[2]}/-/ready", timeout=1) as r:
        sys.exit(0 if r.status == 200 else 1)
except OSError:
    sys.exit(1)
EOF
    do
        if ! kill -0 "$pid" 2>/dev/null; then
            tail -n 20 "$log" >&2 || true
            die "$name exited during start-up (see $log)"
        fi
        tries=$((tries + 1))
        ((tries < 120)) || die "$name did not become ready on $HOST:$port (see $log)"
        sleep 0.25
    done
}

port_free() {
    ! python3 - "$HOST" "$1" <<'EOF'
import socket, sys
with socket.socket() as s:
    s.settimeout(0.5)
    sys.exit(0 if s.connect_ex((sys.argv[1], int(sys.argv[2]))) == 0 else 1)
EOF
}

# Start one daemon in the background; record its pid in $dir/NAME.pid.
launch() {
    local dir="$1" name="$2"
    shift 2
    "$@" >"$dir/$name.log" 2>&1 &
    printf '%s\n' "$!" >"$dir/$name.pid"
}

stop() {
    [[ -f "$STATE" ]] || { say "start-prometheus-stack: nothing to stop ($STATE not found)"; return 0; }
    local dir name pid tries
    dir="$(cat "$STATE")"
    for name in prometheus alertmanager pushgateway; do
        [[ -f "$dir/$name.pid" ]] || continue
        pid="$(cat "$dir/$name.pid")"
        # A pid recorded before a reboot may now be another program's: signal only ours.
        [[ "$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" == *"$name"* ]] || continue
        kill -TERM "$pid" 2>/dev/null || continue
        tries=0
        while kill -0 "$pid" 2>/dev/null && ((tries < 40)); do
            sleep 0.25
            tries=$((tries + 1))
        done
        kill -KILL "$pid" 2>/dev/null || true
    done
    # Only remove what this script made: a folder named like its own temporary folders.
    case "$dir" in
        */retrieval-monitor-prometheus.*) rm -rf -- "$dir" ;;
    esac
    rm -f -- "$STATE"
    say "start-prometheus-stack: stopped"
}

start() {
    need prometheus prometheus
    need prometheus-pushgateway prometheus-pushgateway
    need prometheus-alertmanager prometheus-alertmanager
    need python3 python3
    # A stack recorded by an earlier start that was never stopped (an interrupted run) is
    # this script's own: replace it.
    if [[ -f "$STATE" ]]; then
        say "start-prometheus-stack: replacing the stack recorded in $STATE"
        stop
    fi
    [[ -f "$RULES" ]] || die "no rules file at $RULES"
    local port
    for port in "$PROMETHEUS_PORT" "$PUSHGATEWAY_PORT" "$ALERTMANAGER_PORT"; do
        port_free "$port" || die "$HOST:$port is in use (a Debian service? service prometheus stop)"
    done

    local dir
    dir="$(mktemp -d "${TMPDIR:-/tmp}/retrieval-monitor-prometheus.XXXXXX")"
    printf '%s\n' "$dir" >"$STATE"
    STARTING=1
    mkdir -p "$dir/prometheus-data" "$dir/alertmanager-data"

    cat >"$dir/alertmanager.yml" <<EOF
route:
  receiver: webhook
  group_by: [alertname, suite]
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: webhook
    webhook_configs:
      - url: http://$HOST:$WEBHOOK_PORT/alerts
        send_resolved: true
EOF

    cat >"$dir/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files:
  - $RULES
alerting:
  alertmanagers:
    - static_configs:
        - targets: ["$HOST:$ALERTMANAGER_PORT"]
scrape_configs:
  - job_name: pushgateway
    honor_labels: true
    static_configs:
      - targets: ["$HOST:$PUSHGATEWAY_PORT"]
  - job_name: retrieval-monitor
    static_configs:
      - targets: ["$HOST:$EXPORTER_PORT"]
EOF

    launch "$dir" pushgateway prometheus-pushgateway \
        --web.listen-address="$HOST:$PUSHGATEWAY_PORT"
    launch "$dir" alertmanager prometheus-alertmanager \
        --config.file="$dir/alertmanager.yml" \
        --storage.path="$dir/alertmanager-data" \
        --web.listen-address="$HOST:$ALERTMANAGER_PORT" \
        --cluster.listen-address=
    launch "$dir" prometheus prometheus \
        --config.file="$dir/prometheus.yml" \
        --storage.tsdb.path="$dir/prometheus-data" \
        --storage.tsdb.retention.time=1d \
        --web.listen-address="$HOST:$PROMETHEUS_PORT" \
        --web.enable-lifecycle

    wait_ready Pushgateway "$PUSHGATEWAY_PORT" "$(cat "$dir/pushgateway.pid")" "$dir/pushgateway.log"
    wait_ready Alertmanager "$ALERTMANAGER_PORT" "$(cat "$dir/alertmanager.pid")" "$dir/alertmanager.log"
    wait_ready Prometheus "$PROMETHEUS_PORT" "$(cat "$dir/prometheus.pid")" "$dir/prometheus.log"

    STARTING=0
    say "start-prometheus-stack: ready in $dir"
    printf 'export MONITOR_PROMETHEUS_URL=http://%s:%s\n' "$HOST" "$PROMETHEUS_PORT"
    printf 'export MONITOR_PUSHGATEWAY_URL=http://%s:%s\n' "$HOST" "$PUSHGATEWAY_PORT"
    printf 'export MONITOR_ALERTMANAGER_URL=http://%s:%s\n' "$HOST" "$ALERTMANAGER_PORT"
}

case "${1:-start}" in
    start) start ;;
    stop) stop ;;
    *) die "usage: $0 [start|stop]" ;;
esac
