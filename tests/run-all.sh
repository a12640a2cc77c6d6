#!/usr/bin/env bash
# The test command. Stages, each in its own build directory:
#   1. build  — everything, warnings as errors, then every test suite with CTest in parallel
#               (BUILD_DIR overrides ./build; extra arguments go to this build's configure step);
#   2. journeys — every walk-through of the README and the docs verbatim, as a reader runs it: a
#               clean checkout of the tracked files (./build-journeys/checkout), the README's
#               set-up command run there, then each walk-through in a fresh copy of that checkout
#               with a HOME of its own (tests/docs/check_journeys.py);
#   3. asan   — everything again under AddressSanitizer + UndefinedBehaviorSanitizer (-O1,
#               no benchmarks, ./build-asan), every test suite but the Python module's
#               (-DPPB_PYTHON=OFF: an ASan-built extension cannot load into a plain python);
#   4. tsan   — ThreadSanitizer build of test_threads and the plugins it loads (./build-tsan):
#               one model of each plugin used from eight threads at once;
#   5. fuzz   — the libFuzzer harnesses of tests/fuzz built with Clang (./build-fuzz), each run
#               PPB_FUZZ_SECONDS (10 here) on its seed corpus and the grown corpora of long
#               runs if present (tests/fuzz/run-fuzzers.sh), one per core at a time
#               (PPB_FUZZ_PARALLEL); a crash fails the run, and so does
#               a seed corpus directory without a harness or a harness without one.
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
    stages="build journeys asan tsan fuzz"
fi
jobs="$(nproc)"
# New build directories use Ninja when it is installed (samples/scripts/install-deps.sh installs
# it): it compiles a target's files while the libraries it links are still being built, where
# Make waits, so both cores stay busy; existing build directories keep their generator.
if [ -z "${CMAKE_GENERATOR:-}" ] && command -v ninja > /dev/null; then
    export CMAKE_GENERATOR=Ninja
fi

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

# Stage 1 keeps line tables only (-g1) too: a failing test's backtrace in gdb still names
# functions, files and lines, and the test suites build about 40 % faster than with full debug
# information. Both it and the ASan stage compile each test suite as a unity build
# (PPB_UNITY_TESTS, tests/CMakeLists.txt: the suites' files in batches; the code under test file
# by file), and the suites' own files at -O0 (PPB_TEST_CXX_FLAGS: a batch of test_cli compiles in
# 16 s of CPU at -O0, 41 s at -O2; the libraries, plugins and command under test stay at -O2,
# and so do test_partition and test_plugins, whose own code does the heavy work). Arguments
# after the script's override these, e.g. -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g -DNDEBUG"
# or -DPPB_UNITY_TESTS=OFF.
stage_build() {
    local build_dir="${BUILD_DIR:-build}"
    cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPPB_WERROR=ON \
        -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DPPB_UNITY_TESTS=ON \
        -DPPB_TEST_CXX_FLAGS=-O0 -DPPB_PRECOMPILED_HEADERS=OFF "$@"
    cmake --build "$build_dir" -j "$jobs"
    ctest --test-dir "$build_dir" --output-on-failure -j "$jobs"
}

# The sanitizer builds turn warnings into errors only in stage 1: -O1 and the sanitizers'
# instrumentation make GCC warn differently, and the warning gate is the normal build. They keep
# line tables only (-g1): a sanitizer's stack trace still names every function, file and line,
# and the stage compiles about a fifth faster than with full debug information. They, and the
# fuzz stage's build, precompile the standard and fmt headers of the libraries and the command
# (PPB_PRECOMPILED_HEADERS; stage 1 does not, the top-level CMakeLists.txt says why). In the ASan
# stage the suites' own files and the test plugins (PPB_TEST_CXX_FLAGS, tests/CMakeLists.txt)
# compile at -O0, 40 % faster; the libraries, plugins and command under test at -O1 (the command
# at -O0 compiled 50 s faster but holds twice the UBSan check data, and each of its processes ran
# 15 to 25 % longer). Its executables link without PIE: an instrumented ppb is 100 MB
# with a million relative relocations, and each ppb process the suites start spent about 0.1 s
# applying them (`ppb --version`: 0.28 s with PIE, 0.16 s without; the stage's tests took 374 s
# instead of 433 s).
stage_asan() {
    cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-g1 -O1" \
        -DPPB_TEST_CXX_FLAGS=-O0 -DPPB_UNITY_TESTS=ON -DPPB_PRECOMPILED_HEADERS=ON \
        -DCMAKE_EXE_LINKER_FLAGS=-no-pie \
        -DPPB_SANITIZE=address,undefined -DPPB_BUILD_BENCHMARKS=OFF -DPPB_PYTHON=OFF
    cmake --build build-asan -j "$jobs"
    ctest --test-dir build-asan --output-on-failure -j "$jobs"
}

# The set-up command builds its own tree inside the checkout (about a third of stage 1's build:
# the command, plugins, libraries and Python module, not the tests); nothing is shared with
# stage 1's tree, as nothing would be on a reader's machine.
stage_journeys() {
    local python=python3
    [ -x /usr/bin/python3 ] && python=/usr/bin/python3
    "$python" tests/docs/check_journeys.py build-journeys
}

stage_tsan() {
    cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-g1 -O1" \
        -DPPB_SANITIZE=thread -DPPB_BUILD_BENCHMARKS=OFF -DPPB_PYTHON=OFF \
        -DPPB_PRECOMPILED_HEADERS=ON
    cmake --build build-tsan -j "$jobs" --target test_threads
    ctest --test-dir build-tsan --output-on-failure -R '^test_threads$'
}

# Every harness for PPB_FUZZ_SECONDS (here 10 by default) on its seed corpus and, when present,
# on the corpora grown by long runs (tests/fuzz/run-fuzzers.sh --long, in PPB_FUZZ_CORPUS_DIR).
# One harness per core at a time: each is one process, so each still gets its seconds of a core.
# The stage is a check that every seed and grown input still passes and a short search beyond
# them (from about 1 000 inputs for fuzz_design to 150 000 in 10 s); the search itself is the
# long runs'.
stage_fuzz() {
    PPB_FUZZ_SECONDS="${PPB_FUZZ_SECONDS:-10}" PPB_FUZZ_PARALLEL="${PPB_FUZZ_PARALLEL:-$jobs}" \
        tests/fuzz/run-fuzzers.sh
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
