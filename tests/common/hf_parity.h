// Comparing a Hearth model with transformers' recorded outputs on SmolLM2-135M-Instruct
// (fixtures made by tests/reference/hf_parity.py): teacher-forced logits and KL divergence per
// position, and greedy continuations with check_logprobs_close semantics (identical, or the
// first divergence mutually within the top 5).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/generate/generator.h"
#include "engine/model/llama_model.h"
#include "engine/model/model_loader.h"
#include "tests/common/test_paths.h"

namespace hearth::test {

// The test model (SmolLM2) on the CPU backend, sized for the parity cases; its quantized
// linears exact (the reference) unless `linears` says otherwise.
struct CpuTestModel {
  explicit CpuTestModel(CpuLinears linears = CpuLinears::kExact)
      : bundle(open_model(test_model(), true)), backend(create_cpu_backend(0, linears)) {
    LlamaModelOptions o;
    o.max_seq_len = 256;
    o.max_batch_tokens = 128;
    o.max_logit_rows = 128;
    model = std::make_unique<LlamaModel>(bundle.info.config, *backend, *bundle.weights, o);
  }
  ModelBundle bundle;
  std::unique_ptr<Backend> backend;
  std::unique_ptr<LlamaModel> model;  // after the backend: destroyed first
};

struct ParityCase {
  std::vector<int32_t> prompt, greedy;
  nlohmann::json positions;  // per position of prompt + greedy: lse, top_ids, top_logits
};

inline nlohmann::json load_json_fixture(const std::filesystem::path& fixture) {
  std::ifstream in(fixture);
  if (!in) throw std::runtime_error("missing fixture " + fixture.string());
  return nlohmann::json::parse(in);
}

// An array of {prompt_ids, greedy_ids, positions}.
inline std::vector<ParityCase> parity_cases_from(const nlohmann::json& array) {
  std::vector<ParityCase> cases;
  for (const auto& c : array) {
    cases.push_back({c["prompt_ids"].get<std::vector<int32_t>>(),
                     c["greedy_ids"].get<std::vector<int32_t>>(), c["positions"]});
  }
  return cases;
}

inline std::vector<ParityCase> load_parity_cases(const std::filesystem::path& fixture) {
  return parity_cases_from(load_json_fixture(fixture)["cases"]);
}

struct LogitStats {
  int64_t positions = 0;
  double max_logit_err = 0;  // over the reference's top-K tokens
  double max_lse_err = 0;
  double mean_kl = 0;  // KL(ref || ours), the reference's tail as one bucket
  double p999_kl = 0;
  double same_top = 0;  // share of positions with the same argmax
};

// Teacher-forced pass over each case's prompt + reference continuation, all logits.
// `adapter_weights`: the LoRA slot weights of every sequence (none: the base model).
inline LogitStats compare_logits(LlamaModel& model, Backend& backend,
                                 const std::vector<ParityCase>& cases,
                                 std::span<const float> adapter_weights = {}) {
  auto cache = backend.create_kv_cache(model.kv_cache_spec(4, 64));
  const std::vector<int32_t> pages = {0, 1, 2, 3};
  LogitStats st;
  std::vector<double> kls;
  int64_t same = 0;
  for (const ParityCase& c : cases) {
    std::vector<int32_t> seq = c.prompt;
    seq.insert(seq.end(), c.greedy.begin(), c.greedy.end());
    BatchDesc batch;
    SequenceSlice s;
    s.tokens = seq;
    s.page_table = pages;
    s.all_logits = true;
    s.adapter_weights = adapter_weights;
    batch.seqs.push_back(s);
    const DeviceTensor logits = model.forward(batch, *cache);
    const std::vector<float> ours = backend.read(logits, static_cast<int64_t>(seq.size()));
    const int64_t V = logits.cols;
    for (size_t p = 0; p < seq.size(); ++p) {
      const auto& ref = c.positions[p];
      const float* row = ours.data() + p * V;
      const int64_t arg = std::max_element(row, row + V) - row;
      double z = 0;
      for (int64_t i = 0; i < V; ++i) z += std::exp(static_cast<double>(row[i]) - row[arg]);
      const double lse = row[arg] + std::log(z);
      const double ref_lse = ref["lse"].get<double>();
      st.max_lse_err = std::max(st.max_lse_err, std::fabs(lse - ref_lse));
      const auto ids = ref["top_ids"].get<std::vector<int32_t>>();
      const auto vals = ref["top_logits"].get<std::vector<double>>();
      same += arg == ids[0];
      double p_top = 0, q_top = 0, kl = 0;
      for (size_t k = 0; k < ids.size(); ++k) {
        st.max_logit_err = std::max(st.max_logit_err, std::fabs(row[ids[k]] - vals[k]));
        const double lp = vals[k] - ref_lse, lq = row[ids[k]] - lse;
        kl += std::exp(lp) * (lp - lq);
        p_top += std::exp(lp);
        q_top += std::exp(lq);
      }
      const double p_tail = std::max(1e-12, 1 - p_top), q_tail = std::max(1e-12, 1 - q_top);
      kl += p_tail * std::log(p_tail / q_tail);
      kls.push_back(kl);
    }
  }
  st.positions = static_cast<int64_t>(kls.size());
  double sum = 0;
  for (double k : kls) sum += k;
  st.mean_kl = sum / static_cast<double>(kls.size());
  std::sort(kls.begin(), kls.end());
  st.p999_kl = kls[std::min(kls.size() - 1, static_cast<size_t>(0.999 * kls.size()))];
  st.same_top = static_cast<double>(same) / static_cast<double>(kls.size());
  return st;
}

// Greedy continuations of every case, batched through the generator.
inline std::vector<std::vector<int32_t>> greedy_continuations(
    LlamaModel& model, Backend& backend, const Tokenizer& tokenizer,
    const std::vector<ParityCase>& cases, const std::vector<size_t>& which,
    const std::vector<float>& adapter_weights = {}) {
  auto cache = backend.create_kv_cache(model.kv_cache_spec(64, 64));
  GeneratorOptions go;
  go.max_batch = static_cast<int>(model.options().max_logit_rows);
  go.max_seq_len = model.options().max_seq_len;
  go.max_batch_tokens = model.options().max_batch_tokens;
  Generator gen(model, *cache, tokenizer, go);
  std::vector<int64_t> ids;
  for (size_t i : which) {
    JobRequest r;
    r.prompt = cases[i].prompt;
    r.max_tokens = static_cast<int32_t>(cases[i].greedy.size());
    r.adapter_weights = adapter_weights;
    ids.push_back(gen.submit(std::move(r)));
  }
  while (!gen.idle()) gen.step();
  std::vector<std::vector<int32_t>> out;
  for (int64_t id : ids) out.push_back(gen.take_result(id)->tokens);
  return out;
}

// Whether `ours` agrees with the reference continuation: identical, or at the first divergence
// our token is in the reference's top 5 there. Returns the divergence index (-1: identical).
inline int first_divergence(const ParityCase& c, const std::vector<int32_t>& ours,
                            bool* ours_in_ref_top5) {
  *ours_in_ref_top5 = true;
  for (size_t i = 0; i < c.greedy.size() && i < ours.size(); ++i) {
    if (ours[i] == c.greedy[i]) continue;
    const auto& ref = c.positions[c.prompt.size() - 1 + i];
    const auto top = ref["top_ids"].get<std::vector<int32_t>>();
    *ours_in_ref_top5 = std::find(top.begin(), top.begin() + 5, ours[i]) != top.begin() + 5;
    return static_cast<int>(i);
  }
  return ours.size() == c.greedy.size() ? -1 : static_cast<int>(ours.size());
}

}  // namespace hearth::test
