// The serving loop over a real Engine (a tiny synthetic model on the CPU): requests submitted
// from many threads at once are batched and each gets what it gets alone; cancelling and
// stopping end requests cleanly.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <thread>

#include "engine/server/serving_loop.h"
#include "tests/unit/quantizer/quantizer_test_model.h"
#include "tests/unit/server/serving_test_util.h"

namespace hearth::server {
namespace {

using test::drain;
using test::fixed_length_request;

namespace fs = std::filesystem;

class ServingLoopTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("hearth_serving_loop_" + std::to_string(getpid()));
    quantizer::test::write_tiny_model(dir_, quantizer::test::TinySpec{});
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }
  void SetUp() override {
    LoadOptions o;
    o.model_path = dir_;
    o.cpu_threads = 2;
    o.max_seq_len = 256;
    o.max_batch = 4;  // fewer slots than requests: some wait for room
    engine_.load(o);
  }

  static inline fs::path dir_;
  Engine engine_;
};

TEST_F(ServingLoopTest, RequestsFromManyThreadsGetWhatTheyGetAlone) {
  std::vector<GenerationRequest> requests;
  for (int i = 0; i < 12; ++i)
    requests.push_back(fixed_length_request("request " + std::to_string(i), 6 + i % 4));
  std::vector<GenerationResult> alone;
  for (const auto& r : requests) alone.push_back(engine_.generate(r));

  ServingLoop loop(engine_);
  std::vector<GenerationResult> served(requests.size());
  std::vector<std::string> streamed(requests.size());
  std::vector<std::thread> clients;
  for (size_t i = 0; i < requests.size(); ++i) {
    clients.emplace_back([&, i] {
      auto stream = loop.submit({requests[i]});
      std::vector<std::string> texts;
      served[i] = drain(*stream, 1, &texts)[0];
      streamed[i] = texts[0];
    });
  }
  for (auto& t : clients) t.join();
  for (size_t i = 0; i < requests.size(); ++i) {
    EXPECT_EQ(served[i].tokens, alone[i].tokens) << i;
    EXPECT_EQ(streamed[i], alone[i].text) << i;
  }
  EXPECT_EQ(loop.stats().waiting, 0);
  EXPECT_EQ(loop.stats().completed, static_cast<int64_t>(requests.size()));
}

TEST_F(ServingLoopTest, SeveralChoicesShareOneStream) {
  ServingLoop loop(engine_);
  GenerationRequest a = fixed_length_request("abc", 5);
  GenerationRequest b = fixed_length_request("a different prompt", 7);
  b.logprobs = 1;
  auto stream = loop.submit({a, b});
  const auto results = drain(*stream, 2);
  EXPECT_EQ(results[0].tokens.size(), 5u);
  EXPECT_EQ(results[1].tokens.size(), 7u);
  EXPECT_EQ(results[1].logprobs.size(), 7u);
}

TEST_F(ServingLoopTest, ARefusedRequestFailsAloneAndCancelEndsOne) {
  ServingLoop loop(engine_);
  GenerationRequest bad = fixed_length_request("x", 4);
  bad.sampling.temperature = -1;  // the engine refuses it
  auto stream = loop.submit({bad, fixed_length_request("fine", 3)});
  StreamEvent e;
  int failed = 0, done = 0;
  while (!stream->finished() && stream->next(e, std::chrono::seconds(30))) {
    failed += e.kind == StreamEvent::Kind::kFailed;
    done += e.kind == StreamEvent::Kind::kDone;
    if (e.kind == StreamEvent::Kind::kFailed) {
      EXPECT_EQ(e.choice, 0);
      EXPECT_EQ(e.code, ErrorCode::kInvalidArgument);
    }
  }
  EXPECT_EQ(failed, 1);
  EXPECT_EQ(done, 1);

  auto long_one = loop.submit({fixed_length_request("long", 200)});
  ASSERT_TRUE(long_one->next(e, std::chrono::seconds(30)));  // it runs
  long_one->cancel();
  const auto results = drain(*long_one, 1);
  EXPECT_EQ(results[0].finish, FinishReason::kCancelled);
  EXPECT_LT(results[0].tokens.size(), 200u);
}

// While a request is on its way in (an Arrival held), an idle loop holds back what was already
// submitted, so that both start in one step; with none on its way it steps at once. The wait is
// set long here, so that a loop that did not wait for the release would be seen stepping.
TEST_F(ServingLoopTest, AnIdleLoopWaitsForRequestsOnTheirWayIn) {
  ServingLoop loop(engine_, std::chrono::seconds(60));
  ServingLoop::Arrival on_its_way = loop.arrival();
  auto first = loop.submit({fixed_length_request("first", 3)});
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(loop.stats().steps, 0);  // waiting for the one on its way
  auto second = loop.submit({fixed_length_request("second", 3)});
  on_its_way.release();
  const auto a = drain(*first, 1);
  const auto b = drain(*second, 1);
  EXPECT_EQ(a[0].tokens.size(), 3u);
  EXPECT_EQ(b[0].tokens.size(), 3u);
  // One step prefilled both and sampled their first tokens, two more their others.
  EXPECT_EQ(loop.stats().steps, 3);

  const auto start = std::chrono::steady_clock::now();
  auto alone = loop.submit({fixed_length_request("alone", 2)});
  EXPECT_EQ(drain(*alone, 1)[0].tokens.size(), 2u);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
}

TEST_F(ServingLoopTest, StopEndsRunningRequestsAndRefusesNewOnes) {
  ServingLoop loop(engine_);
  auto running = loop.submit({fixed_length_request("until stopped", 240)});
  StreamEvent e;
  ASSERT_TRUE(running->next(e, std::chrono::seconds(30)));
  loop.stop(std::chrono::milliseconds(0));  // no grace: cancelled at once
  const auto results = drain(*running, 1);
  EXPECT_EQ(results[0].finish, FinishReason::kCancelled);
  EXPECT_THROW(loop.submit({fixed_length_request("late", 2)}), Error);
  EXPECT_TRUE(engine_.idle());
}

}  // namespace
}  // namespace hearth::server
