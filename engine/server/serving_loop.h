// Drives one loaded Engine from a thread of its own, so that requests arriving from many threads
// (the HTTP server's handlers) are batched together: a caller submits the requests of one API
// call and reads their events (text pieces, log-probabilities, results) from a RequestStream,
// while the loop thread submits, steps and delivers. Between steps it takes new requests and
// cancellations, so a request joins the running batch as soon as the cache has room.
//
// While the loop runs, only its thread calls the Engine's mutating functions; other threads may
// use the Engine's const ones (encode_prompt, info, tokenizer) to prepare requests.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "engine/api/engine.h"
#include "engine/core/error.h"

namespace hearth::server {

struct StreamEvent {
  enum class Kind {
    kText,    // a piece of a choice's text, with the log-probabilities sampled since the last
    kDone,    // a choice ended: its whole result
    kFailed,  // a choice could not run: `error` says why
  };
  Kind kind = Kind::kText;
  int choice = 0;  // index into the submitted requests
  std::string text;
  std::vector<TokenLogprobs> logprobs;
  GenerationResult result;
  ErrorCode code = ErrorCode::kInternal;
  std::string error;
};

// The events of one submission, in the order they happened. Thread-safe.
class RequestStream {
 public:
  explicit RequestStream(int choices) : open_choices_(choices) {}
  // Waits up to `timeout` for the next event; false when none came (or all are delivered).
  bool next(StreamEvent& event, std::chrono::milliseconds timeout);
  // Whether every choice has ended and every event was taken.
  bool finished() const;
  // Ends the submission's requests at the loop's next step (FinishReason::kCancelled).
  void cancel() { cancel_requested_ = true; }
  bool cancel_requested() const { return cancel_requested_; }

  // The loop's side.
  void push(StreamEvent event);

 private:
  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<StreamEvent> events_;
  int open_choices_;
  std::atomic<bool> cancel_requested_{false};
};

struct LoopStats {
  int64_t waiting = 0;  // submitted requests not yet ended
  int64_t completed = 0;
  int64_t steps = 0;   // engine steps taken
  MemoryUsage memory;  // as of the latest step
};

class ServingLoop {
 public:
  // `engine` must be loaded and must outlive the loop.
  // `arrival_wait`: the longest an idle loop holds submitted requests back while others are on
  // their way in (arrival()).
  explicit ServingLoop(Engine& engine,
                       std::chrono::microseconds arrival_wait = kDefaultArrivalWait);
  ~ServingLoop();  // stop(0)
  ServingLoop(const ServingLoop&) = delete;
  ServingLoop& operator=(const ServingLoop&) = delete;

  // A request on its way in: a caller that has it (an HTTP handler parsing and tokenizing) holds
  // one until its submit() returns. While any is held, a loop with nothing running waits for them
  // (at most arrival_wait) before stepping, so that a burst of requests shares its first step: the
  // first alone would make the others wait a whole step (13 ms for 64 tokens of an 8B model) for
  // their own. A running loop never waits.
  class Arrival {
   public:
    Arrival() = default;
    explicit Arrival(ServingLoop* loop);
    Arrival(Arrival&& other) noexcept : loop_(std::exchange(other.loop_, nullptr)) {}
    Arrival& operator=(Arrival&& other) noexcept;
    ~Arrival() { release(); }
    void release();

   private:
    ServingLoop* loop_ = nullptr;
  };
  Arrival arrival() { return Arrival(this); }
  static constexpr std::chrono::microseconds kDefaultArrivalWait{5000};

  // Queues the requests of one call (choice i = requests[i]). Requests the engine refuses end
  // at once with a kFailed event. Throws Error(kUnsupported) once the loop is stopping.
  std::shared_ptr<RequestStream> submit(std::vector<GenerationRequest> requests);
  // Stops taking requests, lets running ones finish for up to `grace`, cancels the rest, and
  // joins the thread. Every stream still gets its kDone events.
  void stop(std::chrono::milliseconds grace);
  bool stopping() const;
  LoopStats stats() const;
  Engine& engine() const { return engine_; }

 private:
  struct Pending {
    std::vector<GenerationRequest> requests;
    std::shared_ptr<RequestStream> stream;
  };
  struct Active {
    RequestId id = 0;
    int choice = 0;
    std::shared_ptr<RequestStream> stream;
    std::vector<TokenLogprobs> unsent;  // sampled, their text not yet emitted
  };
  void run();
  void start_pending(std::deque<Pending>& pending);
  void fail_all(const Error& error);

  Engine& engine_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Pending> inbox_;
  bool stopping_ = false;
  int arriving_ = 0;  // Arrivals held
  std::chrono::microseconds arrival_wait_;
  std::chrono::steady_clock::time_point deadline_;
  std::vector<std::unique_ptr<Active>> active_;  // the loop thread's alone
  LoopStats stats_;
  std::thread thread_;
};

}  // namespace hearth::server
