# Sourced by the install scripts. apt_install PKG...: installs Debian packages (bookworm, the
# system's own sources) non-interactively. It runs `apt-get update` only when the install fails
# (a new machine may have empty or stale package lists), so an already-prepared machine never
# pays for an update. Waits for the dpkg lock rather than failing when another apt runs.
apt_install() {
  local logf
  logf="$(mktemp /tmp/memex-apt.XXXXXX.log)"
  local opts=(-y -q --no-install-recommends -o DPkg::Lock::Timeout=300
    -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)
  if DEBIAN_FRONTEND=noninteractive apt-get install "${opts[@]}" "$@" >"$logf" 2>&1; then
    rm -f "$logf"; return 0
  fi
  echo "[apt] install of $* failed with the current package lists; running apt-get update and retrying"
  apt-get -o DPkg::Lock::Timeout=300 update -q >"$logf.update" 2>&1 || { cat "$logf.update" >&2; return 1; }
  rm -f "$logf.update"
  if DEBIAN_FRONTEND=noninteractive apt-get install "${opts[@]}" "$@" >"$logf" 2>&1; then
    rm -f "$logf"; return 0
  fi
  cat "$logf" >&2; rm -f "$logf"; return 1
}
