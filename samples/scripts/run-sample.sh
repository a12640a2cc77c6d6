#!/usr/bin/env bash
# Sets everything up and runs the main job: installs missing packages, builds everything ppb
# installs (the ppb command, its plugins, the libraries and the Python module; not the tests), so
# that `cmake --install build`, `build/bin/ppb` and `import ppb` work right after it, lists the
# plugins it finds, fits the dry-run memory model to the bundled sample, partitions the sample
# model with it, and ranks the sample's pipeline configurations on 64 devices (ppb search).
# BUILD_DIR builds elsewhere than build/.
set -euo pipefail
cd "$(dirname "$0")/../.."
say() { echo "run-sample: $*"; }

say "checking the Debian packages ppb builds with (samples/scripts/install-deps.sh)"
samples/scripts/install-deps.sh
build_dir="${BUILD_DIR:-build}"
# Ninja for a new build directory when it is installed (install-deps.sh installs it): it keeps
# both cores busy while libraries link; an existing build directory keeps its generator.
if [ -z "${CMAKE_GENERATOR:-}" ] && command -v ninja > /dev/null; then
    export CMAKE_GENERATOR=Ninja
fi

# The compiler's output goes to build.log; the terminal gets a line at every tenth of the build
# (a few minutes on two cores), and the log's end if the build fails.
progress() {
    local line done total percent shown=-1
    while IFS= read -r line; do
        if [[ $line =~ ^\[([0-9]+)/([0-9]+)\] ]]; then  # Ninja: [done/total]
            done=${BASH_REMATCH[1]} total=${BASH_REMATCH[2]}
            percent=$((100 * done / total))
        elif [[ $line =~ ^\[\ *([0-9]+)%\] ]]; then  # Make: [ nn%]
            percent=${BASH_REMATCH[1]}
        else
            continue
        fi
        if [ $((percent / 10)) -gt "$shown" ]; then
            shown=$((percent / 10))
            say "built $percent %"
        fi
    done
}
failed() {
    say "the build failed; the end of build.log:"
    tail -n 40 build.log
    exit 1
}
say "building the ppb command, its plugins, libraries and Python module in $build_dir/ (not the tests; the compiler's output goes to build.log)"
# Optimised, with line tables only (-g1: a backtrace still names functions, files and lines) and
# the standard and fmt headers precompiled: the build takes about a quarter less than with full
# debug information and no precompiled headers (host_api/docs/testing.md).
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DPPB_PRECOMPILED_HEADERS=ON \
    > build.log 2>&1 || failed
cmake --build "$build_dir" -j "$(nproc)" --target ppb_installable 2>&1 | tee -a build.log | progress ||
    failed
say "built; running the main job on the bundled sample"
echo

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
