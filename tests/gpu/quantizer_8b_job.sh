#!/usr/bin/env bash
# The quantizer's time and peak VRAM on a Llama-3-8B-shape model (random weights), for the GPU
# machine: builds hearth-cli and quantizer_gpu_tests (no app), runs the tests, makes the model
# (tests/reference/make_llama_shape_model.py, LAYERS of its 32 decoder layers) and runs
# `hearth-cli quantize --backend cuda` with Hearth's CUDA calibration defaults, polling
# nvidia-smi for the peak. A job cut at LIMIT seconds (SIGTERM: hearth-cli saves it) is resumed
# by the next call while the machine stays warm (WORK keeps the model and the work folder).
#
#   TOKENIZER=build-tok LAYERS=32 FORMAT=exl2 BPW=4.0 LIMIT=500 tests/gpu/quantizer_8b_job.sh
#
# TOKENIZER: a folder with SmolLM2's tokenizer files (the calibration text is tokenized with
# them; their ids lie inside the 8B vocabulary). FORMAT exl2 (BPW) or gptq (4-bit g128).
# TESTS=0 skips quantizer_gpu_tests. BG=1: the quantization runs in the background, uninterrupted
# across calls (each call waits up to WAIT seconds; the first starts it). Logs, summary.txt and the job's progress lines go to $OUT.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
ROOT=$PWD
OUT="${OUT:-$ROOT/build-gpu/quantizer-8b}"
WORK="${WORK:-$ROOT/build-q8b}"
LAYERS="${LAYERS:-32}"
FORMAT="${FORMAT:-exl2}"
BPW="${BPW:-4.0}"
LIMIT="${LIMIT:-500}"
TOKENIZER="${TOKENIZER:-build-tok}"
mkdir -p "$OUT" "$WORK"
SUMMARY="$OUT/summary.txt"
: > "$SUMMARY"
say() { echo "$*" | tee -a "$SUMMARY"; }
J=$(nproc)
say "GPU: $(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | head -1)"

start=$SECONDS
if [ ! -x build-gpu/app/cli/hearth-cli ] || [ ! -x build-gpu/tests/gpu/quantizer_gpu_tests ] ||
   [ -n "$(find engine kernels app/cli -newer build-gpu/app/cli/hearth-cli -type f 2>/dev/null | head -1)" ]; then
  HEARTH_GPU_STAGES=build HEARTH_CUDA_ARCHS=90 OUT="$OUT/suite" tests/gpu/run.sh > "$OUT/suite.log" 2>&1
  if cmake --build build-gpu -j "$J" --target quantizer_gpu_tests hearth-cli >> "$OUT/build.log" 2>&1; then
    say "build: ok ($((SECONDS - start)) s)"
  else
    say "build: FAILED"; tail -40 "$OUT/build.log" | tee -a "$SUMMARY"; exit 1
  fi
fi
CLI=build-gpu/app/cli/hearth-cli

if [ "${TESTS:-1}" = 1 ]; then
  t0=$SECONDS
  if timeout 600 build-gpu/tests/gpu/quantizer_gpu_tests > "$OUT/quantizer_gpu_tests.log" 2>&1; then
    say "quantizer_gpu_tests: ok ($((SECONDS - t0)) s) $(grep -E '^\[  PASSED' "$OUT/quantizer_gpu_tests.log")"
  else
    say "quantizer_gpu_tests: FAILED ($((SECONDS - t0)) s)"
    grep -E 'FAILED|Failure|rror' "$OUT/quantizer_gpu_tests.log" | head -30 | tee -a "$SUMMARY"
  fi
fi

MODEL="$WORK/llama3-8b-shape-l$LAYERS"
if [ ! -f "$MODEL/model.safetensors" ]; then
  t0=$SECONDS
  if python3 tests/reference/make_llama_shape_model.py --out "$MODEL" --tokenizer-from "$TOKENIZER" \
       --layers "$LAYERS" > "$OUT/model.log" 2>&1; then
    say "model: $LAYERS layers ($((SECONDS - t0)) s, $(du -sh "$MODEL" | cut -f1))"
  else
    say "model: FAILED"; tail -5 "$OUT/model.log" | tee -a "$SUMMARY"; exit 1
  fi
fi

NAME="$FORMAT"
ARGS=(--format exl2 --bpw "$BPW")
if [ "$FORMAT" = gptq ]; then ARGS=(--format gptq --bits 4 --group-size 128); else NAME="exl2-$BPW"; fi
QOUT="$WORK/out-$NAME"
QWORK="$WORK/work-$NAME"
RESUME=()
if [ "${BG:-0}" = 1 ]; then
  # Background mode: the job runs in its own session, so it outlives this call while the machine
  # stays warm, uninterrupted; each call (the first starts it) waits up to WAIT seconds.
  PIDF="$WORK/$NAME.pid"
  if ! { [ -f "$PIDF" ] && kill -0 "$(cat "$PIDF")" 2>/dev/null; } && [ ! -f "$WORK/$NAME.rc" ]; then
    rm -rf "$QOUT" "$QWORK" "$WORK/$NAME.jsonl"
    setsid bash -c 'nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i 0 -lms 200 > "$1.vram" 2>/dev/null & s=$!
      b=$1; shift; "$@"; echo $? > "$b.rc"; kill $s' _ "$WORK/$NAME" "$CLI" quantize --backend cuda --json-progress --model "$MODEL" \
      --out "$QOUT" --work-dir "$QWORK" "${ARGS[@]}" > "$WORK/$NAME.jsonl" 2> "$WORK/$NAME.err" < /dev/null &
    echo $! > "$PIDF"
    say "started $NAME in the background (pid $(cat "$PIDF"))"
  fi
  while [ ! -f "$WORK/$NAME.rc" ] && [ $((SECONDS - start)) -lt "${WAIT:-560}" ]; do sleep 5; done
  cp "$WORK/$NAME.jsonl" "$WORK/$NAME.err" "$OUT/" 2>/dev/null
  peak=$(grep -E '^ *[0-9]+ *$' "$WORK/$NAME.vram" | sort -n | tail -1 | tr -d ' ')
  say "quantize $NAME: rc $(cat "$WORK/$NAME.rc" 2>/dev/null || echo running) at $((SECONDS - start)) s of this call; peak so far $peak MiB"
else
if [ -f "$QWORK/job.json" ]; then RESUME=(--resume); say "resuming $NAME"; else rm -rf "$QOUT"; fi
base=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i 0 | tr -d ' ')
nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i 0 -lms 200 > "$OUT/$NAME.vram" 2>/dev/null &
smi=$!
t0=$SECONDS
timeout -k 20 "$LIMIT" "$CLI" quantize --backend cuda --json-progress --model "$MODEL" --out "$QOUT" \
  --work-dir "$QWORK" "${RESUME[@]+"${RESUME[@]}"}" "${ARGS[@]}" >> "$OUT/$NAME.jsonl" 2> "$OUT/$NAME.err"
rc=$?
kill "$smi" 2>/dev/null; wait "$smi" 2>/dev/null
peak=$(grep -E '^ *[0-9]+ *$' "$OUT/$NAME.vram" | sort -n | tail -1 | tr -d ' ')
say "quantize $NAME: rc $rc after $((SECONDS - t0)) s (limit $LIMIT); VRAM before $base MiB, peak $peak MiB"
fi
# The per-module log lines (time and where it went), then the result.
grep -o '"message":"[^"]*"' "$OUT/$NAME.jsonl" | sed 's/"message":"//; s/"$//' | tee -a "$SUMMARY" | tail -200 > /dev/null
grep '"event":"done"' "$OUT/$NAME.jsonl" | tail -1 | tee -a "$SUMMARY"
tail -3 "$OUT/$NAME.err" | tee -a "$SUMMARY"
say "== done ($SECONDS s)"
