#!/usr/bin/env bash
# Installs the Debian tools the suite and the benches use beside memex:
#   chromium            the web UI's end-to-end tests (driven by playwright-core; `npx playwright
#                       install` cannot download a browser here)
#   maildir-utils (mu), notmuch   the mail import bench's peers (bench/email/peer.ts)
#   zip                 the Google Takeout and chat-export tests build real archives with Info-ZIP's zip
#   radicale            the CalDAV/CardDAV server the calendar and contact sync tests run against
#   vdirsyncer          the CalDAV sync bench's peer (bench/calendar/caldav.ts)
#   tesseract-ocr is not needed: OCR runs in tesseract.js.
# Idempotent: exits in milliseconds when every binary is present.
set -euo pipefail
# shellcheck source=lib/apt.sh
. "$(dirname "$0")/lib/apt.sh"
log() { echo "[install-tools] $*"; }

missing=()
command -v chromium >/dev/null || missing+=(chromium)
command -v mu >/dev/null || missing+=(maildir-utils)
command -v notmuch >/dev/null || missing+=(notmuch)
command -v zip >/dev/null || missing+=(zip)
command -v radicale >/dev/null || missing+=(radicale)
command -v vdirsyncer >/dev/null || missing+=(vdirsyncer)
if [ ${#missing[@]} -eq 0 ]; then
  log "present: $(chromium --version 2>/dev/null | head -1); mu $(mu --version 2>/dev/null | head -1 | awk '{print $NF}'); notmuch $(notmuch --version 2>/dev/null | awk '{print $NF}')"
  exit 0
fi
log "installing ${missing[*]} from Debian"
apt_install "${missing[@]}"
log "installed: $(chromium --version 2>/dev/null | head -1)"
