// tokenizer.model through libsentencepiece (Llama 1/2, Mistral, CodeLlama). Control tokens
// written in the text ("<s>", "</s>") are split out first, as Hugging Face's converted
// tokenizers do; sentencepiece encodes each text segment in between.
#include <sentencepiece_processor.h>

#include "engine/core/error.h"
#include "engine/tokenizer/added_tokens.h"
#include "engine/tokenizer/sentencepiece_model_check.h"
#include "engine/tokenizer/tokenizer_json_util.h"
#include "engine/tokenizer/tokenizer_loaders.h"

namespace hearth {
namespace {

using nlohmann::json;

class SentencePieceTokenizer final : public Tokenizer {
 public:
  SentencePieceTokenizer(std::string_view model_bytes, const json& config,
                         const std::string& source)
      : source_(source) {
    check_sentencepiece_model(model_bytes, source);
    const auto status = sp_.LoadFromSerializedProto(model_bytes);
    if (!status.ok())
      fail(ErrorCode::kInvalidFile,
           source + ": sentencepiece could not load the model: " + status.ToString());
    const int n = sp_.GetPieceSize();
    if (n <= 0) fail(ErrorCode::kInvalidFile, source + ": the model has no pieces");
    special_.assign(n, false);
    std::vector<AddedToken> added;
    for (int id = 0; id < n; ++id) {
      if (sp_.IsControl(id) || sp_.IsUnknown(id)) {
        special_[id] = true;
        added.push_back({id, sp_.IdToPiece(id), true});
      }
    }
    // Tokens that tokenizer_config.json declares (e.g. CodeLlama's infilling tokens).
    if (const json* decoder = json_util::find(config, "added_tokens_decoder");
        decoder && decoder->is_object()) {
      for (const auto& [key, value] : decoder->items()) {
        const auto content = json_util::get_string(value, "content", "tokenizer_config.json");
        const int id = sp_.PieceToId(content.value_or(""));
        if (!content || id < 0 || id >= n || sp_.IdToPiece(id) != *content) continue;
        const bool special = json_util::get_bool(value, "special", false, "tokenizer_config.json");
        special_[id] = special_[id] || special;
        added.push_back({id, *content, special});
      }
    }
    added_ = AddedTokenMatcher(added);
    if (sp_.bos_id() >= 0) bos_ = sp_.bos_id();
    if (sp_.eos_id() >= 0) eos_ = sp_.eos_id();
    // LlamaTokenizer's defaults: BOS on, EOS off.
    add_bos_ = bos_ && json_util::get_bool(config, "add_bos_token", true, "tokenizer_config.json");
    add_eos_ = eos_ && json_util::get_bool(config, "add_eos_token", false, "tokenizer_config.json");
  }

  std::vector<int32_t> encode(std::string_view text, bool add_special) const override {
    std::vector<int32_t> ids;
    if (add_special && add_bos_) ids.push_back(*bos_);
    std::vector<TextSegment> segments;
    added_.split(text, segments);
    std::vector<int> piece_ids;
    for (const auto& segment : segments) {
      if (segment.id >= 0) {
        ids.push_back(segment.id);
        continue;
      }
      const auto status = sp_.Encode(segment.text, &piece_ids);
      if (!status.ok())
        fail(ErrorCode::kInvalidArgument,
             source_ + ": sentencepiece could not encode: " + status.ToString());
      ids.insert(ids.end(), piece_ids.begin(), piece_ids.end());
    }
    if (add_special && add_eos_) ids.push_back(*eos_);
    return ids;
  }

  std::string decode(std::span<const int32_t> ids, bool skip_special) const override {
    // Runs of ordinary ids go through sentencepiece (which drops the leading space of each
    // run, undoing the prefix that encode added to each segment); special ids are their text.
    std::string out;
    std::vector<int> run;
    auto flush = [&] {
      if (run.empty()) return;
      std::string text;
      const auto status = sp_.Decode(run, &text);
      if (!status.ok())
        fail(ErrorCode::kInvalidArgument,
             source_ + ": sentencepiece could not decode: " + status.ToString());
      out += text;
      run.clear();
    };
    for (int32_t id : ids) {
      check_id(id);
      if (special_[id]) {
        if (skip_special) continue;
        flush();
        out += sp_.IdToPiece(id);
        continue;
      }
      run.push_back(id);
    }
    flush();
    return out;
  }

  std::string piece(int32_t id) const override {
    check_id(id);
    return sp_.IdToPiece(id);
  }
  std::optional<int32_t> piece_to_id(std::string_view piece) const override {
    const int id = sp_.PieceToId(piece);
    // PieceToId answers unk for unknown pieces.
    if (id < 0 || sp_.IdToPiece(id) != piece) return std::nullopt;
    return id;
  }
  int32_t vocab_size() const override { return sp_.GetPieceSize(); }
  bool is_special(int32_t id) const override {
    return id >= 0 && id < vocab_size() && special_[id];
  }
  std::optional<int32_t> bos_id() const override { return bos_; }
  std::optional<int32_t> eos_id() const override { return eos_; }
  bool adds_bos() const override { return add_bos_; }

 private:
  void check_id(int32_t id) const {
    if (id < 0 || id >= vocab_size())
      fail(ErrorCode::kInvalidArgument, "token id " + std::to_string(id) +
                                            " is outside the vocabulary of " +
                                            std::to_string(vocab_size()));
  }

  std::string source_;
  sentencepiece::SentencePieceProcessor sp_;
  std::vector<bool> special_;
  AddedTokenMatcher added_;
  std::optional<int32_t> bos_, eos_;
  bool add_bos_ = false, add_eos_ = false;
};

}  // namespace

std::unique_ptr<Tokenizer> parse_sentencepiece_model(std::string_view model_bytes,
                                                     std::optional<std::string_view> config_text,
                                                     const std::string& source) {
  json config = json::object();
  if (config_text) {
    config = json_util::parse(*config_text, "tokenizer_config.json", kMaxJsonDepth);
    if (!config.is_object())
      fail(ErrorCode::kInvalidFile, "tokenizer_config.json: top level is not an object");
  }
  return std::make_unique<SentencePieceTokenizer>(model_bytes, config, source);
}

}  // namespace hearth
