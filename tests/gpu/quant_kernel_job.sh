#!/usr/bin/env bash
# The quantized-kernel job for the GPU machine, in one call: builds Hearth with CUDA (no app),
# runs quant_gpu_tests (every bit width and mix against the CPU backend, whole synthetic models,
# batch invariance), the same under compute-sanitizer memcheck and racecheck (a subset), and the
# synthetic Llama-3-8B EXL2 / GPTQ benchmark. With BASELINE (a folder holding other versions of
# some source files at their repository paths), the same benchmark is built and run from the tree
# with those files swapped in, first, so both numbers come from one machine; VARIANTS adds more
# such trees (experiments), benchmarked after the new build.
#
#   BASELINE=build-baseline QUANTS=exl2:4.0,gptq:4:128 tests/gpu/quant_kernel_job.sh
#   VARIANTS="p16=build-var-p16 tile32=build-var-tile32" tests/gpu/quant_kernel_job.sh
#   BATCHES=32,64,128 tests/gpu/quant_kernel_job.sh   (decode batch sizes of the benchmark)
#
# PROFILE=1 adds one decode step of the new build under Nsight Compute (quant_bench
# --profile-step, real clocks, no cache flush), at each batch size of PROFILE_BATCHES (default
# 1): the time of every kernel of the step
# (tests/gpu/ncu_step_summary.py). TIMELINE=1 traces the same step at real concurrency, graph
# nodes one by one (Nsight Systems, else the CUPTI tracer tests/gpu/step_trace_injection.cpp):
# what each kernel adds to the step's length (tests/gpu/timeline_summary.py).
# Logs and summary.txt go to $OUT (default build-gpu/quant-job).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
ROOT=$PWD
OUT="${OUT:-$ROOT/build-gpu/quant-job}"
QUANTS="${QUANTS:-exl2:4.0,gptq:4:128}"
MODELS="${MODELS:-llama3-8b}"
mkdir -p "$OUT"
SUMMARY="$OUT/summary.txt"
: > "$SUMMARY"
say() { echo "$*" | tee -a "$SUMMARY"; }
J=$(nproc)
say "GPU: $(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | head -1)"

# Other trees: a copy of this one with some files swapped in (a folder holding them at their
# repository paths), built in the background (hearth-cli only, Release): BASELINE (older files),
# VARIANTS="name=folder ..." (experiments). All are benchmarked in this call, after the new build.
swapped_tree() {  # name, folder: builds /tmp/hearth-<name>
  local dir=/tmp/hearth-$1
  rm -rf "$dir" && mkdir -p "$dir"
  tar -C "$ROOT" --exclude='./build*' --exclude='./.git' -cf - . | tar -C "$dir" -xf -
  cp -r "$2"/. "$dir"/
  cmake -S "$dir" -B "$dir/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DHEARTH_APP=OFF \
    -DHEARTH_TESTS=OFF -DHEARTH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 &&
    cmake --build "$dir/build" -j "$J" --target hearth-cli
}
trees=()
[ -n "${BASELINE:-}" ] && trees+=("baseline=$BASELINE")
for v in ${VARIANTS:-}; do trees+=("$v"); done
declare -A tree_pid
for t in "${trees[@]}"; do
  name=${t%%=*}
  swapped_tree "$name" "${t#*=}" > "$OUT/${name}_build.log" 2>&1 &
  tree_pid[$name]=$!
done

start=$SECONDS
HEARTH_GPU_STAGES=build HEARTH_CUDA_ARCHS=90 OUT="$OUT/suite" tests/gpu/run.sh > "$OUT/suite.log" 2>&1
if cmake --build build-gpu -j "$J" --target quant_gpu_tests quant_bench hearth-cli >> "$OUT/build.log" 2>&1; then
  say "build: ok ($((SECONDS - start)) s)"
else
  say "build: FAILED"; tail -40 "$OUT/build.log"; exit 1
fi

run_test() {  # name, command...
  local name=$1; shift
  local t0=$SECONDS
  if timeout 600 "$@" > "$OUT/$name.log" 2>&1; then
    say "$name: ok ($((SECONDS - t0)) s) $(grep -E '^\[  PASSED|tests ran' "$OUT/$name.log" | tail -1)"
  else
    say "$name: FAILED ($((SECONDS - t0)) s)"
    grep -E 'FAILED|Failure|error|Error' "$OUT/$name.log" | head -30 | tee -a "$SUMMARY"
  fi
}
run_test quant_gpu_tests build-gpu/tests/gpu/quant_gpu_tests
SUBSET='QuantGpu.RowsAreBatchInvariant:QuantGpu.Exl2*:QuantGpu.NormsFolded*:QuantGpu.SliceSum*:QuantGpu.StagedX*:QuantGpu.RowGroups*'
run_test memcheck compute-sanitizer --tool memcheck --error-exitcode 1 \
  build-gpu/tests/gpu/quant_gpu_tests --gtest_filter="$SUBSET"
run_test racecheck compute-sanitizer --tool racecheck --error-exitcode 1 \
  build-gpu/tests/gpu/quant_gpu_tests --gtest_filter='QuantGpu.RowsAreBatchInvariant'

bench() {  # label, binary
  local t0=$SECONDS
  if timeout 300 "$2" bench --synthetic "$MODELS" --quant "$QUANTS" ${BATCHES:+--batches "$BATCHES"} \
    > "$OUT/bench_$1.txt" 2>&1; then
    say "bench $1 ($((SECONDS - t0)) s):"
  else
    say "bench $1: FAILED ($((SECONDS - t0)) s)"
  fi
  cat "$OUT/bench_$1.txt" | tee -a "$SUMMARY"
}
bench_tree() {  # name
  if wait "${tree_pid[$1]}"; then bench "$1" "/tmp/hearth-$1/build/app/cli/hearth-cli"
  else say "$1 build FAILED"; tail -20 "$OUT/$1_build.log"; fi
}
[ -n "${BASELINE:-}" ] && bench_tree baseline
bench new build-gpu/app/cli/hearth-cli
for t in "${trees[@]}"; do
  [ "${t%%=*}" = baseline ] || bench_tree "${t%%=*}"
done
# One decode step of the first model and quantization at batch $1, between
# cudaProfilerStart/Stop (the profilers below capture just that step).
QUANT1="${QUANTS%%,*}"
decode_step() {
  step=(build-gpu/tests/gpu/quant_bench --models "${MODELS%%,*}" --quants "$QUANT1" --prefill 16
        --batches "$1" --steps 2 --no-sweep --profile-step)
}
if [ "${PROFILE:-0}" = 1 ]; then
  for B in ${PROFILE_BATCHES:-1}; do
    decode_step "$B"
    timeout 300 ncu --profile-from-start off --clock-control none --cache-control none \
      --metrics gpu__time_duration.sum --csv "${step[@]}" > "$OUT/ncu_step_b$B.csv" 2>&1
    python3 tests/gpu/ncu_step_summary.py "$OUT/ncu_step_b$B.csv" "${MODELS%%,*} $QUANT1 batch $B" |
      tee -a "$SUMMARY"
  done
fi
if [ "${TIMELINE:-0}" = 1 ]; then
  NSYS_BIN=$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys \
    2>/dev/null | head -1)
  TRACER=$ROOT/build-gpu/tests/gpu/libhearth_step_trace.so
  [ -n "$NSYS_BIN" ] || cmake --build build-gpu --target hearth_step_trace >> "$OUT/build.log" 2>&1
  for B in ${TIMELINE_BATCHES:-1}; do
    decode_step "$B"
    csv="$OUT/timeline_b$B.csv"
    if [ -n "$NSYS_BIN" ]; then
      rm -f /tmp/hearth-step.nsys-rep /tmp/hearth-step.sqlite
      timeout 300 "$NSYS_BIN" profile --capture-range=cudaProfilerApi --capture-range-end=stop \
        --cuda-graph-trace=node --trace=cuda -o /tmp/hearth-step --force-overwrite true \
        "${step[@]}" > "$OUT/timeline_b$B.log" 2>&1
      "$NSYS_BIN" stats --report cuda_gpu_trace --format csv --output - /tmp/hearth-step.nsys-rep \
        > "$csv" 2>> "$OUT/timeline_b$B.log"
    elif [ -f "$TRACER" ]; then
      CUDA_INJECTION64_PATH=$TRACER HEARTH_STEP_TRACE=$csv timeout 300 "${step[@]}" \
        > "$OUT/timeline_b$B.log" 2>&1
    else
      say "timeline: neither nsys nor the CUPTI tracer"; break
    fi
    python3 tests/gpu/timeline_summary.py "$csv" "${MODELS%%,*} $QUANT1 batch $B" 2>&1 |
      tee -a "$SUMMARY"
  done
fi
