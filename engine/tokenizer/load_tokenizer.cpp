// load_tokenizer(model_dir): tokenizer.json for byte-level BPE (and Llama 2 style BPE when no
// tokenizer.model is there), tokenizer.model through libsentencepiece otherwise.
#include <fstream>

#include "engine/core/error.h"
#include "engine/tokenizer/tokenizer_json_util.h"
#include "engine/tokenizer/tokenizer_loaders.h"

namespace hearth {
namespace {

constexpr size_t kMaxConfigBytes = 64 << 20;
constexpr size_t kMaxSentencePieceBytes = 256 << 20;

// Whether a tokenizer.json describes byte-level BPE (a ByteLevel pre-tokenizer or decoder
// anywhere in it): then it is the tokenizer; otherwise a tokenizer.model beside it is preferred.
bool mentions_byte_level(const nlohmann::json& node) {
  if (node.is_object()) {
    if (auto it = node.find("type"); it != node.end() && it->is_string() && *it == "ByteLevel")
      return true;
    for (const auto& [key, value] : node.items())
      if (key != "model" && mentions_byte_level(value)) return true;
  } else if (node.is_array()) {
    for (const auto& value : node)
      if (mentions_byte_level(value)) return true;
  }
  return false;
}

}  // namespace

std::string read_tokenizer_file(const std::filesystem::path& path, size_t max_bytes) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) fail(ErrorCode::kIo, path.string() + ": " + ec.message());
  if (size > max_bytes)
    fail(ErrorCode::kInvalidFile, path.string() + ": " + std::to_string(size) +
                                      " bytes exceeds the limit of " + std::to_string(max_bytes));
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(ErrorCode::kIo, path.string() + ": cannot open");
  std::string data(size, '\0');
  in.read(data.data(), static_cast<std::streamsize>(size));
  if (static_cast<size_t>(in.gcount()) != size)
    fail(ErrorCode::kIo, path.string() + ": short read");
  return data;
}

std::unique_ptr<Tokenizer> load_tokenizer(const std::filesystem::path& model_dir) {
  const auto json_path = model_dir / "tokenizer.json";
  const auto model_path = model_dir / "tokenizer.model";
  const auto config_path = model_dir / "tokenizer_config.json";
  std::optional<std::string> config;
  if (std::filesystem::exists(config_path))
    config = read_tokenizer_file(config_path, kMaxConfigBytes);
  std::optional<std::string_view> config_view;
  if (config) config_view = *config;

  const bool has_json = std::filesystem::exists(json_path);
  const bool has_model = std::filesystem::exists(model_path);
  if (has_json) {
    const std::string text = read_tokenizer_file(json_path, kMaxTokenizerJsonBytes);
    bool byte_level = true;
    if (has_model) {
      const auto root = json_util::parse(text, json_path.string(), kMaxJsonDepth);
      byte_level = mentions_byte_level(root);
    }
    if (byte_level || !has_model)
      return parse_tokenizer_json(text, config_view, json_path.string());
  }
  if (has_model)
    return parse_sentencepiece_model(read_tokenizer_file(model_path, kMaxSentencePieceBytes),
                                     config_view, model_path.string());
  fail(ErrorCode::kIo, model_dir.string() + ": neither tokenizer.json nor tokenizer.model found");
}

}  // namespace hearth
