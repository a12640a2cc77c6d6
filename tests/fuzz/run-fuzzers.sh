#!/usr/bin/env bash
# Builds the libFuzzer harnesses (Clang, ./build-fuzz) and runs every one of them in turn,
# PPB_FUZZ_SECONDS each, then prints per harness the executions, the coverage reached (cov:
# edges, ft: features), the new inputs found and the verdict, with the path of any crashing
# input. Exits 1 when a harness crashed, leaked, timed out, ran out of memory or threw an
# undocumented exception (see fuzz_support.hpp), 2 on bad usage.
#
#   tests/fuzz/run-fuzzers.sh          the fuzz stage of tests/run-all.sh: 20 s per harness;
#                                      new inputs go to build-fuzz/tests/fuzz/work/ and are
#                                      thrown away, the grown corpora seed the run if present;
#   tests/fuzz/run-fuzzers.sh --long   the long run outside CI: 600 s per harness, new inputs
#                                      kept in the grown corpora, crashes and logs beside them.
#
# Each harness reads, in this order: the directory new inputs go to, the seed corpus of the
# repository (tests/fuzz/corpus/<harness>/), seeds made at build time
# (build-fuzz/tests/fuzz/corpus-extra/<harness>/) and the grown corpus
# ($PPB_FUZZ_CORPUS_DIR/<harness>/, the first directory with --long). The grown corpora live
# outside the repository; it is never written to.
#
# Environment:
#   PPB_FUZZ_SECONDS     seconds per harness (default 20, or 600 with --long)
#   PPB_FUZZ_CORPUS_DIR  the grown corpora (default ${XDG_CACHE_HOME:-~/.cache}/ppb-fuzz); with
#                        --long also artifacts/ (crashing inputs) and logs/ there
#   PPB_FUZZ_HARNESSES   the harnesses to run, space-separated (default: all, as registered
#                        in tests/fuzz/CMakeLists.txt)
#   PPB_FUZZ_PARALLEL    harnesses run at once (default 1; each is one process)
#   PPB_FUZZ_CXX         the Clang to build with (default clang++, then clang++-14)
#   PPB_FUZZ_BUILD_DIR   the build directory (default build-fuzz)
set -euo pipefail
cd "$(dirname "$0")/../.."
repo="$PWD"

long=0
case "${1:-}" in
    --long) long=1 ;;
    "") ;;
    *)
        echo "usage: tests/fuzz/run-fuzzers.sh [--long]" >&2
        exit 2
        ;;
esac
seconds="${PPB_FUZZ_SECONDS:-$([ "$long" = 1 ] && echo 600 || echo 20)}"
if ! [[ "$seconds" =~ ^[1-9][0-9]*$ ]]; then
    echo "run-fuzzers: PPB_FUZZ_SECONDS must be a positive whole number of seconds, got '$seconds'" >&2
    exit 2
fi
parallel="${PPB_FUZZ_PARALLEL:-1}"
if ! [[ "$parallel" =~ ^[1-9][0-9]*$ ]]; then
    echo "run-fuzzers: PPB_FUZZ_PARALLEL must be a positive whole number, got '$parallel'" >&2
    exit 2
fi
grown="${PPB_FUZZ_CORPUS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ppb-fuzz}"
case "$grown" in
    /*) ;;
    *) grown="$repo/$grown" ;;
esac
case "$(realpath -m "$grown")/" in
    "$repo"/*)
        echo "run-fuzzers: PPB_FUZZ_CORPUS_DIR ($grown) is inside the repository: the grown" \
            "corpora must live outside it" >&2
        exit 2
        ;;
esac
build="${PPB_FUZZ_BUILD_DIR:-build-fuzz}"

cxx="${PPB_FUZZ_CXX:-}"
if [ -z "$cxx" ]; then
    for candidate in clang++ clang++-14; do
        if command -v "$candidate" >/dev/null; then
            cxx="$candidate"
            break
        fi
    done
fi
if [ -z "$cxx" ]; then
    echo "run-fuzzers: the harnesses need clang++ (samples/scripts/install-deps.sh installs it)" >&2
    exit 1
fi
# Configuring fails when a harness and the seed corpora disagree (tests/fuzz/CMakeLists.txt).
cmake -S . -B "$build" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=Debug \
    -DCMAKE_CXX_FLAGS_DEBUG="-g1 -O1" -DPPB_FUZZ=ON -DPPB_BUILD_TESTS=OFF \
    -DPPB_BUILD_BENCHMARKS=OFF -DPPB_PRECOMPILED_HEADERS=ON
cmake --build "$build" -j "$(nproc)" --target ppb_fuzzers

bin="$repo/$build/tests/fuzz"
mapfile -t registered <"$bin/harnesses.txt"
if [ -n "${PPB_FUZZ_HARNESSES:-}" ]; then
    read -r -a harnesses <<<"$PPB_FUZZ_HARNESSES"
    for h in "${harnesses[@]}"; do
        if ! printf '%s\n' "${registered[@]}" | grep -qx -- "$h"; then
            echo "run-fuzzers: no harness '$h' (there are: ${registered[*]})" >&2
            exit 2
        fi
    done
else
    harnesses=("${registered[@]}")
fi

if [ "$long" = 1 ]; then
    artifacts="$grown/artifacts"
    logs="$grown/logs"
else
    artifacts="$bin/artifacts"
    logs="$bin/work"
fi
mkdir -p "$artifacts" "$logs"

# One harness: its log in $logs/<harness>.log, its summary line in $logs/<harness>.summary.
run_one() {
    local harness="$1" first
    if [ "$long" = 1 ]; then
        first="$grown/$harness"
    else
        first="$bin/work/$harness"
    fi
    mkdir -p "$first"
    local corpora=("$first" "$repo/tests/fuzz/corpus/$harness")
    [ ! -d "$bin/corpus-extra/$harness" ] || corpora+=("$bin/corpus-extra/$harness")
    [ "$long" = 1 ] || [ ! -d "$grown/$harness" ] || corpora+=("$grown/$harness")
    local log="$logs/$harness.log" rc=0
    (cd "$bin" && "./fuzz_$harness" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
        -max_len=16384 -print_final_stats=1 -artifact_prefix="$artifacts/$harness-" \
        "${corpora[@]}" >"$log" 2>&1 </dev/null) || rc=$?
    # The last status line ("#N DONE cov: C ft: F corp: ...") and the final statistics.
    local status runs new cov ft crash verdict
    status="$(grep -E '^#[0-9]+' "$log" | tail -n 1 || true)"
    runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)"
    new="$(sed -n 's/^stat::new_units_added: *//p' "$log" | tail -n 1)"
    cov="$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$status")"
    ft="$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$status")"
    crash="$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)"
    if [ -z "$runs" ]; then
        runs="$(sed -n 's/^#\([0-9]*\).*/\1/p' <<<"$status")"
    fi
    if [ "$rc" = 0 ] && grep -q '^Done ' "$log"; then
        verdict="clean"
    else
        verdict="FAILED (exit $rc)${crash:+: $crash}"
    fi
    printf '%-22s %12s %8s %8s %8s  %s\n' "fuzz_$harness" "${runs:-?}" "${cov:-?}" "${ft:-?}" \
        "${new:-?}" "$verdict" >"$logs/$harness.summary"
    echo "--- fuzz_$harness: $verdict (${runs:-?} executions in $seconds s, log $log)"
    if [ "$verdict" != clean ]; then
        tail -n 60 "$log"
        return 1
    fi
}

echo "run-fuzzers: ${#harnesses[@]} harnesses, $seconds s each, $parallel at a time;" \
    "grown corpora in $grown$([ "$long" = 1 ] || echo ' (read only)')"
for harness in "${harnesses[@]}"; do
    rm -f "$logs/$harness.summary"
    run_one "$harness" &
    while [ "$(jobs -rp | wc -l)" -ge "$parallel" ]; do
        wait -n || true
    done
done
wait || true
failed=()
for harness in "${harnesses[@]}"; do
    grep -q ' clean$' "$logs/$harness.summary" 2>/dev/null || failed+=("$harness")
done

echo
printf '%-22s %12s %8s %8s %8s  %s\n' harness executions cov ft new result
for harness in "${harnesses[@]}"; do
    cat "$logs/$harness.summary" 2>/dev/null ||
        printf '%-22s %12s %8s %8s %8s  %s\n' "fuzz_$harness" ? ? ? ? "did not finish"
done
if [ ${#failed[@]} -ne 0 ]; then
    echo "run-fuzzers: failed: ${failed[*]} (crashing inputs in $artifacts/; replay one with" \
        "$build/tests/fuzz/fuzz_<harness> <input>)" >&2
    exit 1
fi
