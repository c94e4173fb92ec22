#!/usr/bin/env bash
# The one command that installs what the tests need and runs them (README: "Run the tests").
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q --disable-pip-version-check -e '.[test]'
python3 -m pytest -q "$@"
