// TensorSource over safetensors: one file, an indexed set of shards, or a folder of shards.
#include <algorithm>
#include <unordered_map>

#include "engine/core/error.h"
#include "engine/io/json_strict.h"
#include "engine/io/safetensors.h"
#include "engine/io/tensor_source.h"

namespace hearth {

namespace {

namespace fs = std::filesystem;

constexpr uint64_t kMaxIndexBytes = 16u << 20;  // real indexes are well under 1 MB

// True when `inner` (canonical) lies inside `root` (canonical).
bool is_within(const fs::path& inner, const fs::path& root) {
  auto r = root.begin();
  auto i = inner.begin();
  for (; r != root.end(); ++r, ++i) {
    if (i == inner.end() || *i != *r) return false;
  }
  return true;
}

// Resolves a shard inside `dir`, refusing anything that escapes it through symlinks. The one
// exception is the Hugging Face hub cache, whose snapshot folders hold symlinks to
// ../../blobs of the same repository.
fs::path resolve_shard(const fs::path& dir, const std::string& name, const std::string& where) {
  std::error_code ec;
  const fs::path path = dir / name;
  if (!fs::exists(path, ec)) {
    fail(ErrorCode::kInvalidFile,
         where + ": shard \"" + name + "\" does not exist in " + dir.string());
  }
  const fs::path real = fs::canonical(path, ec);
  const fs::path real_dir = fs::canonical(dir, ec);
  if (ec) fail(ErrorCode::kIo, where + ": cannot resolve " + path.string() + ": " + ec.message());
  bool inside = is_within(real, real_dir);
  if (!inside && real_dir.parent_path().filename() == "snapshots") {
    inside = is_within(real, real_dir.parent_path().parent_path() / "blobs");
  }
  if (!inside) {
    fail(ErrorCode::kInvalidFile, where + ": shard \"" + name + "\" resolves to " + real.string() +
                                      ", outside the model folder " + real_dir.string());
  }
  if (!fs::is_regular_file(real, ec)) {
    fail(ErrorCode::kInvalidFile, where + ": shard \"" + name + "\" is not a regular file");
  }
  return path;
}

class SafetensorsSource final : public TensorSource {
 public:
  void add_file(const fs::path& path) {
    auto file = std::make_unique<SafetensorsFile>(SafetensorsFile::open(path));
    const size_t index = files_.size();
    for (const auto& t : file->tensors()) {
      if (!t.dtype) {
        fail(ErrorCode::kUnsupported, file->display_name() + ": tensor \"" + t.name +
                                          "\" has dtype " + t.dtype_name +
                                          ", which Hearth does not load");
      }
      const auto [it, inserted] = by_name_.emplace(t.name, Entry{index, &t});
      if (!inserted) {
        fail(ErrorCode::kInvalidFile, "tensor \"" + t.name + "\" is present both in " +
                                          files_[it->second.file]->display_name() + " and in " +
                                          file->display_name());
      }
      names_.push_back(t.name);
      file_bytes_ += t.end - t.begin;
    }
    files_.push_back(std::move(file));
  }

  // The index says which shard holds each tensor; hold the shards to it.
  void check_index(const SafetensorsIndex& index, const fs::path& dir, const std::string& where) {
    for (const auto& [tensor, shard] : index.weight_map) {
      const auto it = by_name_.find(tensor);
      const fs::path expected = dir / shard;
      if (it == by_name_.end() || files_[it->second.file]->display_name() != expected.string()) {
        fail(ErrorCode::kInvalidFile,
             where + ": tensor \"" + tensor + "\" is not in shard \"" + shard + "\"");
      }
    }
  }

  std::vector<std::string> tensor_names() const override { return names_; }
  bool has(std::string_view name) const override { return by_name_.count(std::string(name)); }

  TensorInfo info(std::string_view name) const override {
    const Entry& e = find(name);
    TensorInfo info;
    info.name = e.tensor->name;
    info.dtype = *e.tensor->dtype;
    info.shape = e.tensor->shape;
    info.stored_type = e.tensor->dtype_name;
    info.file = files_[e.file]->display_name();
    return info;
  }

  HostTensor get(std::string_view name) const override {
    const Entry& e = find(name);
    return files_[e.file]->tensor(*e.tensor);
  }

  uint64_t file_bytes() const override { return file_bytes_; }

 private:
  struct Entry {
    size_t file;
    const SafetensorsTensor* tensor;  // owned by files_[file], which never moves
  };

  const Entry& find(std::string_view name) const {
    const auto it = by_name_.find(std::string(name));
    if (it == by_name_.end()) {
      fail(ErrorCode::kInvalidFile, "no tensor \"" + std::string(name) + "\" in the model");
    }
    return it->second;
  }

  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::vector<std::string> names_;
  std::unordered_map<std::string, Entry> by_name_;
  uint64_t file_bytes_ = 0;
};

}  // namespace

std::unique_ptr<TensorSource> open_safetensors_source(const fs::path& file_or_dir) {
  auto source = std::make_unique<SafetensorsSource>();
  std::error_code ec;
  if (!fs::is_directory(file_or_dir, ec)) {
    source->add_file(file_or_dir);  // refuses pickle names; Error(kIo) if missing
    return source;
  }

  const fs::path dir = file_or_dir;
  const fs::path index_path = dir / "model.safetensors.index.json";
  if (fs::exists(index_path, ec)) {
    const std::string where = index_path.string();
    const SafetensorsIndex index =
        parse_safetensors_index(read_text_file(where, kMaxIndexBytes), where);
    if (index.shards.empty()) fail(ErrorCode::kInvalidFile, where + ": weight_map is empty");
    for (const auto& shard : index.shards) {
      if (is_pickle_checkpoint_name(shard)) refuse_pickle_checkpoint(dir / shard);
      source->add_file(resolve_shard(dir, shard, where));
    }
    source->check_index(index, dir, where);
    return source;
  }

  // No index: every *.safetensors in the folder (EXL2 output, single-file models).
  std::vector<std::string> shards;
  bool saw_pickle = false;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const fs::path& p = entry.path();
    if (p.extension() == ".safetensors") shards.push_back(p.filename().string());
    if (is_pickle_checkpoint_name(p)) saw_pickle = true;
  }
  if (ec) fail(ErrorCode::kIo, dir.string() + ": cannot list folder: " + ec.message());
  if (shards.empty()) {
    if (saw_pickle) {
      fail(ErrorCode::kUnsupported,
           dir.string() +
               ": holds only pickle checkpoints (.bin/.pt), which Hearth refuses to "
               "open (they can run arbitrary code); convert the model to safetensors");
    }
    fail(ErrorCode::kInvalidFile, dir.string() + ": no *.safetensors files in this folder");
  }
  std::sort(shards.begin(), shards.end());
  for (const auto& shard : shards) source->add_file(resolve_shard(dir, shard, dir.string()));
  return source;
}

}  // namespace hearth
