// Flags shared by hearth-cli commands: which model, which backend, how to sample.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "app/cli/arg_parser.h"
#include "engine/api/engine.h"

namespace hearth::cli {

// --model --backend --threads --max-seq-len --cache-tokens --device --gpus --split --gpu-split
// --gpu-reserve --max-batch
// --rope-scaling --rope-factor --ntk-alpha --prefix-reuse --speculate --draft-tokens
// --draft-model --lora
std::set<std::string> load_flags();
LoadOptions load_options_from(const ArgParser& args);
// --gpus 0,1 (layer order), --split layer|tensor, --gpu-split 20,24 (GiB per GPU),
// --gpu-reserve GIB (kept free on every GPU) into `o`.
void gpu_options_from(const ArgParser& args, LoadOptions& o);
// Every --lora PATH[:WEIGHT] (repeatable; weight 1 when none is given).
// --cache fp16|q8|q6|q4 (default fp16).
KvCacheType kv_cache_type_from(const ArgParser& args);
// --cpu-linears fast|exact, `fallback` when absent.
CpuLinears cpu_linears_from(const ArgParser& args, CpuLinears fallback);
std::vector<AdapterSpec> adapters_from(const ArgParser& args);

// --temperature --top-k --top-p --min-p --repetition-penalty --frequency-penalty
// --presence-penalty --seed
std::set<std::string> sampling_flags();
SamplingParams sampling_from(const ArgParser& args);

std::set<std::string> merge(std::set<std::string> a, const std::set<std::string>& b);

// "a,b,,c" -> {"a", "b", "c"}: a flag's comma-separated list, empty items dropped.
std::vector<std::string> split_list(const std::string& s);

// Loads the model, with a progress line on stderr when `show_progress`.
void load_engine(Engine& engine, const LoadOptions& options, bool show_progress);

}  // namespace hearth::cli
