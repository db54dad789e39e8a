#!/usr/bin/env bash
# Makes sure a PostgreSQL 15 cluster answers on 127.0.0.1:5432 with trust auth for the postgres
# user over TCP (what the test suite's default TEST_DATABASE_URL, postgres://postgres@127.0.0.1:5432/postgres,
# expects). On a node-svc machine the server is installed and normally running: this only starts
# it when it has stopped. On a machine without it, it installs Debian's postgresql-15, creates the
# cluster if needed and allows trust auth from loopback (a test-only server: nothing else listens).
#
# Idempotent and fast (~0.1 s) when the server already answers.
# Env: PG_MAJOR (15), PG_CLUSTER (main), PGPORT (5432).
set -euo pipefail

PG_MAJOR="${PG_MAJOR:-15}"
CLUSTER="${PG_CLUSTER:-main}"
PORT="${PGPORT:-5432}"
HOST=127.0.0.1
# shellcheck source=lib/apt.sh
. "$(dirname "$0")/lib/apt.sh"
log() { echo "[ensure-postgres] $*"; }

ready() { command -v pg_isready >/dev/null && pg_isready -q -h "$HOST" -p "$PORT" -t 2; }
can_login() { psql -X -Atq -w -h "$HOST" -p "$PORT" -U postgres -d postgres -c 'SELECT 1' >/dev/null 2>&1; }

if ready && can_login; then
  log "PostgreSQL answers on $HOST:$PORT ($(psql -X -Atq -h "$HOST" -p "$PORT" -U postgres -d postgres -c 'SHOW server_version'))"
  exit 0
fi

# --- Installed? ------------------------------------------------------------------------------------
if [ ! -x "/usr/lib/postgresql/$PG_MAJOR/bin/postgres" ]; then
  log "postgresql-$PG_MAJOR is not installed; installing it from Debian"
  apt_install "postgresql-$PG_MAJOR" "postgresql-client-$PG_MAJOR"
fi
if [ ! -d "/etc/postgresql/$PG_MAJOR/$CLUSTER" ]; then
  log "creating cluster $PG_MAJOR/$CLUSTER on port $PORT"
  pg_createcluster --port "$PORT" "$PG_MAJOR" "$CLUSTER" >/dev/null
fi
conf_port="$(pg_conftool -s "$PG_MAJOR" "$CLUSTER" postgresql.conf show port 2>/dev/null)" || conf_port="$PORT"
if [ "$conf_port" != "$PORT" ]; then
  echo "[ensure-postgres] cluster $PG_MAJOR/$CLUSTER is configured for port $conf_port, not $PORT" >&2
  exit 1
fi

# --- Trust auth from loopback (only when a password-less login does not already work). -------------
hba="/etc/postgresql/$PG_MAJOR/$CLUSTER/pg_hba.conf"
if ! grep -Eq '^[[:space:]]*host[[:space:]]+all[[:space:]]+all[[:space:]]+127\.0\.0\.1/32[[:space:]]+trust' "$hba"; then
  if ! (ready && can_login); then
    log "allowing trust auth from 127.0.0.1 and ::1 in $hba"
    tmp="$(mktemp)"
    {
      echo "# memex tests: password-less TCP logins from loopback only (scripts/ensure-postgres.sh)"
      echo "host    all             all             127.0.0.1/32            trust"
      echo "host    all             all             ::1/128                 trust"
      cat "$hba"
    } >"$tmp"
    cat "$tmp" >"$hba" && rm -f "$tmp"
    if ready; then pg_ctlcluster --skip-systemctl-redirect "$PG_MAJOR" "$CLUSTER" reload; fi
  fi
fi

# --- Running? --------------------------------------------------------------------------------------
if ! ready; then
  log "starting cluster $PG_MAJOR/$CLUSTER"
  pg_ctlcluster --skip-systemctl-redirect "$PG_MAJOR" "$CLUSTER" start || {
    echo "[ensure-postgres] start failed; last log lines:" >&2
    tail -n 20 "/var/log/postgresql/postgresql-$PG_MAJOR-$CLUSTER.log" >&2 || true
    exit 1
  }
fi
for _ in $(seq 1 60); do
  ready && break
  sleep 1
done
if ! ready; then
  echo "[ensure-postgres] PostgreSQL did not answer on $HOST:$PORT within 60 s" >&2
  exit 1
fi
if ! can_login; then
  echo "[ensure-postgres] PostgreSQL answers but 'psql -h $HOST -U postgres' cannot log in without a password" >&2
  exit 1
fi
log "PostgreSQL ready on $HOST:$PORT ($(psql -X -Atq -h "$HOST" -p "$PORT" -U postgres -d postgres -c 'SHOW server_version'))"
