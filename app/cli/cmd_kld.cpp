// hearth-cli kld: how far a (quantized) model's next-token distributions are from a reference
// model's on the same text: mean and 99.9th-percentile KL divergence, top-token agreement, and
// both perplexities.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "app/cli/cli_common.h"
#include "app/cli/commands.h"
#include "engine/quantizer/model_eval.h"

namespace hearth::cli {

std::string read_eval_text(const std::string& path);
EvalOptions eval_options_from(const ArgParser& args);

int run_kld(const std::vector<std::string>& raw) {
  const ArgParser args(raw,
                       {"model", "reference", "data", "ctx", "stride", "max-tokens", "backend",
                        "device", "threads", "lora", "cache", "cpu-linears"},
                       {"json"});
  const std::string model = args.require("model");
  const std::string reference = args.require("reference");
  const std::string text = read_eval_text(args.require("data"));
  EvalOptions o = eval_options_from(args);
  if (!args.has("ctx")) o.ctx = 512;
  const bool json = args.has("json");
  const KlResult r =
      evaluate_kl_divergence(model, reference, text, o, [&](int64_t done, int64_t total) {
        if (!json)
          std::fprintf(stderr, "\r  %lld / %lld tokens", static_cast<long long>(done),
                       static_cast<long long>(total));
      });
  if (!json) std::fprintf(stderr, "\n");
  if (json) {
    nlohmann::json j{{"model", model},
                     {"reference", reference},
                     {"tokens", r.tokens},
                     {"kl_mean", r.kl_mean},
                     {"kl_p999", r.kl_p999},
                     {"kl_max", r.kl_max},
                     {"top1_agreement", r.top1_agreement},
                     {"perplexity", r.perplexity_model},
                     {"perplexity_reference", r.perplexity_reference}};
    std::cout << j.dump(2) << "\n";
  } else {
    std::printf("KL divergence  mean %.5f  p99.9 %.4f  max %.4f  (nats, %lld tokens)\n", r.kl_mean,
                r.kl_p999, r.kl_max, static_cast<long long>(r.tokens));
    std::printf("top-1 agreement %.2f %%\n", 100.0 * r.top1_agreement);
    std::printf("perplexity      %.4f (reference %.4f)\n", r.perplexity_model,
                r.perplexity_reference);
  }
  return 0;
}

}  // namespace hearth::cli
