// calibration_rows: the token rows Hearth's quantizer calibrates on, as JSON, so that another
// tool (exllamav2's converter, in tests/gpu/exl2_reference_job.sh) can be fed the same rows.
//
//   calibration_rows MODEL [--rows 100] [--length 2048] [--measure-rows 16]
//                    [--measure-length L] [--calibration FILE]
//
// Prints {"calibration": name, "eos_id": .., "bos_id": .., "adds_bos": .., "quant": {"rows",
// "length", "ids": [[...], ...]}, "measure": {...}, "warnings": [...]}. The rows are made exactly
// as engine/quantizer/pipeline_prepare.cpp makes them (make_calibration(): the model's chat
// template renders chat.jsonl, ChatML without one; quant rows at phase 0, measurement rows at
// phase 0.5). The defaults are the quantizer's CUDA defaults (default_rows / default_length /
// default_measure_rows).
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/core/error.h"
#include "engine/model/model_loader.h"
#include "engine/quantizer/calibration.h"
#include "engine/tokenizer/tokenizer.h"

namespace {

int usage() {
  std::fprintf(stderr,
               "usage: calibration_rows MODEL [--rows N] [--length N] [--measure-rows N] "
               "[--measure-length N] [--calibration FILE]\n");
  return 2;
}

nlohmann::json rows_json(const hearth::quantizer::TokenRows& r) {
  nlohmann::json ids = nlohmann::json::array();
  for (int64_t i = 0; i < r.rows; ++i) {
    ids.push_back(std::vector<int32_t>(r.row(i), r.row(i) + r.length));
  }
  return {{"rows", r.rows}, {"length", r.length}, {"ids", std::move(ids)}};
}

}  // namespace

int main(int argc, char** argv) {
  using namespace hearth;
  using namespace hearth::quantizer;
  if (argc < 2 || argv[1][0] == '-') return usage();
  const std::string model = argv[1];
  int64_t rows = 100, length = 2048, measure_rows = 16, measure_length = 0;
  std::string calibration;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) return usage();
    const std::string v = argv[++i];
    if (a == "--rows") {
      rows = std::atoll(v.c_str());
    } else if (a == "--length") {
      length = std::atoll(v.c_str());
    } else if (a == "--measure-rows") {
      measure_rows = std::atoll(v.c_str());
    } else if (a == "--measure-length") {
      measure_length = std::atoll(v.c_str());
    } else if (a == "--calibration") {
      calibration = v;
    } else {
      return usage();
    }
  }
  if (measure_length <= 0) measure_length = length;
  try {
    const ModelBundle bundle = open_model(model, true);
    // The quantizer's own text and rows (QuantPipeline::make_calibration calls the same).
    const CalibrationText text = model_calibration_text(calibration, bundle.chat_template_source,
                                                        bundle.bos_token, bundle.eos_token);
    std::vector<std::string> warnings;
    const TokenRows quant = make_token_rows(text, *bundle.tokenizer, rows, length, 0.0, &warnings);
    const TokenRows measure =
        make_token_rows(text, *bundle.tokenizer, measure_rows, measure_length, 0.5, &warnings);
    int64_t stream_tokens = 0;
    for (const auto& d : text.documents) {
      stream_tokens += static_cast<int64_t>(bundle.tokenizer->encode(d, false).size());
      if (bundle.tokenizer->eos_id()) ++stream_tokens;
    }
    nlohmann::json j{{"model", model},
                     {"calibration", text.name},
                     {"documents", text.documents.size()},
                     {"stream_tokens", stream_tokens},
                     {"adds_bos", bundle.tokenizer->adds_bos()},
                     {"bos_id", bundle.tokenizer->bos_id() ? *bundle.tokenizer->bos_id() : -1},
                     {"eos_id", bundle.tokenizer->eos_id() ? *bundle.tokenizer->eos_id() : -1},
                     {"chat_template", bundle.chat_template_source.has_value()},
                     {"quant", rows_json(quant)},
                     {"measure", rows_json(measure)},
                     {"warnings", warnings}};
    std::cout << j.dump() << "\n";
  } catch (const Error& e) {
    std::fprintf(stderr, "calibration_rows: %s\n", e.what());
    return 1;
  }
  return 0;
}
