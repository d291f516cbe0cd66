#!/usr/bin/env bash
# Render every page of the app into docs/screenshots/<page>.png (the README and the AppStream metainfo use them).
#
#   packaging/update_screenshots.sh [SCENARIO]     SCENARIO: a --fake-gpu name, default 2x4090
#
# Renders offscreen with simulated GPUs (the pages show the "simulated hardware" banner) and a throw-away
# ADVISOR_HOME, so the pictures do not depend on this machine or on saved settings.
set -euo pipefail

cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv/bin/python}
scenario=${1:-2x4090}
home=$(mktemp -d)
trap 'rm -rf "$home"' EXIT

mkdir -p docs/screenshots
QT_QPA_PLATFORM=offscreen ADVISOR_HOME="$home" "$PYTHON" -m advisor gui --fake-gpu "$scenario" --screenshot docs/screenshots
rm -f docs/screenshots/plan.json  # the app's plan document, not a picture
ls -l docs/screenshots/*.png
