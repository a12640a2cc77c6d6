#!/usr/bin/env bash
# Sets everything up and runs the main job: installs missing packages, builds ppb, lists the
# plugins it finds, fits the dry-run memory model to the bundled sample and partitions the
# sample model with it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh > build.log 2>&1 || { cat build.log; exit 1; }
build/bin/ppb plugins
echo
build/bin/ppb fit samples/data/llama70b-pp8-dryrun.json
echo
build/bin/ppb partition --model-desc samples/data/llama70b-layers.json \
    --dryrun samples/data/llama70b-pp8-dryrun.json --stages 8 --micro-batches 32 \
    --memory-limit-mb 30000
