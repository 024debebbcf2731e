// Command-line flags for hearth-cli: --name value / --name=value / boolean --name, with
// typed, range-checked access and a usage error (UsageError) for anything unknown or bad.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace hearth::cli {

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// --help (or -h) where a flag is expected: not an error, the caller prints the usage.
class HelpRequested : public std::exception {
 public:
  const char* what() const noexcept override { return "help requested"; }
};

class ArgParser {
 public:
  // `value_flags` take a value; `switch_flags` do not. Throws UsageError on unknown flags,
  // missing values or positional arguments, HelpRequested on --help / -h in a flag's place.
  ArgParser(const std::vector<std::string>& args, std::set<std::string> value_flags,
            std::set<std::string> switch_flags);

  bool has(const std::string& flag) const;
  std::optional<std::string> get(const std::string& flag) const;    // the last value given
  std::vector<std::string> get_all(const std::string& flag) const;  // every value, in order
  std::string require(const std::string& flag) const;
  int64_t get_int(const std::string& flag, int64_t fallback, int64_t min, int64_t max) const;
  double get_double(const std::string& flag, double fallback, double min, double max) const;

 private:
  std::map<std::string, std::string> values_;
  std::map<std::string, std::vector<std::string>> all_values_;
  std::set<std::string> switches_;
};

}  // namespace hearth::cli
