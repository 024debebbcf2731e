// Calibration data: the text the quantizer runs through the model to learn which inputs
// matter. Hearth's built-in set (resources/calibration: prose, code, several languages, chat
// conversations; sources and licenses in resources/calibration/SOURCES.md) or a user file
// (.txt / .md: plain text; .jsonl: one JSON object per line with a "text" string or a
// "messages" list of {role, content}, the latter rendered with the model's chat template).
// The text becomes token rows of a fixed length.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace hearth {
class Tokenizer;
struct ChatMessage;
}  // namespace hearth

namespace hearth::quantizer {

struct CalibrationText {
  std::string name;                    // "(default)" or the file name
  std::vector<std::string> documents;  // each tokenized on its own
};

// Renders a chat conversation to text (the model's template, or ChatML without one).
using ChatRenderer = std::function<std::string(const std::vector<ChatMessage>&)>;

// The built-in set. Error(kIo) when the embedded resources are missing (a broken build).
CalibrationText builtin_calibration(const ChatRenderer& render);
// Error(kInvalidFile) naming the file (and line for .jsonl) for empty, binary or malformed
// files; Error(kInvalidArgument) for other extensions; Error(kIo) when it cannot be read.
CalibrationText load_calibration_file(const std::filesystem::path& path,
                                      const ChatRenderer& render);

// The calibration text for a model: `file`, or the built-in set when it is empty, with chat
// conversations rendered by the model's chat template (ChatML when it has none).
CalibrationText model_calibration_text(const std::filesystem::path& file,
                                       const std::optional<std::string>& chat_template_source,
                                       const std::string& bos_token, const std::string& eos_token);

struct TokenRows {
  int64_t rows = 0;
  int64_t length = 0;
  std::vector<int32_t> ids;  // [rows, length]
  const int32_t* row(int64_t r) const { return ids.data() + r * length; }
};

// Tokenizes the documents (each followed by EOS when the tokenizer has one) into one stream,
// then takes `rows` windows of `length` tokens spread evenly over it; `phase` (0..1) shifts the
// windows so that the measurement and quantization sets differ. With BOS-prefixing tokenizers
// each row starts with BOS. Error(kInvalidArgument) when the text holds fewer than `length`
// tokens; a warning when rows must overlap.
TokenRows make_token_rows(const CalibrationText& text, const Tokenizer& tokenizer, int64_t rows,
                          int64_t length, double phase, std::vector<std::string>* warnings);

// The embedded resources (resources/calibration), by file name: "prose.txt", "chat.jsonl",
// "heldout.txt", ...
std::vector<std::pair<std::string, std::string>> builtin_calibration_files();

}  // namespace hearth::quantizer
