// The evaluation stage: perplexity and KL divergence of the written model against the source.
#include <fstream>
#include <ios>
#include <sstream>
#include <string>

#include "engine/core/error.h"
#include "engine/quantizer/model_eval.h"
#include "engine/quantizer/pipeline_state.h"

namespace hearth::quantizer {

void QuantPipeline::Impl::run_evaluate() {
  state.steps = 1;
  state.step = 0;
  report("");
  EvalOptions eo;
  eo.device = opt.device;
  eo.cuda_device = opt.cuda_device;
  eo.cpu_threads = opt.cpu_threads;
  eo.ctx = opt.eval_ctx;
  eo.max_tokens = opt.eval_max_tokens;
  std::string text;
  if (opt.eval_file.empty()) {
    text = builtin_eval_text();
  } else {
    std::ifstream in(opt.eval_file, std::ios::binary);
    if (!in) fail(ErrorCode::kIo, opt.eval_file.string() + ": cannot open");
    std::ostringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }
  const KlResult k = evaluate_kl_divergence(opt.output, opt.source, text, eo, {}, cancel);
  QuantizeEvaluation ev;
  ev.tokens = k.tokens;
  ev.perplexity_source = k.perplexity_reference;
  ev.perplexity_quant = k.perplexity_model;
  ev.kl_mean = k.kl_mean;
  ev.kl_p999 = k.kl_p999;
  ev.top1_agreement = k.top1_agreement;
  result.evaluation = ev;
  state.step = 1;
}

}  // namespace hearth::quantizer
