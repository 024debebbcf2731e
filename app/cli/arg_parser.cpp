#include "app/cli/arg_parser.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace hearth::cli {

ArgParser::ArgParser(const std::vector<std::string>& args, std::set<std::string> value_flags,
                     std::set<std::string> switch_flags) {
  for (size_t i = 0; i < args.size(); ++i) {
    std::string a = args[i];
    if (a == "--help" || a == "-h") throw HelpRequested();
    if (!a.starts_with("--")) throw UsageError("unexpected argument '" + a + "'");
    a = a.substr(2);
    std::optional<std::string> inline_value;
    if (auto eq = a.find('='); eq != std::string::npos) {
      inline_value = a.substr(eq + 1);
      a = a.substr(0, eq);
    }
    if (switch_flags.count(a)) {
      if (inline_value) throw UsageError("--" + a + " takes no value");
      switches_.insert(a);
    } else if (value_flags.count(a)) {
      if (!inline_value && i + 1 >= args.size()) throw UsageError("--" + a + " needs a value");
      values_[a] = inline_value ? *inline_value : args[++i];
      all_values_[a].push_back(values_[a]);
    } else {
      throw UsageError("unknown flag --" + a);
    }
  }
}

bool ArgParser::has(const std::string& flag) const {
  return switches_.count(flag) > 0 || values_.count(flag) > 0;
}

std::optional<std::string> ArgParser::get(const std::string& flag) const {
  auto it = values_.find(flag);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> ArgParser::get_all(const std::string& flag) const {
  auto it = all_values_.find(flag);
  return it == all_values_.end() ? std::vector<std::string>{} : it->second;
}

std::string ArgParser::require(const std::string& flag) const {
  auto v = get(flag);
  if (!v) throw UsageError("--" + flag + " is required");
  return *v;
}

int64_t ArgParser::get_int(const std::string& flag, int64_t fallback, int64_t min,
                           int64_t max) const {
  auto v = get(flag);
  if (!v) return fallback;
  errno = 0;
  char* end = nullptr;
  const long long n = std::strtoll(v->c_str(), &end, 10);
  if (v->empty() || *end != '\0' || errno == ERANGE || n < min || n > max) {
    throw UsageError("--" + flag + " must be an integer in " + std::to_string(min) + ".." +
                     std::to_string(max) + ", got '" + *v + "'");
  }
  return n;
}

double ArgParser::get_double(const std::string& flag, double fallback, double min,
                             double max) const {
  auto v = get(flag);
  if (!v) return fallback;
  char* end = nullptr;
  const double d = std::strtod(v->c_str(), &end);
  if (v->empty() || *end != '\0' || !std::isfinite(d) || d < min || d > max) {
    throw UsageError("--" + flag + " must be a number in [" + std::to_string(min) + ", " +
                     std::to_string(max) + "], got '" + *v + "'");
  }
  return d;
}

}  // namespace hearth::cli
