#!/usr/bin/env bash
# The test command. Stages, each in its own build directory:
#   1. build  — everything, warnings as errors, then every test suite with CTest in parallel
#               (BUILD_DIR overrides ./build; extra arguments go to this build's configure step);
#   2. asan   — everything again under AddressSanitizer + UndefinedBehaviorSanitizer (-O1,
#               no benchmarks, ./build-asan), every test suite but the Python module's
#               (-DPPB_PYTHON=OFF: an ASan-built extension cannot load into a plain python);
#   3. tsan   — ThreadSanitizer build of test_threads and the plugins it loads (./build-tsan):
#               one model of each plugin used from eight threads at once;
#   4. fuzz   — the libFuzzer harnesses of tests/fuzz built with Clang (./build-fuzz), each run
#               PPB_FUZZ_SECONDS (default 20) on its seed corpus; a crash fails the run.
# PPB_QUICK=1 (or --quick as the first argument) runs stage 1 only, for developers; CI runs all.
# PPB_STAGES="asan fuzz" runs just the stages named. Prints each stage's wall time at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

quick="${PPB_QUICK:-0}"
if [ "${1:-}" = "--quick" ]; then
    quick=1
    shift
fi
if [ -n "${PPB_STAGES:-}" ]; then
    stages="$PPB_STAGES"
elif [ "$quick" = 1 ]; then
    stages="build"
else
    stages="build asan tsan fuzz"
fi
jobs="$(nproc)"
fuzz_seconds="${PPB_FUZZ_SECONDS:-20}"

# Sanitizer findings abort the process (a failed test), with a stack trace.
export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}"

timings=()
stage() {
    echo
    echo "=== ppb tests: stage $1 ==="
}
finished() {
    timings+=("$(printf '%-6s %5d s  %s' "$1" "$2" "$3")")
}

stage_build() {
    local build_dir="${BUILD_DIR:-build}"
    cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPPB_WERROR=ON "$@"
    cmake --build "$build_dir" -j "$jobs"
    ctest --test-dir "$build_dir" --output-on-failure -j "$jobs"
}

# The sanitizer builds turn warnings into errors only in stage 1: -O1 and the sanitizers'
# instrumentation make GCC warn differently, and the warning gate is the normal build.
stage_asan() {
    cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-g -O1" \
        -DPPB_SANITIZE=address,undefined -DPPB_BUILD_BENCHMARKS=OFF -DPPB_PYTHON=OFF
    cmake --build build-asan -j "$jobs"
    ctest --test-dir build-asan --output-on-failure -j "$jobs"
}

stage_tsan() {
    cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-g -O1" \
        -DPPB_SANITIZE=thread -DPPB_BUILD_BENCHMARKS=OFF -DPPB_PYTHON=OFF
    cmake --build build-tsan -j "$jobs" --target test_threads
    ctest --test-dir build-tsan --output-on-failure -R '^test_threads$'
}

stage_fuzz() {
    local cxx="${PPB_FUZZ_CXX:-}"
    if [ -z "$cxx" ]; then
        for candidate in clang++ clang++-14; do
            if command -v "$candidate" >/dev/null; then
                cxx="$candidate"
                break
            fi
        done
    fi
    if [ -z "$cxx" ]; then
        echo "run-all: stage fuzz needs clang++ (samples/scripts/install-deps.sh installs it)" >&2
        return 1
    fi
    cmake -S . -B build-fuzz -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=Debug \
        -DCMAKE_CXX_FLAGS_DEBUG="-g -O1" -DPPB_FUZZ=ON -DPPB_BUILD_TESTS=OFF \
        -DPPB_BUILD_BENCHMARKS=OFF
    cmake --build build-fuzz -j "$jobs" --target ppb_fuzzers
    local here="$PWD" harness failed=()
    mkdir -p build-fuzz/tests/fuzz/artifacts
    for harness in tests/fuzz/corpus/*/; do
        harness="$(basename "$harness")"
        # New inputs go to the build tree's corpus (first directory), never to the repository's.
        local work="build-fuzz/tests/fuzz/work/$harness"
        local extra="build-fuzz/tests/fuzz/corpus-extra/$harness"
        mkdir -p "$work"
        local corpora=("$here/$work" "$here/tests/fuzz/corpus/$harness")
        [ ! -d "$extra" ] || corpora+=("$here/$extra")
        echo "--- fuzz_$harness: ${fuzz_seconds} s"
        if ! (cd build-fuzz/tests/fuzz &&
              "./fuzz_$harness" -max_total_time="$fuzz_seconds" -timeout=10 -rss_limit_mb=2048 \
                  -max_len=16384 -print_final_stats=1 -artifact_prefix="artifacts/$harness-" \
                  "${corpora[@]}" 2>"work/$harness.log" </dev/null) ||
           ! grep -q '^Done ' "build-fuzz/tests/fuzz/work/$harness.log"; then
            tail -n 60 "build-fuzz/tests/fuzz/work/$harness.log"
            failed+=("$harness")
        else
            grep -E '^(Done|stat::number_of_executed_units|stat::new_units_added)' \
                "build-fuzz/tests/fuzz/work/$harness.log" || true
        fi
    done
    if [ ${#failed[@]} -ne 0 ]; then
        echo "run-all: fuzzers failed: ${failed[*]} (inputs in build-fuzz/tests/fuzz/artifacts/)" >&2
        return 1
    fi
}

# Each stage runs under set -e: its first failing command ends the run (the trap still prints
# the times so far).
current=""
current_start=0
report() {
    local rc=$?
    [ -z "$current" ] || finished "$current" $((SECONDS - current_start)) "FAILED"
    echo
    echo "=== ppb tests: wall time per stage ==="
    [ ${#timings[@]} -eq 0 ] || printf '%s\n' "${timings[@]}"
    exit "$rc"
}
trap report EXIT
for s in $stages; do
    stage "$s"
    current="$s"
    current_start=$SECONDS
    if [ "$s" = build ]; then
        stage_build "$@"
    else
        "stage_$s"
    fi
    current=""
    finished "$s" $((SECONDS - current_start)) "ok"
done
