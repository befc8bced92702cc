#!/bin/sh
# yosys (Debian package) for the RTL synthesis checks (tests/rtl_harness/test_*_synth.py).
# Installs with apt-get as root, or through sudo; says why when neither is possible.
set -e
if command -v yosys >/dev/null 2>&1; then exit 0; fi
if [ "$(id -u)" = 0 ]; then SUDO=""; elif command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
  echo "install-yosys: not root and no sudo; install the Debian package 'yosys' by hand" >&2; exit 1; fi
$SUDO apt-get install -y -q yosys >/dev/null 2>&1 || { $SUDO apt-get update -q >/dev/null && $SUDO apt-get install -y -q yosys >/dev/null; }
yosys -V
