#!/usr/bin/env bash
# Installs the pgvector extension into the local PostgreSQL 15 server (Debian bookworm).
#
# Why from trixie's SOURCE package: bookworm ships no pgvector with HNSW (the data model needs
# HNSW and iterative index scans, pgvector >= 0.8), and this machine reaches only Debian's
# mirrors and the npm registry. Trixie's `pgvector` source package is 0.8.x, builds against
# bookworm's postgresql-server-dev-15 in seconds, and needs nothing from trixie but its source.
#
# No trixie BINARY package may reach the system: trixie is only ever known to a private apt
# configuration (own sources list with a single deb-src line, own lists and cache dirs) used for
# `apt-get source` alone. The system's apt never sees trixie; build tools come from bookworm.
#
# Idempotent: exits at once when the server already lists `vector` in pg_available_extensions
# (MEMEX_PGVECTOR_FORCE=1 rebuilds and reinstalls anyway).
#
# Env: PG_MAJOR (15), PGHOST/PGPORT/PGUSER (127.0.0.1/5432/postgres),
#      MEMEX_DEBIAN_MIRROR (override the mirror read from /etc/apt), PGVECTOR_SUITE (trixie).
set -euo pipefail

PG_MAJOR="${PG_MAJOR:-15}"
PG_CONFIG="/usr/lib/postgresql/${PG_MAJOR}/bin/pg_config"
SUITE="${PGVECTOR_SUITE:-trixie}"
export PGHOST="${PGHOST:-127.0.0.1}" PGPORT="${PGPORT:-5432}" PGUSER="${PGUSER:-postgres}"
export DEBIAN_FRONTEND=noninteractive

# shellcheck source=lib/apt.sh
. "$(dirname "$0")/lib/apt.sh"
log() { echo "[install-pgvector] $*"; }
psql_q() { PGOPTIONS="-c client_min_messages=warning" psql -X -v ON_ERROR_STOP=1 -Atq -d postgres "$@"; }

has_vector() {
  [ "$(psql_q -c "SELECT count(*) FROM pg_available_extensions WHERE name = 'vector'" 2>/dev/null || echo 0)" = "1" ]
}

if has_vector && [ "${MEMEX_PGVECTOR_FORCE:-0}" != 1 ]; then
  log "vector already available ($(psql_q -c "SELECT default_version FROM pg_available_extensions WHERE name = 'vector'")); nothing to do"
  exit 0
fi
if ! pg_isready -q; then
  echo "[install-pgvector] PostgreSQL is not answering on ${PGHOST}:${PGPORT}; run scripts/ensure-postgres.sh first" >&2
  exit 1
fi

# --- The Debian mirror this machine already uses (first source serving bookworm). ------------------
find_mirror() {
  if [ -n "${MEMEX_DEBIAN_MIRROR:-}" ]; then echo "$MEMEX_DEBIAN_MIRROR"; return; fi
  local f
  # deb822 files: a stanza whose Suites include bookworm and that is not disabled.
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -e "$f" ] || continue
    awk '
      function flush() { if (uris != "" && suites ~ /(^| )bookworm( |$)/ && enabled != "no") { split(uris, u, " "); print u[1]; found = 1; exit } uris = ""; suites = ""; enabled = "" }
      /^[[:space:]]*$/ { flush(); next }
      /^[[:space:]]*#/ { next }
      tolower($1) == "uris:"    { $1 = ""; uris = $0 }
      tolower($1) == "suites:"  { $1 = ""; suites = $0 " " }
      tolower($1) == "enabled:" { enabled = tolower($2) }
      END { if (!found) flush() }
    ' "$f" | head -n1
  done
  # one-line format: deb [opts] URI bookworm components
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -e "$f" ] || continue
    sed -e 's/\[[^]]*\]//' "$f" | awk '$1 == "deb" && $3 == "bookworm" { print $2; exit }'
  done
}
MIRROR="$(find_mirror | grep -m1 . || true)"
MIRROR="${MIRROR%/}"
if [ -z "$MIRROR" ]; then
  echo "[install-pgvector] found no Debian bookworm source in /etc/apt/sources.list(.d); set MEMEX_DEBIAN_MIRROR" >&2
  exit 1
fi
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
log "mirror: $MIRROR (source package from suite $SUITE, deb-src only)"

# --- Build tools and headers from bookworm (the system's normal apt). ------------------------------
need=()
# (pg_config and pgxs.mk come with the client package; the server headers only with -dev.)
[ -f "/usr/include/postgresql/${PG_MAJOR}/server/postgres.h" ] && [ -x "$PG_CONFIG" ] || need+=("postgresql-server-dev-${PG_MAJOR}")
command -v make >/dev/null && command -v gcc >/dev/null || need+=(build-essential)
command -v dpkg-source >/dev/null || need+=(dpkg-dev)
if [ "${#need[@]}" -gt 0 ]; then
  log "installing from bookworm: ${need[*]}"
  apt_install "${need[@]}"
fi

# --- Private apt, for `apt-get source` only. --------------------------------------------------------
work="$(mktemp -d /tmp/memex-pgvector.XXXXXX)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/etc/sources.list.d" "$work/lists/partial" "$work/cache/archives/partial" "$work/src"
echo "deb-src [signed-by=$KEYRING] $MIRROR $SUITE main" >"$work/etc/sources.list"
# apt drops privileges to _apt for downloads: let it write where it downloads.
chown -R _apt "$work/lists" "$work/cache" "$work/src" 2>/dev/null || true
chmod 755 "$work"
private_apt=(
  -o "Dir::Etc::SourceList=$work/etc/sources.list"
  -o "Dir::Etc::SourceParts=$work/etc/sources.list.d"
  -o "Dir::State::Lists=$work/lists"
  -o "Dir::Cache=$work/cache"
  -o "Dir::Cache::pkgcache="
  -o "Dir::Cache::srcpkgcache="
  -o "APT::Sandbox::User=_apt"
  -o "Acquire::Languages=none"
)
log "fetching the $SUITE Sources index into a private lists dir"
apt-get "${private_apt[@]}" update -q >"$work/update.log" 2>&1 || { cat "$work/update.log" >&2; exit 1; }
(
  cd "$work/src"
  apt-get "${private_apt[@]}" source -q --only-source pgvector >"$work/source.log" 2>&1 || { cat "$work/source.log" >&2; exit 1; }
)
srcdir="$(find "$work/src" -mindepth 1 -maxdepth 1 -type d -name 'pgvector-*' | head -n1)"
[ -n "$srcdir" ] || { echo "[install-pgvector] apt-get source produced no pgvector-* dir" >&2; cat "$work/source.log" >&2; exit 1; }
log "building $(basename "$srcdir") against $("$PG_CONFIG" --version)"

# OPTFLAGS='' as Debian's own build does: no -march=native, so the library runs on any x86-64 CPU
# (pgvector picks SIMD at run time).
make -C "$srcdir" -j"$(nproc)" PG_CONFIG="$PG_CONFIG" OPTFLAGS="" >"$work/build.log" 2>&1 || { cat "$work/build.log" >&2; exit 1; }
make -C "$srcdir" install PG_CONFIG="$PG_CONFIG" OPTFLAGS="" >>"$work/build.log" 2>&1 || { cat "$work/build.log" >&2; exit 1; }

# --- Prove it: CREATE EXTENSION in a throwaway database. --------------------------------------------
db="memex_pgvector_check_$$"
psql_q -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db"
ver="$(psql -X -v ON_ERROR_STOP=1 -Atq -d "$db" \
  -c "CREATE EXTENSION vector" \
  -c "CREATE TABLE t (v vector(3))" \
  -c "INSERT INTO t VALUES ('[1,0,0]'), ('[0,1,0]')" \
  -c "CREATE INDEX ON t USING hnsw (v vector_cosine_ops)" \
  -c "SELECT extversion || ' nearest=' || (SELECT v::text FROM t ORDER BY v <=> '[0.9,0.1,0]' LIMIT 1) FROM pg_extension WHERE extname = 'vector'")" \
  || { psql_q -c "DROP DATABASE IF EXISTS $db" || true; exit 1; }
psql_q -c "DROP DATABASE IF EXISTS $db"
log "installed: pgvector $ver"
