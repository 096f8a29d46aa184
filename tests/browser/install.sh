#!/usr/bin/env bash
# Installs what the browser test needs: the npm packages at the exact versions package-lock.json
# pins (npm ci; skipped when node_modules already holds them), and, under CI=true as root,
# Debian's chromium when /usr/bin/chromium is missing. Outside CI chromium is never installed
# here: the test skips without it. No browser is ever downloaded by npm (playwright-core has no
# install step; PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD makes sure).
set -euo pipefail
cd "$(dirname "$0")"
if [ "${CI:-}" = "true" ] && [ "$(id -u)" = 0 ] && [ ! -x /usr/bin/chromium ]; then
  echo "browser: installing chromium"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends chromium
fi
# Up to date when every package the lock file names is installed at its locked version (optional
# ones, built for other platforms, may be absent).
fresh=$(node -e '
  const fs = require("fs");
  const lock = require("./package-lock.json").packages;
  for (const [p, v] of Object.entries(lock)) {
    if (!p) continue;
    if (v.optional && !fs.existsSync(p)) continue;
    try {
      if (JSON.parse(fs.readFileSync(p + "/package.json", "utf8")).version !== v.version) throw 0;
    } catch { console.log("no"); process.exit(0); }
  }
  console.log("yes");')
if [ "$fresh" != yes ]; then
  echo "browser: installing the pinned npm packages (npm ci)"
  PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error
fi
