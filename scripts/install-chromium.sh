#!/usr/bin/env bash
# Install Debian's chromium for the browser test (Playwright drives it; its own browser
# download is not used). A no-op when /usr/bin/chromium exists. Needs root or sudo.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
  exit 0
fi
run() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo -n "$@"; fi; }
export DEBIAN_FRONTEND=noninteractive
run apt-get update -qq
run apt-get install -y -qq --no-install-recommends chromium >/dev/null
test -x /usr/bin/chromium
