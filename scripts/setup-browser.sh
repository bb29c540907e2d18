#!/usr/bin/env bash
# Installs what the browser test needs: Debian's Chromium, a CJK font (so the screenshot shows
# Chinese, not boxes) and Node's playwright-core (from the lock file in tests/browser). Playwright's own browser download is not used (no hub access);
# the test drives /usr/bin/chromium. Idempotent; prints the Chromium version.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v chromium >/dev/null 2>&1 || ! fc-list 2>/dev/null | grep -qi "Noto Sans CJK"; then
    if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium fonts-noto-cjk >/dev/null
fi
if ! command -v node >/dev/null 2>&1; then
    echo "setup-browser: node is missing (install Debian's nodejs)" >&2
    exit 1
fi
if [ ! -d tests/browser/node_modules/playwright-core ]; then
    npm ci --prefix tests/browser --no-audit --no-fund --silent
fi
chromium --version 2>/dev/null
