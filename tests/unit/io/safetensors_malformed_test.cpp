// The malformed-safetensors corpus (TESTING.md, "Malformed inputs"; the reference implementation's
// validation rules), hostile indexes and folders, and pickle checkpoints: every case is an
// hearth::Error naming the file, the tensor and the offset, in well under a second.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <random>

#include "engine/io/safetensors.h"
#include "engine/io/tensor_source.h"
#include "tests/unit/io/safetensors_test_util.h"

namespace hearth {
namespace {

using test::Bytes;
using test::ByteWriter;

// With HEARTH_DUMP_CORPUS=<folder>, every rejected image is also written there, so that
// tests/reference/io_safetensors_corpus_check.py can confirm the reference implementation
// rejects it too.
void dump(const Bytes& image, const std::string& first_needle) {
  static int counter = 0;
  const char* dir = std::getenv("HEARTH_DUMP_CORPUS");
  if (!dir || !*dir) return;
  std::string tag;
  for (char c : first_needle) tag += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  test::write_file(std::filesystem::path(dir) /
                       (std::to_string(counter++) + "_" + tag.substr(0, 40) + ".safetensors"),
                   image);
}

void reject(const Bytes& image, ErrorCode code, std::initializer_list<std::string> needles) {
  dump(image, *needles.begin());
  test::expect_error(
      [&] {
        SafetensorsFile::parse({image.data(), image.size()}, "bad.st");
      },
      code, needles);
}

// A one-tensor header around `entry` (the tensor's JSON object) with `data` bytes after it.
Bytes one(const std::string& entry, size_t data = 8) {
  return test::safetensors_image("{\"t\":" + entry + "}", Bytes(data));
}

TEST(SafetensorsMalformed, HeaderLength) {
  reject({}, ErrorCode::kInvalidFile, {"bad.st", "too short"});
  reject(Bytes(7), ErrorCode::kInvalidFile, {"too short"});
  reject(ByteWriter().u64(100).text("{}").take(), ErrorCode::kInvalidFile,
         {"header length 100", "at byte 0", "past the end"});
  reject(ByteWriter().u64(100'000'001).text("{}").take(), ErrorCode::kInvalidFile,
         {"100000001", "100000000-byte limit"});
  reject(ByteWriter().u64(~0ull).text("{}").take(), ErrorCode::kInvalidFile, {"limit"});
  reject(ByteWriter().u64(0).take(), ErrorCode::kInvalidFile, {"does not start with '{'"});
}

TEST(SafetensorsMalformed, HeaderText) {
  reject(test::safetensors_image("[]", {}), ErrorCode::kInvalidFile, {"at byte 8", "'{'"});
  reject(test::safetensors_image(" {}", {}), ErrorCode::kInvalidFile, {"'{'"});
  reject(test::safetensors_image("{\"t\": {\"dtype\": \"U8\"", {}), ErrorCode::kInvalidFile,
         {"invalid JSON at byte 28", "unexpected end of input"});
  reject(test::safetensors_image("{} []", {}), ErrorCode::kInvalidFile, {"invalid JSON"});
  // Invalid UTF-8 inside a key.
  reject(test::safetensors_image("{\"\xff\xfe\":{}}", {}), ErrorCode::kInvalidFile,
         {"invalid JSON at byte 10", "UTF-8"});
  reject(test::safetensors_image("{\"a\xc3\":{}}", {}), ErrorCode::kInvalidFile, {"UTF-8"});
  reject(test::safetensors_image(std::string(1, '{') + std::string(100000, '['), {}),
         ErrorCode::kInvalidFile, {"nested deeper than 64"});
  const std::string entry = R"({"dtype":"U8","shape":[1],"data_offsets":[0,1]})";
  reject(test::safetensors_image("{\"t\":" + entry + ",\"t\":" + entry + "}", Bytes(1)),
         ErrorCode::kInvalidFile, {"duplicate key \"t\""});
}

TEST(SafetensorsMalformed, Metadata) {
  reject(test::safetensors_image(R"({"__metadata__":{"a":1}})", {}), ErrorCode::kInvalidFile,
         {"__metadata__ value \"a\"", "must be a string"});
  reject(test::safetensors_image(R"({"__metadata__":{"a":{"b":"c"}}})", {}),
         ErrorCode::kInvalidFile, {"__metadata__ value \"a\""});
  reject(test::safetensors_image(R"({"__metadata__":["x"]})", {}), ErrorCode::kInvalidFile,
         {"__metadata__ must be an object"});
  EXPECT_NO_THROW(
      SafetensorsFile::parse(test::safetensors_image(R"({"__metadata__":{"format":"pt"}})", {})));
}

TEST(SafetensorsMalformed, TensorEntries) {
  reject(one("3"), ErrorCode::kInvalidFile, {"tensor \"t\"", "must be an object"});
  reject(one(R"({"shape":[8],"data_offsets":[0,8]})"), ErrorCode::kInvalidFile,
         {"tensor \"t\"", "\"dtype\" missing"});
  reject(one(R"({"dtype":"F128","shape":[8],"data_offsets":[0,8]})"), ErrorCode::kInvalidFile,
         {"tensor \"t\"", "unknown dtype \"F128\""});
  reject(one(R"({"dtype":"U8","data_offsets":[0,8]})"), ErrorCode::kInvalidFile,
         {"\"shape\" missing"});
  reject(one(R"({"dtype":"U8","shape":[-8],"data_offsets":[0,8]})"), ErrorCode::kInvalidFile,
         {"tensor \"t\"", "shape[0] must be a non-negative integer", "-8"});
  reject(one(R"({"dtype":"U8","shape":[8.0],"data_offsets":[0,8]})"), ErrorCode::kInvalidFile,
         {"shape[0]", "floating-point"});
  reject(one(R"({"dtype":"U8","shape":["8"],"data_offsets":[0,8]})"), ErrorCode::kInvalidFile,
         {"shape[0]", "a string"});
  reject(one(R"({"dtype":"U8","shape":[1e30],"data_offsets":[0,8]})"), ErrorCode::kInvalidFile,
         {"shape[0]"});
  reject(one(R"({"dtype":"U8","shape":[4294967296,4294967296,2],"data_offsets":[0,8]})"),
         ErrorCode::kInvalidFile, {"overflows"});
  reject(one(R"({"dtype":"F32","shape":[4611686018427387904],"data_offsets":[0,8]})"),
         ErrorCode::kInvalidFile, {"overflows"});
  reject(one(R"({"dtype":"U8","shape":[9223372036854775808,0],"data_offsets":[0,0]})", 0),
         ErrorCode::kInvalidFile, {"too large"});
  reject(one(R"({"dtype":"U8","shape":[8],"data_offsets":[0]})"), ErrorCode::kInvalidFile,
         {"data_offsets\" must be an array [begin, end]"});
  reject(one(R"({"dtype":"U8","shape":[8],"data_offsets":[-1,8]})"), ErrorCode::kInvalidFile,
         {"data_offsets[0] must be a non-negative integer"});
  reject(one(R"({"dtype":"U8","shape":[8],"data_offsets":[0,"8"]})"), ErrorCode::kInvalidFile,
         {"data_offsets[1]"});
  reject(one(R"({"dtype":"U8","shape":[0],"data_offsets":[8,0]})"), ErrorCode::kInvalidFile,
         {"end 0 is before begin 8"});
  reject(one(R"({"dtype":"F32","shape":[3],"data_offsets":[0,8]})"), ErrorCode::kInvalidFile,
         {"hold 8 bytes", "needs 12"});
  // Sub-byte dtypes must fill whole bytes.
  reject(one(R"({"dtype":"F4","shape":[3],"data_offsets":[0,2]})", 2), ErrorCode::kInvalidFile,
         {"3 elements of F4", "whole number of bytes"});
  EXPECT_NO_THROW(
      SafetensorsFile::parse(one(R"({"dtype":"F4","shape":[4],"data_offsets":[0,2]})", 2)));
}

TEST(SafetensorsMalformed, Layout) {
  const std::string a = R"("a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]})";
  // Overlapping, with a hole, not starting at 0, past the end, trailing bytes.
  reject(test::safetensors_image(
             "{" + a + R"(,"b":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}})", Bytes(6)),
         ErrorCode::kInvalidFile, {"tensor \"b\"", "overlapping"});
  reject(test::safetensors_image(
             "{" + a + R"(,"b":{"dtype":"U8","shape":[4],"data_offsets":[6,10]}})", Bytes(10)),
         ErrorCode::kInvalidFile, {"tensor \"b\"", "a hole", "file byte"});
  reject(one(R"({"dtype":"U8","shape":[4],"data_offsets":[4,8]})"), ErrorCode::kInvalidFile,
         {"hole"});
  reject(one(R"({"dtype":"U8","shape":[16],"data_offsets":[0,16]})", 8), ErrorCode::kInvalidFile,
         {"tensor \"t\"", "past the end"});
  reject(one(R"({"dtype":"U8","shape":[8],"data_offsets":[0,8]})", 9), ErrorCode::kInvalidFile,
         {"1 trailing bytes"});
  reject(test::safetensors_image("{}", Bytes(3)), ErrorCode::kInvalidFile, {"3 trailing bytes"});
  // Zero-size tensors may share an offset.
  EXPECT_NO_THROW(SafetensorsFile::parse(test::safetensors_image(
      R"({"e":{"dtype":"F32","shape":[0],"data_offsets":[0,0]},"f":{"dtype":"F32","shape":[0,3],"data_offsets":[0,0]}})",
      {})));
}

TEST(SafetensorsMalformed, EveryTruncationIsRejected) {
  const Bytes full = test::make_safetensors(
      {{"a", "F32", {2, 2}, test::f32_bytes({1, 2, 3, 4})}, {"b", "I8", {3}, Bytes(3)}},
      {{"format", "pt"}});
  EXPECT_NO_THROW(SafetensorsFile::parse({full.data(), full.size()}));
  for (size_t n = 0; n < full.size(); ++n) {
    EXPECT_THROW(SafetensorsFile::parse({full.data(), n}), Error) << n << "-byte prefix";
  }
}

TEST(SafetensorsMalformed, RandomMutationsNeverCrash) {
  const Bytes base = test::make_safetensors(
      {{"a", "F32", {2, 2}, test::f32_bytes({1, 2, 3, 4})}, {"b", "BF16", {3}, Bytes(6)}},
      {{"format", "pt"}});
  std::mt19937_64 rng(7);
  int parsed = 0;
  for (int iter = 0; iter < 5000; ++iter) {
    Bytes b = base;
    for (int e = 0; e < 1 + static_cast<int>(rng() % 3); ++e) {
      b[rng() % b.size()] = static_cast<std::byte>("0123456789{}[],:\"-.e \xff"[rng() % 23]);
    }
    try {
      const SafetensorsFile f = SafetensorsFile::parse({b.data(), b.size()});
      ++parsed;
      for (const auto& t : f.tensors()) {
        try {
          (void)f.tensor(t).to_floats();
        } catch (const Error&) {
        }
      }
    } catch (const Error&) {
    }
  }
  std::printf("[ info ] %d of 5000 mutated files still parsed\n", parsed);
}

// --- indexes and folders -------------------------------------------------------------------------

Bytes shard(const std::string& tensor) {
  return test::make_safetensors({{tensor, "F32", {1}, test::f32_bytes({1})}});
}

TEST(SafetensorsMalformed, IndexFiles) {
  auto parse = [](const std::string& json) {
    return [json] { parse_safetensors_index(json, "index.json"); };
  };
  test::expect_error(parse("[]"), ErrorCode::kInvalidFile, {"index.json", "JSON object"});
  test::expect_error(parse("{}"), ErrorCode::kInvalidFile, {"weight_map"});
  test::expect_error(parse(R"({"weight_map":[]})"), ErrorCode::kInvalidFile, {"weight_map"});
  test::expect_error(parse(R"({"weight_map":{"a":3}})"), ErrorCode::kInvalidFile,
                     {"weight_map[\"a\"]", "file name"});
  test::expect_error(parse(R"({"weight_map":{"a":""}})"), ErrorCode::kInvalidFile, {"empty"});
  test::expect_error(parse(R"({"weight_map":{"a":"../x.safetensors"}})"), ErrorCode::kInvalidFile,
                     {"weight_map[\"a\"]", "\"..\""});
  test::expect_error(parse(R"({"weight_map":{"a":"sub/../../x.safetensors"}})"),
                     ErrorCode::kInvalidFile, {"\"..\""});
  test::expect_error(parse(R"({"weight_map":{"a":"/etc/passwd"}})"), ErrorCode::kInvalidFile,
                     {"absolute path"});
  test::expect_error(parse(R"({"weight_map":{"a":"..\\x.safetensors"}})"), ErrorCode::kInvalidFile,
                     {"backslash"});
  test::expect_error(parse(R"({"weight_map":{"a":"x\u0000.safetensors"}})"),
                     ErrorCode::kInvalidFile, {"NUL"});
  test::expect_error(parse(R"({"weight_map":{"a":"x","a":"y"}})"), ErrorCode::kInvalidFile,
                     {"duplicate key \"a\""});
}

TEST(SafetensorsMalformed, IndexedFolders) {
  test::TempDir dir;
  const auto model = dir / "model";
  test::write_file(model / "s1.safetensors", shard("a"));
  auto with_index = [&](const std::string& json) {
    test::write_file(model / "model.safetensors.index.json", std::string_view(json));
    return [model] { open_safetensors_source(model); };
  };
  test::expect_error(with_index(R"({"weight_map":{"a":"s1.safetensors","b":"s2.safetensors"}})"),
                     ErrorCode::kInvalidFile, {"shard \"s2.safetensors\" does not exist"});
  test::expect_error(with_index(R"({"weight_map":{"b":"s1.safetensors"}})"),
                     ErrorCode::kInvalidFile, {"tensor \"b\" is not in shard \"s1.safetensors\""});
  test::expect_error(with_index(R"({"weight_map":{}})"), ErrorCode::kInvalidFile, {"empty"});
  // A symlink that escapes the folder.
  test::write_file(dir / "outside.safetensors", shard("a"));
  std::filesystem::create_symlink("../outside.safetensors", model / "link.safetensors");
  test::expect_error(with_index(R"({"weight_map":{"a":"link.safetensors"}})"),
                     ErrorCode::kInvalidFile, {"link.safetensors", "outside the model folder"});
  test::expect_error(with_index(R"({"weight_map":{"a":"pytorch_model.bin"}})"),
                     ErrorCode::kUnsupported, {"pickle"});
  EXPECT_NO_THROW(with_index(R"({"weight_map":{"a":"s1.safetensors"}})")());
}

TEST(SafetensorsMalformed, UnindexedFolders) {
  test::TempDir dir;
  test::expect_error([&] { open_safetensors_source(dir.path()); }, ErrorCode::kInvalidFile,
                     {"no *.safetensors"});
  test::write_file(dir / "a.safetensors", shard("w"));
  test::write_file(dir / "b.safetensors", shard("w"));
  test::expect_error([&] { open_safetensors_source(dir.path()); }, ErrorCode::kInvalidFile,
                     {"tensor \"w\" is present both in", "a.safetensors", "b.safetensors"});
  test::TempDir escape;
  test::write_file(escape / "real" / "x.safetensors", shard("w"));
  std::filesystem::create_directories(escape / "model");
  std::filesystem::create_symlink("../real/x.safetensors", escape / "model" / "x.safetensors");
  test::expect_error([&] { open_safetensors_source(escape / "model"); }, ErrorCode::kInvalidFile,
                     {"outside the model folder"});
  test::expect_error([&] { open_safetensors_source(dir / "missing.safetensors"); }, ErrorCode::kIo,
                     {"missing.safetensors"});
}

// --- pickle
// ----------------------------------------------------------------------------------------

TEST(SafetensorsMalformed, PickleCheckpointsAreNeverOpened) {
  test::TempDir dir;
  // Refused by name: these paths do not even exist, so an attempt to open them would be kIo.
  for (const char* name : {"pytorch_model.bin", "adapter_model.bin", "model.pt", "x.pth",
                           "consolidated.00.pth", "model.ckpt"}) {
    test::expect_error([&] { open_safetensors_source(dir / name); }, ErrorCode::kUnsupported,
                       {name, "pickle"});
    test::expect_error([&] { SafetensorsFile::open(dir / name); }, ErrorCode::kUnsupported,
                       {"pickle"});
  }
  // Refused by magic, whatever the name says.
  using namespace std::string_view_literals;
  const Bytes pickle =
      ByteWriter().u8(0x80).u8(0x02).text("}q\x00(X\x06\x00\x00\x00weight"sv).take();
  const Bytes zip = ByteWriter().text("PK\x03\x04").zeros(60).take();
  const Bytes sevenz = ByteWriter().text("7z\xbc\xaf\x27\x1c").zeros(60).take();
  const Bytes gzip = ByteWriter().u8(0x1f).u8(0x8b).zeros(60).take();
  for (const auto& file : std::vector<std::pair<std::string, Bytes>>{{"p.safetensors", pickle},
                                                                     {"z.safetensors", zip},
                                                                     {"7.safetensors", sevenz},
                                                                     {"g.safetensors", gzip}}) {
    const std::string& name = file.first;
    test::write_file(dir / name, file.second);
    test::expect_error([&] { open_safetensors_source(dir / name); }, ErrorCode::kUnsupported,
                       {name, "pickle"});
  }
  // A folder with only pickle weights.
  test::TempDir folder;
  test::write_file(folder / "pytorch_model.bin", pickle);
  test::write_file(folder / "config.json", std::string_view("{}"));
  test::expect_error([&] { open_safetensors_source(folder.path()); }, ErrorCode::kUnsupported,
                     {"pickle"});
}

}  // namespace
}  // namespace hearth
