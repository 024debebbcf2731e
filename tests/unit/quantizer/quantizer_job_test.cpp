// Whole quantization jobs on a tiny model written as a Hugging Face folder: both formats, the
// output read back through Hearth's loaders and run; every layer's error recomputed in double
// precision from an independent forward pass (tr(ΔW·(H + damp·I)·ΔWᵀ) must equal the GPTQ loss
// the quantizer reported); resume after a cancel gives the same bytes; bad inputs fail clearly.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/core/error.h"
#include "engine/formats/quantized_linear_loader.h"
#include "engine/model/model_loader.h"
#include "engine/quantizer/calibration.h"
#include "engine/quantizer/model_eval.h"
#include "engine/quantizer/quantize_job.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/unit/quantizer/quantizer_test_model.h"

namespace hearth::quantizer {
namespace {
namespace fs = std::filesystem;
using test::Mat;

struct Fixture {
  fs::path root, model, calib;
  test::TinySpec spec;
  std::map<std::string, std::vector<float>> weights;
};

Fixture& fixture() {
  static Fixture f = [] {
    Fixture x;
    x.root = fs::temp_directory_path() / ("hearth_quantizer_test_" + std::to_string(::getpid()));
    fs::remove_all(x.root);
    x.model = x.root / "tiny";
    x.weights = test::write_tiny_model(x.model, x.spec);
    x.calib = x.root / "calib.txt";
    std::ofstream out(x.calib);
    for (int i = 0; i < 60; ++i) {
      out << "Paragraph " << i << ": the quick brown fox jumps over the lazy dog, "
          << "and numbers like " << i * 37 % 101 << " appear between words.\n\n";
    }
    return x;
  }();
  return f;
}

// The fixture's folder goes when the tests end (it was left in the temp folder on every run).
class RemoveFixtureFolder : public ::testing::Environment {
 public:
  void TearDown() override {
    fs::remove_all(fs::temp_directory_path() /
                   ("hearth_quantizer_test_" + std::to_string(::getpid())));
  }
};
[[maybe_unused]] ::testing::Environment* const kRemoveFixtureFolder =
    ::testing::AddGlobalTestEnvironment(new RemoveFixtureFolder);

QuantizeOptions base_options(const std::string& name, QuantizeFormat format) {
  const Fixture& f = fixture();
  QuantizeOptions o;
  o.source = f.model;
  o.output = f.root / name;
  o.work_dir = f.root / (name + ".work");
  o.format = format;
  o.calibration_file = f.calib;
  o.rows = 3;
  o.length = 48;
  o.measure_rows = 2;
  o.measure_length = 40;
  o.target_bpw = 4.0;
  o.head_bits = 6;
  o.bits = 4;
  o.group_size = 32;
  o.keep_work = true;
  o.cpu_threads = 2;
  return o;
}

nlohmann::json read_json(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return nlohmann::json::parse(ss.str());
}

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The reconstruction of a written layer, as Hearth's reader decodes it: [N, K].
std::vector<float> read_layer(const TensorSource& src, const std::string& prefix,
                              const std::string& qcfg, int64_t n, int64_t k) {
  QuantizedLinearOptions o;
  o.quantization_config_json = qcfg;
  o.out_features = n;
  o.in_features = k;
  auto q = load_quantized_linear(src, prefix, o);
  std::vector<float> out(static_cast<size_t>(n * k));
  q->dequantize_rows(0, n, out.data());
  return out;
}

// Adds 2·XᵀX over rows of x into h (double).
void add_hessian(Mat& h, const Mat& x, int64_t T, int64_t K) {
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t i = 0; i < K; ++i) {
      for (int64_t j = 0; j < K; ++j) h[i * K + j] += 2.0 * x[t * K + i] * x[t * K + j];
    }
  }
}

double layer_error(const std::vector<float>& w, const std::vector<float>& rec, const Mat& h,
                   double tokens, double damp, int64_t n, int64_t k) {
  double total = 0;
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t i = 0; i < k; ++i) {
      const double di = static_cast<double>(w[r * k + i]) - rec[r * k + i];
      double s = damp * di;
      for (int64_t j = 0; j < k; ++j) {
        s += h[i * k + j] / tokens * (static_cast<double>(w[r * k + j]) - rec[r * k + j]);
      }
      total += di * s;
    }
  }
  return total;
}

// Recomputes every layer's input Hessian with the double decoder over the quantized model's
// own activations (as the final pass sees them) and checks each layer's reported loss.
void check_layer_errors(const QuantizeOptions& o) {
  const Fixture& f = fixture();
  const test::TinySpec& s = f.spec;
  const nlohmann::json job = read_json(o.work_dir / "job.json");
  std::map<std::string, nlohmann::json> reports;
  for (const auto& l : job["layers"]) reports[l["name"].get<std::string>()] = l;
  ModelBundle out = open_model(o.output, true);
  const std::string qcfg = out.info.config.quantization_config_json;
  ModelBundle src = open_model(o.source, true);
  CalibrationText text = load_calibration_file(o.calibration_file, {});
  const TokenRows rows = make_token_rows(text, *src.tokenizer, o.rows, o.length, 0.0, nullptr);
  const int64_t H = s.hidden, T = rows.length, Q = s.heads * s.head_dim,
                KV = s.kv_heads * s.head_dim;
  const auto& W = f.weights;
  std::vector<Mat> states(static_cast<size_t>(rows.rows));
  for (int64_t r = 0; r < rows.rows; ++r) {
    states[r].resize(static_cast<size_t>(T * H));
    for (int64_t t = 0; t < T; ++t) {
      for (int64_t i = 0; i < H; ++i) {
        states[r][t * H + i] = W.at("model.embed_tokens.weight")[rows.row(r)[t] * H + i];
      }
    }
  }
  const double tokens = static_cast<double>(rows.rows * T);
  auto check = [&](const std::string& name, const Mat& h, int64_t n, int64_t k,
                   const std::vector<float>& rec) {
    const auto& rep = reports.at(name);
    const double e =
        layer_error(W.at(name + ".weight"), rec, h, tokens, rep["damp"].get<double>(), n, k);
    EXPECT_NEAR(rep["proxy_error"].get<double>(), e, 2e-3 * e + 1e-9) << name;
  };
  for (int64_t l = 0; l < s.layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    // attention
    Mat h_in(static_cast<size_t>(H * H), 0.0), h_o(static_cast<size_t>(Q * Q), 0.0);
    const auto rq = read_layer(*out.weights, p + "self_attn.q_proj", qcfg, Q, H);
    const auto rk = read_layer(*out.weights, p + "self_attn.k_proj", qcfg, KV, H);
    const auto rv = read_layer(*out.weights, p + "self_attn.v_proj", qcfg, KV, H);
    const auto ro = read_layer(*out.weights, p + "self_attn.o_proj", qcfg, H, Q);
    for (auto& x : states) {
      const Mat n = test::rms_norm(x, T, H, W.at(p + "input_layernorm.weight"), s.eps);
      add_hessian(h_in, n, T, H);
      Mat q = test::matmul_t(n, T, H, rq, Q), k = test::matmul_t(n, T, H, rk, KV);
      const Mat v = test::matmul_t(n, T, H, rv, KV);
      test::rope(q, T, s.heads, s.head_dim, s.rope_theta);
      test::rope(k, T, s.kv_heads, s.head_dim, s.rope_theta);
      const Mat a = test::attention(q, k, v, T, s);
      add_hessian(h_o, a, T, Q);
      const Mat y = test::matmul_t(a, T, Q, ro, H);
      for (size_t i = 0; i < x.size(); ++i) x[i] += y[i];
    }
    check(p + "self_attn.q_proj", h_in, Q, H, rq);
    check(p + "self_attn.k_proj", h_in, KV, H, rk);
    check(p + "self_attn.v_proj", h_in, KV, H, rv);
    check(p + "self_attn.o_proj", h_o, H, Q, ro);
    // MLP
    const int64_t I = s.inter;
    Mat h_m(static_cast<size_t>(H * H), 0.0), h_d(static_cast<size_t>(I * I), 0.0);
    const auto rg = read_layer(*out.weights, p + "mlp.gate_proj", qcfg, I, H);
    const auto ru = read_layer(*out.weights, p + "mlp.up_proj", qcfg, I, H);
    const auto rd = read_layer(*out.weights, p + "mlp.down_proj", qcfg, H, I);
    for (auto& x : states) {
      const Mat n = test::rms_norm(x, T, H, W.at(p + "post_attention_layernorm.weight"), s.eps);
      add_hessian(h_m, n, T, H);
      const Mat g = test::matmul_t(n, T, H, rg, I), u = test::matmul_t(n, T, H, ru, I);
      Mat a(g.size());
      for (size_t i = 0; i < g.size(); ++i) a[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
      add_hessian(h_d, a, T, I);
      const Mat y = test::matmul_t(a, T, I, rd, H);
      for (size_t i = 0; i < x.size(); ++i) x[i] += y[i];
    }
    check(p + "mlp.gate_proj", h_m, I, H, rg);
    check(p + "mlp.up_proj", h_m, I, H, ru);
    check(p + "mlp.down_proj", h_d, H, I, rd);
  }
}

TEST(QuantizeJob, Exl2EndToEnd) {
  QuantizeOptions o = base_options("exl2", QuantizeFormat::kExl2);
  std::vector<QuantizeProgress> events;
  const QuantizeResult r =
      quantize_model(o, [&](const QuantizeProgress& p) { events.push_back(p); });
  EXPECT_GT(r.bits_per_weight, 3.0);
  EXPECT_LE(r.bits_per_weight, 4.0 + 1e-9);
  // 0.15:8b/0.85:6b plus scales and the permutation, which weigh a lot at K = 64.
  EXPECT_GT(r.head_bits_per_weight, 6.3);
  EXPECT_LT(r.head_bits_per_weight, 9.0);
  EXPECT_GT(r.bytes_on_disk, 0u);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().stage, QuantizeStage::kDone);
  EXPECT_DOUBLE_EQ(events.back().fraction, 1.0);
  // Folder layout (docs/FORMATS.md §3.7): one shard, side files copied, quantization_config.
  EXPECT_TRUE(fs::exists(o.output / "output.safetensors"));
  EXPECT_TRUE(fs::exists(o.output / "tokenizer.json"));
  EXPECT_TRUE(fs::exists(o.output / "README.md"));
  EXPECT_FALSE(fs::exists(o.output / "model.safetensors"));
  const auto cfg = read_json(o.output / "config.json");
  EXPECT_EQ(cfg["quantization_config"]["quant_method"], "exl2");
  EXPECT_EQ(cfg["quantization_config"]["head_bits"], 6);
  EXPECT_TRUE(cfg["tie_word_embeddings"].get<bool>());
  ModelBundle out = open_model(o.output, true);
  EXPECT_EQ(out.info.format, ModelFormat::kExl2);
  EXPECT_TRUE(out.weights->has("lm_head.q_weight"));  // tied model: a quantized head
  EXPECT_TRUE(out.weights->has("model.embed_tokens.weight"));
  EXPECT_EQ(out.weights->info("lm_head.q_weight").shape[1], 288);  // 260 padded to 32
  check_layer_errors(o);
  // The measurement can be reused for another target (no measure stage).
  ASSERT_TRUE(fs::exists(o.work_dir / "measurement.json"));
  {
    QuantizeOptions o3 = base_options("exl2_3bpw", QuantizeFormat::kExl2);
    o3.measurement = o.work_dir / "measurement.json";
    o3.target_bpw = 3.85;  // at these tiny shapes the cheapest setting costs 3.72 bpw
    bool measured = false;
    const QuantizeResult r3 = quantize_model(o3, [&](const QuantizeProgress& p) {
      measured = measured || (p.stage == QuantizeStage::kMeasure && p.steps > 0);
    });
    EXPECT_FALSE(measured);
    EXPECT_LE(r3.bits_per_weight, 3.85 + 1e-9);
    EXPECT_GT(r3.bits_per_weight, 3.7);
    EXPECT_LT(r3.bytes_on_disk, r.bytes_on_disk);
  }
  // The wizard's estimate from the config alone.
  const QuantizeEstimate est = estimate_quantize(o);
  EXPECT_NEAR(est.min_bpw, 3.72, 0.01);  // as the error message of BadInputs says
  EXPECT_GT(est.max_bpw, 8.0);
  EXPECT_EQ(est.decoder_weights, 2 * (64 * 64 * 2 + 64 * 32 * 2 + 3 * 64 * 96));
  EXPECT_NEAR(static_cast<double>(est.output_bytes), static_cast<double>(r.bytes_on_disk),
              0.25 * static_cast<double>(r.bytes_on_disk));
  // It runs, and stays close to the source.
  EvalOptions eo;
  eo.ctx = 64;
  const std::string text = read_bytes(fixture().calib).substr(0, 600);
  const KlResult k = evaluate_kl_divergence(o.output, o.source, text, eo);
  EXPECT_GT(k.tokens, 500);
  std::printf("tiny exl2 4.0: KL %.4f, p99.9 %.4f, top-1 %.3f, ppl %.3f vs %.3f\n", k.kl_mean,
              k.kl_p999, k.top1_agreement, k.perplexity_model, k.perplexity_reference);
  EXPECT_LT(k.kl_mean, 1.0);
  EXPECT_GT(k.top1_agreement, 0.5);
}

TEST(QuantizeJob, GptqEndToEnd) {
  for (bool act_order : {true, false}) {
    QuantizeOptions o = base_options(act_order ? "gptq_act" : "gptq", QuantizeFormat::kGptq);
    o.act_order = act_order;
    o.bits = 4;
    o.group_size = 32;
    const QuantizeResult r = quantize_model(o);
    EXPECT_NEAR(r.bits_per_weight, 4.0 + 20.0 / 32 + 32.0 / 64, 0.5);
    EXPECT_EQ(r.head_bits_per_weight, 16);
    const auto qc = read_json(o.output / "quantize_config.json");
    EXPECT_EQ(qc["bits"], 4);
    EXPECT_EQ(qc["group_size"], 32);
    EXPECT_EQ(qc["desc_act"], act_order);
    EXPECT_EQ(qc["sym"], true);
    EXPECT_EQ(read_json(o.output / "config.json")["quantization_config"]["checkpoint_format"],
              "gptq");
    ModelBundle out = open_model(o.output, true);
    EXPECT_EQ(out.info.format, ModelFormat::kGptq);
    // v1 symmetric zero words (FORMATS.md §2.2).
    const HostTensor z = out.weights->get("model.layers.0.mlp.up_proj.qzeros");
    EXPECT_EQ(z.as<uint32_t>()[0], 0x77777777u);
    check_layer_errors(o);
    EvalOptions eo;
    eo.ctx = 64;
    const PerplexityResult p =
        evaluate_perplexity(o.output, read_bytes(fixture().calib).substr(0, 400), eo);
    EXPECT_GT(p.tokens, 300);
    EXPECT_TRUE(std::isfinite(p.perplexity));
  }
  // 2, 3 and 8 bits, asymmetric, one group.
  for (int bits : {2, 3, 8}) {
    QuantizeOptions o = base_options("gptq" + std::to_string(bits), QuantizeFormat::kGptq);
    o.bits = bits;
    o.group_size = bits == 3 ? -1 : 32;
    o.symmetric = bits != 2;
    quantize_model(o);
    check_layer_errors(o);
  }
}

TEST(QuantizeJob, ResumeAfterCancelGivesTheSameBytes) {
  for (QuantizeFormat format : {QuantizeFormat::kExl2, QuantizeFormat::kGptq}) {
    const std::string tag = quantize_format_name(format);
    QuantizeOptions a = base_options("straight_" + tag, format);
    quantize_model(a);
    for (QuantizeStage cut : {QuantizeStage::kMeasure, QuantizeStage::kQuantize}) {
      if (format == QuantizeFormat::kGptq && cut == QuantizeStage::kMeasure) continue;
      QuantizeOptions b = base_options("resumed_" + tag + quantize_stage_name(cut), format);
      CancelToken cancel;
      auto stop_at = [&](const QuantizeProgress& p) {
        if (p.stage == cut && p.step == 1) cancel.cancel();
      };
      try {
        quantize_model(b, stop_at, cancel);
        FAIL() << "expected a cancel";
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::kCancelled);
      }
      const auto st = find_quantize_job(b.work_dir);
      ASSERT_TRUE(st.has_value());
      EXPECT_EQ(st->stage, cut);
      // Resuming without --resume is refused; with it, the job finishes.
      EXPECT_THROW(quantize_model(b), Error);
      b.resume = true;
      quantize_model(b);
      for (const char* f : {"output.safetensors", "model.safetensors", "config.json"}) {
        if (!fs::exists(a.output / f)) continue;
        EXPECT_EQ(read_bytes(a.output / f), read_bytes(b.output / f)) << tag << " " << f;
      }
    }
  }
}

TEST(QuantizeJob, BadInputsGiveClearErrors) {
  const Fixture& f = fixture();
  auto expect_error = [](QuantizeOptions o, const std::string& needle) {
    o.restart = true;  // a failed job stays in its work folder, resumable
    try {
      quantize_model(o);
      ADD_FAILURE() << "expected an error mentioning " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  QuantizeOptions o = base_options("bad", QuantizeFormat::kExl2);
  o.target_bpw = 1.5;
  expect_error(o, "below the cheapest");
  o = base_options("bad", QuantizeFormat::kExl2);
  o.head_bits = 7;
  expect_error(o, "head bits");
  o = base_options("bad", QuantizeFormat::kGptq);
  o.bits = 5;
  expect_error(o, "bits must be 2, 3, 4 or 8");
  o = base_options("bad", QuantizeFormat::kGptq);
  o.calibration_file = f.root / "calib.pdf";
  std::ofstream(o.calibration_file) << "x";
  expect_error(o, ".txt, .md or .jsonl");
  o.calibration_file = f.root / "empty.txt";
  std::ofstream(o.calibration_file).flush();
  expect_error(o, "holds no text");
  o.calibration_file = f.root / "binary.txt";
  {
    std::ofstream b(o.calibration_file, std::ios::binary);
    b.write("ab\0cd", 5);
  }
  expect_error(o, "not a text file");
  o.calibration_file = f.root / "bad.jsonl";
  std::ofstream(o.calibration_file) << "{\"text\": \"ok\"}\n{\"text\": 5}\n";
  expect_error(o, "bad.jsonl:2");
  o.calibration_file = f.root / "short.txt";
  std::ofstream(o.calibration_file) << "too short";
  expect_error(o, "fewer than one row");
  o = base_options("bad", QuantizeFormat::kGptq);
  o.source = f.root / "missing";
  expect_error(o, "no such file");
}

TEST(QuantizeJob, JsonlChatCalibration) {
  QuantizeOptions o = base_options("jsonl", QuantizeFormat::kGptq);
  o.calibration_file = fixture().root / "chat.jsonl";
  {
    std::ofstream out(o.calibration_file);
    for (int i = 0; i < 30; ++i) {
      out << R"({"messages": [{"role": "user", "content": "question )" << i
          << R"( about the weather"}, {"role": "assistant", "content": "It is sunny today, )" << i
          << R"( degrees."}]})"
          << "\n";
    }
  }
  o.length = 32;
  const QuantizeResult r = quantize_model(o);
  EXPECT_GT(r.bytes_on_disk, 0u);
}

}  // namespace
}  // namespace hearth::quantizer
