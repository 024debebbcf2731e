#include "engine/quantizer/calibration.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/core/error.h"
#include "engine/template/chat_template.h"
#include "engine/tokenizer/tokenizer.h"

namespace hearth::quantizer {
namespace fs = std::filesystem;
namespace {

constexpr uint64_t kMaxCalibrationBytes = uint64_t{1} << 30;

std::string read_all(const fs::path& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec) fail(ErrorCode::kIo, path.string() + ": cannot read: " + ec.message());
  if (size > kMaxCalibrationBytes) {
    fail(ErrorCode::kInvalidFile, path.string() + " is larger than 1 GiB; use a smaller sample");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(ErrorCode::kIo, path.string() + ": cannot open");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void check_text(const std::string& s, const std::string& where) {
  if (s.find('\0') != std::string::npos) {
    fail(ErrorCode::kInvalidFile, where + " holds NUL bytes: it is not a text file");
  }
}

std::vector<std::string> split_documents(const std::string& text) {
  // Paragraph groups of about 8 KB, cut at blank lines: many short documents would each end
  // in EOS, one huge one would be tokenized at once.
  std::vector<std::string> docs;
  std::string cur;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find("\n\n", pos);
    end = end == std::string::npos ? text.size() : end + 2;
    cur.append(text, pos, end - pos);
    pos = end;
    if (cur.size() >= 8192) {
      docs.push_back(std::move(cur));
      cur.clear();
    }
  }
  if (!cur.empty()) docs.push_back(std::move(cur));
  return docs;
}

void add_jsonl(const std::string& bytes, const std::string& where, const ChatRenderer& render,
               CalibrationText& out) {
  std::istringstream in(bytes);
  std::string line;
  int64_t lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string at = where + ":" + std::to_string(lineno);
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      fail(ErrorCode::kInvalidFile, at + ": not a JSON object");
    }
    if (j.contains("text")) {
      if (!j["text"].is_string()) fail(ErrorCode::kInvalidFile, at + ": \"text\" is not a string");
      out.documents.push_back(j["text"].get<std::string>());
    } else if (j.contains("messages")) {
      const auto& m = j["messages"];
      if (!m.is_array() || m.empty()) {
        fail(ErrorCode::kInvalidFile, at + ": \"messages\" is not a non-empty list");
      }
      std::vector<ChatMessage> msgs;
      for (const auto& e : m) {
        if (!e.is_object() || !e.contains("role") || !e["role"].is_string() ||
            !e.contains("content") || !e["content"].is_string()) {
          fail(ErrorCode::kInvalidFile,
               at + ": each message needs a \"role\" and a \"content\" string");
        }
        msgs.push_back({e["role"].get<std::string>(), e["content"].get<std::string>()});
      }
      out.documents.push_back(render(msgs));
    } else {
      fail(ErrorCode::kInvalidFile, at + ": the object has neither \"text\" nor \"messages\"");
    }
  }
}

}  // namespace

CalibrationText load_calibration_file(const fs::path& path, const ChatRenderer& render) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (ext != ".txt" && ext != ".md" && ext != ".jsonl") {
    fail(ErrorCode::kInvalidArgument,
         path.string() + ": calibration files must be .txt, .md or .jsonl");
  }
  const std::string bytes = read_all(path);
  check_text(bytes, path.string());
  CalibrationText out;
  out.name = path.filename().string();
  if (ext == ".jsonl") {
    add_jsonl(bytes, path.string(), render, out);
  } else {
    out.documents = split_documents(bytes);
  }
  size_t chars = 0;
  for (const auto& d : out.documents) chars += d.size();
  if (chars == 0) fail(ErrorCode::kInvalidFile, path.string() + " holds no text");
  return out;
}

CalibrationText builtin_calibration(const ChatRenderer& render) {
  CalibrationText out;
  out.name = "(default)";
  for (const auto& [name, bytes] : builtin_calibration_files()) {
    if (name == "heldout.txt" || name == "SOURCES.md") continue;  // never calibrate on these
    if (name.ends_with(".jsonl")) {
      add_jsonl(bytes, "resources/calibration/" + name, render, out);
    } else {
      for (auto& d : split_documents(bytes)) out.documents.push_back(std::move(d));
    }
  }
  if (out.documents.empty()) {
    fail(ErrorCode::kIo, "the built-in calibration text is missing from this build");
  }
  return out;
}

TokenRows make_token_rows(const CalibrationText& text, const Tokenizer& tokenizer, int64_t rows,
                          int64_t length, double phase, std::vector<std::string>* warnings) {
  if (rows <= 0 || length <= 1) {
    fail(ErrorCode::kInvalidArgument, "calibration needs at least one row of 2 or more tokens");
  }
  // A plain flag and id, not an optional: GCC 12 misreads the optional as maybe uninitialized.
  const bool with_bos = tokenizer.adds_bos() && tokenizer.bos_id().has_value();
  const int32_t bos_id = with_bos ? *tokenizer.bos_id() : 0;
  const std::optional<int32_t> eos = tokenizer.eos_id();
  std::vector<int32_t> stream;
  for (const auto& doc : text.documents) {
    std::vector<int32_t> ids = tokenizer.encode(doc, false);
    stream.insert(stream.end(), ids.begin(), ids.end());
    if (eos) stream.push_back(*eos);
  }
  const int64_t body = with_bos ? length - 1 : length;
  const auto total = static_cast<int64_t>(stream.size());
  if (total < body) {
    fail(ErrorCode::kInvalidArgument,
         "the calibration text " + text.name + " has " + std::to_string(total) +
             " tokens, fewer than one row of " + std::to_string(length));
  }
  if (total < rows * body && warnings) {
    warnings->push_back("the calibration text " + text.name + " has " + std::to_string(total) +
                        " tokens, fewer than " + std::to_string(rows) + " rows of " +
                        std::to_string(length) + ": rows overlap");
  }
  TokenRows out;
  out.rows = rows;
  out.length = length;
  out.ids.reserve(static_cast<size_t>(rows * length));
  const int64_t span = total - body;  // possible start offsets: 0..span
  for (int64_t r = 0; r < rows; ++r) {
    const double pos = (static_cast<double>(r) + phase) / static_cast<double>(rows);
    const auto start = std::min<int64_t>(span, static_cast<int64_t>(std::floor(pos * (span + 1))));
    if (with_bos) out.ids.push_back(bos_id);
    out.ids.insert(out.ids.end(), stream.begin() + start, stream.begin() + start + body);
  }
  return out;
}

CalibrationText model_calibration_text(const std::filesystem::path& file,
                                       const std::optional<std::string>& chat_template_source,
                                       const std::string& bos_token, const std::string& eos_token) {
  std::unique_ptr<ChatTemplate> tmpl;
  if (chat_template_source) tmpl = std::make_unique<ChatTemplate>(*chat_template_source);
  ChatRenderer render = [&](const std::vector<ChatMessage>& msgs) {
    if (tmpl) return tmpl->apply(msgs, false, bos_token, eos_token);
    std::string out;
    for (const auto& m : msgs) out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
    return out;
  };
  return file.empty() ? builtin_calibration(render) : load_calibration_file(file, render);
}

}  // namespace hearth::quantizer
