// An OpenAiServer over a serving loop that another user shares (as the desktop app's chat does):
// both users' requests run in one batch, and stopping the server ends only its own requests.
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <thread>

#include "engine/server/openai_server.h"
#include "engine/server/serving_loop.h"
#include "tests/unit/quantizer/quantizer_test_model.h"
#include "tests/unit/server/serving_test_util.h"

namespace hearth::server {
namespace {

using test::drain;
using test::fixed_length_request;

namespace fs = std::filesystem;
using nlohmann::json;

class SharedLoopServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("hearth_shared_loop_" + std::to_string(getpid()));
    quantizer::test::write_tiny_model(dir_, quantizer::test::TinySpec{});
    LoadOptions o;
    o.model_path = dir_;
    o.cpu_threads = 2;
    o.max_seq_len = 4096;
    o.max_batch = 4;
    engine_.load(o);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
  Engine engine_;
};

TEST_F(SharedLoopServerTest, ServerAndDirectUsersShareTheLoop) {
  const GenerationResult alone = engine_.generate(fixed_length_request("shared prompt", 12));

  ServingLoop loop(engine_);
  ServerOptions options;
  options.port = 0;
  auto server = std::make_unique<OpenAiServer>(loop, options);
  EXPECT_EQ(server->requests_in_flight(), 0);

  // A direct user's long request runs while the server answers.
  auto direct = loop.submit({fixed_length_request("a long direct request", 300)});
  httplib::Client client("127.0.0.1", server->port());
  client.set_read_timeout(60, 0);
  const json body = {
      {"prompt", "shared prompt"}, {"max_tokens", 12}, {"temperature", 0}, {"ignore_eos", true}};
  auto res = client.Post("/v1/completions", body.dump(), "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(json::parse(res->body)["choices"][0]["text"], alone.text);
  // Counted after the response is written, which the client may see first.
  for (int i = 0; i < 500 && server->requests_served() < 1; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_GE(server->requests_served(), 1);

  // Stopping the server leaves the loop and the direct request running.
  server->stop();
  EXPECT_FALSE(loop.stopping());
  EXPECT_EQ(drain(*direct, 1)[0].finish, FinishReason::kLength);
  auto after = loop.submit({fixed_length_request("shared prompt", 12)});
  EXPECT_EQ(drain(*after, 1)[0].tokens, alone.tokens);
}

TEST_F(SharedLoopServerTest, StoppingTheServerCancelsItsOwnRequestsOnly) {
  ServingLoop loop(engine_);
  ServerOptions options;
  options.port = 0;
  options.shutdown_grace = std::chrono::milliseconds(0);
  OpenAiServer server(loop, options);
  auto direct = loop.submit({fixed_length_request("direct", 120)});

  std::thread client_thread([port = server.port()] {
    httplib::Client client("127.0.0.1", port);
    client.set_read_timeout(60, 0);
    const json body = {{"prompt", "x"}, {"max_tokens", 4000}, {"ignore_eos", true}};
    auto res = client.Post("/v1/completions", body.dump(), "application/json");
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200) << res->body;
    const json answer = json::parse(res->body);  // leading keep-alive spaces are JSON's
    EXPECT_EQ(answer["choices"][0]["finish_reason"], "stop");
    EXPECT_LT(answer["usage"]["completion_tokens"].get<int64_t>(), 4000);
  });
  while (server.requests_in_flight() == 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  server.stop();
  client_thread.join();
  EXPECT_EQ(drain(*direct, 1)[0].finish, FinishReason::kLength);
}

TEST_F(SharedLoopServerTest, APortInUseIsRefused) {
  // cpp-httplib's SO_REUSEPORT let a second server bind the port and take half its clients.
  ServingLoop loop(engine_);
  ServerOptions options;
  options.port = 0;
  OpenAiServer first(loop, options);
  options.port = first.port();
  try {
    OpenAiServer second(loop, options);
    ADD_FAILURE() << "a second server bound port " << options.port;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_NE(std::string(e.what()).find(std::to_string(options.port)), std::string::npos);
  }
}

TEST_F(SharedLoopServerTest, ABurstOfClientsIsServedWhileTheEngineIsBusy) {
  // cpp-httplib's own listen backlog (5) reset connections of such a burst.
  ServingLoop loop(engine_);
  ServerOptions options;
  options.port = 0;
  OpenAiServer server(loop, options);
  constexpr int kClients = 48;
  std::vector<int> status(kClients, 0);
  std::vector<std::thread> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back([&, i] {
      httplib::Client client("127.0.0.1", server.port());
      client.set_read_timeout(60, 0);
      const json body = {{"prompt", "burst " + std::to_string(i)},
                         {"max_tokens", 4},
                         {"ignore_eos", true},
                         {"stream", true}};
      auto res = client.Post("/v1/completions", body.dump(), "application/json");
      status[i] = res ? res->status : -static_cast<int>(res.error());
    });
  }
  for (auto& t : clients) t.join();
  for (int i = 0; i < kClients; ++i) EXPECT_EQ(status[i], 200) << "client " << i;
}

}  // namespace
}  // namespace hearth::server
