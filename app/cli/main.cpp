// hearth-cli: the engine from a terminal (info, generate, chat, tokenize, bench, ppl, kld,
// quantize, serve).
#include <cstdio>
#include <string>
#include <vector>

#include "app/cli/arg_parser.h"
#include "app/cli/commands.h"
#include "engine/core/error.h"

namespace {

const char* kUsage = R"(usage: hearth-cli <command> [flags]

commands:
  info      [--model PATH] [--json]
  generate  [--model PATH] --prompt TEXT [--max-tokens N] [--temperature T] [--top-k K]
            [--top-p P] [--min-p P] [--repetition-penalty R] [--frequency-penalty F]
            [--presence-penalty F] [--seed S] [--stop TEXT] [--backend cpu|cuda] [--chat]
            [--system TEXT] [--json]
  chat      [--model PATH] [--system TEXT] [sampling flags] [--backend cpu|cuda]
  tokenize  [--model PATH] --text TEXT
  bench     [--model PATH] [--prompt-len N] [--gen-len N] [--batch N] [--backend cpu|cuda]
            [--json]
  bench     --synthetic llama3-8b[,llama2-7b,llama2-13b,llama2-70b] [--quant exl2:4.0,gptq:4:128]
            [--batches 1,8,32] [--sweep] [--gpus 0,1 [--split layer|tensor]
            [--all-reduce fused,peer,nccl]] [--json]
                                    (GPU: random weights of real shapes, with hardware limits;
                                    --gpus: by layers and tensor parallel against the first
                                    alone; --all-reduce: tensor parallel once per way to sum)
  ppl       [--model PATH] --data FILE|builtin [--ctx N] [--stride N] [--max-tokens N]
            [--backend cpu|cuda] [--lora PATH[:W]]... [--cache fp16|q8|q6|q4] [--json]
            (sliding-window perplexity)
  kld       --model QUANT --reference FP16 --data FILE|builtin [--ctx N] [--stride N]
            [--max-tokens N] [--backend cpu|cuda] [--lora PATH[:W]]... [--cache fp16|q8|q6|q4]
            [--json]  (mean / 99.9th-percentile KL divergence, top-token agreement; --lora and
            --cache apply to QUANT, so FP16 with --model FP16 --cache q4 measures the cache)
  quantize  [--model SRC] --out DIR [--format exl2|gptq] [--bpw B] [--head-bits H]
            [--bits N --group-size G] [--no-act-order] [--asym] [--quantize-head]
            [--calibration FILE] [--rows R --length L] [--measure-rows R] [--measurement FILE]
            [--work-dir DIR] [--keep-work] [--resume] [--restart] [--evaluate]
            [--eval-data FILE] [--json-progress] [--backend cpu|cuda] [--threads N]
            (SRC: fp16/bf16 folder or GGUF; Ctrl-C stops, --resume continues)
  serve     [--model PATH] [--port N] [--host ADDR] [--api-key KEY] [--cors-origin ORIGIN]
            [--allowed-host NAME,...] [--max-concurrent N] [--max-body BYTES]
            [--shutdown-grace S] [load flags]
            (OpenAI-compatible API on http://127.0.0.1:8080/v1; a --host beyond loopback needs
            --api-key or HEARTH_API_KEY; SIGINT/SIGTERM stop it cleanly)

load flags (every command that runs the model):
  --backend cpu|cuda  --device N  --threads N  --max-seq-len N  --cache-tokens N
  --gpus 0,1  --split layer|tensor  --gpu-split 20,24  (several GPUs: by layers, each runs a run
            of layers, in proportion to its free memory or as many GiB as --gpu-split gives it;
            tensor: every GPU runs its share of each layer's heads and MLP, NCCL summing them)
            --gpu-reserve GIB  (left free on each GPU; 0.25)
  --max-batch N  --rope-scaling none|linear|dynamic|yarn|llama3  --rope-factor F
  --rope-original-context N  --ntk-alpha A
  --prefix-reuse on|off  (share the cache pages of prompts that start alike; default on)
  --cache fp16|q8|q6|q4  (the KV cache's precision: q8/q6/q4 hold 1.9/2.5/3.6 times the tokens
            of fp16 in the same memory; default fp16)
  --speculate off|ngram|draft  --draft-tokens K  --draft-model PATH  (propose up to K tokens
            (1..16, default 8) from the request's own text (ngram) or with a smaller model of the
            same vocabulary (draft) and keep those the model agrees with; same output; default off)
  --cpu-linears fast|exact  (on the CPU, quantized layers multiply their codes by activations
            rounded to 16-bit integers (fast, the default) or use the exact dequantized weights
            (exact, the reference; ppl and kld default to it))
  --lora PATH[:WEIGHT]  (repeatable, up to 8: a LoRA adapter, a PEFT folder or a GGUF adapter,
            applied with WEIGHT, default 1; `info --lora PATH` checks one against the model)

Without --model, the default model (SmolLM2-135M-Instruct) is used. PATH is a model
folder or a .gguf file.
)";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "help") {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const std::string command = argv[1];
  const std::vector<std::string> args(argv + 2, argv + argc);
  try {
    if (command == "info") return hearth::cli::run_info(args);
    if (command == "generate") return hearth::cli::run_generate(args);
    if (command == "chat") return hearth::cli::run_chat(args);
    if (command == "tokenize") return hearth::cli::run_tokenize(args);
    if (command == "bench") return hearth::cli::run_bench(args);
    if (command == "ppl") return hearth::cli::run_ppl(args);
    if (command == "kld") return hearth::cli::run_kld(args);
    if (command == "quantize") return hearth::cli::run_quantize(args);
#if HEARTH_WITH_SERVER
    if (command == "serve") return hearth::cli::run_serve(args);
#else
    if (command == "serve") {
      throw hearth::cli::UsageError("this build has no server (cpp-httplib was not found)");
    }
#endif
    throw hearth::cli::UsageError("unknown command '" + command + "'");
  } catch (const hearth::cli::HelpRequested&) {
    std::fputs(kUsage, stdout);
    return 0;
  } catch (const hearth::cli::UsageError& e) {
    std::fprintf(stderr, "hearth-cli: %s\n\n%s", e.what(), kUsage);
    return 2;
  } catch (const hearth::Error& e) {
    std::fprintf(stderr, "hearth-cli: %s: %s\n", hearth::error_code_name(e.code()), e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hearth-cli: %s\n", e.what());
    return 1;
  }
}
