#!/usr/bin/env bash
# The EXL2 reference job: everything issue 4 needs from exllamav2 0.3.2 and a GPU, in stages.
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
#   quantize   exllamav2's converter under that attention mode: one measurement, then each bpw
#   reference  exllamav2's logits and greedy continuations on 10 prompts, per bpw
#   dequant    per checkpoint: exllamav2 on it against transformers fp32 on the fp16 folder
#              (exl2_diagnose.py quant: is the quantized model sane?); (c) exllamav2's own
#              reconstruction of every quantized layer against Hearth's dequantization, bit for
#              bit (exl2_diagnose.py recon + exl2_checkpoint_tests); hearth-cli greedy on it
#   build      build Hearth with CUDA (tests/gpu/run.sh's configure, then the targets below)
#   hearth     run quant_tests (now with the exllamav2 fixtures), quant_parser_tests,
#              quant_gpu_tests and quant_exl2_smollm2_tests (Hearth on the exllamav2
#              checkpoints, CPU and GPU backends, against exllamav2's logits); builds if needed
#   bench      quant_bench: synthetic EXL2/GPTQ models of Llama shapes (decode at batch 1, 8, 32
#              with the share of the bandwidth limit, prefill), and the kernel sweep
# After every stage, and at the end, what exists is packed into $OUT: summary.txt and
# exl2_results.tar.gz (fixtures/exl2_exllamav2/, smollm2/exl2_smollm2_*.json and configs,
# diagnose/*.json, recon/<bpw>/manifest.json, logs/, bench/), so a call stopped at its limit still
# returns what it did. Stages are skipped (said so in the summary) when less time is left than
# they need before HEARTH_JOB_DEADLINE.
#
# Variables: WORK (default build-exl2-job, kept between calls on a warm machine), OUT (default
# $WORK/out), HEARTH_EXL2_BPW (default 2.5,4.0,6.0), HEARTH_EXL2_CAL_LENGTH (calibration row
# length, default 2048), HEARTH_EXL2_ATTN (sdpa, matmul or sdpa_fixed: overrides the diagnose
# stage's choice; without either, matmul), HEARTH_GPU_BUILD (Hearth build folder, default
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
  gpu_hf_parity_tests exl2_checkpoint_tests"

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
BPWS=${HEARTH_EXL2_BPW:-2.5,4.0,6.0}
DEADLINE=${HEARTH_JOB_DEADLINE:-570}
mkdir -p "$WORK/logs" "$WORK/bench" "$OUT"
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
for s_ in setup fixtures diagnose quantize reference dequant; do has $s_ && needs_exl2=1; done
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

if has quantize && enough 200 quantize; then
  start=$SECONDS
  if [ "$ATTN" = none ]; then
    say "quantize: SKIPPED: exllamav2 matched transformers under no attention mode on the fp16 folder (diagnose); set HEARTH_EXL2_ATTN to force one"
    status=1
  elif limited 420 $PY tests/reference/exl2_smollm2_reference.py quantize --hf "$WORK/smollm2-f16" --work "$WORK/exl2-work" \
       --out "$WORK/smollm2-exl2" --bpw "$BPWS" --length "${HEARTH_EXL2_CAL_LENGTH:-2048}" --attn "$ATTN" \
       > "$WORK/logs/quantize.log" 2>&1; then
    say "quantize ($BPWS, attention $ATTN): ok ($((SECONDS - start)) s): calibration perplexity (quant): $(grep -h 'calibration perplexity (quant)' "$WORK/logs/quantize.log" | sed 's/.*: //' | tr '\n' ' ')"
  else
    say "quantize ($BPWS, attention $ATTN): FAILED ($((SECONDS - start)) s)"; tail -40 "$WORK/logs/quantize.log"; status=1
  fi
  stage_done
fi

if has reference && [ "$ATTN" != none ] && enough 40 reference; then
  start=$SECONDS
  if limited 240 $PY tests/reference/exl2_smollm2_reference.py reference --models "$WORK/smollm2-exl2" --out "$WORK/smollm2-exl2" \
       --bpw "$BPWS" --attn "$ATTN" > "$WORK/logs/reference.log" 2>&1; then
    say "reference (attention $ATTN): ok ($((SECONDS - start)) s): $(ls "$WORK"/smollm2-exl2/*.json | xargs -n1 basename | tr '\n' ' ')"
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
    rm -f "$WORK/recon/$bpw/recon.safetensors"  # 270 MB at 4 bpw's size; the manifest stays
    stage_done
  done
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
  run_test quant_tests "$BUILD/tests/unit/quant/quant_tests"
  run_test quant_parser_tests "$BUILD/tests/unit/quant/quant_parser_tests"
  run_test quant_gpu_tests "$BUILD/tests/gpu/quant_gpu_tests"
  HEARTH_EXL2_SMOLLM2="$WORK/smollm2-exl2" run_test quant_exl2_smollm2_tests "$BUILD/tests/gpu/quant_exl2_smollm2_tests"
  grep -E '^(cpu|cuda) [0-9.]+ bpw' "$WORK/logs/quant_exl2_smollm2_tests.log" | grep -E 'positions|bits per weight' | tee -a "$SUMMARY"
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
