#include "engine/tokenizer/bpe_tokenizer.h"

#include <unordered_map>

#include "engine/core/error.h"
#include "engine/tokenizer/byte_level.h"
#include "engine/tokenizer/utf8.h"

namespace hearth {
namespace {

constexpr std::string_view kMetaspace = "\xE2\x96\x81";  // U+2581 "▁"

std::string replace_all(std::string_view text, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(text.size() + text.size() / 4);
  size_t pos = 0;
  for (size_t at = text.find(from); at != std::string_view::npos; at = text.find(from, pos)) {
    out.append(text.substr(pos, at - pos));
    out.append(to);
    pos = at + from.size();
  }
  out.append(text.substr(pos));
  return out;
}

// "<0xAB>" -> 0xAB, or -1.
int byte_token_value(std::string_view token) {
  if (token.size() != 6 || token.substr(0, 3) != "<0x" || token[5] != '>') return -1;
  int value = 0;
  for (char c : token.substr(3, 2)) {
    value <<= 4;
    if (c >= '0' && c <= '9')
      value |= c - '0';
    else if (c >= 'A' && c <= 'F')
      value |= c - 'A' + 10;
    else if (c >= 'a' && c <= 'f')
      value |= c - 'a' + 10;
    else
      return -1;
  }
  return value;
}

class BpeTokenizer final : public Tokenizer {
 public:
  explicit BpeTokenizer(BpeTokenizerSpec spec)
      : source_(std::move(spec.source)),
        pre_tokenizer_(std::move(spec.pre_tokenizer)),
        metaspace_normalizer_(spec.metaspace_normalizer),
        decoder_(spec.decoder),
        decoder_byte_fallback_(spec.decoder_byte_fallback),
        decoder_replacements_(std::move(spec.decoder_replacements)),
        prefix_ids_(std::move(spec.prefix_ids)),
        suffix_ids_(std::move(spec.suffix_ids)),
        bos_id_(spec.bos_id),
        eos_id_(spec.eos_id) {
    std::unordered_map<std::string_view, int32_t> model_ids;
    model_ids.reserve(spec.vocab.size());
    for (size_t id = 0; id < spec.vocab.size(); ++id)
      if (!spec.vocab[id].empty()) model_ids[spec.vocab[id]] = static_cast<int32_t>(id);
    auto lookup = [&](const std::string& token, size_t rank) {
      auto it = model_ids.find(token);
      if (it == model_ids.end())
        fail(ErrorCode::kInvalidFile, source_ + ": merge " + std::to_string(rank) +
                                          " refers to the token \"" + token.substr(0, 100) +
                                          "\", which is not in the vocabulary");
      return it->second;
    };
    std::vector<BpeMerge> merges;
    merges.reserve(spec.merges.size());
    for (size_t rank = 0; rank < spec.merges.size(); ++rank) {
      const auto& [left, right] = spec.merges[rank];
      merges.push_back({lookup(left, rank), lookup(right, rank), lookup(left + right, rank)});
    }

    BpeModelOptions options;
    options.byte_level = pre_tokenizer_ && pre_tokenizer_->byte_level();
    options.ignore_merges = spec.ignore_merges;
    options.byte_fallback = spec.byte_fallback;
    options.fuse_unk = spec.fuse_unk;
    if (spec.unk_token) {
      auto it = model_ids.find(*spec.unk_token);
      if (it == model_ids.end())
        fail(ErrorCode::kInvalidFile, source_ + ": unk_token \"" + spec.unk_token->substr(0, 100) +
                                          "\" is not in the vocabulary");
      options.unk_id = it->second;
    }
    model_ = std::make_unique<BpeModel>(spec.vocab, merges, options);

    // The id space: model vocabulary plus added tokens (which may reuse model ids).
    size_t size = spec.vocab.size();
    for (const auto& t : spec.added_tokens) {
      if (t.id < 0)
        fail(ErrorCode::kInvalidFile,
             source_ + ": added token \"" + t.content.substr(0, 100) + "\" has a negative id");
      size = std::max(size, static_cast<size_t>(t.id) + 1);
    }
    pieces_ = std::move(spec.vocab);
    pieces_.resize(size);
    special_.assign(size, false);
    for (size_t id = 0; id < pieces_.size(); ++id)
      if (!pieces_[id].empty()) piece_ids_[pieces_[id]] = static_cast<int32_t>(id);
    for (const auto& t : spec.added_tokens) {
      // tokenizers (0.23) decodes a normalized added token through its normalized form.
      pieces_[t.id] = t.normalized ? normalize(t.content) : t.content;
      special_[t.id] = t.special;
      piece_ids_[t.content] = t.id;
    }

    // Normalized added tokens are matched in normalized text, so by their normalized form.
    std::vector<AddedToken> raw_tokens, normalized_tokens;
    for (const auto& t : spec.added_tokens) {
      if (!t.normalized) {
        raw_tokens.push_back(t);
        continue;
      }
      normalized_tokens.push_back(t);
      if (metaspace_normalizer_) normalized_tokens.back().content = normalize(t.content);
    }
    raw_matcher_ = AddedTokenMatcher(raw_tokens);
    normalized_matcher_ = AddedTokenMatcher(normalized_tokens);

    auto check_id = [&](int32_t id, const char* what) {
      if (id < 0 || static_cast<size_t>(id) >= pieces_.size())
        fail(ErrorCode::kInvalidFile, source_ + ": " + what + " id " + std::to_string(id) +
                                          " is outside the vocabulary of " +
                                          std::to_string(pieces_.size()));
    };
    for (int32_t id : prefix_ids_) check_id(id, "post-processor");
    for (int32_t id : suffix_ids_) check_id(id, "post-processor");
    if (bos_id_) check_id(*bos_id_, "BOS");
    if (eos_id_) check_id(*eos_id_, "EOS");

    if (decoder_ == BpeDecoder::kByteLevel) {
      decoded_.resize(pieces_.size());
      for (size_t id = 0; id < pieces_.size(); ++id) {
        // A token with characters outside the byte mapping decodes to its own UTF-8.
        auto raw = byte_level::decode(pieces_[id]);
        decoded_[id] = raw ? std::move(*raw) : pieces_[id];
      }
    }
  }

  std::vector<int32_t> encode(std::string_view text, bool add_special) const override {
    std::vector<int32_t> ids;
    ids.reserve(text.size() / 3 + 4);
    if (add_special) ids.insert(ids.end(), prefix_ids_.begin(), prefix_ids_.end());
    PieceArena arena;
    std::vector<TextSegment> segments, inner;
    std::vector<std::string_view> pieces;
    raw_matcher_.split(text, segments);
    for (const TextSegment& segment : segments) {
      if (segment.id >= 0) {
        ids.push_back(segment.id);
        continue;
      }
      std::string_view normalized = segment.text;
      if (metaspace_normalizer_) normalized = arena.keep(normalize(segment.text));
      inner.clear();
      normalized_matcher_.split(normalized, inner);
      for (const TextSegment& part : inner) {
        if (part.id >= 0) {
          ids.push_back(part.id);
          continue;
        }
        pieces.assign(1, part.text);
        if (pre_tokenizer_) pre_tokenizer_->split(pieces, arena);
        for (std::string_view piece : pieces) model_->tokenize(piece, ids);
      }
    }
    if (add_special) ids.insert(ids.end(), suffix_ids_.begin(), suffix_ids_.end());
    return ids;
  }

  std::string decode(std::span<const int32_t> ids, bool skip_special) const override {
    for (int32_t id : ids) check_decode_id(id);
    auto skipped = [&](int32_t id) { return skip_special && special_[id]; };
    switch (decoder_) {
      case BpeDecoder::kByteLevel: {
        std::string bytes;
        for (int32_t id : ids)
          if (!skipped(id)) bytes += decoded_[id];
        return utf8::to_valid_lossy(bytes);
      }
      case BpeDecoder::kMetaspace:
        return decode_metaspace(ids, skipped);
      case BpeDecoder::kByteLevelFused:
        return decode_byte_level_fused(ids, skipped);
      case BpeDecoder::kJoin: {
        std::string out;
        bool first = true;
        for (int32_t id : ids) {
          if (skipped(id)) continue;
          if (!first) out += ' ';
          out += pieces_[id];
          first = false;
        }
        return out;
      }
    }
    return {};
  }

  std::string piece(int32_t id) const override {
    check_decode_id(id);
    return pieces_[id];
  }
  std::optional<int32_t> piece_to_id(std::string_view piece) const override {
    auto it = piece_ids_.find(std::string(piece));
    if (it == piece_ids_.end()) return std::nullopt;
    return it->second;
  }
  int32_t vocab_size() const override { return static_cast<int32_t>(pieces_.size()); }
  bool is_special(int32_t id) const override {
    return id >= 0 && static_cast<size_t>(id) < special_.size() && special_[id];
  }
  std::optional<int32_t> bos_id() const override { return bos_id_; }
  std::optional<int32_t> eos_id() const override { return eos_id_; }
  bool adds_bos() const override {
    return bos_id_ && !prefix_ids_.empty() && prefix_ids_.front() == *bos_id_;
  }

 private:
  // The normalizer: Llama 2's Prepend("▁") + Replace(" ", "▁"), or none.
  std::string normalize(std::string_view text) const {
    if (!metaspace_normalizer_) return std::string(text);
    return std::string(kMetaspace) + replace_all(text, " ", kMetaspace);
  }

  void check_decode_id(int32_t id) const {
    if (id < 0 || static_cast<size_t>(id) >= pieces_.size())
      fail(ErrorCode::kInvalidArgument, "token id " + std::to_string(id) +
                                            " is outside the vocabulary of " +
                                            std::to_string(pieces_.size()));
  }

  // The tokens joined, as tokenizers' ByteFallback + Fuse do: a run of <0xXX> tokens (when
  // `byte_fallback`) becomes its bytes, or one U+FFFD per token when they are not valid UTF-8;
  // other tokens are appended through `piece_text`.
  template <typename Skipped, typename PieceText>
  std::string join_tokens(std::span<const int32_t> ids, Skipped skipped, bool byte_fallback,
                          PieceText piece_text) const {
    std::string out;
    std::string bytes;  // a run of <0xXX> tokens
    size_t byte_tokens = 0;
    auto flush_bytes = [&] {
      if (byte_tokens == 0) return;
      if (utf8::is_valid(bytes)) {
        out += bytes;
      } else {
        for (size_t i = 0; i < byte_tokens; ++i) out += "\xEF\xBF\xBD";
      }
      bytes.clear();
      byte_tokens = 0;
    };
    for (int32_t id : ids) {
      if (skipped(id)) continue;
      const std::string& token = pieces_[id];
      if (byte_fallback) {
        if (const int value = byte_token_value(token); value >= 0) {
          bytes.push_back(static_cast<char>(value));
          ++byte_tokens;
          continue;
        }
      }
      flush_bytes();
      out += piece_text(token);
    }
    flush_bytes();
    return out;
  }

  // tokenizers' decoder Sequence[Replace("▁", " "), ByteFallback, Fuse, Strip(" ", 1, 0)].
  template <typename Skipped>
  std::string decode_metaspace(std::span<const int32_t> ids, Skipped skipped) const {
    std::string out = join_tokens(ids, skipped, true, [](const std::string& token) {
      return replace_all(token, kMetaspace, " ");
    });
    if (!out.empty() && out.front() == ' ') out.erase(0, 1);
    return out;
  }

  // tokenizers' decoder Sequence[ByteFallback?, Fuse, Replace…, ByteLevel].
  template <typename Skipped>
  std::string decode_byte_level_fused(std::span<const int32_t> ids, Skipped skipped) const {
    std::string text =
        join_tokens(ids, skipped, decoder_byte_fallback_,
                    [](const std::string& token) -> const std::string& { return token; });
    for (const auto& [pattern, content] : decoder_replacements_)
      text = replace_all(text, pattern, content);
    auto raw = byte_level::decode(text);
    return utf8::to_valid_lossy(raw ? *raw : text);
  }

  std::string source_;
  std::unique_ptr<PreTokenizer> pre_tokenizer_;
  bool metaspace_normalizer_;
  BpeDecoder decoder_;
  bool decoder_byte_fallback_;
  std::vector<std::pair<std::string, std::string>> decoder_replacements_;
  std::vector<int32_t> prefix_ids_, suffix_ids_;
  std::optional<int32_t> bos_id_, eos_id_;
  std::unique_ptr<BpeModel> model_;
  std::vector<std::string> pieces_;
  std::vector<bool> special_;
  std::vector<std::string> decoded_;
  std::unordered_map<std::string, int32_t> piece_ids_;
  AddedTokenMatcher raw_matcher_, normalized_matcher_;
};

}  // namespace

std::unique_ptr<Tokenizer> make_bpe_tokenizer(BpeTokenizerSpec spec) {
  return std::make_unique<BpeTokenizer>(std::move(spec));
}

}  // namespace hearth
