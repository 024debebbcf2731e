// server_bench: what the OpenAI-compatible server costs over the engine's own batching.
//
//   server_bench --write-synthetic DIR --tokenizer-gguf FILE [--shape llama3-8b] [--bpw 4.0]
//       writes a synthetic EXL2 model of a real shape (random weights) as a model folder that
//       carries the GGUF's tokenizer (its vocabulary sets the model's vocab_size).
//   server_bench --model PATH [--device cuda|cpu] [--clients 1,8,32] [--prompt-len 256]
//                [--gen-len 128] [--rounds 3] [--shared-prefix N] [--prefix-reuse on|off]
//                [--page-size N] [--json-out FILE]
//       for each client count C: the engine alone runs `rounds` batches of C requests
//       (generate_batch), then C HTTP clients each stream `rounds` requests through the server
//       (POST /v1/completions, token-id prompts, ignore_eos) from threads of this process.
//       Prints requests/s and generated tokens/s of both, the server's share of the engine, its
//       time to first token (mean, p50, p99) and the share of prompt tokens served from the
//       prefix cache. --shared-prefix N puts the same N tokens (a system prompt) before every
//       request's own prompt-len tokens; one request before the measured ones leaves it in the
//       cache, as a running server's first request would.
#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "engine/api/engine.h"
#include "engine/bench/synthetic_quant_source.h"
#include "engine/bench/synthetic_source.h"
#include "engine/core/error.h"
#include "engine/io/gguf_file.h"
#include "engine/quantizer/hf_export.h"
#include "engine/quantizer/safetensors_writer.h"
#include "engine/server/openai_server.h"
#include "engine/server/serving_loop.h"

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::vector<int64_t> numbers(const std::string& s) {
  std::vector<int64_t> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(std::stoll(item));
  }
  return out;
}

void write_synthetic(const std::filesystem::path& dir, const std::filesystem::path& gguf_path,
                     const std::string& shape, double bpw) {
  const hearth::ModelInfo tokenizer_model = hearth::Engine::inspect(gguf_path);
  hearth::ModelConfig config = hearth::synthetic_model_config(shape);
  config.vocab_size = tokenizer_model.config.vocab_size;
  config.bos_token_id = tokenizer_model.config.bos_token_id;
  config.eos_token_ids = tokenizer_model.config.eos_token_ids;
  config.pad_token_id = tokenizer_model.config.pad_token_id;
  hearth::SyntheticQuantSource::Options options;
  options.format = "exl2";
  options.bpw = bpw;
  const auto start = Clock::now();
  hearth::SyntheticQuantSource source(config, options);
  hearth::quantizer::NamedTensors tensors;
  for (const std::string& name : source.tensor_names())
    tensors.emplace_back(name, source.get(name));
  std::filesystem::create_directories(dir);
  hearth::quantizer::write_safetensors(dir / "model.safetensors", tensors);
  nlohmann::ordered_json cfg = hearth::quantizer::config_json_from(config);
  cfg["quantization_config"] = json::parse(source.quantization_config_json());
  hearth::quantizer::write_file_atomically(dir / "config.json", cfg.dump(2));
  hearth::quantizer::write_tokenizer_files_from_gguf(hearth::GgufFile::open(gguf_path), config,
                                                     dir);
  std::printf("wrote %s: %s EXL2 %.1f bpw, vocab %lld, %.1f GB in %.0f s\n", dir.c_str(),
              shape.c_str(), bpw, static_cast<long long>(config.vocab_size),
              static_cast<double>(source.file_bytes()) / 1e9, seconds_since(start));
}

struct Workload {
  int64_t shared_prefix = 0;
  int64_t prompt_len = 256;
  int32_t gen_len = 128;
  int rounds = 3;
  int64_t vocab = 0;
};

// Random token ids (never the first 256, where the special tokens live), request by request,
// after the shared prefix (the same random ids for every request).
std::vector<int32_t> prompt_for(const Workload& w, uint64_t request) {
  std::uniform_int_distribution<int32_t> id(256, static_cast<int32_t>(w.vocab) - 1);
  std::mt19937_64 shared(12345);
  std::vector<int32_t> ids(static_cast<size_t>(w.shared_prefix));
  for (int32_t& t : ids) t = id(shared);
  std::mt19937_64 rng(request * 7919 + 17);
  for (int64_t i = 0; i < w.prompt_len; ++i) ids.push_back(id(rng));
  return ids;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto i = static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

struct Result {
  double seconds = 0;
  int64_t requests = 0;
  int64_t tokens = 0;
  double mean_first_token_s = 0;
  std::vector<double> first_token_s;  // per request (server runs)
  int64_t prompt_tokens = 0, cached_tokens = 0;
  double hit_rate() const {
    return prompt_tokens > 0 ? static_cast<double>(cached_tokens) / prompt_tokens : 0.0;
  }
  json to_json() const {
    return {{"seconds", seconds},
            {"requests", requests},
            {"generated_tokens", tokens},
            {"requests_per_s", requests / seconds},
            {"tokens_per_s", static_cast<double>(tokens) / seconds},
            {"mean_time_to_first_token_s", mean_first_token_s},
            {"p50_time_to_first_token_s", percentile(first_token_s, 0.5)},
            {"p99_time_to_first_token_s", percentile(first_token_s, 0.99)},
            {"prefix_hit_rate", hit_rate()}};
  }
};

Result run_engine(hearth::Engine& engine, const Workload& w, int clients, uint64_t first_id) {
  Result r;
  const auto start = Clock::now();
  for (int round = 0; round < w.rounds; ++round) {
    std::vector<hearth::GenerationRequest> batch;
    for (int c = 0; c < clients; ++c) {
      hearth::GenerationRequest q;
      q.prompt_tokens = prompt_for(w, first_id + static_cast<uint64_t>(round * clients + c));
      q.max_tokens = w.gen_len;
      q.ignore_eos = true;
      q.sampling.temperature = 0;
      batch.push_back(std::move(q));
    }
    for (const auto& result : engine.generate_batch(batch)) {
      r.tokens += result.stats.generated_tokens;
      r.mean_first_token_s += result.stats.prompt_seconds;
      r.first_token_s.push_back(result.stats.prompt_seconds);
      r.prompt_tokens += result.stats.prompt_tokens;
      r.cached_tokens += result.stats.cached_prompt_tokens;
      ++r.requests;
    }
  }
  r.seconds = seconds_since(start);
  r.mean_first_token_s /= static_cast<double>(std::max<int64_t>(r.requests, 1));
  return r;
}

// One client: `rounds` streamed completions one after another. Counts the tokens the usage
// chunk reports and the time to the first token's chunk.
void run_client(int port, const Workload& w, uint64_t first_id, int stride, Result& out,
                std::string& error) {
  httplib::Client http("127.0.0.1", port);
  http.set_read_timeout(600, 0);
  for (int round = 0; round < w.rounds; ++round) {
    const json body = {{"prompt", prompt_for(w, first_id + static_cast<uint64_t>(round * stride))},
                       {"max_tokens", w.gen_len},
                       {"temperature", 0},
                       {"ignore_eos", true},
                       {"stream", true},
                       {"stream_options", {{"include_usage", true}}}};
    const auto start = Clock::now();
    double first = -1;
    std::string buffer;
    int64_t tokens = -1;
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/completions";
    req.body = body.dump();
    req.set_header("Content-Type", "application/json");
    req.content_receiver = [&](const char* data, size_t size, uint64_t, uint64_t) {
      buffer.append(data, size);
      for (size_t end; (end = buffer.find("\n\n")) != std::string::npos;) {
        const std::string event = buffer.substr(0, end);
        buffer.erase(0, end + 2);
        if (event.rfind("data: {", 0) != 0) continue;
        const json chunk = json::parse(event.substr(6));
        // The first token's chunk, not the keep-alive comments before it.
        if (first < 0 && !chunk["choices"].empty()) first = seconds_since(start);
        if (chunk.contains("usage") && chunk["usage"].is_object()) {
          tokens = chunk["usage"]["completion_tokens"].get<int64_t>();
          out.prompt_tokens += chunk["usage"]["prompt_tokens"].get<int64_t>();
          out.cached_tokens +=
              chunk["usage"]["prompt_tokens_details"]["cached_tokens"].get<int64_t>();
        }
      }
      return true;
    };
    auto res = http.send(req);
    if (!res || res->status != 200 || tokens < 0) {
      error = !res ? httplib::to_string(res.error()) + " after " +
                         std::to_string(seconds_since(start)) + " s"
                   : "status " + std::to_string(res->status) + " " + res->body;
      return;
    }
    out.tokens += tokens;
    out.mean_first_token_s += first;
    out.first_token_s.push_back(first);
    ++out.requests;
  }
}

Result run_server(int port, const Workload& w, int clients, uint64_t first_id) {
  std::vector<Result> per(static_cast<size_t>(clients));
  std::vector<std::string> errors(static_cast<size_t>(clients));
  const auto start = Clock::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      run_client(port, w, first_id + static_cast<uint64_t>(c), clients, per[c], errors[c]);
    });
  }
  for (auto& t : threads) t.join();
  Result r;
  r.seconds = seconds_since(start);
  for (int c = 0; c < clients; ++c) {
    if (!errors[c].empty()) hearth::fail(hearth::ErrorCode::kInternal, "client: " + errors[c]);
    r.requests += per[c].requests;
    r.tokens += per[c].tokens;
    r.mean_first_token_s += per[c].mean_first_token_s;
    r.first_token_s.insert(r.first_token_s.end(), per[c].first_token_s.begin(),
                           per[c].first_token_s.end());
    r.prompt_tokens += per[c].prompt_tokens;
    r.cached_tokens += per[c].cached_tokens;
  }
  r.mean_first_token_s /= static_cast<double>(std::max<int64_t>(r.requests, 1));
  return r;
}

int run(int argc, char** argv) {
  std::map<std::string, std::string> args;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string key = argv[i];
    if (key.rfind("--", 0) != 0)
      hearth::fail(hearth::ErrorCode::kInvalidArgument, "bad flag " + key);
    args[key.substr(2)] = argv[i + 1];
  }
  auto get = [&](const std::string& k, const std::string& fallback) {
    return args.count(k) ? args[k] : fallback;
  };
  if (args.count("write-synthetic")) {
    write_synthetic(args["write-synthetic"], get("tokenizer-gguf", ""), get("shape", "llama3-8b"),
                    std::stod(get("bpw", "4.0")));
    return 0;
  }
  if (!args.count("model")) {
    std::cerr << "usage: server_bench --model PATH [...] | --write-synthetic DIR "
                 "--tokenizer-gguf FILE\n";
    return 2;
  }
  Workload w;
  w.prompt_len = std::stoll(get("prompt-len", "256"));
  w.shared_prefix = std::stoll(get("shared-prefix", "0"));
  w.gen_len = static_cast<int32_t>(std::stoll(get("gen-len", "128")));
  w.rounds = static_cast<int>(std::stoll(get("rounds", "3")));
  const std::vector<int64_t> client_counts = numbers(get("clients", "1,8,32"));
  const int64_t most = *std::max_element(client_counts.begin(), client_counts.end());

  hearth::LoadOptions load;
  load.model_path = args["model"];
  load.device =
      get("device", "cuda") == "cpu" ? hearth::DeviceKind::kCpu : hearth::DeviceKind::kCuda;
  const int64_t sequence = w.shared_prefix + w.prompt_len + w.gen_len + 64;
  load.max_seq_len = sequence;
  load.max_batch = static_cast<int>(most);
  // Room for every client's whole sequence, and for the shared prefix kept besides.
  load.cache_tokens = most * sequence + w.shared_prefix + 256;
  load.prefix_reuse = get("prefix-reuse", "on") == "on";
  load.kv_page_size = std::stoll(get("page-size", "0"));
  hearth::Engine engine;
  const auto load_start = Clock::now();
  engine.load(load);
  w.vocab = engine.info().config.vocab_size;
  std::printf(
      "model %s on %s, loaded in %.1f s; prompts %lld + %lld shared tokens, answers %d tokens, "
      "%d rounds, prefix reuse %s, pages of %lld tokens\n",
      engine.info().name.c_str(), load.device == hearth::DeviceKind::kCuda ? "CUDA" : "CPU",
      seconds_since(load_start), static_cast<long long>(w.prompt_len),
      static_cast<long long>(w.shared_prefix), w.gen_len, w.rounds,
      load.prefix_reuse ? "on" : "off",
      static_cast<long long>(load.kv_page_size > 0 ? load.kv_page_size : 64));

  json report = {{"model", engine.info().name},
                 {"prompt_len", w.prompt_len},
                 {"shared_prefix", w.shared_prefix},
                 {"prefix_reuse", load.prefix_reuse},
                 {"page_size", load.kv_page_size > 0 ? load.kv_page_size : 64},
                 {"gen_len", w.gen_len},
                 {"rounds", w.rounds},
                 {"runs", json::array()}};
  // Warm-up: the first batches of each size capture graphs and size buffers.
  for (int64_t c : client_counts) {
    Workload warm = w;
    warm.rounds = 1;
    warm.gen_len = 8;
    run_engine(engine, warm, static_cast<int>(c), 1u << 30);
  }
  std::vector<Result> alone;
  for (int64_t c : client_counts) alone.push_back(run_engine(engine, w, static_cast<int>(c), 0));

  hearth::server::ServingLoop loop(engine);
  hearth::server::ServerOptions options;
  options.port = 0;
  options.max_concurrent = static_cast<int>(most) + 8;
  hearth::server::OpenAiServer server(loop, options);
  {
    Workload warm = w;
    warm.rounds = 1;
    warm.gen_len = 8;
    run_server(server.port(), warm, static_cast<int>(most), 1u << 30);
  }
  std::printf("\n%8s | %12s %12s %10s | %12s %12s %10s %9s %9s %6s | %7s\n", "clients",
              "engine req/s", "engine tok/s", "prefill s", "server req/s", "server tok/s", "ttft s",
              "ttft p50", "ttft p99", "hits", "server");
  for (size_t i = 0; i < client_counts.size(); ++i) {
    const int c = static_cast<int>(client_counts[i]);
    // Other prompts than the engine's run above, so that only the shared prefix is cached.
    const Result served = run_server(server.port(), w, c, 1u << 20);
    const Result& base = alone[i];
    const double share = (static_cast<double>(served.tokens) / served.seconds) /
                         (static_cast<double>(base.tokens) / base.seconds);
    std::printf("%8d | %12.2f %12.1f %10.3f | %12.2f %12.1f %10.3f %9.3f %9.3f %5.1f%% | %6.1f%%\n",
                c, base.requests / base.seconds, base.tokens / base.seconds,
                base.mean_first_token_s, served.requests / served.seconds,
                served.tokens / served.seconds, served.mean_first_token_s,
                percentile(served.first_token_s, 0.5), percentile(served.first_token_s, 0.99),
                100.0 * served.hit_rate(), 100.0 * share);
    report["runs"].push_back({{"clients", c},
                              {"engine", base.to_json()},
                              {"server", served.to_json()},
                              {"server_share_of_engine", share}});
  }
  std::fflush(stdout);
  server.stop();
  loop.stop(std::chrono::milliseconds(0));
  if (args.count("json-out")) std::ofstream(args["json-out"]) << report.dump(2) << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "server_bench: %s\n", e.what());
    return 1;
  }
}
