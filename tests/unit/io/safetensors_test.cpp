// safetensors: files written by the `safetensors` package and by transformers' save_pretrained
// (fixtures from tests/reference/io_safetensors_reference.py), sharded with and without an
// index, zero-copy views, and the folder rules.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>

#include "engine/io/hf_config.h"
#include "engine/io/safetensors.h"
#include "engine/io/tensor_source.h"
#include "tests/unit/io/safetensors_test_util.h"

namespace hearth {
namespace {

using test::Bytes;
using test::StTensor;

uint64_t byte_checksum(std::span<const std::byte> raw) {
  uint64_t s = 0;
  for (size_t i = 0; i < raw.size(); ++i) s += static_cast<uint64_t>(raw[i]) * (i + 1);
  return s;
}

std::string hex(std::span<const std::byte> raw) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (std::byte b : raw) {
    s += digits[static_cast<uint8_t>(b) >> 4];
    s += digits[static_cast<uint8_t>(b) & 15];
  }
  return s;
}

class SafetensorsFixture : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    fixture_ = new nlohmann::json(test::load_fixture("safetensors_files.json"));
  }
  static void TearDownTestSuite() {
    delete fixture_;
    fixture_ = nullptr;
  }
  // Writes a fixture's files into the temp folder.
  void write_files(const nlohmann::json& files, const std::filesystem::path& dir) {
    for (const auto& [name, b64] : files.items()) {
      test::write_file(dir / name, test::from_base64(b64.get<std::string>()));
    }
  }
  static nlohmann::json* fixture_;
  test::TempDir tmp_;
};
nlohmann::json* SafetensorsFixture::fixture_ = nullptr;

TEST_F(SafetensorsFixture, ReadsEveryDtypeWrittenByTheReferenceWriter) {
  write_files(fixture_->at("files"), tmp_.path());
  const auto path = tmp_ / "mixed.safetensors";
  const auto& want = fixture_->at("expected").at("mixed.safetensors");
  const SafetensorsFile f = SafetensorsFile::open(path);
  using StringMap = std::map<std::string, std::string>;
  EXPECT_EQ(f.metadata(), want.at("metadata").get<StringMap>());
  EXPECT_EQ(f.tensors().size(), want.at("tensors").size());
  const auto src = open_safetensors_source(path);
  EXPECT_EQ(src->tensor_names().size(), want.at("tensors").size());
  for (const auto& [name, w] : want.at("tensors").items()) {
    SCOPED_TRACE(name);
    const TensorInfo info = src->info(name);
    EXPECT_EQ(info.stored_type, w.at("dtype").get<std::string>());
    EXPECT_EQ(dtype_name(info.dtype), w.at("dtype").get<std::string>());
    EXPECT_EQ(info.shape, w.at("shape").get<std::vector<int64_t>>());
    EXPECT_EQ(info.file, path.string());
    const HostTensor t = src->get(name);
    EXPECT_EQ(t.shape, info.shape);
    EXPECT_EQ(t.dtype, info.dtype);
    EXPECT_EQ(hex(t.bytes()), w.at("hex").get<std::string>());
  }
  EXPECT_EQ(src->info("scalar").shape, std::vector<int64_t>{});
  EXPECT_EQ(src->get("scalar").to_floats(), std::vector<float>{3.5f});
  EXPECT_EQ(src->get("empty").numel(), 0);
}

TEST_F(SafetensorsFixture, TensorsAreZeroCopyViewsThatOutliveTheSource) {
  write_files(fixture_->at("files"), tmp_.path());
  const auto path = tmp_ / "mixed.safetensors";
  const SafetensorsFile f = SafetensorsFile::open(path);
  const SafetensorsTensor* st = f.find("f32");
  ASSERT_NE(st, nullptr);
  const HostTensor view = f.tensor(*st);
  EXPECT_EQ(view.data, f.raw_data(*st).data());  // no copy
  EXPECT_NE(view.keep_alive, nullptr);
  HostTensor kept;
  {
    const auto src = open_safetensors_source(path);
    kept = src->get("f32");
  }
  const auto& want = fixture_->at("expected").at("mixed.safetensors").at("tensors").at("f32");
  EXPECT_EQ(hex(kept.bytes()), want.at("hex").get<std::string>());  // the mapping is still alive
}

TEST_F(SafetensorsFixture, RefusesToLoadDtypesHearthDoesNotSupport) {
  write_files(fixture_->at("files"), tmp_.path());
  const auto path = tmp_ / "bool.safetensors";
  const SafetensorsFile f = SafetensorsFile::open(path);  // a valid file
  ASSERT_EQ(f.tensors().size(), 1u);
  EXPECT_EQ(f.tensors()[0].dtype_name, "BOOL");
  EXPECT_FALSE(f.tensors()[0].dtype.has_value());
  test::expect_error([&] { f.tensor(f.tensors()[0]); }, ErrorCode::kUnsupported, {"BOOL", "mask"});
  test::expect_error([&] { open_safetensors_source(path); }, ErrorCode::kUnsupported,
                     {"BOOL", "mask", "bool.safetensors"});
}

void expect_tiny_llama(const TensorSource& src, const nlohmann::json& want) {
  auto names = src.tensor_names();
  EXPECT_EQ(names.size(), want.size());
  for (const auto& [name, w] : want.items()) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(src.has(name));
    const TensorInfo info = src.info(name);
    EXPECT_EQ(info.stored_type, w.at("dtype").get<std::string>());
    EXPECT_EQ(info.shape, w.at("shape").get<std::vector<int64_t>>());
    const HostTensor t = src.get(name);
    EXPECT_EQ(t.nbytes(), w.at("nbytes").get<size_t>());
    EXPECT_EQ(byte_checksum(t.bytes()), w.at("checksum").get<uint64_t>());
  }
}

TEST_F(SafetensorsFixture, ReadsAShardedSavePretrainedFolder) {
  const auto& tiny = fixture_->at("tiny_llama");
  write_files(tiny.at("files"), tmp_.path());
  ASSERT_TRUE(std::filesystem::exists(tmp_ / "model.safetensors.index.json"));
  const auto src = open_safetensors_source(tmp_.path());
  expect_tiny_llama(*src, tiny.at("tensors"));
  EXPECT_EQ(src->file_bytes(), 53568u);  // the index's metadata.total_size
  // Which shard holds a tensor is what the index says.
  EXPECT_EQ(src->info("lm_head.weight").file, (tmp_ / "model-00003-of-00003.safetensors").string());

  // The folder's config.json, as transformers 5 writes it (rope_parameters, "dtype").
  const ModelConfig c = parse_hf_config(tmp_.path());
  EXPECT_EQ(c.architecture, "LlamaForCausalLM");
  EXPECT_EQ(c.vocab_size, 128);
  EXPECT_EQ(c.hidden_size, 32);
  EXPECT_EQ(c.intermediate_size, 64);
  EXPECT_EQ(c.num_layers, 2);
  EXPECT_EQ(c.num_heads, 4);
  EXPECT_EQ(c.num_kv_heads, 2);
  EXPECT_EQ(c.head_dim, 8);
  EXPECT_EQ(c.max_position_embeddings, 256);
  EXPECT_DOUBLE_EQ(c.rope_theta, 50000.0);
  EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-5);
  EXPECT_EQ(c.torch_dtype, "bfloat16");
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_EQ(c.bos_token_id, 1);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int32_t>{2, 5}));  // generation_config's list wins
  EXPECT_EQ(c.name, tmp_.path().filename().string());
}

TEST_F(SafetensorsFixture, ReadsAFolderOfShardsWithoutAnIndex) {
  const auto& tiny = fixture_->at("tiny_llama");
  write_files(tiny.at("files"), tmp_.path());
  std::filesystem::remove(tmp_ / "model.safetensors.index.json");
  const auto src = open_safetensors_source(tmp_.path());
  expect_tiny_llama(*src, tiny.at("tensors"));
}

TEST(Safetensors, ReadsExl2StyleShardsAndSingleFileFolders) {
  test::TempDir dir;
  test::write_file(dir / "output-00001-of-00002.safetensors",
                   test::make_safetensors({{"a", "F32", {2}, test::f32_bytes({1, 2})}}));
  test::write_file(dir / "output-00002-of-00002.safetensors",
                   test::make_safetensors({{"b", "F32", {1}, test::f32_bytes({3})}}));
  test::write_file(dir / "config.json", std::string_view("{}"));
  const auto src = open_safetensors_source(dir.path());
  EXPECT_EQ(src->tensor_names(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(src->get("b").to_floats(), std::vector<float>{3});

  test::TempDir single;
  test::write_file(
      single / "model.safetensors",
      test::make_safetensors({{"x", "F16", {1}, test::ByteWriter().u16(0x3c00).take()}}));
  EXPECT_EQ(open_safetensors_source(single.path())->get("x").to_floats(), std::vector<float>{1});
}

TEST(Safetensors, CopiesUnalignedDataInsteadOfMisaligningIt) {
  // Header not padded: the data buffer starts at an odd offset.
  std::string header = R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  if ((header.size() + 8) % 2 == 0) header += ' ';
  const Bytes image = test::safetensors_image(header, test::f32_bytes({1.5f, -2}));
  const SafetensorsFile f = SafetensorsFile::parse({image.data(), image.size()}, "odd");
  const HostTensor t = f.tensor(f.tensors()[0]);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data) % alignof(float), 0u);
  EXPECT_EQ(t.to_floats(), (std::vector<float>{1.5f, -2}));
}

TEST(Safetensors, ParsesAnIndex) {
  const auto index = parse_safetensors_index(
      R"({"metadata":{"total_size":8},"weight_map":{"a":"s1.safetensors","b":"s2.safetensors",)"
      R"("c":"s1.safetensors","d":"sub/s3.safetensors"}})",
      "index.json");
  EXPECT_EQ(index.shards,
            (std::vector<std::string>{"s1.safetensors", "s2.safetensors", "sub/s3.safetensors"}));
  EXPECT_EQ(index.weight_map.at("c"), "s1.safetensors");
}

TEST(Safetensors, AcceptsHuggingFaceCacheSnapshots) {
  // hub layout: models--x/snapshots/<rev>/model.safetensors -> ../../blobs/<hash>
  test::TempDir root;
  const auto blobs = root / "models--x/blobs";
  const auto snapshot = root / "models--x/snapshots/abc";
  test::write_file(blobs / "1234",
                   test::make_safetensors({{"w", "F32", {1}, test::f32_bytes({7})}}));
  std::filesystem::create_directories(snapshot);
  std::filesystem::create_symlink("../../blobs/1234", snapshot / "model.safetensors");
  EXPECT_EQ(open_safetensors_source(snapshot)->get("w").to_floats(), std::vector<float>{7});
}

TEST(Safetensors, RecognisesPickleNamesAndMagic) {
  EXPECT_TRUE(is_pickle_checkpoint_name("pytorch_model.bin"));
  EXPECT_TRUE(is_pickle_checkpoint_name("/x/adapter_model.BIN"));
  EXPECT_TRUE(is_pickle_checkpoint_name("model.pt"));
  EXPECT_TRUE(is_pickle_checkpoint_name("model.pth"));
  EXPECT_FALSE(is_pickle_checkpoint_name("model.safetensors"));
  const auto head = [](std::initializer_list<int> v) {
    Bytes b;
    for (int x : v) b.push_back(static_cast<std::byte>(x));
    return b;
  };
  const Bytes pickle = head({0x80, 0x04, 0x95}), zip = head({'P', 'K', 3, 4}),
              sevenz = head({'7', 'z', 0xBC, 0xAF, 0x27, 0x1C}), st = head({0x40, 0, 0, 0});
  EXPECT_TRUE(looks_like_pickle_or_archive(pickle));
  EXPECT_TRUE(looks_like_pickle_or_archive(zip));
  EXPECT_TRUE(looks_like_pickle_or_archive(sevenz));
  EXPECT_FALSE(looks_like_pickle_or_archive(st));
}

TEST(Safetensors, HeaderLengthWhoseFirstByteLooksLikePickleIsStillSafetensors) {
  // N = 0x0280 = 640 starts with bytes 0x80 0x02, like a protocol-2 pickle.
  std::string header = R"({"t":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})";
  header.resize(640, ' ');
  const Bytes image = test::safetensors_image(header, test::ByteWriter().u8(9).take());
  ASSERT_EQ(static_cast<uint8_t>(image[0]), 0x80);
  ASSERT_EQ(static_cast<uint8_t>(image[1]), 0x02);
  const SafetensorsFile f = SafetensorsFile::parse({image.data(), image.size()});
  EXPECT_EQ(f.tensors().size(), 1u);
}

}  // namespace
}  // namespace hearth

namespace hearth {
namespace {

// 200 000 tensors (a 10 MB header) must parse in linear time: a DOM parser that re-scans the
// parent object at each member (nlohmann's callback parser) takes minutes here.
TEST(Safetensors, LargeHeadersParseInLinearTime) {
  std::string header = "{";
  for (int i = 0; i < 200000; ++i) {
    if (i) header += ',';
    header += "\"model.layers." + std::to_string(i) +
              ".weight\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[" + std::to_string(i) +
              "," + std::to_string(i + 1) + "]}";
  }
  header += "}";
  const Bytes image = test::safetensors_image(header, Bytes(200000));
  const auto start = std::chrono::steady_clock::now();
  const SafetensorsFile f = SafetensorsFile::parse({image.data(), image.size()});
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("[ info ] %zu-byte header, %zu tensors: %.3f s\n", header.size(), f.tensors().size(),
              s);
  EXPECT_EQ(f.tensors().size(), 200000u);
  EXPECT_EQ(f.find("model.layers.123456.weight")->begin, 123456u);
  EXPECT_EQ(f.find("model.layers.123456.weigh"), nullptr);
  EXPECT_LT(s, 2.0 * test::kSlowdown);
}

}  // namespace
}  // namespace hearth
