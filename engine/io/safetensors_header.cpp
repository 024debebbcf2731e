#include "engine/io/safetensors_header.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>

#include "engine/core/checked_math.h"
#include "engine/core/error.h"
#include "engine/io/json_strict.h"

namespace hearth {

namespace {

using json = nlohmann::json;

constexpr size_t kMaxDims = 64;               // real tensors have at most a handful
constexpr size_t kMaxMetadataEntries = 4096;  // real files carry one or two ("format": "pt")
constexpr int kMaxDepth = 64;

// Where in the header the parser is.
enum class Frame { kRoot, kMetadata, kTensor, kShape, kOffsets, kIgnored };

class HeaderReader {
 public:
  HeaderReader(const std::string& file, uint64_t base_offset)
      : file_(file), base_offset_(base_offset) {}

  SafetensorsHeader take() { return std::move(out_); }

  // --- nlohmann SAX interface ---
  bool null() { return scalar("null", nullptr); }
  bool boolean(bool) { return scalar("a boolean", nullptr); }
  bool number_integer(json::number_integer_t v) {
    return scalar("a negative integer (" + std::to_string(v) + ")", nullptr);
  }
  bool number_unsigned(json::number_unsigned_t v) { return scalar("an unsigned integer", &v); }
  bool number_float(json::number_float_t, const json::string_t& text) {
    return scalar("a floating-point number (" + printable(text) + ")", nullptr);
  }
  bool string(json::string_t& v) { return scalar("a string", nullptr, &v); }
  bool binary(json::binary_t&) { return scalar("binary data", nullptr); }

  bool start_object(std::size_t) { return open(true); }
  bool start_array(std::size_t) { return open(false); }

  bool key(json::string_t& k) {
    switch (stack_.back()) {
      case Frame::kRoot:
        if (k == "__metadata__") {
          if (seen_metadata_) duplicate(k);
          seen_metadata_ = true;
          in_metadata_key_ = true;
        } else {
          in_metadata_key_ = false;
          tensor_ = SafetensorsTensor{};
          tensor_.name = std::move(k);
        }
        break;
      case Frame::kMetadata:
        if (out_.metadata.count(k)) duplicate(k);
        if (out_.metadata.size() >= kMaxMetadataEntries) {
          fail(ErrorCode::kInvalidFile, file_ + ": __metadata__ has more than " +
                                            std::to_string(kMaxMetadataEntries) + " entries");
        }
        metadata_key_ = std::move(k);
        break;
      case Frame::kTensor:
        if (std::find(fields_.begin(), fields_.end(), k) != fields_.end()) duplicate(k);
        fields_.push_back(k);
        field_ = std::move(k);
        break;
      default:
        break;  // keys inside ignored values
    }
    return true;
  }

  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) {
    fail_json_syntax(file_ + ": header", position, base_offset_, e);
  }

 private:
  std::string where() const { return file_ + ": tensor \"" + printable(tensor_.name) + "\""; }

  [[noreturn]] void duplicate(const std::string& k) const {
    fail(ErrorCode::kInvalidFile, file_ + ": header: duplicate key \"" + printable(k) + "\"");
  }

  // A value of the given kind where the reader expected something else.
  [[noreturn]] void wrong(const std::string& kind) const {
    if (stack_.empty()) {
      fail(ErrorCode::kInvalidFile, file_ + ": header is " + kind + ", not a JSON object");
    }
    switch (stack_.back()) {
      case Frame::kRoot:
        if (in_metadata_key_) {
          fail(ErrorCode::kInvalidFile,
               file_ + ": __metadata__ must be an object of strings, got " + kind);
        }
        fail(ErrorCode::kInvalidFile, where() + " must be an object, got " + kind);
      case Frame::kMetadata:
        fail(ErrorCode::kInvalidFile, file_ + ": __metadata__ value \"" + printable(metadata_key_) +
                                          "\" must be a string, got " + kind);
      case Frame::kTensor:
        if (field_ == "dtype") {
          fail(ErrorCode::kInvalidFile, where() + ": \"dtype\" missing or not a string");
        }
        if (field_ == "shape") {
          fail(ErrorCode::kInvalidFile, where() + ": \"shape\" missing or not an array");
        }
        fail(ErrorCode::kInvalidFile, where() + ": \"data_offsets\" must be an array [begin, end]");
      case Frame::kShape:
        fail(ErrorCode::kInvalidFile, where() + ": shape[" + std::to_string(tensor_.shape.size()) +
                                          "] must be a non-negative integer, got " + kind);
      case Frame::kOffsets:
        if (offsets_seen_ >= 2) {
          fail(ErrorCode::kInvalidFile,
               where() + ": \"data_offsets\" must be an array [begin, end]");
        }
        fail(ErrorCode::kInvalidFile, where() + ": data_offsets[" + std::to_string(offsets_seen_) +
                                          "] must be a non-negative integer, got " + kind);
      case Frame::kIgnored:
        break;
    }
    fail(ErrorCode::kInternal, "safetensors header reader: unexpected state");
  }

  // A scalar value: `unsigned_value` is set for non-negative integers, `text` for strings.
  bool scalar(const std::string& kind, const uint64_t* unsigned_value,
              json::string_t* text = nullptr) {
    if (stack_.empty()) wrong(kind);
    switch (stack_.back()) {
      case Frame::kRoot:
        if (in_metadata_key_ && !unsigned_value && !text && kind == "null") return true;
        wrong(kind);
      case Frame::kMetadata:
        if (!text) wrong(kind);
        out_.metadata.emplace(std::move(metadata_key_), std::move(*text));
        return true;
      case Frame::kTensor:
        if (field_ == "dtype") {
          if (!text) wrong(kind);
          tensor_.dtype_name = std::move(*text);
          has_dtype_ = true;
        } else if (field_ == "shape" || field_ == "data_offsets") {
          wrong(kind);
        }
        return true;  // other fields are ignored
      case Frame::kShape: {
        if (!unsigned_value) wrong(kind);
        const std::string at = "shape[" + std::to_string(tensor_.shape.size()) + "]";
        if (*unsigned_value > static_cast<uint64_t>(INT64_MAX)) {
          fail(ErrorCode::kInvalidFile,
               where() + ": " + at + " = " + std::to_string(*unsigned_value) + " is too large");
        }
        if (tensor_.shape.size() >= kMaxDims) {
          fail(ErrorCode::kInvalidFile,
               where() + ": shape has more than " + std::to_string(kMaxDims) + " dimensions");
        }
        tensor_.shape.push_back(static_cast<int64_t>(*unsigned_value));
        return true;
      }
      case Frame::kOffsets:
        if (!unsigned_value || offsets_seen_ >= 2) wrong(kind);
        (offsets_seen_ == 0 ? tensor_.begin : tensor_.end) = *unsigned_value;
        ++offsets_seen_;
        return true;
      case Frame::kIgnored:
        return true;
    }
    return true;
  }

  bool open(bool object) {
    const std::string kind = object ? "an object" : "an array";
    if (stack_.size() >= static_cast<size_t>(kMaxDepth)) {
      fail(ErrorCode::kInvalidFile,
           file_ + ": header: JSON nested deeper than " + std::to_string(kMaxDepth) + " levels");
    }
    if (stack_.empty()) {
      if (!object) wrong(kind);
      stack_.push_back(Frame::kRoot);
      return true;
    }
    switch (stack_.back()) {
      case Frame::kRoot:
        if (!object) wrong(kind);
        if (in_metadata_key_) {
          stack_.push_back(Frame::kMetadata);
        } else {
          fields_.clear();
          field_.clear();
          has_dtype_ = false;
          has_shape_ = false;
          offsets_seen_ = -1;
          stack_.push_back(Frame::kTensor);
        }
        return true;
      case Frame::kMetadata:
        wrong(kind);
      case Frame::kTensor:
        if (field_ == "shape" && !object) {
          has_shape_ = true;
          stack_.push_back(Frame::kShape);
        } else if (field_ == "data_offsets" && !object) {
          offsets_seen_ = 0;
          stack_.push_back(Frame::kOffsets);
        } else if (field_ == "dtype" || field_ == "shape" || field_ == "data_offsets") {
          wrong(kind);
        } else {
          stack_.push_back(Frame::kIgnored);
        }
        return true;
      case Frame::kShape:
      case Frame::kOffsets:
        wrong(kind);
      case Frame::kIgnored:
        stack_.push_back(Frame::kIgnored);
        return true;
    }
    return true;
  }

  bool close() {
    const Frame done = stack_.back();
    stack_.pop_back();
    if (done == Frame::kOffsets && offsets_seen_ != 2) {
      fail(ErrorCode::kInvalidFile, where() + ": \"data_offsets\" must be an array [begin, end]");
    }
    if (done == Frame::kTensor) finish_tensor();
    return true;
  }

  // The checks that need the whole entry.
  void finish_tensor() {
    if (!has_dtype_) fail(ErrorCode::kInvalidFile, where() + ": \"dtype\" missing or not a string");
    const auto bits_per = safetensors_dtype_bits(tensor_.dtype_name);
    if (!bits_per) {
      fail(ErrorCode::kInvalidFile,
           where() + ": unknown dtype \"" + printable(tensor_.dtype_name) + "\"");
    }
    tensor_.dtype = safetensors_dtype(tensor_.dtype_name);
    if (!has_shape_) fail(ErrorCode::kInvalidFile, where() + ": \"shape\" missing or not an array");
    std::optional<uint64_t> elements = 1;
    for (int64_t d : tensor_.shape) {
      if (elements) elements = checked_mul(*elements, static_cast<uint64_t>(d));
    }
    const std::string shape = shape_text();
    if (!elements)
      fail(ErrorCode::kInvalidFile, where() + ": shape " + shape + " overflows 64 bits");
    if (offsets_seen_ != 2) {
      fail(ErrorCode::kInvalidFile, where() + ": \"data_offsets\" must be an array [begin, end]");
    }
    const auto bits = checked_mul(*elements, *bits_per);
    if (!bits) {
      fail(ErrorCode::kInvalidFile, where() + ": byte size of shape " + shape + " x " +
                                        tensor_.dtype_name + " overflows 64 bits");
    }
    if (*bits % 8 != 0) {
      fail(ErrorCode::kInvalidFile, where() + ": " + std::to_string(*elements) + " elements of " +
                                        tensor_.dtype_name +
                                        " do not fill a whole number of bytes");
    }
    if (tensor_.end < tensor_.begin) {
      fail(ErrorCode::kInvalidFile, where() + ": data_offsets end " + std::to_string(tensor_.end) +
                                        " is before begin " + std::to_string(tensor_.begin));
    }
    if (tensor_.end - tensor_.begin != *bits / 8) {
      fail(ErrorCode::kInvalidFile, where() + ": data_offsets [" + std::to_string(tensor_.begin) +
                                        ", " + std::to_string(tensor_.end) + "] hold " +
                                        std::to_string(tensor_.end - tensor_.begin) +
                                        " bytes but shape " + shape + " of " + tensor_.dtype_name +
                                        " needs " + std::to_string(*bits / 8));
    }
    out_.tensors.push_back(std::move(tensor_));
    tensor_ = SafetensorsTensor{};
  }

  std::string shape_text() const {
    std::string s = "[";
    for (size_t i = 0; i < tensor_.shape.size(); ++i) {
      s += (i ? "," : "") + std::to_string(tensor_.shape[i]);
    }
    return s + "]";
  }

  const std::string& file_;
  uint64_t base_offset_;
  SafetensorsHeader out_;
  std::vector<Frame> stack_;
  bool seen_metadata_ = false;
  bool in_metadata_key_ = false;  // the current top-level key is "__metadata__"
  std::string metadata_key_;
  SafetensorsTensor tensor_;
  std::vector<std::string> fields_;  // keys seen in the current tensor entry
  std::string field_;
  bool has_dtype_ = false;
  bool has_shape_ = false;
  int offsets_seen_ = -1;  // -1: no data_offsets array yet
};

}  // namespace

SafetensorsHeader read_safetensors_header(std::string_view text, const std::string& file,
                                          uint64_t base_offset) {
  check_json_depth(text, file + ": header", kMaxDepth, base_offset);
  HeaderReader reader(file, base_offset);
  try {
    json::sax_parse(text.begin(), text.end(), &reader, json::input_format_t::json,
                    /*strict=*/true, /*ignore_comments=*/false);
  } catch (const json::exception& e) {  // e.g. number overflow ("1e400")
    fail(ErrorCode::kInvalidFile, file + ": header: invalid JSON: " + printable(e.what(), true));
  }
  SafetensorsHeader header = reader.take();
  return header;
}

}  // namespace hearth
