#!/usr/bin/env bash
# Builds everything (warnings as errors) once with all cores, then runs every test suite with
# CTest in parallel. BUILD_DIR overrides ./build; extra arguments go to CMake's configure step.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${BUILD_DIR:-build}"
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPPB_WERROR=ON "$@"
cmake --build "$build_dir" -j "$(nproc)"
ctest --test-dir "$build_dir" --output-on-failure -j "$(nproc)"
