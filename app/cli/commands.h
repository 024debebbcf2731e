// hearth-cli's commands. Each returns the process exit code; usage mistakes throw UsageError.
#pragma once

#include <string>
#include <vector>

namespace hearth::cli {

int run_info(const std::vector<std::string>& args);
int run_generate(const std::vector<std::string>& args);
int run_chat(const std::vector<std::string>& args);
int run_tokenize(const std::vector<std::string>& args);
int run_bench(const std::vector<std::string>& args);
int run_ppl(const std::vector<std::string>& args);
int run_kld(const std::vector<std::string>& args);
int run_quantize(const std::vector<std::string>& args);
int run_serve(const std::vector<std::string>& args);  // only with HEARTH_WITH_SERVER

}  // namespace hearth::cli
