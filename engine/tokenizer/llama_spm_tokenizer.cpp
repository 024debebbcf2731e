#include "engine/tokenizer/llama_spm_tokenizer.h"

#include <algorithm>
#include <array>
#include <queue>
#include <unordered_map>

#include "engine/core/error.h"
#include "engine/tokenizer/added_tokens.h"
#include "engine/tokenizer/utf8.h"

namespace hearth {
namespace {

constexpr std::string_view kSpace = "\xE2\x96\x81";  // "▁"

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

// "<0xAB>" -> 0xAB, or -1.
int parse_byte_token(std::string_view t) {
  auto hex = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  if (t.size() != 6 || t.substr(0, 3) != "<0x" || t[5] != '>') return -1;
  const int hi = hex(t[3]), lo = hex(t[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

struct Symbol {
  uint32_t start, len;
  int32_t prev, next;
};

struct Bigram {
  float score;
  uint32_t left, right, size;
};
struct LowerPriority {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

class LlamaSpmTokenizer final : public Tokenizer {
 public:
  explicit LlamaSpmTokenizer(SpmVocabSpec spec) : spec_(std::move(spec)) {
    const std::string& src = spec_.source;
    const size_t n = spec_.tokens.size();
    if (n == 0) fail(ErrorCode::kInvalidFile, src + ": empty vocabulary");
    if (!spec_.scores.empty() && spec_.scores.size() != n)
      fail(ErrorCode::kInvalidFile, src + ": " + std::to_string(spec_.scores.size()) +
                                        " scores for " + std::to_string(n) + " tokens");
    if (!spec_.types.empty() && spec_.types.size() != n)
      fail(ErrorCode::kInvalidFile, src + ": " + std::to_string(spec_.types.size()) +
                                        " token types for " + std::to_string(n) + " tokens");
    spec_.scores.resize(n, 0.0f);
    spec_.types.resize(n, SpmTokenType::kNormal);
    for (auto* id : {&spec_.bos_id, &spec_.eos_id, &spec_.unk_id})
      if (*id && (**id < 0 || static_cast<size_t>(**id) >= n))
        fail(ErrorCode::kInvalidFile, src + ": special token id " + std::to_string(**id) +
                                          " is outside the vocabulary of " + std::to_string(n));

    byte_ids_.fill(-1);
    std::vector<AddedToken> specials, user_defined;
    for (size_t id = 0; id < n; ++id) {
      const std::string& t = spec_.tokens[id];
      const auto i = static_cast<int32_t>(id);
      switch (spec_.types[id]) {
        case SpmTokenType::kNormal:
          pieces_[t] = i;
          break;
        case SpmTokenType::kUserDefined:
          pieces_[t] = i;
          user_defined.push_back({i, t});
          break;
        case SpmTokenType::kUnknown:
        case SpmTokenType::kControl:
          specials.push_back({i, t, true});
          break;
        case SpmTokenType::kByte: {
          const int b = parse_byte_token(t);
          if (b < 0)
            fail(ErrorCode::kInvalidFile, src + ": token " + std::to_string(id) +
                                              " has type BYTE but its text \"" + t.substr(0, 40) +
                                              "\" is not <0xHH>");
          byte_ids_[b] = i;
          break;
        }
        case SpmTokenType::kUnused:
          break;
        default:
          fail(ErrorCode::kInvalidFile, src + ": token " + std::to_string(id) +
                                            " has unknown type " +
                                            std::to_string(static_cast<int32_t>(spec_.types[id])));
      }
    }
    specials_ = AddedTokenMatcher(specials);
    user_defined_ = AddedTokenMatcher(user_defined);
    for (size_t id = 0; id < n; ++id) all_ids_.emplace(spec_.tokens[id], static_cast<int32_t>(id));
  }

  std::vector<int32_t> encode(std::string_view text, bool add_special) const override {
    std::vector<int32_t> ids;
    if (add_special && spec_.add_bos && spec_.bos_id) ids.push_back(*spec_.bos_id);
    std::vector<TextSegment> runs, parts;
    specials_.split(text, runs);
    std::string normalized;
    for (const auto& run : runs) {
      if (run.id >= 0) {
        ids.push_back(run.id);
        continue;
      }
      // sentencepiece's normalization (identity rules): dummy prefix, spaces as "▁".
      normalized.clear();
      if (spec_.add_space_prefix) normalized += kSpace;
      for (char c : run.text) {
        if (c == ' ')
          normalized += kSpace;
        else
          normalized.push_back(c);
      }
      parts.clear();
      user_defined_.split(normalized, parts);
      for (const auto& part : parts) {
        if (part.id >= 0)
          ids.push_back(part.id);
        else
          encode_bpe(part.text, ids);
      }
    }
    if (add_special && spec_.add_eos && spec_.eos_id) ids.push_back(*spec_.eos_id);
    return ids;
  }

  std::string decode(std::span<const int32_t> ids, bool skip_special) const override {
    std::string out;
    std::string bytes;         // pending <0xXX> bytes
    bool at_run_start = true;  // the next text piece drops one leading "▁"
    auto flush_bytes = [&] {
      if (bytes.empty()) return;
      out += utf8::to_valid_lossy(bytes);
      bytes.clear();
      at_run_start = false;
    };
    for (int32_t id : ids) {
      check_id(id);
      const std::string& t = spec_.tokens[id];
      switch (spec_.types[id]) {
        case SpmTokenType::kControl:
        case SpmTokenType::kUnknown:
          if (skip_special) continue;
          flush_bytes();
          out += t;
          at_run_start = true;  // encode gave the text after a special token its own prefix
          continue;
        case SpmTokenType::kByte:
          bytes.push_back(static_cast<char>(parse_byte_token(t)));
          continue;
        default: {
          flush_bytes();
          std::string_view piece = t;
          if (at_run_start && spec_.add_space_prefix && piece.substr(0, kSpace.size()) == kSpace)
            piece.remove_prefix(kSpace.size());
          at_run_start = false;
          for (size_t pos = 0; pos < piece.size();) {
            if (piece.substr(pos, kSpace.size()) == kSpace) {
              out += ' ';
              pos += kSpace.size();
            } else {
              out += piece[pos++];
            }
          }
        }
      }
    }
    flush_bytes();
    return out;
  }

  std::string piece(int32_t id) const override {
    check_id(id);
    return spec_.tokens[id];
  }
  std::optional<int32_t> piece_to_id(std::string_view piece) const override {
    auto it = all_ids_.find(piece);
    if (it == all_ids_.end()) return std::nullopt;
    return it->second;
  }
  int32_t vocab_size() const override { return static_cast<int32_t>(spec_.tokens.size()); }
  bool is_special(int32_t id) const override {
    if (id < 0 || id >= vocab_size()) return false;
    return spec_.types[id] == SpmTokenType::kControl || spec_.types[id] == SpmTokenType::kUnknown;
  }
  std::optional<int32_t> bos_id() const override { return spec_.bos_id; }
  std::optional<int32_t> eos_id() const override { return spec_.eos_id; }
  bool adds_bos() const override { return spec_.add_bos && spec_.bos_id.has_value(); }

 private:
  void check_id(int32_t id) const {
    if (id < 0 || id >= vocab_size())
      fail(ErrorCode::kInvalidArgument, "token id " + std::to_string(id) +
                                            " is outside the vocabulary of " +
                                            std::to_string(vocab_size()));
  }

  std::optional<int32_t> lookup(std::string_view s) const {
    auto it = pieces_.find(s);
    if (it == pieces_.end()) return std::nullopt;
    return it->second;
  }

  void encode_bpe(std::string_view text, std::vector<int32_t>& ids) const {
    if (text.empty()) return;
    std::vector<Symbol> symbols;
    for (size_t pos = 0; pos < text.size();) {
      const uint32_t len = utf8::decode(text, pos).len;
      const auto index = static_cast<int32_t>(symbols.size());
      symbols.push_back({static_cast<uint32_t>(pos), len, index - 1, index + 1});
      pos += len;
    }
    symbols.back().next = -1;

    std::priority_queue<Bigram, std::vector<Bigram>, LowerPriority> queue;
    auto try_add = [&](int32_t left, int32_t right) {
      if (left < 0 || right < 0) return;
      const Symbol& l = symbols[left];
      const Symbol& r = symbols[right];
      const auto id = lookup(text.substr(l.start, l.len + r.len));
      if (!id) return;
      queue.push({spec_.scores[*id], static_cast<uint32_t>(left), static_cast<uint32_t>(right),
                  l.len + r.len});
    };
    for (size_t i = 1; i < symbols.size(); ++i)
      try_add(static_cast<int32_t>(i - 1), static_cast<int32_t>(i));

    while (!queue.empty()) {
      const Bigram top = queue.top();
      queue.pop();
      Symbol& l = symbols[top.left];
      Symbol& r = symbols[top.right];
      if (l.len == 0 || r.len == 0 || l.len + r.len != top.size ||
          l.next != static_cast<int32_t>(top.right))
        continue;  // stale: one side merged since
      l.len += r.len;
      r.len = 0;
      l.next = r.next;
      if (r.next >= 0) symbols[r.next].prev = static_cast<int32_t>(top.left);
      try_add(l.prev, static_cast<int32_t>(top.left));
      try_add(static_cast<int32_t>(top.left), l.next);
    }

    for (int32_t i = 0; i >= 0; i = symbols[i].next) {
      const std::string_view piece = text.substr(symbols[i].start, symbols[i].len);
      if (auto id = lookup(piece)) {
        ids.push_back(*id);
        continue;
      }
      const bool bytes_known = std::all_of(piece.begin(), piece.end(), [&](char c) {
        return byte_ids_[static_cast<uint8_t>(c)] >= 0;
      });
      if (bytes_known) {
        for (char c : piece) ids.push_back(byte_ids_[static_cast<uint8_t>(c)]);
      } else if (spec_.unk_id) {
        ids.push_back(*spec_.unk_id);
      }
    }
  }

  SpmVocabSpec spec_;
  std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> pieces_;
  std::array<int32_t, 256> byte_ids_;
  AddedTokenMatcher specials_, user_defined_;
  std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> all_ids_;
};

}  // namespace

std::unique_ptr<Tokenizer> make_llama_spm_tokenizer(SpmVocabSpec spec) {
  return std::make_unique<LlamaSpmTokenizer>(std::move(spec));
}

}  // namespace hearth
