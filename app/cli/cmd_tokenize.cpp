// hearth-cli tokenize: the ids of a text, as a JSON array.
#include <iostream>
#include <nlohmann/json.hpp>

#include "app/cli/cli_common.h"
#include "app/cli/commands.h"
#include "engine/model/model_loader.h"

namespace hearth::cli {

int run_tokenize(const std::vector<std::string>& raw) {
  const ArgParser args(raw, {"model", "text"}, {"add-special"});
  const LoadOptions options = load_options_from(args);
  const std::string text = args.require("text");
  const ModelBundle bundle = open_model(options.model_path, true);
  const std::vector<int32_t> ids = bundle.tokenizer->encode(text, args.has("add-special"));
  std::cout << nlohmann::json(ids).dump() << "\n";
  return 0;
}

}  // namespace hearth::cli
