#!/usr/bin/env bash
# Sets everything up and runs the main job: installs missing packages, builds the ppb command
# and its plugins (not the tests), lists the plugins it finds, fits the dry-run memory model to
# the bundled sample, partitions the sample model with it, and ranks the sample's pipeline
# configurations on 64 devices (ppb search).
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
echo
# Which pipeline configuration to run on 64 devices (tensor parallel 8) for a global batch of
# 256: every pipeline degree, schedule and recompute policy planned and ranked.
"$ppb" search --model-desc samples/data/llama70b-layers.json \
    --dryrun samples/data/llama70b-pp8-dryrun.json --devices 64 --tensor-parallel 8 \
    --global-batch 256 --memory-limit-mb 40000 --recompute any,full --top 5
