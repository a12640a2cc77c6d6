#!/usr/bin/env bash
# Sets everything up and runs the main job: installs missing packages, builds ppb, lists the
# plugins it finds, and fits the dry-run memory model to the bundled sample.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh > build.log 2>&1 || { cat build.log; exit 1; }
build/bin/ppb plugins
echo
build/bin/ppb fit samples/data/llama70b-pp8-dryrun.json
