#include "engine/io/safetensors.h"

#include <algorithm>
#include <cstring>

#include "engine/core/checked_math.h"
#include "engine/core/error.h"
#include "engine/io/json_strict.h"
#include "engine/io/mapped_file.h"
#include "engine/io/safetensors_header.h"

namespace hearth {

namespace {

struct DtypeEntry {
  const char* name;
  uint64_t bits;
  std::optional<DType> dtype;  // nullopt: valid in safetensors, not loaded by Hearth
};

// Every dtype the reference implementation knows, with its size in bits.
constexpr DtypeEntry kDtypes[] = {
    {"BOOL", 8, std::nullopt},    {"F4", 4, std::nullopt},      {"F6_E2M3", 6, std::nullopt},
    {"F6_E3M2", 6, std::nullopt}, {"U8", 8, DType::kU8},        {"I8", 8, DType::kI8},
    {"F8_E5M2", 8, std::nullopt}, {"F8_E4M3", 8, std::nullopt}, {"F8_E8M0", 8, std::nullopt},
    {"I16", 16, DType::kI16},     {"U16", 16, DType::kU16},     {"F16", 16, DType::kF16},
    {"BF16", 16, DType::kBF16},   {"I32", 32, DType::kI32},     {"U32", 32, DType::kU32},
    {"F32", 32, DType::kF32},     {"F64", 64, DType::kF64},     {"I64", 64, DType::kI64},
    {"U64", 64, std::nullopt},    {"C64", 64, std::nullopt},
};

const DtypeEntry* find_dtype(std::string_view name) {
  for (const auto& e : kDtypes) {
    if (name == e.name) return &e;
  }
  return nullptr;
}

uint64_t read_u64_le(const std::byte* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

std::string tensor_where(const std::string& file, const std::string& tensor) {
  return file + ": tensor \"" + printable(tensor) + "\"";
}

}  // namespace

std::optional<DType> safetensors_dtype(std::string_view name) {
  if (const auto* e = find_dtype(name)) return e->dtype;
  return std::nullopt;
}

std::optional<uint64_t> safetensors_dtype_bits(std::string_view name) {
  if (const auto* e = find_dtype(name)) return e->bits;
  return std::nullopt;
}

bool is_pickle_checkpoint_name(const std::filesystem::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return ext == ".bin" || ext == ".pt" || ext == ".pth" || ext == ".ckpt" || ext == ".pkl" ||
         ext == ".pickle";
}

bool looks_like_pickle_or_archive(std::span<const std::byte> head) {
  auto at = [&](size_t i) { return i < head.size() ? static_cast<uint8_t>(head[i]) : 0x100; };
  if (at(0) == 0x80 && at(1) >= 2 && at(1) <= 5) return true;  // pickle protocol 2..5
  if (at(0) == 'P' && at(1) == 'K' && (at(2) == 3 || at(2) == 5) && (at(3) == 4 || at(3) == 6)) {
    return true;  // zip: torch.save's default container
  }
  if (at(0) == '7' && at(1) == 'z' && at(2) == 0xBC && at(3) == 0xAF && at(4) == 0x27 &&
      at(5) == 0x1C) {
    return true;  // 7z (nullifAI-style wrapped pickles)
  }
  if (at(0) == 0x1f && at(1) == 0x8b) return true;  // gzip
  return false;
}

void refuse_pickle_checkpoint(const std::filesystem::path& path) {
  fail(ErrorCode::kUnsupported,
       path.string() +
           ": refusing to open a pickle checkpoint (PyTorch .bin/.pt files can run arbitrary "
           "code when loaded); convert the model to safetensors");
}

SafetensorsFile SafetensorsFile::open(const std::filesystem::path& path) {
  if (is_pickle_checkpoint_name(path)) refuse_pickle_checkpoint(path);
  SafetensorsFile f;
  f.mapping_ = MappedFile::open(path);
  f.bytes_ = f.mapping_->bytes();
  f.name_ = path.string();
  f.parse_header();
  return f;
}

SafetensorsFile SafetensorsFile::parse(std::span<const std::byte> bytes, std::string display_name) {
  SafetensorsFile f;
  f.bytes_ = bytes;
  f.name_ = std::move(display_name);
  f.parse_header();
  return f;
}

void SafetensorsFile::parse_header() {
  const uint64_t size = bytes_.size();
  if (size < 8) {
    fail(ErrorCode::kInvalidFile, name_ + ": " + std::to_string(size) +
                                      " bytes is too short for a safetensors file (the header "
                                      "length alone takes 8 bytes)");
  }
  const uint64_t n = read_u64_le(bytes_.data());
  const bool header_fits = n <= kSafetensorsMaxHeaderBytes && n <= size - 8;
  if ((!header_fits || n == 0 || static_cast<char>(bytes_[8]) != '{') &&
      looks_like_pickle_or_archive(bytes_.first(std::min<uint64_t>(size, 8)))) {
    fail(ErrorCode::kUnsupported,
         name_ +
             ": this is a pickle or archive file, not safetensors; Hearth refuses pickle "
             "checkpoints (they can run arbitrary code); convert the model to safetensors");
  }
  if (n > kSafetensorsMaxHeaderBytes) {
    fail(ErrorCode::kInvalidFile, name_ + ": header length " + std::to_string(n) +
                                      " at byte 0 exceeds the 100000000-byte limit");
  }
  if (n > size - 8) {
    fail(ErrorCode::kInvalidFile, name_ + ": header length " + std::to_string(n) +
                                      " at byte 0 runs past the end of the " +
                                      std::to_string(size) + "-byte file");
  }
  data_offset_ = 8 + n;
  const std::string_view text(reinterpret_cast<const char*>(bytes_.data()) + 8, n);
  if (text.empty() || text.front() != '{') {
    fail(ErrorCode::kInvalidFile, name_ + ": header at byte 8 does not start with '{'");
  }
  SafetensorsHeader header = read_safetensors_header(text, name_, 8);
  tensors_ = std::move(header.tensors);
  metadata_ = std::move(header.metadata);

  // As the reference: sorted by offsets, the tensors must tile the data buffer exactly, from 0
  // to its end, with no gap, no overlap and no trailing byte.
  std::sort(tensors_.begin(), tensors_.end(), [](const auto& a, const auto& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });

  // Names are unique (JSON keys of one object).
  if (tensors_.size() > UINT32_MAX) fail(ErrorCode::kInvalidFile, name_ + ": too many tensors");
  by_name_.resize(tensors_.size());
  for (uint32_t i = 0; i < by_name_.size(); ++i) by_name_[i] = i;
  std::sort(by_name_.begin(), by_name_.end(),
            [&](uint32_t a, uint32_t b) { return tensors_[a].name < tensors_[b].name; });
  for (size_t i = 1; i < by_name_.size(); ++i) {
    if (tensors_[by_name_[i]].name == tensors_[by_name_[i - 1]].name) {
      fail(ErrorCode::kInvalidFile,
           name_ + ": header: duplicate key \"" + printable(tensors_[by_name_[i]].name) + "\"");
    }
  }

  const uint64_t data_size = size - data_offset_;
  uint64_t expected = 0;
  for (const auto& t : tensors_) {
    const std::string where = tensor_where(name_, t.name);
    if (t.begin != expected) {
      fail(ErrorCode::kInvalidFile,
           where + ": data starts at buffer offset " + std::to_string(t.begin) + " (file byte " +
               std::to_string(data_offset_ + t.begin) + ") but the previous tensor ends at " +
               std::to_string(expected) +
               (t.begin > expected ? " (a hole)" : " (overlapping tensors)"));
    }
    if (t.end > data_size) {
      fail(ErrorCode::kInvalidFile, where + ": data_offsets end " + std::to_string(t.end) +
                                        " (file byte " + std::to_string(data_offset_ + t.end) +
                                        ") is past the end of the " + std::to_string(size) +
                                        "-byte file");
    }
    expected = t.end;
  }
  if (expected != data_size) {
    fail(ErrorCode::kInvalidFile,
         name_ + ": the tensors cover " + std::to_string(expected) + " bytes of the " +
             std::to_string(data_size) + "-byte data buffer; " +
             std::to_string(data_size - expected) + " trailing bytes from file byte " +
             std::to_string(data_offset_ + expected) + " belong to no tensor");
  }
}

const SafetensorsTensor* SafetensorsFile::find(std::string_view name) const {
  const auto it =
      std::lower_bound(by_name_.begin(), by_name_.end(), name,
                       [&](uint32_t i, std::string_view n) { return tensors_[i].name < n; });
  if (it == by_name_.end() || tensors_[*it].name != name) return nullptr;
  return &tensors_[*it];
}

std::span<const std::byte> SafetensorsFile::raw_data(const SafetensorsTensor& t) const {
  return bytes_.subspan(data_offset_ + t.begin, t.end - t.begin);
}

HostTensor SafetensorsFile::tensor(const SafetensorsTensor& t) const {
  if (!t.dtype) {
    fail(ErrorCode::kUnsupported,
         tensor_where(name_, t.name) + ": dtype " + t.dtype_name + " is not supported by Hearth");
  }
  HostTensor out;
  out.dtype = *t.dtype;
  out.shape = t.shape;
  const auto raw = raw_data(t);
  const size_t align = dtype_size(*t.dtype);
  if (reinterpret_cast<uintptr_t>(raw.data()) % align == 0) {
    out.data = raw.data();
    if (mapping_) out.keep_alive = std::shared_ptr<const void>(mapping_, raw.data());
    return out;
  }
  // Writers other than the reference may leave the data buffer unaligned; typed access to it
  // would be undefined behaviour, so this (rare) case gets an aligned copy.
  HostTensor copy = HostTensor::allocate(*t.dtype, t.shape);
  if (!raw.empty()) std::memcpy(copy.mutable_data(), raw.data(), raw.size());
  return copy;
}

SafetensorsIndex parse_safetensors_index(std::string_view json, const std::string& display_name) {
  const nlohmann::json doc = parse_json_strict(json, display_name, 64);
  if (!doc.is_object()) {
    fail(ErrorCode::kInvalidFile, display_name + ": must be a JSON object, got " + json_kind(doc));
  }
  const auto wm = doc.find("weight_map");
  if (wm == doc.end() || !wm->is_object()) {
    fail(ErrorCode::kInvalidFile, display_name + ": \"weight_map\" missing or not an object");
  }
  SafetensorsIndex index;
  for (const auto& [tensor, file] : wm->items()) {
    const std::string where = display_name + ": weight_map[\"" + printable(tensor) + "\"]";
    if (!file.is_string()) {
      fail(ErrorCode::kInvalidFile, where + " must be a file name, got " + json_kind(file));
    }
    const std::string name = file.get<std::string>();
    if (name.empty()) fail(ErrorCode::kInvalidFile, where + " is an empty file name");
    if (name.find('\0') != std::string::npos || name.find('\\') != std::string::npos) {
      fail(ErrorCode::kInvalidFile,
           where + ": file name \"" + printable(name) + "\" contains a NUL or a backslash");
    }
    const std::filesystem::path p(name);
    if (p.is_absolute() || name.front() == '/') {
      fail(ErrorCode::kInvalidFile, where + ": \"" + name +
                                        "\" is an absolute path; shards must lie in the model "
                                        "folder");
    }
    for (const auto& part : p) {
      if (part == "..") {
        fail(ErrorCode::kInvalidFile,
             where + ": \"" + name + "\" climbs out of the model folder with \"..\"");
      }
    }
    if (std::find(index.shards.begin(), index.shards.end(), name) == index.shards.end()) {
      index.shards.push_back(name);
    }
    index.weight_map[tensor] = name;
  }
  return index;
}

}  // namespace hearth
