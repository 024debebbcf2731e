// backend_bench: the GPU benchmark (engine/bench/cuda_bench.h) from the command line.
//
//   backend_bench [--models llama3-8b,llama2-7b] [--dtype f16|bf16] [--prefill 512,2048,8192]
//                [--batches 1,8,32,64] [--context 512] [--steps 32] [--device 0]
//                [--no-sweep] [--no-variants] [--json] [--json-out FILE] [--profile-decode]
//
// Prints tables (or, with --json, the JSON report) on stdout; exit code 1 on errors.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "engine/bench/cuda_bench.h"
#include "engine/core/error.h"

namespace {

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

std::vector<int64_t> numbers(const std::string& s) {
  std::vector<int64_t> out;
  for (const auto& item : split(s)) out.push_back(std::stoll(item));
  return out;
}

int usage() {
  std::fprintf(stderr,
               "usage: backend_bench [--models a,b] [--dtype f16|bf16] [--prefill 512,2048] "
               "[--batches 1,8] [--context N] [--steps N] [--device N] [--no-sweep] "
               "[--no-variants] [--max-layers N] [--json] [--json-out FILE]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  hearth::BenchOptions o;
  bool json = false;
  std::string json_out;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    try {
      if (a == "--models") {
        o.models = split(value());
      } else if (a == "--dtype") {
        const std::string d = value();
        if (d == "f16")
          o.dtype = hearth::DType::kF16;
        else if (d == "bf16")
          o.dtype = hearth::DType::kBF16;
        else
          return usage();
      } else if (a == "--prefill") {
        o.prefill_lengths = numbers(value());
      } else if (a == "--batches") {
        o.decode_batches = numbers(value());
      } else if (a == "--context") {
        o.decode_context = std::stoll(value());
      } else if (a == "--steps") {
        o.decode_steps = std::stoi(value());
      } else if (a == "--device") {
        o.device = std::stoi(value());
      } else if (a == "--no-sweep") {
        o.kernel_sweep = false;
      } else if (a == "--no-variants") {
        o.variants = false;
      } else if (a == "--max-layers") {
        o.max_layers = std::stoi(value());
      } else if (a == "--profile-decode") {
        o.profile_decode_step = true;
      } else if (a == "--json") {
        json = true;
      } else if (a == "--json-out") {
        json_out = value();
      } else {
        return usage();
      }
    } catch (const std::exception&) {
      return usage();
    }
  }
  try {
    const hearth::BenchReport r = hearth::run_backend_benchmark(o);
    if (json) {
      std::cout << r.json.dump(2) << "\n";
    } else {
      std::cout << r.text;
    }
    if (!json_out.empty()) std::ofstream(json_out) << r.json.dump(2) << "\n";
  } catch (const hearth::Error& e) {
    std::fprintf(stderr, "backend_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
