#include "engine/quantizer/quantize_job.h"

#include "engine/core/error.h"
#include "engine/model/model_loader.h"
#include "engine/quantizer/exl2_qparams.h"
#include "engine/quantizer/job_state.h"
#include "engine/quantizer/quant_pipeline.h"

namespace hearth {
namespace fs = std::filesystem;

const char* quantize_format_name(QuantizeFormat f) {
  return f == QuantizeFormat::kGptq ? "gptq" : "exl2";
}

const char* quantize_stage_name(QuantizeStage s) {
  switch (s) {
    case QuantizeStage::kPrepare:
      return "prepare";
    case QuantizeStage::kMeasure:
      return "measure";
    case QuantizeStage::kOptimize:
      return "optimize";
    case QuantizeStage::kQuantize:
      return "quantize";
    case QuantizeStage::kWrite:
      return "write";
    case QuantizeStage::kEvaluate:
      return "evaluate";
    case QuantizeStage::kDone:
      return "done";
  }
  return "unknown";
}

QuantizeResult quantize_model(const QuantizeOptions& options,
                              const QuantizeProgressCallback& progress, const CancelToken& cancel) {
  quantizer::QuantPipeline pipeline(options, progress, cancel);
  return pipeline.run();
}

fs::path default_work_dir(const fs::path& output) {
  fs::path out = output;
  while (!out.empty() && out.filename().empty()) out = out.parent_path();  // "dir/" -> "dir"
  return out.parent_path() / (out.filename().string() + ".hearth-quant");
}

std::optional<QuantizeJobStatus> find_quantize_job(const fs::path& work_dir) {
  std::error_code ec;
  if (!fs::exists(quantizer::job_file(work_dir), ec)) return std::nullopt;
  const quantizer::JobState s = quantizer::load_job(work_dir);
  QuantizeJobStatus st;
  st.options = s.options;
  st.options.resume = true;
  st.options.restart = false;
  st.stage = s.stage;
  st.step = s.step;
  st.steps = s.steps;
  st.elapsed_s = s.elapsed_s;
  return st;
}

QuantizeEstimate estimate_quantize(const QuantizeOptions& options) {
  using namespace quantizer;
  const ModelBundle b = open_model(options.source, false);
  const ModelConfig& c = b.info.config;
  const int64_t H = c.hidden_size, I = c.intermediate_size, Q = c.q_dim(), KV = c.kv_dim();
  const int64_t V = c.vocab_size;
  const int64_t shapes[7][2] = {{H, Q}, {H, KV}, {H, KV}, {Q, H}, {H, I}, {H, I}, {I, H}};
  QuantizeEstimate e;
  int64_t lo = 0, hi = 0;
  for (int kind = 0; kind < 2; ++kind) {
    const auto& ladder = kind == 0 ? exl2_attention_ladder() : exl2_mlp_ladder();
    int64_t mlo = INT64_MAX, mhi = 0;
    for (const auto& row : ladder) {
      int64_t bits = 0;
      for (size_t p = 0; p < row.size(); ++p) {
        const auto* s = shapes[kind == 0 ? p : 4 + p];
        bits += exl2_total_bits(row[p], s[0], s[1]);
      }
      mlo = std::min(mlo, bits);
      mhi = std::max(mhi, bits);
    }
    lo += mlo;
    hi += mhi;
  }
  int64_t per_layer = 0;
  for (const auto& s : shapes) per_layer += s[0] * s[1];
  e.decoder_weights = per_layer * c.num_layers;
  e.min_bpw = static_cast<double>(lo) / static_cast<double>(per_layer);
  e.max_bpw = static_cast<double>(hi) / static_cast<double>(per_layer);
  double decoder_bits = 0, head_bits = 0;
  if (options.format == QuantizeFormat::kExl2) {
    decoder_bits = options.target_bpw * static_cast<double>(e.decoder_weights);
    const Exl2QParams hq = exl2_head_qparams(options.head_bits);
    head_bits = static_cast<double>(exl2_total_bits(hq, H, (V + 31) / 32 * 32));
  } else {
    const int64_t gs = options.group_size <= 0 ? 0 : options.group_size;
    double bpw = options.bits;
    if (gs > 0) bpw += (16.0 + options.bits) / static_cast<double>(gs);
    decoder_bits = bpw * static_cast<double>(e.decoder_weights);
    head_bits = options.quantize_head ? bpw * static_cast<double>(V * H)
                                      : (c.tie_word_embeddings ? 0.0 : 16.0 * V * H);
  }
  e.head_bits_per_weight = head_bits / static_cast<double>(V * H);
  const double other = 16.0 * static_cast<double>(V * H + (2 * c.num_layers + 1) * H);
  e.output_bytes = static_cast<uint64_t>((decoder_bits + head_bits + other) / 8.0);
  return e;
}

}  // namespace hearth
