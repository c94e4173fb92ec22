#!/usr/bin/env bash
# The one command that installs what the tests need and runs them (README: "Run the tests").
# Where the system Python refuses pip (PEP 668: Debian 12, Ubuntu 24.04) and no venv is active, it makes
# .venv in the checkout (needs python3-venv) and uses it; in a venv, or where pip is allowed (CI), it uses python3.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=python3
if [ -z "${VIRTUAL_ENV:-}" ] && python3 - <<'PYEOF'
import os, sys, sysconfig
sys.exit(0 if os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")) else 1)
PYEOF
then
  [ -x .venv/bin/python ] || python3 -m venv .venv
  PY=.venv/bin/python
fi
"$PY" -m pip install -q --disable-pip-version-check -e '.[test]'
"$PY" -m pytest -q "$@"
