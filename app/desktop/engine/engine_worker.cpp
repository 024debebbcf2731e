#include "app/desktop/engine/engine_worker.h"

#include <QFileInfo>
#include <algorithm>
#include <chrono>
#include <thread>

#include "app/desktop/engine/engine_convert.h"
#include "app/desktop/engine/server_host.h"

#if HEARTH_WITH_SERVER
#include "engine/server/serving_loop.h"
#endif

namespace hearth::app {

EngineWorker::EngineWorker(int batchIntervalMs, QObject* parent)
    : QObject(parent),
      serverHost_(std::make_shared<ServerHost>()),
      batchIntervalMs_(batchIntervalMs) {}

EngineWorker::~EngineWorker() {
  stopServing();
}

hearth::Engine& EngineWorker::engine() {
  if (!engine_) engine_ = std::make_unique<hearth::Engine>();
  return *engine_;
}

EngineFailure EngineWorker::describeLoadFailure(const hearth::Error& e,
                                                const hearth::LoadOptions& options) {
  EngineFailure f = toFailure(e);
  if (!f.outOfMemory) return f;
  // The plan gives the numbers behind the error: what the load needed and what was free.
  try {
    const hearth::MemoryPlan plan = hearth::Engine::plan(options);
    f.needed = plan.needed();
    f.available = plan.device_free;
    f.advice = QString::fromStdString(plan.advice);
    f.deviceName = QString::fromStdString(plan.device_name);
  } catch (const std::exception&) {
    // The message of the original error still says what happened.
  }
  return f;
}

void EngineWorker::load(const LoadJob& job) {
  // The adapters are loaded one by one once the model is: one that does not fit this model is
  // reported as such, and the model loads all the same.
  hearth::LoadOptions options = job.options;
  QVector<AdapterChoice> wanted;
  for (const hearth::AdapterSpec& a : options.adapters)
    wanted.push_back({QString::fromStdString(a.path.string()), a.weight});
  options.adapters.clear();
  QElapsedTimer sinceProgress;
  sinceProgress.start();
  const auto progress = [&](const hearth::LoadProgress& p) {
    if (sinceProgress.elapsed() < 50 && p.done < p.total) return;
    sinceProgress.restart();
    emit loadProgress(job.id, QString::fromStdString(p.stage), p.done, p.total);
  };
  stopServing();
  adapters_.clear();
  try {
    engine().load(options, progress, job.cancel);
    const AdapterReport adapters = changeAdapters(wanted);
    startServing();
    ModelSummary s = toSummary(engine().info());
    s.maxSeqLen = engine().max_seq_len();
    s.deviceName =
        options.device == hearth::DeviceKind::kCuda ? QStringLiteral("GPU") : QStringLiteral("CPU");
    modelName_ = s.name;
    emit loadFinished(job.id, s, currentMemory());
    emit adaptersApplied(job.id, adapters);
  } catch (const hearth::Error& e) {
    stopServing();
    adapters_.clear();
    if (engine_) engine_->unload();  // nothing stays loaded after a failure
    emit loadFailed(job.id, describeLoadFailure(e, options),
                    e.code() == hearth::ErrorCode::kCancelled || job.cancel.cancelled());
  } catch (const std::exception& e) {
    stopServing();
    adapters_.clear();
    if (engine_) engine_->unload();
    emit loadFailed(job.id, toFailure(e), false);
  }
}

AdapterReport EngineWorker::changeAdapters(const QVector<AdapterChoice>& wanted) {
  AdapterReport report;
  const auto find = [](const auto& list, const QString& path) {
    return std::find_if(list.cbegin(), list.cend(), [&](const auto& a) { return a.path == path; });
  };
  QVector<LoadedAdapter> unload;
  QVector<AdapterChoice> reweigh, load;
  for (const LoadedAdapter& a : adapters_)
    if (find(wanted, a.path) == wanted.cend()) unload.push_back(a);
  for (const AdapterChoice& c : wanted) {
    const auto held = find(adapters_, c.path);
    if (held == adapters_.cend())
      load.push_back(c);
    else if (float(held->weight) != float(c.weight))
      reweigh.push_back(c);
  }
  if (unload.isEmpty() && reweigh.isEmpty() && load.isEmpty()) {
    report.loaded = adapters_;
    return report;
  }
  report.changed = true;
  QElapsedTimer clock;
  clock.start();
#if HEARTH_WITH_SERVER
  const bool serving = loop_ != nullptr;
#else
  const bool serving = false;
#endif
  if (serving) stopServing();
  const auto refuse = [&](const QString& path, const std::exception& e) {
    report.problems.insert(path, QString::fromUtf8(e.what()));
  };
  // Unloaded rather than kept at weight 0: the adapter's memory goes back to the device and its
  // slot (Engine::kMaxAdapters) to the next one, and what the engine holds is what the local
  // server's clients get too. Loading one again takes milliseconds.
  for (const LoadedAdapter& a : unload) {
    try {
      engine().unload_adapter(a.id);
      adapters_.erase(find(adapters_, a.path));
    } catch (const std::exception& e) {
      refuse(a.path, e);
    }
  }
  for (const AdapterChoice& c : reweigh) {
    try {
      const auto held = find(adapters_, c.path);
      engine().set_adapter_weight(held->id, float(c.weight));
      adapters_[held - adapters_.cbegin()].weight = c.weight;
    } catch (const std::exception& e) {
      refuse(c.path, e);
    }
  }
  for (const AdapterChoice& c : load) {
    try {
      LoadedAdapter a;
      a.path = c.path;
      a.weight = c.weight;
      a.id = engine().load_adapter(c.path.toStdString(), float(c.weight));
      for (const hearth::AdapterInfo& info : engine().adapters())
        if (info.id == a.id) a.name = QString::fromStdString(info.name);
      if (a.name.isEmpty()) a.name = QFileInfo(c.path).fileName();
      adapters_.push_back(a);
    } catch (const std::exception& e) {
      refuse(c.path, e);
    }
  }
  if (serving) startServing();
  report.seconds = clock.nsecsElapsed() / 1e9;
  report.loaded = adapters_;
  return report;
}

void EngineWorker::applyAdapters(const AdapterJob& job) {
  AdapterReport report;
  if (!engine_ || !engine_->loaded())
    report.error = QStringLiteral("no model is loaded");
  else
    report = changeAdapters(job.adapters);
  emit adaptersApplied(job.id, report);
  if (report.changed) emit memorySampled(currentMemory());
}

QVector<AdapterUse> EngineWorker::adaptersInUse() const {
  QVector<AdapterUse> out;
  for (const LoadedAdapter& a : adapters_)
    if (a.weight != 0) out.push_back({a.name, a.path, a.weight});
  return out;
}

void EngineWorker::startServing() {
#if HEARTH_WITH_SERVER
  loop_ = std::make_shared<hearth::server::ServingLoop>(engine());
  serverHost_->attach(*loop_);
#endif
}

void EngineWorker::stopServing() {
#if HEARTH_WITH_SERVER
  serverHost_->detach();
  if (loop_) {
    // Nothing of the chat runs here now (this thread waits on the chat's streams), so nothing
    // is left for a grace period.
    loop_->stop(std::chrono::milliseconds(0));
    loop_.reset();
  }
#endif
}

MemorySnapshot EngineWorker::currentMemory() const {
#if HEARTH_WITH_SERVER
  if (loop_) {
    // The engine is the loop's: its figures as of the loop's latest step, and the device's free
    // memory now (a query of the device alone, safe beside the loop's thread).
    hearth::MemoryUsage usage = loop_->stats().memory;
    try {
      const hearth::LoadOptions& o = engine_->load_options();
      const hearth::DeviceMemoryInfo device =
          hearth::Engine::device_memory(o.device, o.cuda_device);
      usage.device_free = device.free_bytes;
      usage.device_total = device.total_bytes;
    } catch (const hearth::Error&) {
      // The loop's figure stays.
    }
    return toSnapshot(usage);
  }
#endif
  return toSnapshot(engine_->memory_usage());
}

hearth::GenerationResult EngineWorker::run(const hearth::GenerationRequest& request,
                                           const std::function<void(const std::string&)>& onText,
                                           const std::function<void()>& onIdle,
                                           const hearth::CancelToken& cancel) {
#if HEARTH_WITH_SERVER
  using Kind = hearth::server::StreamEvent::Kind;
  using std::chrono::milliseconds;
  const std::shared_ptr<hearth::server::RequestStream> stream = loop_->submit({request});
  const milliseconds pause(std::clamp(batchIntervalMs_, 1, 30));
  bool texts = false;
  hearth::server::StreamEvent event;
  while (true) {
    if (cancel.cancelled() && !stream->cancel_requested()) stream->cancel();
    // Until the first piece, this thread is woken by it (its time says when the prompt was
    // processed); after it, it wakes once a pause and takes what came meanwhile: woken at every
    // token, it would take a core from the engine's threads each time (they spin, on every core).
    if (stream->next(event, texts ? milliseconds(0) : milliseconds(10))) {
      switch (event.kind) {
        case Kind::kText:
          texts = true;
          onText(event.text);
          continue;
        case Kind::kDone:
          return std::move(event.result);
        case Kind::kFailed:
          throw hearth::Error(event.code, event.error);
      }
    }
    onIdle();
    if (texts) std::this_thread::sleep_for(pause);
  }
#else
  (void)onIdle;
  return engine().generate(request, onText, cancel);
#endif
}

void EngineWorker::unload() {
  stopServing();
  adapters_.clear();
  if (engine_) engine_->unload();
  modelName_.clear();
  emit unloaded();
}

void EngineWorker::sampleMemory() {
  if (engine_ && engine_->loaded()) emit memorySampled(currentMemory());
}

void EngineWorker::generate(const GenerateJob& job) {
  QElapsedTimer clock;
  clock.start();
  QElapsedTimer sinceBatch;
  sinceBatch.start();
  QElapsedTimer sinceMemory;
  sinceMemory.start();
  QString batch;
  QString streamed;  // everything sent so far: the answer, if the request is cancelled
  qint64 pieces = 0;
  double firstPiece = -1;
  const auto flush = [&] {
    if (batch.isEmpty()) return;
    emit textStreamed(job.id, batch, pieces, clock.nsecsElapsed() / 1e9, firstPiece);
    batch.clear();
    sinceBatch.restart();
  };
  // Live memory figures while a long answer runs.
  const auto sampleWhileRunning = [&] {
    if (sinceMemory.elapsed() < 1000) return;
    sinceMemory.restart();
    emit memorySampled(currentMemory());
  };
  const auto onText = [&](const std::string& piece) {
    if (firstPiece < 0) firstPiece = clock.nsecsElapsed() / 1e9;
    ++pieces;
    const QString text = QString::fromStdString(piece);
    batch += text;
    streamed += text;
    // The first piece goes at once: it says the prompt is processed.
    if (pieces == 1 || sinceBatch.elapsed() >= batchIntervalMs_) flush();
    sampleWhileRunning();
  };
  // Between pieces: text that waited a whole interval goes out without waiting for the next.
  const auto onIdle = [&] {
    if (sinceBatch.elapsed() >= batchIntervalMs_) flush();
    sampleWhileRunning();
  };
  try {
    if (!engine().loaded()) hearth::fail(hearth::ErrorCode::kInvalidArgument, "no model is loaded");
    // Tokenized here, once, so that the prompt's length is known while it runs.
    hearth::GenerationRequest request = job.request;
    request.prompt_tokens = engine().encode_prompt(request);
    emit promptReady(job.id, qint64(request.prompt_tokens.size()));
    clock.restart();
    const hearth::GenerationResult result = run(request, onText, onIdle, job.cancel);
    flush();
    const MessageStats stats = toStats(result, modelName_);
    emit generationFinished(job.id, QString::fromStdString(result.text), stats,
                            result.stats.prompt_tokens + result.stats.generated_tokens);
  } catch (const hearth::Error& e) {
    flush();
    if (e.code() == hearth::ErrorCode::kCancelled) {
      // Stopped by the user before the engine produced a result: what streamed is the answer.
      MessageStats stats;
      stats.generatedTokens = pieces;
      stats.decodeSeconds = firstPiece >= 0 ? clock.nsecsElapsed() / 1e9 - firstPiece : 0;
      stats.finishReason = QStringLiteral("cancelled");
      stats.model = modelName_;
      stats.adapters = adaptersInUse();
      emit generationFinished(job.id, streamed, stats, -1);
    } else {
      emit generationFailed(job.id, toFailure(e));
    }
  } catch (const std::exception& e) {
    flush();
    emit generationFailed(job.id, toFailure(e));
  }
  if (engine_ && engine_->loaded()) emit memorySampled(currentMemory());
}

}  // namespace hearth::app
