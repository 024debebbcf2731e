// quant_bench: the quantized-model benchmark (engine/bench/quant_bench.h) from the command line.
//
//   quant_bench [--models llama3-8b,llama2-7b] [--quants exl2:4.0,gptq:4:128]
//               [--prefill 512,2048] [--batches 1,8,32] [--context 512] [--cache q4] [--steps 32]
//               [--device 0] [--no-sweep] [--profile-step] [--fold-norm-rows N]
//               [--sum-kernel-rows N] [--staged-x-rows N] [--fused-rows N] [--mma-rows N]
//               [--mma-max-rows N] [--mma-blocks wide|tall|wgmma]
//               [--decode-blocks-per-sm N] [--decode-tensor-cores 0|1] [--attention-block WxT]
//               [--attention-wgmma 0|1] [--dequant-overlap 0|1] [--graphs 0|1]
//               [--dequant-slices MiB,..] [--prefix-step SEQS,NEW,CACHED] [--json]
//               [--json-out FILE]
//
// --dequant-slices: prefill (and the prefix step) again with the many-row linears' fp16 weights
// written in slices of each size. --prefix-step: also time the step in which SEQS prompts of NEW
// tokens continue one cached prefix of CACHED positions (rounded down to whole pages).
//
// --profile-step: the first timed decode step of each batch size runs between
// cudaProfilerStart/Stop, for `ncu --profile-from-start off` (one step's kernels); with
// --check-tokens, the first check step of the largest count instead.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "engine/bench/quant_bench.h"
#include "engine/core/error.h"

namespace {

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

int usage() {
  std::fprintf(
      stderr,
      "usage: quant_bench [--models a,b] [--quants exl2:4.0,gptq:4:128] [--prefill N,..] "
      "[--batches N,..] [--check-tokens K,..] [--lora-rank R] [--lora-adapters N] "
      "[--lora-paths fused,kernels,cublas] [--lora-delta-rows N] "
      "[--context N] [--cache fp16|q8|q6|q4] [--steps N] [--device N] [--no-sweep] "
      "[--fold-norm-rows N] [--sum-kernel-rows N] [--staged-x-rows N] [--fused-rows N] "
      "[--mma-rows N] [--mma-max-rows N] [--mma-blocks wide|tall|wgmma] [--decode-blocks-per-sm N] "
      "[--decode-tensor-cores 0|1] [--attention-block WxT] [--attention-wgmma 0|1] "
      "[--dequant-overlap 0|1] [--graphs 0|1] [--dequant-slices MiB,..] "
      "[--prefix-step SEQS,NEW,CACHED] "
      "[--profile-step] "
      "[--json] "
      "[--json-out FILE]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  hearth::QuantBenchOptions o;
  bool json = false;
  std::string json_out;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc) throw std::invalid_argument(a);
        return argv[++i];
      };
      auto numbers = [&](const std::string& s) {
        std::vector<int64_t> v;
        for (const auto& x : split(s)) v.push_back(std::stoll(x));
        return v;
      };
      if (a == "--models")
        o.models = split(value());
      else if (a == "--quants")
        o.quants = split(value());
      else if (a == "--prefill")
        o.prefill_lengths = numbers(value());
      else if (a == "--batches")
        o.decode_batches = numbers(value());
      else if (a == "--check-tokens")
        o.check_tokens = numbers(value());
      else if (a == "--lora-rank")
        o.lora_rank = std::stoll(value());
      else if (a == "--lora-adapters")
        o.lora_adapters = std::stoi(value());
      else if (a == "--lora-paths") {
        o.lora_paths = split(value());
        for (const std::string& path : o.lora_paths) {
          if (path != "fused" && path != "kernels" && path != "cublas") return usage();
        }
      } else if (a == "--dequant-slices")
        o.dequant_slice_mib = numbers(value());
      else if (a == "--prefix-step") {
        o.prefix_step = numbers(value());
        if (o.prefix_step.size() != 3) return usage();
      } else if (a == "--context")
        o.decode_context = std::stoll(value());
      else if (a == "--cache") {
        const auto type = hearth::parse_kv_cache_type(value());
        if (!type) return usage();
        o.kv_cache_type = *type;
      } else if (a == "--steps")
        o.decode_steps = std::stoi(value());
      else if (a == "--device")
        o.device = std::stoi(value());
      else if (a == "--fold-norm-rows")
        o.fold_norm_max_rows = std::stoll(value());
      else if (a == "--sum-kernel-rows")
        o.slice_sum_kernel_min_rows = std::stoll(value());
      else if (a == "--lora-delta-rows")
        o.lora_delta_max_rows = std::stoll(value());
      else if (a == "--staged-x-rows")
        o.staged_x_min_rows = std::stoll(value());
      else if (a == "--fused-rows")
        o.quant_fused_max_rows = std::stoll(value());
      else if (a == "--mma-rows")
        o.quant_mma_min_rows = std::stoll(value());
      else if (a == "--mma-max-rows")
        o.quant_mma_max_rows = std::stoll(value());
      else if (a == "--mma-blocks") {
        const std::string v = value();
        if (v != "wide" && v != "tall" && v != "wgmma") return usage();
        o.quant_mma_blocks = v;
      } else if (a == "--decode-blocks-per-sm")
        o.decode_attention_blocks_per_sm = std::stoi(value());
      else if (a == "--decode-tensor-cores")
        o.decode_attention_tensor_cores = std::stoi(value());
      else if (a == "--attention-block") {
        // Warps x tiles, e.g. 4x2; warps alone (8) leave the tiles to the backend.
        const std::string v = value();
        o.attention_warps = std::stoi(v);
        const size_t x = v.find('x');
        o.attention_warp_tiles = x == std::string::npos ? 0 : std::stoi(v.substr(x + 1));
      } else if (a == "--attention-wgmma")
        o.attention_warpgroup_mma = std::stoi(value());
      else if (a == "--dequant-overlap")
        o.dequant_overlap = std::stoi(value());
      else if (a == "--graphs")
        o.cuda_graphs = std::stoi(value());
      else if (a == "--no-sweep")
        o.kernel_sweep = false;
      else if (a == "--profile-step")
        o.profile_decode_step = true;
      else if (a == "--json")
        json = true;
      else if (a == "--json-out")
        json_out = value();
      else
        return usage();
    }
  } catch (const std::exception&) {
    return usage();
  }
  try {
    const hearth::QuantBenchReport r = hearth::run_quant_benchmark(o);
    if (json) {
      std::cout << r.json.dump(2) << "\n";
    } else {
      std::cout << r.text;
    }
    if (!json_out.empty()) std::ofstream(json_out) << r.json.dump(2) << "\n";
  } catch (const hearth::Error& e) {
    std::fprintf(stderr, "quant_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
