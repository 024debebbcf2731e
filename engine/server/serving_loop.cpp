#include "engine/server/serving_loop.h"

#include <algorithm>
#include <utility>

namespace hearth::server {

bool RequestStream::next(StreamEvent& event, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  if (!ready_.wait_for(lock, timeout, [&] { return !events_.empty(); })) return false;
  event = std::move(events_.front());
  events_.pop_front();
  return true;
}

bool RequestStream::finished() const {
  std::lock_guard lock(mutex_);
  return open_choices_ == 0 && events_.empty();
}

void RequestStream::push(StreamEvent event) {
  {
    std::lock_guard lock(mutex_);
    if (event.kind != StreamEvent::Kind::kText) --open_choices_;
    events_.push_back(std::move(event));
  }
  ready_.notify_all();
}

ServingLoop::Arrival::Arrival(ServingLoop* loop) : loop_(loop) {
  std::lock_guard lock(loop_->mutex_);
  ++loop_->arriving_;
}

ServingLoop::Arrival& ServingLoop::Arrival::operator=(Arrival&& other) noexcept {
  if (this != &other) {
    release();
    loop_ = std::exchange(other.loop_, nullptr);
  }
  return *this;
}

void ServingLoop::Arrival::release() {
  if (!loop_) return;
  {
    std::lock_guard lock(loop_->mutex_);
    --loop_->arriving_;
  }
  loop_->wake_.notify_one();
  loop_ = nullptr;
}

ServingLoop::ServingLoop(Engine& engine, std::chrono::microseconds arrival_wait)
    : engine_(engine), arrival_wait_(arrival_wait) {
  HEARTH_CHECK(engine_.loaded(), "the serving loop needs a loaded engine");
  stats_.memory = engine_.memory_usage();
  thread_ = std::thread([this] { run(); });
}

ServingLoop::~ServingLoop() {
  stop(std::chrono::milliseconds(0));
}

std::shared_ptr<RequestStream> ServingLoop::submit(std::vector<GenerationRequest> requests) {
  auto stream = std::make_shared<RequestStream>(static_cast<int>(requests.size()));
  {
    std::lock_guard lock(mutex_);
    if (stopping_) fail(ErrorCode::kUnsupported, "the server is shutting down");
    stats_.waiting += static_cast<int64_t>(requests.size());
    inbox_.push_back({std::move(requests), stream});
  }
  wake_.notify_one();
  return stream;
}

void ServingLoop::stop(std::chrono::milliseconds grace) {
  {
    std::lock_guard lock(mutex_);
    if (!stopping_) {
      stopping_ = true;
      deadline_ = std::chrono::steady_clock::now() + grace;
    } else {
      deadline_ = std::min(deadline_, std::chrono::steady_clock::now() + grace);
    }
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
}

bool ServingLoop::stopping() const {
  std::lock_guard lock(mutex_);
  return stopping_;
}

LoopStats ServingLoop::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

void ServingLoop::start_pending(std::deque<Pending>& pending) {
  for (Pending& p : pending) {
    for (size_t i = 0; i < p.requests.size(); ++i) {
      const int choice = static_cast<int>(i);
      auto active = std::make_unique<Active>();
      active->choice = choice;
      active->stream = p.stream;
      Active* a = active.get();
      RequestCallbacks callbacks;
      callbacks.on_logprobs = [a](const TokenLogprobs& lp) { a->unsent.push_back(lp); };
      callbacks.on_text = [a](const std::string& piece) {
        StreamEvent e;
        e.choice = a->choice;
        e.text = piece;
        e.logprobs = std::move(a->unsent);
        a->unsent.clear();
        a->stream->push(std::move(e));
      };
      try {
        a->id = engine_.submit(p.requests[i], std::move(callbacks));
        active_.push_back(std::move(active));
      } catch (const Error& error) {
        StreamEvent e;
        e.kind = StreamEvent::Kind::kFailed;
        e.choice = choice;
        e.code = error.code();
        e.error = error.what();
        {
          // Counted before the caller can see the event (stats agree with what it saw).
          std::lock_guard lock(mutex_);
          --stats_.waiting;
        }
        p.stream->push(std::move(e));
      }
    }
  }
}

void ServingLoop::fail_all(const Error& error) {
  {
    std::lock_guard lock(mutex_);
    stats_.waiting -= static_cast<int64_t>(active_.size());
  }
  for (const auto& a : active_) {
    engine_.cancel(a->id);
    StreamEvent e;
    e.kind = StreamEvent::Kind::kFailed;
    e.choice = a->choice;
    e.code = error.code();
    e.error = error.what();
    a->stream->push(std::move(e));
  }
  // The engine still holds the cancelled requests: run them out and drop their results.
  try {
    while (engine_.step()) {
    }
  } catch (const Error&) {
  }
  for (const auto& a : active_) engine_.take_result(a->id);
  active_.clear();
}

void ServingLoop::run() {
  auto last_memory = std::chrono::steady_clock::now();
  while (true) {
    std::deque<Pending> pending;
    bool past_deadline = false;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return !inbox_.empty() || !active_.empty() || stopping_; });
      if (active_.empty() && arriving_ > 0 && !stopping_) {
        // Idle, and more of a burst on its way: they start together.
        wake_.wait_for(lock, arrival_wait_, [&] { return arriving_ == 0 || stopping_; });
      }
      pending.swap(inbox_);
      past_deadline = stopping_ && std::chrono::steady_clock::now() >= deadline_;
      if (stopping_ && active_.empty() && pending.empty()) break;
    }
    start_pending(pending);
    for (const auto& a : active_) {
      if (past_deadline || a->stream->cancel_requested()) engine_.cancel(a->id);
    }
    try {
      engine_.step();
    } catch (const Error& error) {
      fail_all(error);
      continue;
    }
    std::vector<std::pair<std::shared_ptr<RequestStream>, StreamEvent>> done;
    std::erase_if(active_, [&](const std::unique_ptr<Active>& a) {
      std::optional<GenerationResult> result = engine_.take_result(a->id);
      if (!result) return false;
      StreamEvent e;
      e.kind = StreamEvent::Kind::kDone;
      e.choice = a->choice;
      e.result = std::move(*result);
      done.emplace_back(a->stream, std::move(e));
      return true;
    });
    const auto now = std::chrono::steady_clock::now();
    const bool refresh_memory = now - last_memory >= std::chrono::seconds(1);
    MemoryUsage memory;
    if (refresh_memory) {
      memory = engine_.memory_usage();
      last_memory = now;
    }
    {
      // Counted before the callers can see their results (stats agree with what they saw).
      std::lock_guard lock(mutex_);
      stats_.waiting -= static_cast<int64_t>(done.size());
      stats_.completed += static_cast<int64_t>(done.size());
      ++stats_.steps;
      if (refresh_memory) stats_.memory = memory;
    }
    for (auto& [stream, event] : done) stream->push(std::move(event));
  }
}

}  // namespace hearth::server
