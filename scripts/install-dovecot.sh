#!/usr/bin/env bash
# Installs Debian's Dovecot IMAP server (dovecot-core + dovecot-imapd) for the IMAP collector tests,
# WITHOUT leaving a system Dovecot running: the tests start their own Dovecot per test file on a
# free loopback port with a throwaway config (test/helpers/dovecot.ts), so the packaged service
# must not hold ports 143/993 or anything else.
#
# There is no systemd here. Debian's maintainer scripts start services through invoke-rc.d, which
# a container's /usr/sbin/policy-rc.d (exit 101) usually forbids; where no such policy exists we
# install a temporary one for the duration of the install, and in any case stop whatever
# system Dovecot (base_dir /run/dovecot) runs afterwards and disable its init script.
#
# Idempotent and fast (~0.05 s) when /usr/sbin/dovecot and the imap binary are present.
set -euo pipefail
# shellcheck source=lib/apt.sh
. "$(dirname "$0")/lib/apt.sh"
log() { echo "[install-dovecot] $*"; }

stop_system_dovecot() {
  # Only the packaged instance: its master pid lives in /run/dovecot (the tests' instances use
  # their own base_dir under a temp dir and are left alone).
  if [ -f /run/dovecot/master.pid ] && kill -0 "$(cat /run/dovecot/master.pid)" 2>/dev/null; then
    log "stopping the packaged Dovecot (pid $(cat /run/dovecot/master.pid))"
    /usr/sbin/dovecot -c /etc/dovecot/dovecot.conf stop 2>/dev/null || kill "$(cat /run/dovecot/master.pid)" || true
    for _ in $(seq 1 50); do
      [ -f /run/dovecot/master.pid ] && kill -0 "$(cat /run/dovecot/master.pid)" 2>/dev/null || break
      sleep 0.1
    done
  fi
  if [ -x /etc/init.d/dovecot ] && command -v update-rc.d >/dev/null; then
    update-rc.d dovecot disable >/dev/null 2>&1 || true
  fi
}

imap_bin=/usr/lib/dovecot/imap
if [ -x /usr/sbin/dovecot ] && [ -x "$imap_bin" ]; then
  stop_system_dovecot
  log "present: $(/usr/sbin/dovecot --version)"
  exit 0
fi

# Forbid service starts during the install when the machine has no policy of its own.
policy=/usr/sbin/policy-rc.d
own_policy=0
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\n# temporary, scripts/install-dovecot.sh: no service starts during apt-get install\nexit 101\n' >"$policy"
  chmod 755 "$policy"
  own_policy=1
fi
cleanup() { if [ "$own_policy" = 1 ]; then rm -f "$policy"; fi; }
trap cleanup EXIT

log "installing dovecot-core dovecot-imapd from Debian"
apt_install dovecot-core dovecot-imapd
stop_system_dovecot

if [ ! -x /usr/sbin/dovecot ] || [ ! -x "$imap_bin" ]; then
  echo "[install-dovecot] /usr/sbin/dovecot or $imap_bin missing after install" >&2
  exit 1
fi
if command -v ss >/dev/null && ss -ltn '( sport = :143 or sport = :993 )' | grep -q LISTEN; then
  echo "[install-dovecot] warning: something still listens on port 143 or 993:" >&2
  ss -ltnp '( sport = :143 or sport = :993 )' >&2 || true
fi
log "installed: $(/usr/sbin/dovecot --version)"
