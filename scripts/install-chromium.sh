#!/bin/sh
# Chromium and its WebDriver (Debian packages 'chromium' and 'chromium-driver') for the browser test
# of the campaign report (tests/reports/test_browser.py). Installs with apt-get as root, or through
# sudo; says why when neither is possible.
set -e
if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then exit 0; fi
if [ "$(id -u)" = 0 ]; then SUDO=""; elif command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
  echo "install-chromium: not root and no sudo; install the Debian packages 'chromium' and 'chromium-driver' by hand" >&2; exit 1; fi
$SUDO apt-get install -y -q chromium chromium-driver >/dev/null 2>&1 || { $SUDO apt-get update -q >/dev/null && $SUDO apt-get install -y -q chromium chromium-driver >/dev/null; }
chromium --version
chromedriver --version
