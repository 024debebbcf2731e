// tokenizer.json (Hugging Face tokenizers) -> BpeTokenizerSpec, plus the settings of
// tokenizer_config.json that transformers applies on top (add_bos_token, add_eos_token,
// added_tokens_decoder, bos/eos tokens).
#include <set>

#include "engine/core/error.h"
#include "engine/tokenizer/bpe_tokenizer.h"
#include "engine/tokenizer/tokenizer_json_util.h"
#include "engine/tokenizer/tokenizer_loaders.h"

namespace hearth {
namespace {

using nlohmann::json;
namespace ju = json_util;

constexpr std::string_view kMetaspace = "\xE2\x96\x81";

std::string type_of(const json& node, const std::string& where) {
  auto type = ju::get_string(node, "type", where);
  if (!type) fail(ErrorCode::kInvalidFile, where + ": missing \"type\"");
  return *type;
}

SplitBehavior parse_behavior(const json& node, const std::string& where) {
  const std::string name = ju::get_string(node, "behavior", where).value_or("Isolated");
  if (name == "Removed") return SplitBehavior::kRemoved;
  if (name == "Isolated") return SplitBehavior::kIsolated;
  if (name == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (name == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (name == "Contiguous") return SplitBehavior::kContiguous;
  fail(ErrorCode::kInvalidFile, where + ": unknown split behavior \"" + name.substr(0, 100) + "\"");
}

std::unique_ptr<PreTokenizer> parse_pre_tokenizer(const json& node, const std::string& where) {
  if (!node.is_object()) fail(ErrorCode::kInvalidFile, where + ": expected an object");
  const std::string type = type_of(node, where);
  if (type == "ByteLevel") {
    return make_byte_level_pre_tokenizer(ju::get_bool(node, "add_prefix_space", true, where),
                                         ju::get_bool(node, "use_regex", true, where));
  }
  if (type == "Digits") {
    return make_digits_pre_tokenizer(ju::get_bool(node, "individual_digits", false, where));
  }
  if (type == "Split") {
    const json* pattern = ju::find(node, "pattern");
    if (!pattern || !pattern->is_object())
      fail(ErrorCode::kInvalidFile, where + ": Split needs a \"pattern\" object");
    const SplitBehavior behavior = parse_behavior(node, where);
    const bool invert = ju::get_bool(node, "invert", false, where);
    if (auto regex = ju::get_string(*pattern, "Regex", where + ": pattern"))
      return make_regex_split_pre_tokenizer(*regex, behavior, invert);
    if (auto literal = ju::get_string(*pattern, "String", where + ": pattern"))
      return make_literal_split_pre_tokenizer(*literal, behavior, invert);
    fail(ErrorCode::kInvalidFile, where + ": Split pattern needs \"Regex\" or \"String\"");
  }
  if (type == "Sequence") {
    const json* steps = ju::find(node, "pretokenizers");
    if (!steps || !steps->is_array())
      fail(ErrorCode::kInvalidFile, where + ": Sequence needs a \"pretokenizers\" array");
    std::vector<std::unique_ptr<PreTokenizer>> parsed;
    for (size_t i = 0; i < steps->size(); ++i)
      parsed.push_back(parse_pre_tokenizer((*steps)[i], where + "[" + std::to_string(i) + "]"));
    return make_sequence_pre_tokenizer(std::move(parsed));
  }
  fail(ErrorCode::kUnsupported, where + ": pre-tokenizer \"" + type.substr(0, 100) +
                                    "\" is not supported (ByteLevel, Digits, Split, Sequence are)");
}

// The normalizers Hearth runs: none (or an empty Sequence), or Llama 2's
// Sequence[Prepend("▁"), Replace(" ", "▁")].
bool parse_normalizer(const json* node, const std::string& where) {
  if (!node) return false;
  auto is_prepend = [&](const json& n) {
    return n.is_object() && ju::get_string(n, "type", where) == "Prepend" &&
           ju::get_string(n, "prepend", where) == std::string(kMetaspace);
  };
  auto is_replace = [&](const json& n) {
    if (!n.is_object() || ju::get_string(n, "type", where) != "Replace") return false;
    const json* pattern = ju::find(n, "pattern");
    return pattern && ju::get_string(*pattern, "String", where) == " " &&
           ju::get_string(n, "content", where) == std::string(kMetaspace);
  };
  if (node->is_object() && ju::get_string(*node, "type", where) == "Sequence") {
    const json* parts = ju::find(*node, "normalizers");
    // An empty Sequence normalizes nothing (transformers writes one for Llama-3-style BPE).
    if (parts && parts->is_array() && parts->empty()) return false;
    if (parts && parts->is_array() && parts->size() == 2 && is_prepend((*parts)[0]) &&
        is_replace((*parts)[1]))
      return true;
  }
  std::string type = node->is_object() ? ju::get_string(*node, "type", where).value_or("?") : "?";
  fail(ErrorCode::kUnsupported, where + ": normalizer \"" + type.substr(0, 100) +
                                    "\" is not supported (only none, or Llama 2's "
                                    "Prepend(\"▁\") + Replace(\" \", \"▁\"))");
}

bool parse_byte_level_fused(const json& parts, const std::vector<std::string>& types,
                            const std::string& where, BpeTokenizerSpec& spec) {
  if (types.size() < 2 || types.back() != "ByteLevel") return false;
  size_t i = 0;
  if (types[i] == "ByteFallback") ++i;
  if (i >= types.size() || types[i] != "Fuse") return false;
  ++i;
  std::vector<std::pair<std::string, std::string>> replacements;
  for (; i + 1 < types.size(); ++i) {
    if (types[i] != "Replace") return false;
    const json& step = parts[i];
    const json* pattern = ju::find(step, "pattern");
    if (!pattern) return false;
    auto from = ju::get_string(*pattern, "String", where + ": Replace pattern");
    auto to = ju::get_string(step, "content", where + ": Replace content");
    if (!from || !to || from->empty()) return false;
    replacements.emplace_back(*from, *to);
  }
  spec.decoder = BpeDecoder::kByteLevelFused;
  spec.decoder_byte_fallback = types.front() == "ByteFallback";
  spec.decoder_replacements = std::move(replacements);
  return true;
}

// Fills spec.decoder (and, for kByteLevelFused, its steps).
void parse_decoder(const json* node, const std::string& where, BpeTokenizerSpec& spec) {
  spec.decoder = BpeDecoder::kJoin;
  if (!node) return;
  const std::string type = type_of(*node, where);
  if (type == "ByteLevel") {
    spec.decoder = BpeDecoder::kByteLevel;
    return;
  }
  if (type == "Sequence") {
    const json* parts = ju::find(*node, "decoders");
    std::vector<std::string> types;
    if (parts && parts->is_array())
      for (const auto& p : *parts) types.push_back(p.is_object() ? type_of(p, where) : "?");
    // Llama 2: Replace("▁", " "), ByteFallback, Fuse, Strip(" ", 1, 0).
    if (types == std::vector<std::string>{"Replace", "ByteFallback", "Fuse", "Strip"}) {
      spec.decoder = BpeDecoder::kMetaspace;
      return;
    }
    // [ByteFallback,] Fuse, Replace…, ByteLevel: the replacements act on the fused text.
    if (parse_byte_level_fused(*parts, types, where, spec)) return;
    std::string listed;
    for (const auto& t : types) listed += (listed.empty() ? "" : ", ") + t.substr(0, 40);
    fail(ErrorCode::kUnsupported,
         where + ": decoder Sequence [" + listed.substr(0, 300) +
             "] is not supported (ByteLevel; Llama 2's Replace/ByteFallback/Fuse/Strip; or "
             "[ByteFallback,] Fuse, Replace…, ByteLevel)");
  }
  fail(ErrorCode::kUnsupported,
       where + ": decoder \"" + type.substr(0, 100) +
           "\" is not supported (ByteLevel, or Llama 2's Replace/ByteFallback/Fuse/Strip)");
}

struct PostProcessing {
  std::vector<std::string> prefix, suffix;  // token contents
};

void parse_template(const json& node, const std::string& where, PostProcessing& out) {
  const json* single = ju::find(node, "single");
  if (!single || !single->is_array())
    fail(ErrorCode::kInvalidFile, where + ": TemplateProcessing needs a \"single\" array");
  bool seen_sequence = false;
  for (const auto& item : *single) {
    if (ju::find(item, "Sequence")) {
      seen_sequence = true;
      continue;
    }
    const json* special = ju::find(item, "SpecialToken");
    if (!special)
      fail(ErrorCode::kInvalidFile, where + ": template items must be Sequence or SpecialToken");
    auto id = ju::get_string(*special, "id", where);
    if (!id) fail(ErrorCode::kInvalidFile, where + ": SpecialToken without \"id\"");
    (seen_sequence ? out.suffix : out.prefix).push_back(*id);
  }
}

void parse_post_processor(const json* node, const std::string& where, PostProcessing& out) {
  if (!node) return;
  const std::string type = type_of(*node, where);
  if (type == "ByteLevel") return;  // offsets only
  if (type == "TemplateProcessing") return parse_template(*node, where, out);
  if (type == "RobertaProcessing" || type == "BertProcessing") {
    const json* cls = ju::find(*node, "cls");
    const json* sep = ju::find(*node, "sep");
    if (!cls || !sep || !cls->is_array() || !sep->is_array() || cls->empty() || sep->empty())
      fail(ErrorCode::kInvalidFile, where + ": " + type + " needs cls and sep pairs");
    out.prefix.push_back(ju::to_string((*cls)[0], where + ": cls"));
    out.suffix.push_back(ju::to_string((*sep)[0], where + ": sep"));
    return;
  }
  if (type == "Sequence") {
    const json* parts = ju::find(*node, "processors");
    if (!parts || !parts->is_array())
      fail(ErrorCode::kInvalidFile, where + ": Sequence needs a \"processors\" array");
    for (size_t i = 0; i < parts->size(); ++i)
      parse_post_processor(&(*parts)[i], where + "[" + std::to_string(i) + "]", out);
    return;
  }
  fail(ErrorCode::kUnsupported,
       where + ": post-processor \"" + type.substr(0, 100) + "\" is not supported");
}

AddedToken parse_added_token(const json& node, int64_t id, const std::string& where) {
  AddedToken t;
  t.id = static_cast<int32_t>(id);
  auto content = ju::get_string(node, "content", where);
  if (!content) fail(ErrorCode::kInvalidFile, where + ": added token without \"content\"");
  t.content = *content;
  t.special = ju::get_bool(node, "special", false, where);
  t.lstrip = ju::get_bool(node, "lstrip", false, where);
  t.rstrip = ju::get_bool(node, "rstrip", false, where);
  t.single_word = ju::get_bool(node, "single_word", false, where);
  t.normalized = ju::get_bool(node, "normalized", !t.special, where);
  return t;
}

void parse_model(const json& model, const std::string& src, BpeTokenizerSpec& spec) {
  const std::string where = src + ": model";
  if (!model.is_object()) fail(ErrorCode::kInvalidFile, where + ": expected an object");
  const std::string type = ju::get_string(model, "type", where).value_or("BPE");
  if (type != "BPE")
    fail(ErrorCode::kUnsupported, where + ": model type \"" + type.substr(0, 100) +
                                      "\" is not supported (BPE is; sentencepiece models load "
                                      "from tokenizer.model)");
  if (const json* dropout = ju::find(model, "dropout");
      dropout && !(dropout->is_number() && dropout->get<double>() == 0.0))
    fail(ErrorCode::kUnsupported,
         where + ": BPE dropout is a training setting Hearth does not run");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (auto value = ju::get_string(model, key, where); value && !value->empty())
      fail(ErrorCode::kUnsupported, where + ": \"" + key + "\" is not supported");
  spec.ignore_merges = ju::get_bool(model, "ignore_merges", false, where);
  spec.byte_fallback = ju::get_bool(model, "byte_fallback", false, where);
  spec.fuse_unk = ju::get_bool(model, "fuse_unk", false, where);
  spec.unk_token = ju::get_string(model, "unk_token", where);

  const json* vocab = ju::find(model, "vocab");
  if (!vocab || !vocab->is_object())
    fail(ErrorCode::kInvalidFile, where + ": \"vocab\" must be an object of token -> id");
  if (static_cast<int64_t>(vocab->size()) > kMaxVocabSize)
    fail(ErrorCode::kInvalidFile, where + ": vocabulary of " + std::to_string(vocab->size()) +
                                      " tokens exceeds the limit of " +
                                      std::to_string(kMaxVocabSize));
  int64_t max_id = -1;
  std::vector<std::pair<int64_t, const std::string*>> entries;
  entries.reserve(vocab->size());
  for (const auto& [token, value] : vocab->items()) {
    const int64_t id = ju::to_int(value, 0, kMaxVocabSize - 1,
                                  where + ": vocab[\"" + token.substr(0, 100) + "\"]");
    entries.emplace_back(id, &token);
    max_id = std::max(max_id, id);
  }
  // Vocabularies are dense; a lone huge id would only make us allocate for nothing.
  if (max_id >= 2 * static_cast<int64_t>(entries.size()) + 1024)
    fail(ErrorCode::kInvalidFile, where + ": id " + std::to_string(max_id) + " is far beyond the " +
                                      std::to_string(entries.size()) + " tokens of the vocabulary");
  spec.vocab.assign(static_cast<size_t>(max_id + 1), std::string());
  for (const auto& [id, token] : entries) {
    if (!spec.vocab[id].empty())
      fail(ErrorCode::kInvalidFile, where + ": id " + std::to_string(id) + " is used by both \"" +
                                        spec.vocab[id].substr(0, 100) + "\" and \"" +
                                        token->substr(0, 100) + "\"");
    spec.vocab[id] = *token;
  }

  const json* merges = ju::find(model, "merges");
  if (!merges) return;
  if (!merges->is_array()) fail(ErrorCode::kInvalidFile, where + ": \"merges\" must be an array");
  spec.merges.reserve(merges->size());
  for (size_t i = 0; i < merges->size(); ++i) {
    const json& m = (*merges)[i];
    const std::string at = where + ": merges[" + std::to_string(i) + "]";
    if (m.is_string()) {
      const std::string& s = m.get_ref<const std::string&>();
      const size_t space = s.find(' ');
      if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos)
        fail(ErrorCode::kInvalidFile,
             at + ": expected \"left right\", got \"" + s.substr(0, 100) + "\"");
      spec.merges.emplace_back(s.substr(0, space), s.substr(space + 1));
    } else if (m.is_array() && m.size() == 2) {
      spec.merges.emplace_back(ju::to_string(m[0], at), ju::to_string(m[1], at));
    } else {
      fail(ErrorCode::kInvalidFile, at + ": expected \"left right\" or [left, right]");
    }
  }
}

std::optional<int32_t> id_of(const BpeTokenizerSpec& spec, const std::string& content) {
  for (const auto& t : spec.added_tokens)
    if (t.content == content) return t.id;
  for (size_t id = 0; id < spec.vocab.size(); ++id)
    if (spec.vocab[id] == content) return static_cast<int32_t>(id);
  return std::nullopt;
}

}  // namespace

std::unique_ptr<Tokenizer> parse_tokenizer_json(std::string_view text,
                                                std::optional<std::string_view> config_text,
                                                const std::string& source) {
  if (text.size() > kMaxTokenizerJsonBytes)
    fail(ErrorCode::kInvalidFile,
         source + ": " + std::to_string(text.size()) + " bytes exceeds the limit");
  const json root = json_util::parse(text, source, kMaxJsonDepth);
  if (!root.is_object()) fail(ErrorCode::kInvalidFile, source + ": top level is not an object");
  json config = json::object();
  const std::string config_source = "tokenizer_config.json";
  if (config_text) {
    config = json_util::parse(*config_text, config_source, kMaxJsonDepth);
    if (!config.is_object())
      fail(ErrorCode::kInvalidFile, config_source + ": top level is not an object");
  }

  BpeTokenizerSpec spec;
  spec.source = source;
  const json* model = ju::find(root, "model");
  if (!model) fail(ErrorCode::kInvalidFile, source + ": missing \"model\"");
  parse_model(*model, source, spec);

  if (const json* added = ju::find(root, "added_tokens")) {
    if (!added->is_array())
      fail(ErrorCode::kInvalidFile, source + ": \"added_tokens\" must be an array");
    for (size_t i = 0; i < added->size(); ++i) {
      const std::string where = source + ": added_tokens[" + std::to_string(i) + "]";
      const json* id = ju::find((*added)[i], "id");
      if (!id) fail(ErrorCode::kInvalidFile, where + ": missing \"id\"");
      spec.added_tokens.push_back(parse_added_token(
          (*added)[i], ju::to_int(*id, 0, kMaxVocabSize - 1, where + ": id"), where));
    }
  }
  // transformers also registers the tokens listed in tokenizer_config.json.
  if (const json* decoder = ju::find(config, "added_tokens_decoder");
      decoder && decoder->is_object()) {
    std::set<int32_t> known;
    for (const auto& t : spec.added_tokens) known.insert(t.id);
    for (const auto& [key, value] : decoder->items()) {
      const std::string where =
          config_source + ": added_tokens_decoder[\"" + key.substr(0, 20) + "\"]";
      int64_t id;
      try {
        size_t used = 0;
        id = std::stoll(key, &used);
        if (used != key.size()) throw std::invalid_argument(key);
      } catch (const std::exception&) {
        fail(ErrorCode::kInvalidFile, where + ": key is not an integer id");
      }
      if (id < 0 || id >= kMaxVocabSize) fail(ErrorCode::kInvalidFile, where + ": id out of range");
      if (!known.count(static_cast<int32_t>(id)))
        spec.added_tokens.push_back(parse_added_token(value, id, where));
    }
  }

  const auto id_limit =
      2 * static_cast<int64_t>(spec.vocab.size() + spec.added_tokens.size()) + 1024;
  for (const auto& t : spec.added_tokens)
    if (t.id >= id_limit)
      fail(ErrorCode::kInvalidFile, source + ": added token \"" + t.content.substr(0, 100) +
                                        "\" has id " + std::to_string(t.id) +
                                        ", far beyond the vocabulary of " +
                                        std::to_string(spec.vocab.size()));

  spec.metaspace_normalizer =
      parse_normalizer(ju::find(root, "normalizer"), source + ": normalizer");
  if (const json* pre = ju::find(root, "pre_tokenizer")) {
    try {
      spec.pre_tokenizer = parse_pre_tokenizer(*pre, source + ": pre_tokenizer");
    } catch (const Error& e) {
      // Errors raised while building a step do not know the file: name it.
      const std::string message = e.what();
      if (message.rfind(source, 0) == 0) throw;
      fail(e.code(), source + ": pre_tokenizer: " + message);
    }
  }
  parse_decoder(ju::find(root, "decoder"), source + ": decoder", spec);
  const bool byte_level_pieces = spec.pre_tokenizer && spec.pre_tokenizer->byte_level();
  const bool byte_level_decoder =
      spec.decoder == BpeDecoder::kByteLevel || spec.decoder == BpeDecoder::kByteLevelFused;
  if (byte_level_pieces != byte_level_decoder)
    fail(ErrorCode::kUnsupported,
         source + ": a ByteLevel pre-tokenizer needs the ByteLevel decoder and vice versa");

  PostProcessing post;
  parse_post_processor(ju::find(root, "post_processor"), source + ": post_processor", post);
  auto resolve = [&](const std::string& content, const std::string& what) {
    auto id = id_of(spec, content);
    if (!id)
      fail(ErrorCode::kInvalidFile, source + ": " + what + " token \"" + content.substr(0, 100) +
                                        "\" is not in the vocabulary");
    return *id;
  };
  for (const auto& t : post.prefix) spec.prefix_ids.push_back(resolve(t, "post-processor"));
  for (const auto& t : post.suffix) spec.suffix_ids.push_back(resolve(t, "post-processor"));

  if (auto bos = ju::token_content(config, "bos_token")) spec.bos_id = id_of(spec, *bos);
  if (auto eos = ju::token_content(config, "eos_token")) spec.eos_id = id_of(spec, *eos);
  if (!spec.bos_id && !spec.prefix_ids.empty()) spec.bos_id = spec.prefix_ids.front();
  if (!spec.eos_id && !spec.suffix_ids.empty()) spec.eos_id = spec.suffix_ids.back();
  // transformers' Llama-style tokenizers rebuild the template from add_bos_token/add_eos_token.
  auto apply_flag = [&](const char* key, std::optional<int32_t> id, std::vector<int32_t>& ids,
                        bool front) {
    const json* flag = ju::find(config, key);
    if (!flag || !flag->is_boolean() || !id) return;
    std::erase(ids, *id);
    if (flag->get<bool>()) ids.insert(front ? ids.begin() : ids.end(), *id);
  };
  apply_flag("add_bos_token", spec.bos_id, spec.prefix_ids, true);
  apply_flag("add_eos_token", spec.eos_id, spec.suffix_ids, false);

  return make_bpe_tokenizer(std::move(spec));
}

}  // namespace hearth
