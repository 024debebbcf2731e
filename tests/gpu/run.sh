#!/usr/bin/env bash
# The GPU suite in one go, for a machine with an NVIDIA GPU (sm_80 or newer) and the CUDA
# toolkit: configures and builds Hearth with CUDA and without the app, runs the GPU tests
# (every kernel and whole forward passes against the CPU reference), runs them again under
# compute-sanitizer memcheck, runs the benchmark, optionally profiles the decode kernels with
# Nsight Compute, and prints a summary. Logs and reports go to $OUT (default build-gpu/results).
#
#   tests/gpu/run.sh                       # everything but the profile
#   HEARTH_GPU_STAGES=build,test tests/gpu/run.sh
#   HEARTH_BENCH_ARGS="--models llama3-8b,llama2-13b" tests/gpu/run.sh
#
# Variables: HEARTH_GPU_STAGES (build,test,others,bench,ncu,memcheck; default all but ncu;
# "others": every other test labelled gpu, after a full build),
# HEARTH_GPU_BUILD (build folder, default build-gpu), HEARTH_CUDA_ARCHS (default: native),
# HEARTH_BENCH_ARGS (extra backend_bench arguments), HEARTH_GPU_TIMEOUT (seconds per test
# binary, sanitizer run and benchmark; default 900), OUT (where logs go).
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
BUILD="${HEARTH_GPU_BUILD:-build-gpu}"
OUT="${OUT:-$ROOT/$BUILD/results}"
STAGES="${HEARTH_GPU_STAGES:-build,test,others,bench,memcheck}"
ARCHS="${HEARTH_CUDA_ARCHS:-native}"
mkdir -p "$OUT"
export PATH="/usr/local/cuda/bin:$PATH"
SUMMARY="$OUT/summary.txt"
: > "$SUMMARY"
say() { echo "$*" | tee -a "$SUMMARY"; }
has_stage() { [[ ",$STAGES," == *",$1,"* ]]; }
JOBS=$(nproc)
LIMIT="${HEARTH_GPU_TIMEOUT:-900}"

say "== Hearth GPU suite: $(date -u +%Y-%m-%dT%H:%M:%SZ), stages: $STAGES"
if command -v nvidia-smi >/dev/null; then
  say "GPU: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | head -1)"
else
  say "GPU: nvidia-smi not found"
fi
say "nvcc: $(nvcc --version 2>/dev/null | tail -1)"

# GoogleTest: the system's, else built from /usr/src/googletest or from a copy in .gpu-deps.
gtest_args=()
shopt -s nullglob
found_gtest=(/usr/lib/*/libgtest.a /usr/lib/*/cmake/GTest/GTestConfig.cmake /usr/lib64/libgtest.a
             /usr/local/lib*/libgtest.a /usr/local/lib*/cmake/GTest/GTestConfig.cmake)
shopt -u nullglob
if [ ${#found_gtest[@]} -eq 0 ]; then
  src=""
  for d in /usr/src/googletest "$ROOT/.gpu-deps/googletest-src"; do
    [ -f "$d/CMakeLists.txt" ] && src=$d && break
  done
  if [ -n "$src" ]; then
    prefix="$ROOT/$BUILD/_gtest"
    if [ ! -f "$prefix/lib/libgtest.a" ] && [ ! -f "$prefix/lib64/libgtest.a" ]; then
      say "building GoogleTest from $src"
      (cmake -S "$src" -B "$ROOT/$BUILD/_gtest-build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
         -DCMAKE_INSTALL_PREFIX="$prefix" -DBUILD_GMOCK=OFF -DCMAKE_POSITION_INDEPENDENT_CODE=ON &&
       cmake --build "$ROOT/$BUILD/_gtest-build" -j "$JOBS" &&
       cmake --install "$ROOT/$BUILD/_gtest-build") >> "$OUT/build.log" 2>&1
    fi
    gtest_args=(-DGTest_ROOT="$prefix" -DCMAKE_PREFIX_PATH="$prefix")
  else
    say "GoogleTest not found (no libraries, no sources): the build will fail"
  fi
fi

status_build=skipped
if has_stage build; then
  start=$SECONDS
  if cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHEARTH_CUDA=ON \
       -DHEARTH_APP=OFF -DCMAKE_CUDA_ARCHITECTURES="$ARCHS" "${gtest_args[@]}" \
       >> "$OUT/build.log" 2>&1 &&
     cmake --build "$BUILD" -j "$JOBS" --target gpu_ops_tests gpu_model_tests backend_bench \
       >> "$OUT/build.log" 2>&1; then
    status_build=ok
  else
    status_build=FAILED
  fi
  say "build: $status_build ($((SECONDS - start)) s; warnings: $(grep -c 'warning' "$OUT/build.log"))"
  if [ "$status_build" != ok ]; then
    tail -40 "$OUT/build.log"
    exit 1
  fi
fi

BIN="$ROOT/$BUILD/tests"
status_test=skipped
if has_stage test; then
  start=$SECONDS
  : > "$OUT/tests.log"
  status_test=ok
  for t in gpu_ops_tests gpu_model_tests; do
    if ! timeout "$LIMIT" "$BIN/gpu/$t" --gtest_color=no >> "$OUT/tests.log" 2>&1; then
      status_test=FAILED
      echo "!! $t exited with $?" >> "$OUT/tests.log"
    fi
  done
  say "tests: $status_test ($((SECONDS - start)) s): $(grep -c '^\[       OK \]' "$OUT/tests.log") passed, $(grep -c '^\[  FAILED  \] [A-Za-z]' "$OUT/tests.log") failed lines, $(grep -c '^\[  SKIPPED \] [A-Za-z]' "$OUT/tests.log") skipped"
  grep -E '^\[  FAILED  \] [A-Za-z]|^\[ (attention|batching|SmolLM2|device|tiny)' "$OUT/tests.log" | sort -u | tee -a "$SUMMARY"
fi

# The other tests labelled gpu (e.g. the quantized kernels' suites), built with everything else.
status_others=skipped
if has_stage others; then
  start=$SECONDS
  if [ "${HEARTH_GPU_OTHERS_BUILD:-1}" = 1 ]; then
    cmake --build "$BUILD" -j "$JOBS" >> "$OUT/build.log" 2>&1 || say "others: full build FAILED (see build.log)"
  fi
  if timeout "$LIMIT" ctest --test-dir "$BUILD" -L gpu -E '^(gpu_ops_tests|gpu_model_tests)$' \
       --output-on-failure > "$OUT/others.log" 2>&1; then
    status_others=ok
  else
    status_others=FAILED
  fi
  say "other gpu tests: $status_others ($((SECONDS - start)) s): $(grep -E 'tests passed|tests failed' "$OUT/others.log" | tail -1)"
  grep -E '\*\*\*(Failed|Not Run|Timeout)|Skipped' "$OUT/others.log" | tee -a "$SUMMARY"
fi

status_bench=skipped
if has_stage bench; then
  start=$SECONDS
  # shellcheck disable=SC2086
  if timeout "$LIMIT" "$BIN/bench/backend_bench" --json-out "$OUT/bench.json" ${HEARTH_BENCH_ARGS:-} \
       > "$OUT/bench.txt" 2>&1; then
    status_bench=ok
  else
    status_bench=FAILED
  fi
  say "bench: $status_bench ($((SECONDS - start)) s)"
  cat "$OUT/bench.txt" | tee -a "$SUMMARY"
fi

if has_stage ncu; then
  start=$SECONDS
  if command -v ncu >/dev/null; then
    # One batch-1 decode step of the Llama-3-8B shape (graph nodes profiled one by one).
    timeout "$LIMIT" ncu --profile-from-start off --graph-profiling node --csv \
      --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,launch__grid_size,launch__registers_per_thread \
      "$BIN/bench/backend_bench" --models llama3-8b --profile-decode > "$OUT/ncu.csv" 2>&1
    say "ncu: rc $? ($((SECONDS - start)) s), $(wc -l < "$OUT/ncu.csv") lines"
  else
    say "ncu: not found"
  fi
fi

status_memcheck=skipped
if has_stage memcheck; then
  start=$SECONDS
  if command -v compute-sanitizer >/dev/null; then
    status_memcheck=ok
    : > "$OUT/memcheck.log"
    # Both suites (seconds each without the sanitizer, under a minute with it).
    for run in "gpu/gpu_ops_tests" "gpu/gpu_model_tests"; do
      set -- $run
      exe=$1; shift
      # API errors are not reported: the out-of-memory test provokes them on purpose.
      if ! timeout "$LIMIT" compute-sanitizer --tool memcheck --report-api-errors no \
           --error-exitcode 99 --print-limit 20 \
           "$BIN/$exe" --gtest_color=no "$@" >> "$OUT/memcheck.log" 2>&1; then
        status_memcheck=FAILED
      fi
    done
    say "memcheck: $status_memcheck ($((SECONDS - start)) s): $(grep -h 'ERROR SUMMARY' "$OUT/memcheck.log" | tr '\n' ' ')"
  else
    say "memcheck: compute-sanitizer not found"
  fi
fi

say "== summary: build $status_build, tests $status_test, other gpu tests $status_others, memcheck $status_memcheck, bench $status_bench"
[ "$status_build" != FAILED ] && [ "$status_test" != FAILED ] && [ "$status_others" != FAILED ] &&
  [ "$status_memcheck" != FAILED ] && [ "$status_bench" != FAILED ]
