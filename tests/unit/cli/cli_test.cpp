// hearth-cli as a user runs it: the real binary in a child process, with the real default model
// (SmolLM2-135M-Instruct). Expected values come from outside Hearth: the model's published
// config, and token ids and greedy continuations from Hugging Face transformers
// (tests/fixtures/model/hf_parity.json, made by tests/reference/hf_parity.py).
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "engine/model/model_loader.h"
#include "tests/common/test_paths.h"
#include "tests/unit/quantizer/quantizer_test_model.h"

extern char** environ;

namespace hearth {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct CliRun {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs hearth-cli with `args` (no shell), stdout and stderr captured through files.
CliRun run_cli(const std::vector<std::string>& args) {
  const fs::path dir = fs::temp_directory_path() / ("hearth_cli_test_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const fs::path out = dir / "stdout", err = dir / "stderr";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  std::vector<std::string> argv_strings{HEARTH_CLI_PATH};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_strings) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  CliRun run;
  const int spawned = posix_spawn(&pid, HEARTH_CLI_PATH, &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) {
    ADD_FAILURE() << "could not start " << HEARTH_CLI_PATH;
    return run;
  }
  int status = 0;
  waitpid(pid, &status, 0);
  // A crash (signal) shows as 128 + signal, never as a normal exit code.
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  run.out = read_file(out);
  run.err = read_file(err);
  fs::remove_all(dir);
  return run;
}

std::string model() {
  return test::test_model().string();
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(Cli, HelpIsNotAnError) {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"--help"}, {"help"}, {"generate", "--help"}, {"quantize", "-h"}}) {
    const CliRun r = run_cli(args);
    EXPECT_EQ(r.exit_code, 0) << args.back();
    EXPECT_TRUE(contains(r.out, "usage: hearth-cli")) << args.back();
  }
  // A prompt that reads "--help" is a prompt, not a request for help.
  const CliRun r = run_cli({"tokenize", "--model", model(), "--text", "--help"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(json::parse(r.out).is_array());
}

TEST(Cli, UsageErrorsExitWithTwoAndTheUsage) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{}, "usage: hearth-cli"},
      {{"frobnicate"}, "unknown command 'frobnicate'"},
      {{"info", "--bogus"}, "unknown flag --bogus"},
      {{"generate", "--prompt", "hi", "--max-tokens", "lots"}, "--max-tokens must be an integer"},
      {{"generate", "--prompt", "hi", "--temperature", "nan"}, "--temperature must be a number"},
      {{"generate", "--prompt"}, "--prompt needs a value"},
      {{"generate"}, "--prompt is required"},
      {{"generate", "--prompt", "hi", "stray"}, "unexpected argument 'stray'"},
      {{"bench", "--json=yes"}, "--json takes no value"},
      {{"bench", "--synthetic", "llama3-8b", "--batches", "0"}, "--batches: decode batch sizes"},
      {{"bench", "--synthetic", "llama3-8b", "--batches", "8,x"}, "--batches: decode batch sizes"},
      {{"bench", "--synthetic", "llama3-8b", "--batches", ","}, "--batches: decode batch sizes"},
      {{"generate", "--prompt", "hi", "--speculate", "magic"},
       "--speculate must be off, ngram or draft"},
      {{"generate", "--prompt", "hi", "--speculate", "draft"},
       "--speculate draft and --draft-model PATH go together"},
      {{"generate", "--prompt", "hi", "--draft-tokens", "4"}, "--draft-tokens needs --speculate"},
      {{"generate", "--prompt", "hi", "--speculate", "ngram", "--draft-tokens", "40"},
       "--draft-tokens"},
      {{"generate", "--prompt", "hi", "--lora", "adapter:1e9"}, "the weight must be a number"},
      {{"generate", "--prompt", "hi", "--lora", ":0.5"}, "--lora needs a path"},
      {{"generate", "--prompt", "hi", "--cache", "q5"}, "--cache must be fp16, q8, q6 or q4"},
      {{"ppl", "--data", "builtin", "--cache", "int4"}, "--cache must be fp16, q8, q6 or q4"},
      {{"info", "--gpus", "0,1"}, "--gpus needs --backend cuda"},
      {{"info", "--backend", "cuda", "--gpus", "0,x"}, "--gpus takes device numbers"},
      {{"info", "--backend", "cuda", "--device", "1", "--gpus", "0,1"},
       "--device and --gpus do not go together"},
      {{"info", "--backend", "cuda", "--gpus", "0,1", "--split", "rows"},
       "--split must be layer or tensor"},
      {{"info", "--backend", "cuda", "--gpus", "0,1", "--gpu-split", "20"},
       "--gpu-split needs one size per GPU"},
      {{"info", "--backend", "cuda", "--gpus", "0,1", "--gpu-split", "20,-4"},
       "--gpu-split takes GiB per GPU"},
      {{"info", "--backend", "cuda", "--gpu-split", "20"}, "need two or more --gpus"},
  };
  for (const Case& c : cases) {
    const CliRun r = run_cli(c.args);
    const std::string what = c.args.empty() ? "(no arguments)" : c.args.back();
    EXPECT_EQ(r.exit_code, 2) << what << "\n" << r.err;
    EXPECT_TRUE(contains(r.err, c.message)) << what << "\n" << r.err;
    EXPECT_TRUE(contains(r.err, "usage: hearth-cli")) << what;
  }
}

TEST(Cli, BadModelFilesAreClearErrors) {
  const fs::path dir = fs::temp_directory_path() / ("hearth_cli_bad_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const fs::path garbage = dir / "garbage.gguf";
  std::ofstream(garbage, std::ios::binary) << "GGUF\x03\x00\x00\x00 this is not a model";
  const fs::path missing = dir / "missing.gguf";
  for (const fs::path& p : {garbage, missing}) {
    const CliRun r = run_cli({"info", "--model", p.string()});
    EXPECT_EQ(r.exit_code, 1) << p << "\n" << r.err;
    EXPECT_TRUE(contains(r.err, p.filename().string())) << r.err;  // names the file
  }
  fs::remove_all(dir);
}

// `info` validates the weights as loading does: a folder whose safetensors lacks a tensor that
// config.json implies is an error naming that tensor, not a description of a broken model.
TEST(Cli, InfoRefusesAModelMissingATensorItsConfigNeeds) {
  const fs::path dir =
      fs::temp_directory_path() / ("hearth_cli_partial_" + std::to_string(getpid()));
  quantizer::test::TinySpec spec;
  quantizer::test::write_tiny_model(dir / "complete", spec);
  spec.omit = "model.layers.1.mlp.up_proj.weight";
  quantizer::test::write_tiny_model(dir / "partial", spec);

  const CliRun complete = run_cli({"info", "--model", (dir / "complete").string(), "--json"});
  EXPECT_EQ(complete.exit_code, 0) << complete.err;
  const CliRun partial = run_cli({"info", "--model", (dir / "partial").string()});
  EXPECT_EQ(partial.exit_code, 1) << partial.out;
  EXPECT_TRUE(contains(partial.err, "model.layers.1.mlp.up_proj.weight")) << partial.err;
  EXPECT_FALSE(contains(partial.out, "parameters")) << partial.out;
  fs::remove_all(dir);
}

// Without --model, quantize takes the default model as every other command does. A target below
// what EXL2 can reach for that model's shapes stops the job right after the source is opened,
// which keeps this test short; the job file records which model it opened.
TEST(Cli, QuantizeWithoutModelUsesTheDefaultModel) {
  const fs::path dir = fs::temp_directory_path() / ("hearth_cli_quant_" + std::to_string(getpid()));
  fs::remove_all(dir);
  const CliRun r = run_cli({"quantize", "--out", (dir / "out").string(), "--bpw", "0.6",
                            "--work-dir", (dir / "work").string()});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "below the cheapest EXL2 setting for this model")) << r.err;
  const json job = json::parse(read_file(dir / "work" / "job.json"), nullptr, false);
  ASSERT_FALSE(job.is_discarded()) << "no job file";
  EXPECT_TRUE(fs::equivalent(job["options"]["source"].get<std::string>(), model())) << job.dump();
  fs::remove_all(dir);
}

// LoRA on the command line: `info --lora` checks adapters against the model and counts them in
// the plan; generate records the adapters it ran with and their output differs from the base
// model's; an adapter given as the model is named as such.
TEST(Cli, LoraAdaptersAreCheckedCountedAndApplied) {
  const fs::path lora = test::fixtures_dir() / "lora";
  const CliRun info = run_cli({"info", "--model", model(), "--lora", (lora / "attn_r8").string(),
                               "--lora", (lora / "all_r16.gguf").string() + ":0.5", "--json"});
  ASSERT_EQ(info.exit_code, 0) << info.err;
  const json j = json::parse(info.out);
  ASSERT_EQ(j["adapters"].size(), 2u);
  EXPECT_EQ(j["adapters"][0]["rank"], 8);
  EXPECT_EQ(j["adapters"][0]["format"], "peft");
  EXPECT_EQ(j["adapters"][1]["format"], "gguf");
  EXPECT_EQ(j["adapters"][1]["targets"].size(), 7u);
  EXPECT_DOUBLE_EQ(j["adapters"][1]["weight"].get<double>(), 0.5);
  EXPECT_GT(j["memory"]["adapters"].get<double>(), 3e6);

  const std::vector<std::string> gen = {
      "generate",     "--model", model(), "--prompt", "Photosynthesis is the process by which",
      "--max-tokens", "12",      "--json"};
  const CliRun base = run_cli(gen);
  std::vector<std::string> with = gen;
  with.insert(with.end(), {"--lora", (lora / "all_r16").string()});
  const CliRun adapted = run_cli(with);
  ASSERT_EQ(base.exit_code, 0) << base.err;
  ASSERT_EQ(adapted.exit_code, 0) << adapted.err;
  const json b = json::parse(base.out), a = json::parse(adapted.out);
  EXPECT_NE(a["tokens"], b["tokens"]);
  EXPECT_TRUE(b["adapters"].empty());
  ASSERT_EQ(a["adapters"].size(), 1u);
  EXPECT_EQ(a["adapters"][0]["name"], "all_r16");

  const CliRun wrong = run_cli({"info", "--model", (lora / "attn_r8").string()});
  EXPECT_EQ(wrong.exit_code, 1);
  EXPECT_TRUE(contains(wrong.err, "is a LoRA adapter, not a model")) << wrong.err;
}

TEST(Cli, InfoJsonDescribesTheModel) {
  const CliRun r = run_cli({"info", "--model", model(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  // SmolLM2-135M-Instruct's config.json on the Hugging Face hub.
  EXPECT_EQ(j["architecture"], "LlamaForCausalLM");
  EXPECT_EQ(j["layers"], 30);
  EXPECT_EQ(j["hidden_size"], 576);
  EXPECT_EQ(j["intermediate_size"], 1536);
  EXPECT_EQ(j["heads"], 9);
  EXPECT_EQ(j["kv_heads"], 3);
  EXPECT_EQ(j["head_dim"], 64);
  EXPECT_EQ(j["vocab_size"], 49152);
  EXPECT_EQ(j["context_length"], 8192);
  EXPECT_EQ(j["tie_word_embeddings"], true);
  EXPECT_DOUBLE_EQ(j["rope_theta"].get<double>(), 100000.0);
  EXPECT_NEAR(j["parameters"].get<double>(), 134.5e6, 0.1e6);
}

// The plan lists every cache choice with the tokens that fit (more for fewer bits), `--cache`
// plans the chosen one, and a q8 cache answers the fixture's prompt as transformers does.
TEST(Cli, QuantizedCacheIsPlannedAndAnswers) {
  const CliRun fp16 = run_cli({"info", "--model", model(), "--json"});
  const CliRun q4 = run_cli({"info", "--model", model(), "--cache", "q4", "--json"});
  ASSERT_EQ(fp16.exit_code, 0) << fp16.err;
  ASSERT_EQ(q4.exit_code, 0) << q4.err;
  const json a = json::parse(fp16.out)["memory"], b = json::parse(q4.out)["memory"];
  EXPECT_EQ(b["kv_cache_type"], "q4");
  ASSERT_EQ(b["cache_choices"].size(), 4u);
  int64_t previous = 0;
  for (const json& c : b["cache_choices"]) {
    EXPECT_GT(c["tokens_that_fit"].get<int64_t>(), previous) << c.dump();
    previous = c["tokens_that_fit"].get<int64_t>();
  }
  // SmolLM2: 30 layers × 3 kv heads × K and V × 64 dims; q4 keeps 4 bits and a 2-byte scale per
  // 32 values, and each page of 64 positions one fp16 first key per layer and kv head; the
  // CPU's full precision is fp32.
  const int q4_per_token = 30 * 3 * 2 * (32 + 4) + 30 * 3 * 64 * 2 / 64;
  EXPECT_EQ(b["cache_choices"][3]["bytes_per_token"], q4_per_token);
  EXPECT_EQ(b["cache_choices"][0]["bytes_per_token"], 30 * 3 * 2 * 64 * 4);
  EXPECT_EQ(a["kv_cache"].get<int64_t>() / b["kv_cache"].get<int64_t>(),
            30 * 3 * 2 * 64 * 4 / q4_per_token);

  std::ifstream in(test::fixtures_dir() / "model" / "hf_parity.json");
  const json c = json::parse(in)["cases"][0];  // "The capital of France is"
  const auto greedy = c["greedy_ids"].get<std::vector<int32_t>>();
  const CliRun gen = run_cli({"generate", "--model", model(), "--prompt", c["text"], "--max-tokens",
                              "8", "--temperature", "0", "--cache", "q8", "--json"});
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  const auto ids = json::parse(gen.out)["tokens"].get<std::vector<int32_t>>();
  EXPECT_EQ(ids, std::vector<int32_t>(greedy.begin(), greedy.begin() + 8));
}

TEST(Cli, TokenizeAndGreedyGenerateMatchTransformers) {
  std::ifstream in(test::fixtures_dir() / "model" / "hf_parity.json");
  const json c = json::parse(in)["cases"][0];  // "The capital of France is"
  const std::string text = c["text"];
  const auto prompt_ids = c["prompt_ids"].get<std::vector<int32_t>>();
  const auto greedy = c["greedy_ids"].get<std::vector<int32_t>>();

  const CliRun tok = run_cli({"tokenize", "--model", model(), "--text", text});
  ASSERT_EQ(tok.exit_code, 0) << tok.err;
  EXPECT_EQ(json::parse(tok.out).get<std::vector<int32_t>>(), prompt_ids);

  const CliRun gen = run_cli({"generate", "--model", model(), "--prompt", text, "--max-tokens",
                              std::to_string(greedy.size()), "--temperature", "0", "--json"});
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  const json j = json::parse(gen.out);
  // transformers runs its 32 tokens past the end of text (<|im_end|>, id 2); Hearth stops there.
  constexpr int32_t kEos = 2;
  const auto eos = std::find(greedy.begin(), greedy.end(), kEos);
  ASSERT_NE(eos, greedy.end()) << "the fixture's continuation was expected to end the text";
  const std::vector<int32_t> until_eos(greedy.begin(), eos);
  std::vector<int32_t> ids = j["tokens"].get<std::vector<int32_t>>();
  if (!ids.empty() && ids.back() == kEos) ids.pop_back();
  EXPECT_EQ(ids, until_eos);
  // As text through Hearth's tokenizer (itself checked against Hugging Face tokenizers).
  const ModelBundle bundle = open_model(test::test_model(), true);
  EXPECT_EQ(j["text"].get<std::string>(), bundle.tokenizer->decode(until_eos));
  EXPECT_EQ(j["prompt_tokens"], static_cast<int>(prompt_ids.size()));
  EXPECT_GT(j["prompt_tokens_per_s"].get<double>(), 0.0);
  EXPECT_GT(j["decode_tokens_per_s"].get<double>(), 0.0);
}

TEST(Cli, ChatTemplateGenerationStopsAtTheEndOfTheTurn) {
  const CliRun r =
      run_cli({"generate", "--model", model(), "--chat", "--prompt", "Say hello in one word.",
               "--max-tokens", "64", "--temperature", "0", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  const std::string text = j["text"];
  EXPECT_FALSE(text.empty());
  EXPECT_FALSE(contains(text, "<|im_end|>"));  // the end of turn stops, it is not printed
  EXPECT_LT(j["tokens"].size(), 64u);
}

// A code edit repeats its function: with --speculate ngram the model keeps proposals, --json
// says how many, and the greedy answer is the one without speculation.
TEST(Cli, SpeculationKeepsTheAnswerAndReportsProposals) {
  const std::string prompt =
      "Add a comment to this function and return it whole:\n\ndef area(width, height):\n    if "
      "width < 0 or height < 0:\n        raise ValueError(\"negative size\")\n    return width * "
      "height\n";
  std::vector<json> runs;
  for (const std::string mode : {"off", "ngram"}) {
    const CliRun r = run_cli({"generate", "--model", model(), "--chat", "--prompt", prompt,
                              "--max-tokens", "64", "--speculate", mode, "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    runs.push_back(json::parse(r.out));
  }
  EXPECT_EQ(runs[0]["proposed_tokens"], 0);
  EXPECT_GT(runs[1]["accepted_tokens"].get<int>(), 10);
  EXPECT_LE(runs[1]["accepted_tokens"].get<int>(), runs[1]["proposed_tokens"].get<int>());
  EXPECT_EQ(runs[1]["tokens"], runs[0]["tokens"]);
  EXPECT_EQ(runs[1]["generated_tokens"], runs[0]["generated_tokens"]);
}

// bench splits each decode step into the forward call, sampling and the generator's own work,
// over exactly the steps that follow the (one-step) prompts.
TEST(Cli, BenchSplitsDecodeStepsIntoModelAndGeneratorTime) {
  const CliRun r = run_cli({"bench", "--model", model(), "--batch", "2", "--prompt-len", "8",
                            "--gen-len", "5", "--repeat", "1", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json steps = json::parse(r.out)["decode_steps"];
  EXPECT_EQ(steps["steps"], 4);
  EXPECT_EQ(steps["tokens"], 2 * 4);
  EXPECT_GT(steps["tokens_per_s"].get<double>(), 0.0);
  const double parts = steps["forward_call_ms"].get<double>() + steps["sampling_ms"].get<double>() +
                       steps["generator_ms"].get<double>();
  EXPECT_NEAR(parts, steps["ms_per_step"].get<double>(), 1e-6);
  EXPECT_GT(steps["forward_call_ms"].get<double>(), 0.0);
  EXPECT_GE(steps["generator_ms"].get<double>(), 0.0);
  EXPECT_GE(steps["generator_share"].get<double>(), 0.0);
}

}  // namespace
}  // namespace hearth
