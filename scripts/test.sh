#!/usr/bin/env bash
# Builds ppb and runs every test suite with CTest, in parallel.
set -euo pipefail
cd "$(dirname "$0")/.."
"$(dirname "$0")/build.sh"
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -j "$(nproc)"
