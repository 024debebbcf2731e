// The quantizer's public entry point, for hearth-cli and the app's quantization wizard: turns an
// fp16/bf16 model (a Hugging Face folder, or a GGUF file whose weights are taken dequantized)
// into an EXL2 or GPTQ model folder, layer by layer, with progress events, cancel and resume.
//
// A job keeps its state in a work folder (job.json, written atomically, plus per-layer files).
// Everything is deterministic: resuming an interrupted job gives the same output bytes as an
// uninterrupted run with the same options on the same device kind.
//
// Threading: quantize_model() runs on the calling thread (the app's engine worker thread) and
// calls `progress` on that thread; `cancel` may be raised from any thread.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/api/engine.h"  // DeviceKind
#include "engine/core/cancel.h"

namespace hearth {

enum class QuantizeFormat { kExl2, kGptq };
const char* quantize_format_name(QuantizeFormat f);  // "exl2", "gptq"

// The stages of a job, in order. EXL2 runs all of them; GPTQ skips kMeasure and kOptimize.
enum class QuantizeStage {
  kPrepare,   // reading the source, tokenizing the calibration text, embeddings
  kMeasure,   // EXL2: the error of every candidate setting of every layer
  kOptimize,  // EXL2: one setting per layer meeting the target bpw with the least error
  kQuantize,  // the final GPTQ pass over the quantized model's own activations
  kWrite,     // writing the output folder (shards, config, tokenizer files)
  kEvaluate,  // perplexity and KL against the source on held-out text (when asked)
  kDone,
};
const char* quantize_stage_name(QuantizeStage s);  // "prepare", "measure", ...

struct QuantizeOptions {
  std::filesystem::path source;  // an fp16/bf16/fp32 Hugging Face folder, or a .gguf file
  std::filesystem::path output;  // the model folder to write (must be absent or empty)
  // Job state and intermediate files; empty: default_work_dir(output). Kept after success
  // only with keep_work (a measurement there can be reused for other targets).
  std::filesystem::path work_dir;
  bool keep_work = false;
  QuantizeFormat format = QuantizeFormat::kExl2;

  // --- EXL2 ---
  double target_bpw = 4.0;  // average over the decoder's linear layers (as exllamav2 counts)
  int head_bits = 6;        // lm_head: 2, 3, 4, 5, 6 or 8
  // A measurement file from an earlier job (same source and calibration) to skip kMeasure.
  std::filesystem::path measurement;

  // --- GPTQ ---
  int bits = 4;                // 2, 3, 4 or 8
  int64_t group_size = 128;    // rows per group; -1: one group per column
  bool act_order = true;       // desc_act: columns in order of decreasing Hessian diagonal
  bool symmetric = true;       // sym (asymmetric zero points when false)
  double damp_percent = 0.01;  // GPTQ damping, fraction of the mean Hessian diagonal
  bool quantize_head = false;  // GPTQ keeps lm_head fp16 unless asked (AutoGPTQ's default)

  // --- calibration ---
  // Empty: Hearth's built-in set (resources/calibration). Else a .txt, .md or .jsonl file
  // (jsonl: each line an object whose "text" field, or "messages" chat list, is used).
  std::filesystem::path calibration_file;
  int64_t rows = 0;            // token rows for the final pass; 0: a default for the device
  int64_t length = 0;          // tokens per row; 0: a default for the device
  int64_t measure_rows = 0;    // EXL2 measurement rows; 0: a default for the device
  int64_t measure_length = 0;  // 0: same as length

  // --- device ---
  DeviceKind device = DeviceKind::kCpu;
  int cuda_device = 0;
  int cpu_threads = 0;  // 0: every core

  // --- job ---
  // Continue the job found in work_dir. The options that decide the output (source, format,
  // bits, calibration, ...) must match the job's; a mismatch is Error(kInvalidArgument) naming
  // the option. Without resume, an existing job in work_dir is Error(kInvalidArgument) unless
  // `restart` is set, which discards it.
  bool resume = false;
  bool restart = false;
  int64_t shard_size_mb = 8192;  // output shard size; 0: one file

  // --- evaluation after writing (kEvaluate) ---
  bool evaluate = false;
  std::filesystem::path eval_file;  // empty: the built-in held-out text
  int64_t eval_ctx = 512;           // tokens per window
  int64_t eval_max_tokens = 16384;  // tokens of eval text used at most
};

struct QuantizeProgress {
  QuantizeStage stage = QuantizeStage::kPrepare;
  int64_t step = 0;         // steps done in this stage (layers / modules)
  int64_t steps = 0;        // steps in this stage; 0 when unknown
  std::string item;         // what is being worked on: "model.layers.3.mlp", "lm_head", ...
  double fraction = 0;      // of the whole job, 0..1 (estimated from the work per stage)
  double elapsed_s = 0;     // wall time of this job, over all its runs (resumes)
  double remaining_s = -1;  // estimate; < 0 while unknown
  std::string message;      // a one-line log entry ("applied extra damping to ..."), may be empty
};
using QuantizeProgressCallback = std::function<void(const QuantizeProgress&)>;

struct QuantizeEvaluation {
  int64_t tokens = 0;            // positions scored
  double perplexity_source = 0;  // the unquantized model
  double perplexity_quant = 0;   // the written model, loaded through Hearth's readers
  double kl_mean = 0;            // mean KL(source || quant) per position, nats
  double kl_p999 = 0;            // 99.9th percentile of the per-position KL
  double top1_agreement = 0;     // share of positions where both argmax tokens agree
};

struct QuantizeResult {
  std::filesystem::path output;
  uint64_t bytes_on_disk = 0;       // all files of the output folder
  double bits_per_weight = 0;       // decoder linear layers (scales and indices included)
  double head_bits_per_weight = 0;  // lm_head (16 when it stays fp16)
  double seconds = 0;               // wall time over all runs of the job
  std::optional<QuantizeEvaluation> evaluation;
  std::vector<std::string> warnings;  // e.g. extra damping, clamped infinities
};

// Runs (or resumes) a job to the end. Throws Error: kInvalidArgument for bad options (naming
// the option; e.g. a target bpw below the cheapest setting says what the cheapest is),
// kInvalidFile for bad sources or calibration files, kUnsupported for architectures or dtypes
// the quantizer cannot take, kCancelled when `cancel` is raised (the job stays resumable),
// kInternal when a layer cannot be quantized (e.g. its Hessian is not positive definite after
// repeated damping), naming the layer.
QuantizeResult quantize_model(const QuantizeOptions& options,
                              const QuantizeProgressCallback& progress = {},
                              const CancelToken& cancel = {});

// Where a job for `output` keeps its state when QuantizeOptions::work_dir is empty:
// "<output>.hearth-quant" next to the output folder.
std::filesystem::path default_work_dir(const std::filesystem::path& output);

// A job found in a work folder, for "resume an interrupted job" in the wizard.
struct QuantizeJobStatus {
  QuantizeOptions options;  // as the job recorded them (resume = true)
  QuantizeStage stage = QuantizeStage::kPrepare;
  int64_t step = 0;
  int64_t steps = 0;
  double elapsed_s = 0;
};
// nullopt when `work_dir` holds no job; Error(kInvalidFile) when its job file is damaged.
std::optional<QuantizeJobStatus> find_quantize_job(const std::filesystem::path& work_dir);

// What a job would produce, from the source's config alone (nothing is quantized), for the
// wizard's size display: weight bytes of the output folder and the bpw range EXL2 allows.
struct QuantizeEstimate {
  uint64_t output_bytes = 0;    // tensors of the output model, approximately
  int64_t decoder_weights = 0;  // elements of the decoder's linear layers
  double min_bpw = 0;           // EXL2: cheapest setting of every layer
  double max_bpw = 0;           // EXL2: richest setting of every layer
  double head_bits_per_weight = 0;
};
QuantizeEstimate estimate_quantize(const QuantizeOptions& options);

}  // namespace hearth
