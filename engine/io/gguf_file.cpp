#include "engine/io/gguf_file.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>
#include <unordered_map>

#include "engine/core/checked_math.h"
#include "engine/core/error.h"
#include "engine/io/gguf_dequant.h"
#include "engine/io/mapped_file.h"
#include "engine/io/printable.h"

namespace hearth {

namespace {

constexpr uint64_t kDefaultAlignment = 32;
constexpr int kMaxArrayNesting = 8;  // arrays of arrays deeper than this are refused
constexpr uint32_t kMaxDims = 4;
constexpr uint64_t kMaxTensorNameBytes = 1024;
constexpr uint64_t kMaxKeyBytes = 65536;
constexpr uint64_t kMaxKeys = 1 << 16;
constexpr uint64_t kMaxTensors = 1 << 18;
constexpr uint64_t kMaxAlignment = 1 << 20;

// Size in bytes of a fixed-size metadata value type; 0 for string and array.
uint64_t fixed_value_size(GgufValueType t) {
  switch (t) {
    case GgufValueType::kU8:
    case GgufValueType::kI8:
    case GgufValueType::kBool:
      return 1;
    case GgufValueType::kU16:
    case GgufValueType::kI16:
      return 2;
    case GgufValueType::kU32:
    case GgufValueType::kI32:
    case GgufValueType::kF32:
      return 4;
    case GgufValueType::kU64:
    case GgufValueType::kI64:
    case GgufValueType::kF64:
      return 8;
    default:
      return 0;
  }
}

bool valid_value_type(uint32_t t) {
  return t <= static_cast<uint32_t>(GgufValueType::kF64);
}

const char* value_type_name(GgufValueType t) {
  switch (t) {
    case GgufValueType::kU8:
      return "u8";
    case GgufValueType::kI8:
      return "i8";
    case GgufValueType::kU16:
      return "u16";
    case GgufValueType::kI16:
      return "i16";
    case GgufValueType::kU32:
      return "u32";
    case GgufValueType::kI32:
      return "i32";
    case GgufValueType::kF32:
      return "f32";
    case GgufValueType::kBool:
      return "bool";
    case GgufValueType::kString:
      return "string";
    case GgufValueType::kArray:
      return "array";
    case GgufValueType::kU64:
      return "u64";
    case GgufValueType::kI64:
      return "i64";
    case GgufValueType::kF64:
      return "f64";
  }
  return "?";
}

bool is_integer_type(GgufValueType t) {
  switch (t) {
    case GgufValueType::kU8:
    case GgufValueType::kI8:
    case GgufValueType::kU16:
    case GgufValueType::kI16:
    case GgufValueType::kU32:
    case GgufValueType::kI32:
    case GgufValueType::kU64:
    case GgufValueType::kI64:
      return true;
    default:
      return false;
  }
}

template <class T>
T load(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));  // GGUF is little-endian, as is every host Hearth runs on
  return v;
}

// Bounds-checked reader over the file image. Every read names what it reads so that errors say
// which field at which byte offset was bad.
class Cursor {
 public:
  Cursor(std::span<const std::byte> bytes, const std::string& file) : bytes_(bytes), file_(file) {}

  uint64_t pos() const { return pos_; }
  uint64_t remaining() const { return bytes_.size() - pos_; }

  [[noreturn]] void error(const std::string& what, uint64_t at) const {
    fail(ErrorCode::kInvalidFile, file_ + ": " + what + " (at byte " + std::to_string(at) + ")");
  }

  void need(uint64_t n, const std::string& what) const {
    if (n > remaining()) {
      error(what + ": needs " + std::to_string(n) + " bytes but only " +
                std::to_string(remaining()) + " remain in the " + std::to_string(bytes_.size()) +
                "-byte file",
            pos_);
    }
  }
  template <class T>
  T read(const std::string& what) {
    need(sizeof(T), what);
    const T v = load<T>(bytes_.data() + pos_);
    pos_ += sizeof(T);
    return v;
  }
  void skip(uint64_t n, const std::string& what) {
    need(n, what);
    pos_ += n;
  }
  std::string_view read_string(const std::string& what, uint64_t max_len) {
    const uint64_t at = pos_;
    const uint64_t len = read<uint64_t>(what + " length");
    if (len > remaining()) {
      error(what + ": string length " + std::to_string(len) + " exceeds the " +
                std::to_string(remaining()) + " bytes that remain",
            at);
    }
    if (len > max_len) {
      error(what + ": string length " + std::to_string(len) + " exceeds the limit of " +
                std::to_string(max_len),
            at);
    }
    std::string_view s(reinterpret_cast<const char*>(bytes_.data() + pos_), len);
    pos_ += len;
    return s;
  }
  const std::byte* at(uint64_t offset) const { return bytes_.data() + offset; }

 private:
  std::span<const std::byte> bytes_;
  const std::string& file_;
  uint64_t pos_ = 0;
};

// One metadata entry. Values are not decoded at parse time (token lists are large); the parser
// validates their structure and remembers where they are.
struct KvEntry {
  std::string key;
  GgufValueType type;
  GgufValueType elem_type = GgufValueType::kU8;  // arrays only
  uint64_t count = 0;                            // arrays only
  uint64_t value_offset = 0;                     // first byte of the value (after the array header)
  uint64_t key_offset = 0;                       // for messages
};

}  // namespace

struct GgufFile::Impl {
  std::string name;
  std::shared_ptr<const MappedFile> mapping;  // null when parsed from caller-owned bytes
  std::span<const std::byte> bytes;
  uint32_t version = 0;
  uint64_t alignment = kDefaultAlignment;
  uint64_t data_offset = 0;
  std::vector<KvEntry> kv;
  std::unordered_map<std::string, size_t> kv_index;
  std::vector<GgufTensorInfo> tensors;
  std::unordered_map<std::string, size_t> tensor_index;

  void parse();
  void skip_value(Cursor& c, GgufValueType type, const std::string& key, int depth);
  const KvEntry* find(std::string_view key) const {
    const auto it = kv_index.find(std::string(key));
    return it == kv_index.end() ? nullptr : &kv[it->second];
  }
  [[noreturn]] void type_error(const KvEntry& e, const char* wanted) const {
    fail(ErrorCode::kInvalidFile,
         name + ": metadata key \"" + printable(e.key) + "\" (at byte " +
             std::to_string(e.key_offset) + ") is " + value_type_name(e.type) +
             (e.type == GgufValueType::kArray ? std::string(" of ") + value_type_name(e.elem_type)
                                              : std::string()) +
             ", expected " + wanted);
  }
  int64_t int_at(GgufValueType t, uint64_t offset, const KvEntry& e) const;
  std::string string_at(uint64_t offset, uint64_t* next) const;
  void describe_value(std::ostringstream& out, GgufValueType t, uint64_t offset, uint64_t* next,
                      int depth) const;
};

void GgufFile::Impl::skip_value(Cursor& c, GgufValueType type, const std::string& key, int depth) {
  // Token lists hold ~10^5 values: messages are only built on the error paths.
  auto what = [&] { return "value of \"" + printable(key) + "\""; };
  if (const uint64_t size = fixed_value_size(type)) {
    if (size > c.remaining()) c.need(size, what());
    if (type == GgufValueType::kBool) {
      const uint8_t b = load<uint8_t>(c.at(c.pos()));
      if (b > 1)
        c.error(what() + ": bool value " + std::to_string(b) + " is neither 0 nor 1", c.pos());
    }
    c.skip(size, "");
    return;
  }
  if (type == GgufValueType::kString) {
    if (c.remaining() < 8 || load<uint64_t>(c.at(c.pos())) > c.remaining() - 8) {
      c.read_string(what(), std::numeric_limits<uint64_t>::max());  // throws the precise error
    }
    c.skip(8 + load<uint64_t>(c.at(c.pos())), "");
    return;
  }
  // Array: element type, count, elements.
  const uint64_t at = c.pos();
  if (depth >= kMaxArrayNesting) {
    c.error(what() + ": arrays nested deeper than " + std::to_string(kMaxArrayNesting) + " levels",
            at);
  }
  const uint32_t raw_elem = c.read<uint32_t>(what() + " element type");
  if (!valid_value_type(raw_elem)) {
    c.error(what() + ": unknown array element type " + std::to_string(raw_elem), at);
  }
  const auto elem = static_cast<GgufValueType>(raw_elem);
  const uint64_t count = c.read<uint64_t>(what() + " element count");
  if (const uint64_t size = fixed_value_size(elem); size != 0 && elem != GgufValueType::kBool) {
    const auto total = checked_mul(count, size);
    if (!total || *total > c.remaining()) {
      c.error(what() + ": " + std::to_string(count) + " elements of " + value_type_name(elem) +
                  " exceed the " + std::to_string(c.remaining()) + " bytes that remain",
              at);
    }
    c.skip(*total, what());
    return;
  }
  // Variable-size (or checked) elements: each takes at least one byte (strings 8, arrays 12), so
  // the count is bounded by the remaining bytes before the loop starts.
  const uint64_t min_size = elem == GgufValueType::kString  ? 8
                            : elem == GgufValueType::kArray ? 12
                                                            : 1;
  if (count > c.remaining() / min_size) {
    c.error(what() + ": " + std::to_string(count) + " elements of " + value_type_name(elem) +
                " cannot fit in the " + std::to_string(c.remaining()) + " bytes that remain",
            at);
  }
  for (uint64_t i = 0; i < count; ++i) skip_value(c, elem, key, depth + 1);
}

void GgufFile::Impl::parse() {
  Cursor c(bytes, name);
  if (bytes.size() < 4 || std::memcmp(bytes.data(), "GGUF", 4) != 0) {
    fail(ErrorCode::kInvalidFile, name + ": not a GGUF file (the first 4 bytes are not \"GGUF\")");
  }
  c.skip(4, "magic");
  version = c.read<uint32_t>("version");
  if (version == 1) {
    fail(ErrorCode::kUnsupported,
         name +
             ": GGUF version 1 is not supported (it predates 64-bit sizes); convert the "
             "model again with a current llama.cpp");
  }
  if (version != 2 && version != 3) {
    const uint32_t swapped = __builtin_bswap32(version);
    if (swapped == 2 || swapped == 3) {
      fail(ErrorCode::kUnsupported, name + ": big-endian GGUF files are not supported");
    }
    fail(ErrorCode::kUnsupported, name + ": unknown GGUF version " + std::to_string(version) +
                                      " (at byte 4); Hearth reads versions 2 and 3");
  }
  const uint64_t counts_at = c.pos();
  const uint64_t n_tensors = c.read<uint64_t>("tensor count");
  const uint64_t n_kv = c.read<uint64_t>("metadata count");
  // A metadata entry takes at least 13 bytes (key length, type, 1-byte value); a tensor info at
  // least 32 (name length, n_dims, one dim, type, offset). Larger counts cannot be genuine.
  // Real files hold tens of keys and at most a few thousand tensors; the caps bound the memory
  // a hostile header can make the parser use.
  if (n_kv > kMaxKeys) {
    c.error("metadata count " + std::to_string(n_kv) + " exceeds the limit of " +
                std::to_string(kMaxKeys),
            counts_at + 8);
  }
  if (n_tensors > kMaxTensors) {
    c.error("tensor count " + std::to_string(n_tensors) + " exceeds the limit of " +
                std::to_string(kMaxTensors),
            counts_at);
  }
  if (n_kv > c.remaining() / 13) {
    c.error("metadata count " + std::to_string(n_kv) + " cannot fit in the file", counts_at + 8);
  }
  if (n_tensors > c.remaining() / 32) {
    c.error("tensor count " + std::to_string(n_tensors) + " cannot fit in the file", counts_at);
  }

  for (uint64_t i = 0; i < n_kv; ++i) {
    KvEntry e;
    e.key_offset = c.pos();
    e.key = std::string(c.read_string("metadata key #" + std::to_string(i), kMaxKeyBytes));
    if (kv_index.count(e.key)) {
      c.error("duplicate metadata key \"" + printable(e.key) + "\"", e.key_offset);
    }
    const uint64_t type_at = c.pos();
    const uint32_t raw_type = c.read<uint32_t>("type of \"" + printable(e.key) + "\"");
    if (!valid_value_type(raw_type)) {
      c.error("metadata key \"" + printable(e.key) + "\" has unknown value type " +
                  std::to_string(raw_type),
              type_at);
    }
    e.type = static_cast<GgufValueType>(raw_type);
    if (e.type == GgufValueType::kArray) {
      // Record the array header; skip_value re-reads it to validate the elements.
      if (c.remaining() >= 12) {
        e.elem_type = static_cast<GgufValueType>(load<uint32_t>(c.at(c.pos())));
        e.count = load<uint64_t>(c.at(c.pos() + 4));
      }
      e.value_offset = c.pos() + 12;
    } else {
      e.value_offset = c.pos();
    }
    skip_value(c, e.type, e.key, 0);
    kv_index.emplace(e.key, kv.size());
    kv.push_back(std::move(e));
  }

  if (const KvEntry* a = find("general.alignment")) {
    if (a->type != GgufValueType::kU32) type_error(*a, "u32");
    const uint32_t v = load<uint32_t>(bytes.data() + a->value_offset);
    if (v == 0 || (v & (v - 1)) != 0 || v > kMaxAlignment) {
      c.error("general.alignment " + std::to_string(v) + " is not a power of two between 1 and " +
                  std::to_string(kMaxAlignment),
              a->value_offset);
    }
    alignment = v;
  }

  std::vector<uint64_t> info_offsets;
  for (uint64_t i = 0; i < n_tensors; ++i) {
    const uint64_t info_at = c.pos();
    info_offsets.push_back(info_at);
    GgufTensorInfo t;
    t.name = std::string(c.read_string("tensor name #" + std::to_string(i), kMaxTensorNameBytes));
    const std::string what = "tensor \"" + printable(t.name) + "\"";
    if (tensor_index.count(t.name)) c.error("duplicate " + what, info_at);
    const uint64_t dims_at = c.pos();
    const uint32_t n_dims = c.read<uint32_t>(what + " dimension count");
    if (n_dims < 1 || n_dims > kMaxDims) {
      c.error(what + " has " + std::to_string(n_dims) + " dimensions; 1 to 4 are allowed", dims_at);
    }
    uint64_t elements = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      const uint64_t dim_at = c.pos();
      const uint64_t dim = c.read<uint64_t>(what + " dimension");
      if (dim == 0 || dim > static_cast<uint64_t>(INT64_MAX)) {
        c.error(what + " dimension " + std::to_string(d) + " is " +
                    std::to_string(static_cast<int64_t>(dim)) + "; it must be positive",
                dim_at);
      }
      const auto product = checked_mul(elements, dim);
      if (!product || *product > static_cast<uint64_t>(INT64_MAX)) {
        c.error(what + ": element count overflows 63 bits", dim_at);
      }
      elements = *product;
      t.dims.push_back(static_cast<int64_t>(dim));
    }
    const uint64_t type_at = c.pos();
    const uint32_t raw_type = c.read<uint32_t>(what + " type");
    const auto traits = ggml_type_traits(raw_type);
    if (!traits) c.error(what + " has unknown ggml type " + std::to_string(raw_type), type_at);
    t.type = static_cast<GgmlType>(raw_type);
    if (static_cast<uint64_t>(t.dims[0]) % traits->block_elements != 0) {
      c.error(what + ": row length " + std::to_string(t.dims[0]) + " is not a multiple of the " +
                  traits->name + " block size " + std::to_string(traits->block_elements),
              dims_at);
    }
    // elements <= 2^63 and block_bytes <= 292, so this cannot overflow after the division.
    const auto nbytes = checked_mul(elements / traits->block_elements, traits->block_bytes);
    if (!nbytes) c.error(what + ": byte size overflows", dims_at);
    t.nbytes = *nbytes;
    const uint64_t offset_at = c.pos();
    t.offset = c.read<uint64_t>(what + " offset");
    if (t.offset % alignment != 0) {
      c.error(what + ": data offset " + std::to_string(t.offset) + " is not a multiple of the " +
                  std::to_string(alignment) + "-byte alignment",
              offset_at);
    }
    tensor_index.emplace(t.name, tensors.size());
    tensors.push_back(std::move(t));
  }

  // The data section starts at the next multiple of the alignment after the tensor infos.
  const auto padded = checked_add(c.pos(), alignment - 1);
  if (!padded) c.error("data section offset overflows", c.pos());
  data_offset = *padded / alignment * alignment;

  // As ggml requires: tensors lie back to back in info order, each padded to the alignment, and
  // the file holds all of them. This rules out overlaps, holes and data past the end.
  uint64_t expected = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& t = tensors[i];
    const std::string what = "tensor \"" + printable(t.name) + "\"";
    if (t.offset != expected) {
      c.error(what + ": data offset " + std::to_string(t.offset) + " should be " +
                  std::to_string(expected) +
                  " (tensors must be stored back to back in the order of their infos)",
              info_offsets[i]);
    }
    const auto end = checked_add(t.offset, t.nbytes);
    const auto file_end = end ? checked_add(data_offset, *end) : std::nullopt;
    if (!file_end || *file_end > bytes.size()) {
      c.error(what + ": its " + std::to_string(t.nbytes) + " bytes of " + ggml_type_name(t.type) +
                  " data at data offset " + std::to_string(t.offset) + " run past the end of the " +
                  std::to_string(bytes.size()) + "-byte file (truncated?)",
              info_offsets[i]);
    }
    const auto next = checked_add(*end, alignment - 1);
    if (!next) c.error(what + ": data end overflows", info_offsets[i]);
    expected = *next / alignment * alignment;
  }
}

int64_t GgufFile::Impl::int_at(GgufValueType t, uint64_t offset, const KvEntry& e) const {
  const std::byte* p = bytes.data() + offset;
  switch (t) {
    case GgufValueType::kU8:
      return load<uint8_t>(p);
    case GgufValueType::kI8:
      return load<int8_t>(p);
    case GgufValueType::kU16:
      return load<uint16_t>(p);
    case GgufValueType::kI16:
      return load<int16_t>(p);
    case GgufValueType::kU32:
      return load<uint32_t>(p);
    case GgufValueType::kI32:
      return load<int32_t>(p);
    case GgufValueType::kI64:
      return load<int64_t>(p);
    case GgufValueType::kU64: {
      const uint64_t v = load<uint64_t>(p);
      if (v > static_cast<uint64_t>(INT64_MAX)) {
        fail(ErrorCode::kInvalidFile, name + ": metadata key \"" + printable(e.key) + "\" holds " +
                                          std::to_string(v) + ", which does not fit in int64");
      }
      return static_cast<int64_t>(v);
    }
    default:
      type_error(e, "an integer");
  }
}

std::string GgufFile::Impl::string_at(uint64_t offset, uint64_t* next) const {
  const uint64_t len = load<uint64_t>(bytes.data() + offset);  // validated by parse()
  if (next) *next = offset + 8 + len;
  return std::string(reinterpret_cast<const char*>(bytes.data() + offset + 8), len);
}

void GgufFile::Impl::describe_value(std::ostringstream& out, GgufValueType t, uint64_t offset,
                                    uint64_t* next, int depth) const {
  const std::byte* p = bytes.data() + offset;
  auto done = [&](uint64_t size) {
    if (next) *next = offset + size;
  };
  switch (t) {
    case GgufValueType::kU8:
      out << +load<uint8_t>(p);
      return done(1);
    case GgufValueType::kI8:
      out << +load<int8_t>(p);
      return done(1);
    case GgufValueType::kU16:
      out << load<uint16_t>(p);
      return done(2);
    case GgufValueType::kI16:
      out << load<int16_t>(p);
      return done(2);
    case GgufValueType::kU32:
      out << load<uint32_t>(p);
      return done(4);
    case GgufValueType::kI32:
      out << load<int32_t>(p);
      return done(4);
    case GgufValueType::kU64:
      out << load<uint64_t>(p);
      return done(8);
    case GgufValueType::kI64:
      out << load<int64_t>(p);
      return done(8);
    case GgufValueType::kF32:
      out << load<float>(p);
      return done(4);
    case GgufValueType::kF64:
      out << load<double>(p);
      return done(8);
    case GgufValueType::kBool:
      out << (load<uint8_t>(p) ? "true" : "false");
      return done(1);
    case GgufValueType::kString: {
      std::string s = string_at(offset, next);
      constexpr size_t kShown = 120;
      const bool cut = s.size() > kShown;
      if (cut) s.resize(kShown);
      for (char& ch : s) {
        if (ch == '\n' || ch == '\r' || ch == '\t') ch = ' ';
      }
      out << '"' << s << (cut ? "..." : "") << '"';
      return;
    }
    case GgufValueType::kArray: {
      const auto elem = static_cast<GgufValueType>(load<uint32_t>(p));
      const uint64_t count = load<uint64_t>(p + 4);
      uint64_t pos = offset + 12;
      constexpr uint64_t kShownItems = 6;
      out << '[';
      for (uint64_t i = 0; i < count; ++i) {
        if (i == kShownItems && !next) break;  // the caller does not need the end: stop early
        std::ostringstream item;
        describe_value(item, elem, pos, &pos, depth + 1);
        if (i < kShownItems) out << (i ? ", " : "") << item.str();
      }
      if (count > kShownItems) out << ", ... (" << count << " items)";
      out << ']';
      if (next) *next = pos;
      return;
    }
  }
}

// --- public interface -------------------------------------------------------------------------

GgufFile::GgufFile(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GgufFile::GgufFile(GgufFile&&) noexcept = default;
GgufFile& GgufFile::operator=(GgufFile&&) noexcept = default;
GgufFile::~GgufFile() = default;

GgufFile GgufFile::open(const std::filesystem::path& path) {
  auto impl = std::make_unique<Impl>();
  impl->name = path.string();
  impl->mapping = MappedFile::open(path);
  impl->bytes = impl->mapping->bytes();
  impl->parse();
  return GgufFile(std::move(impl));
}

GgufFile GgufFile::parse(std::span<const std::byte> bytes, std::string display_name) {
  auto impl = std::make_unique<Impl>();
  impl->name = std::move(display_name);
  impl->bytes = bytes;
  impl->parse();
  return GgufFile(std::move(impl));
}

const std::string& GgufFile::display_name() const {
  return impl_->name;
}
uint32_t GgufFile::version() const {
  return impl_->version;
}
uint64_t GgufFile::alignment() const {
  return impl_->alignment;
}
uint64_t GgufFile::file_size() const {
  return impl_->bytes.size();
}

std::vector<std::string> GgufFile::keys() const {
  std::vector<std::string> out;
  out.reserve(impl_->kv.size());
  for (const auto& e : impl_->kv) out.push_back(e.key);
  return out;
}

bool GgufFile::has(std::string_view key) const {
  return impl_->find(key) != nullptr;
}

std::optional<GgufValueType> GgufFile::type(std::string_view key) const {
  const KvEntry* e = impl_->find(key);
  if (!e) return std::nullopt;
  return e->type;
}

std::optional<std::string> GgufFile::get_string(std::string_view key) const {
  const KvEntry* e = impl_->find(key);
  if (!e) return std::nullopt;
  if (e->type != GgufValueType::kString) impl_->type_error(*e, "a string");
  return impl_->string_at(e->value_offset, nullptr);
}

std::optional<int64_t> GgufFile::get_int(std::string_view key) const {
  const KvEntry* e = impl_->find(key);
  if (!e) return std::nullopt;
  if (!is_integer_type(e->type)) impl_->type_error(*e, "an integer");
  return impl_->int_at(e->type, e->value_offset, *e);
}

std::optional<double> GgufFile::get_float(std::string_view key) const {
  const KvEntry* e = impl_->find(key);
  if (!e) return std::nullopt;
  const std::byte* p = impl_->bytes.data() + e->value_offset;
  if (e->type == GgufValueType::kF32) return load<float>(p);
  if (e->type == GgufValueType::kF64) return load<double>(p);
  impl_->type_error(*e, "f32 or f64");
}

std::optional<bool> GgufFile::get_bool(std::string_view key) const {
  const KvEntry* e = impl_->find(key);
  if (!e) return std::nullopt;
  if (e->type != GgufValueType::kBool) impl_->type_error(*e, "bool");
  return load<uint8_t>(impl_->bytes.data() + e->value_offset) != 0;
}

std::optional<std::vector<std::string>> GgufFile::get_string_array(std::string_view key) const {
  const KvEntry* e = impl_->find(key);
  if (!e) return std::nullopt;
  if (e->type != GgufValueType::kArray || e->elem_type != GgufValueType::kString) {
    impl_->type_error(*e, "an array of strings");
  }
  std::vector<std::string> out;
  out.reserve(e->count);
  uint64_t pos = e->value_offset;
  for (uint64_t i = 0; i < e->count; ++i) out.push_back(impl_->string_at(pos, &pos));
  return out;
}

std::optional<std::vector<int64_t>> GgufFile::get_int_array(std::string_view key) const {
  const KvEntry* e = impl_->find(key);
  if (!e) return std::nullopt;
  if (e->type != GgufValueType::kArray || !is_integer_type(e->elem_type)) {
    impl_->type_error(*e, "an array of integers");
  }
  const uint64_t size = fixed_value_size(e->elem_type);
  std::vector<int64_t> out;
  out.reserve(e->count);
  for (uint64_t i = 0; i < e->count; ++i) {
    out.push_back(impl_->int_at(e->elem_type, e->value_offset + i * size, *e));
  }
  return out;
}

std::optional<std::vector<float>> GgufFile::get_float_array(std::string_view key) const {
  const KvEntry* e = impl_->find(key);
  if (!e) return std::nullopt;
  if (e->type != GgufValueType::kArray ||
      (e->elem_type != GgufValueType::kF32 && e->elem_type != GgufValueType::kF64)) {
    impl_->type_error(*e, "an array of f32 or f64");
  }
  std::vector<float> out;
  out.reserve(e->count);
  const std::byte* p = impl_->bytes.data() + e->value_offset;
  for (uint64_t i = 0; i < e->count; ++i) {
    out.push_back(e->elem_type == GgufValueType::kF32
                      ? load<float>(p + 4 * i)
                      : static_cast<float>(load<double>(p + 8 * i)));
  }
  return out;
}

std::optional<uint64_t> GgufFile::array_length(std::string_view key) const {
  const KvEntry* e = impl_->find(key);
  if (!e) return std::nullopt;
  if (e->type != GgufValueType::kArray) impl_->type_error(*e, "an array");
  return e->count;
}

std::string GgufFile::describe(std::string_view key) const {
  const KvEntry* e = impl_->find(key);
  if (!e) return "<absent>";
  std::ostringstream out;
  const uint64_t offset = e->type == GgufValueType::kArray ? e->value_offset - 12 : e->value_offset;
  impl_->describe_value(out, e->type, offset, nullptr, 0);
  return out.str();
}

const std::vector<GgufTensorInfo>& GgufFile::tensors() const {
  return impl_->tensors;
}

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
  const auto it = impl_->tensor_index.find(std::string(name));
  return it == impl_->tensor_index.end() ? nullptr : &impl_->tensors[it->second];
}

std::span<const std::byte> GgufFile::raw_data(const GgufTensorInfo& tensor) const {
  return impl_->bytes.subspan(impl_->data_offset + tensor.offset, tensor.nbytes);
}

HostTensor GgufFile::dequantize(const GgufTensorInfo& tensor) const {
  std::vector<int64_t> shape(tensor.dims.rbegin(), tensor.dims.rend());
  const auto raw = raw_data(tensor);
  if (!ggml_can_dequantize(tensor.type)) {
    fail(ErrorCode::kUnsupported, impl_->name + ": tensor \"" + printable(tensor.name) +
                                      "\" has type " + ggml_type_name(tensor.type) +
                                      ", which Hearth cannot import (supported: F32, F16, BF16, "
                                      "Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, "
                                      "Q6_K, IQ4_NL, IQ4_XS)");
  }
  // F32 data aligned in a mapping is returned as a view: no copy for norms and f32 models.
  if (tensor.type == GgmlType::kF32 && impl_->mapping &&
      reinterpret_cast<uintptr_t>(raw.data()) % alignof(float) == 0) {
    HostTensor view;
    view.dtype = DType::kF32;
    view.shape = std::move(shape);
    view.data = raw.data();
    view.keep_alive = std::shared_ptr<const void>(impl_->mapping, raw.data());
    return view;
  }
  HostTensor out = HostTensor::allocate(DType::kF32, std::move(shape));
  dequantize_ggml(tensor.type, raw.data(), static_cast<float*>(out.mutable_data()), out.numel());
  return out;
}

}  // namespace hearth
