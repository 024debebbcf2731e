#include "engine/quantizer/job_state.h"

#include <fstream>
#include <sstream>

#include "engine/core/error.h"
#include "engine/quantizer/safetensors_writer.h"

namespace hearth::quantizer {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

QuantizeStage stage_from_name(const std::string& s) {
  for (int i = 0; i <= static_cast<int>(QuantizeStage::kDone); ++i) {
    if (s == quantize_stage_name(static_cast<QuantizeStage>(i))) {
      return static_cast<QuantizeStage>(i);
    }
  }
  fail(ErrorCode::kInvalidFile, "job.json: unknown stage \"" + s.substr(0, 40) + "\"");
}

}  // namespace

json options_to_json(const QuantizeOptions& o) {
  return json{{"source", o.source.string()},
              {"output", o.output.string()},
              {"work_dir", o.work_dir.string()},
              {"keep_work", o.keep_work},
              {"format", quantize_format_name(o.format)},
              {"target_bpw", o.target_bpw},
              {"head_bits", o.head_bits},
              {"measurement", o.measurement.string()},
              {"bits", o.bits},
              {"group_size", o.group_size},
              {"act_order", o.act_order},
              {"symmetric", o.symmetric},
              {"damp_percent", o.damp_percent},
              {"quantize_head", o.quantize_head},
              {"calibration_file", o.calibration_file.string()},
              {"rows", o.rows},
              {"length", o.length},
              {"measure_rows", o.measure_rows},
              {"measure_length", o.measure_length},
              {"device", o.device == DeviceKind::kCuda ? "cuda" : "cpu"},
              {"cuda_device", o.cuda_device},
              {"cpu_threads", o.cpu_threads},
              {"shard_size_mb", o.shard_size_mb},
              {"evaluate", o.evaluate},
              {"eval_file", o.eval_file.string()},
              {"eval_ctx", o.eval_ctx},
              {"eval_max_tokens", o.eval_max_tokens}};
}

QuantizeOptions options_from_json(const json& j) {
  try {
    QuantizeOptions o;
    o.source = j.at("source").get<std::string>();
    o.output = j.at("output").get<std::string>();
    o.work_dir = j.at("work_dir").get<std::string>();
    o.keep_work = j.at("keep_work").get<bool>();
    o.format =
        j.at("format").get<std::string>() == "gptq" ? QuantizeFormat::kGptq : QuantizeFormat::kExl2;
    o.target_bpw = j.at("target_bpw").get<double>();
    o.head_bits = j.at("head_bits").get<int>();
    o.measurement = j.at("measurement").get<std::string>();
    o.bits = j.at("bits").get<int>();
    o.group_size = j.at("group_size").get<int64_t>();
    o.act_order = j.at("act_order").get<bool>();
    o.symmetric = j.at("symmetric").get<bool>();
    o.damp_percent = j.at("damp_percent").get<double>();
    o.quantize_head = j.at("quantize_head").get<bool>();
    o.calibration_file = j.at("calibration_file").get<std::string>();
    o.rows = j.at("rows").get<int64_t>();
    o.length = j.at("length").get<int64_t>();
    o.measure_rows = j.at("measure_rows").get<int64_t>();
    o.measure_length = j.at("measure_length").get<int64_t>();
    o.device = j.at("device").get<std::string>() == "cuda" ? DeviceKind::kCuda : DeviceKind::kCpu;
    o.cuda_device = j.at("cuda_device").get<int>();
    o.cpu_threads = j.at("cpu_threads").get<int>();
    o.shard_size_mb = j.at("shard_size_mb").get<int64_t>();
    o.evaluate = j.at("evaluate").get<bool>();
    o.eval_file = j.at("eval_file").get<std::string>();
    o.eval_ctx = j.at("eval_ctx").get<int64_t>();
    o.eval_max_tokens = j.at("eval_max_tokens").get<int64_t>();
    return o;
  } catch (const json::exception& e) {
    fail(ErrorCode::kInvalidFile, std::string("job.json: options: ") + e.what());
  }
}

std::string first_output_difference(const QuantizeOptions& a, const QuantizeOptions& b) {
  const json ja = options_to_json(a), jb = options_to_json(b);
  // Options that do not change the written bytes.
  static const char* kFree[] = {"work_dir",  "keep_work", "cpu_threads",     "evaluate",
                                "eval_file", "eval_ctx",  "eval_max_tokens", "cuda_device"};
  for (const auto& [key, value] : ja.items()) {
    bool free = false;
    for (const char* f : kFree) free = free || key == f;
    if (!free && jb.at(key) != value) return key;
  }
  return {};
}

fs::path job_file(const fs::path& work_dir) {
  return work_dir / "job.json";
}

void save_job(const fs::path& work_dir, const JobState& s) {
  json layers = json::array();
  for (const auto& l : s.layers) {
    layers.push_back({{"name", l.name},
                      {"setting", l.setting},
                      {"proxy_error", l.proxy_error},
                      {"damp", l.damp},
                      {"weight_error", l.weight_error},
                      {"total_bits", l.total_bits},
                      {"weights", l.weights}});
  }
  const json j{{"version", s.version},
               {"options", options_to_json(s.options)},
               {"stage", quantize_stage_name(s.stage)},
               {"step", s.step},
               {"steps", s.steps},
               {"checkpoint", s.checkpoint},
               {"elapsed_s", s.elapsed_s},
               {"strategy", s.strategy},
               {"layers", layers},
               {"warnings", s.warnings}};
  write_file_atomically(job_file(work_dir), j.dump(1) + "\n");
}

JobState load_job(const fs::path& work_dir) {
  const fs::path path = job_file(work_dir);
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(ErrorCode::kIo, path.string() + ": cannot open");
  std::ostringstream ss;
  ss << in.rdbuf();
  const json j = json::parse(ss.str(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    fail(ErrorCode::kInvalidFile, path.string() + " is damaged (not a JSON object)");
  }
  try {
    JobState s;
    s.version = j.at("version").get<int>();
    if (s.version != 1) fail(ErrorCode::kInvalidFile, path.string() + ": unknown job version");
    s.options = options_from_json(j.at("options"));
    s.stage = stage_from_name(j.at("stage").get<std::string>());
    s.step = j.at("step").get<int64_t>();
    s.steps = j.at("steps").get<int64_t>();
    s.checkpoint = j.at("checkpoint").get<int64_t>();
    s.elapsed_s = j.at("elapsed_s").get<double>();
    s.strategy = j.at("strategy");
    for (const auto& l : j.at("layers")) {
      LayerReport r;
      r.name = l.at("name").get<std::string>();
      r.setting = l.at("setting").get<std::string>();
      r.proxy_error = l.at("proxy_error").get<double>();
      r.damp = l.at("damp").get<double>();
      r.weight_error = l.at("weight_error").get<double>();
      r.total_bits = l.at("total_bits").get<int64_t>();
      r.weights = l.at("weights").get<int64_t>();
      s.layers.push_back(r);
    }
    s.warnings = j.at("warnings").get<std::vector<std::string>>();
    if (s.step < 0 || s.checkpoint < 0 || s.checkpoint > s.step) {
      fail(ErrorCode::kInvalidFile, path.string() + ": inconsistent step counters");
    }
    return s;
  } catch (const json::exception& e) {
    fail(ErrorCode::kInvalidFile, path.string() + " is damaged: " + e.what());
  }
}

}  // namespace hearth::quantizer
