// Text <-> token ids. Implementations: byte-level BPE (tokenizer.json or GGUF "gpt2" metadata)
// and sentencepiece (tokenizer.model or GGUF "llama" metadata).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace hearth {

class GgufFile;

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Encodes `text`. Special/added tokens written literally in the text ("<|im_start|>") become
  // their ids, as Hugging Face tokenizers do. `add_special` prepends BOS (and whatever else the
  // tokenizer's post-processor adds) when the tokenizer is configured to do so.
  virtual std::vector<int32_t> encode(std::string_view text, bool add_special = false) const = 0;
  // Decodes ids to text; `skip_special` drops special tokens.
  virtual std::string decode(std::span<const int32_t> ids, bool skip_special = false) const = 0;
  // The token's text as stored in the vocabulary (e.g. "Ġthe", "▁the", "<0x0A>").
  virtual std::string piece(int32_t id) const = 0;
  virtual std::optional<int32_t> piece_to_id(std::string_view piece) const = 0;
  virtual int32_t vocab_size() const = 0;
  virtual bool is_special(int32_t id) const = 0;
  virtual std::optional<int32_t> bos_id() const = 0;
  virtual std::optional<int32_t> eos_id() const = 0;
  // Whether encode(text, add_special=true) prepends BOS.
  virtual bool adds_bos() const = 0;
};

// Loads tokenizer.json (preferred) or tokenizer.model from a Hugging Face model folder, with
// tokenizer_config.json for added-token and BOS settings. Throws Error on a missing or bad file.
std::unique_ptr<Tokenizer> load_tokenizer(const std::filesystem::path& model_dir);
// Builds the tokenizer described by a GGUF file's tokenizer.ggml.* metadata.
std::unique_ptr<Tokenizer> load_tokenizer_from_gguf(const GgufFile& gguf);

// Turns a stream of ids into text pieces that never end inside a UTF-8 character, and that
// equal, concatenated, tokenizer.decode(all ids).
class StreamingDetokenizer {
 public:
  explicit StreamingDetokenizer(const Tokenizer& tokenizer, bool skip_special = true);
  // Adds one id and returns the text that became final with it (possibly empty).
  std::string feed(int32_t id);
  // Returns whatever is still held back (incomplete bytes are emitted as U+FFFD).
  std::string flush();

 private:
  const Tokenizer& tokenizer_;
  bool skip_special_;
  std::vector<int32_t> ids_;
  size_t prefix_offset_ = 0;
  size_t read_offset_ = 0;
};

}  // namespace hearth
