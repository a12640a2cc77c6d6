#!/usr/bin/env bash
# Sets everything up and runs the main job: installs missing packages, builds the ppb command
# and its plugins (not the tests), lists the plugins it finds, fits the dry-run memory model to
# the bundled sample and partitions the sample model with it.
set -euo pipefail
cd "$(dirname "$0")/../.."
samples/scripts/install-deps.sh
build_dir="${BUILD_DIR:-build}"
{
    cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo
    cmake --build "$build_dir" -j "$(nproc)" --target ppb ppb_plugins
} > build.log 2>&1 || { cat build.log; exit 1; }
ppb="$build_dir/bin/ppb"
"$ppb" plugins
echo
"$ppb" fit samples/data/llama70b-pp8-dryrun.json
echo
"$ppb" partition --model-desc samples/data/llama70b-layers.json \
    --dryrun samples/data/llama70b-pp8-dryrun.json --stages 8 --micro-batches 32 \
    --memory-limit-mb 30000
