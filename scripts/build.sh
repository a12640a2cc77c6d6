#!/usr/bin/env bash
# Configures and builds ppb in ./build (override with BUILD_DIR), warnings as errors.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${BUILD_DIR:-build}"
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPPB_WERROR=ON "$@"
cmake --build "$build_dir" -j "$(nproc)"
