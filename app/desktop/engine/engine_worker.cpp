#include "app/desktop/engine/engine_worker.h"

#include "app/desktop/engine/engine_convert.h"

namespace hearth::app {

EngineWorker::EngineWorker(int batchIntervalMs, QObject* parent)
    : QObject(parent), batchIntervalMs_(batchIntervalMs) {}

EngineWorker::~EngineWorker() = default;

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
  QElapsedTimer sinceProgress;
  sinceProgress.start();
  const auto progress = [&](const hearth::LoadProgress& p) {
    if (sinceProgress.elapsed() < 50 && p.done < p.total) return;
    sinceProgress.restart();
    emit loadProgress(job.id, QString::fromStdString(p.stage), p.done, p.total);
  };
  try {
    engine().load(job.options, progress, job.cancel);
    ModelSummary s = toSummary(engine().info());
    s.maxSeqLen = engine().max_seq_len();
    s.deviceName = job.options.device == hearth::DeviceKind::kCuda ? QStringLiteral("GPU")
                                                                   : QStringLiteral("CPU");
    modelName_ = s.name;
    const MemorySnapshot memory = toSnapshot(engine().memory_usage());
    emit loadFinished(job.id, s, memory);
  } catch (const hearth::Error& e) {
    emit loadFailed(job.id, describeLoadFailure(e, job.options),
                    e.code() == hearth::ErrorCode::kCancelled || job.cancel.cancelled());
  } catch (const std::exception& e) {
    emit loadFailed(job.id, toFailure(e), false);
  }
}

void EngineWorker::unload() {
  if (engine_) engine_->unload();
  modelName_.clear();
  emit unloaded();
}

void EngineWorker::sampleMemory() {
  if (engine_ && engine_->loaded()) emit memorySampled(toSnapshot(engine_->memory_usage()));
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
  const auto onText = [&](const std::string& piece) {
    if (firstPiece < 0) firstPiece = clock.nsecsElapsed() / 1e9;
    ++pieces;
    const QString text = QString::fromStdString(piece);
    batch += text;
    streamed += text;
    // The first piece goes at once: it says the prompt is processed.
    if (pieces == 1 || sinceBatch.elapsed() >= batchIntervalMs_) flush();
    // Live memory figures while a long answer runs (same thread, between two tokens).
    if (sinceMemory.elapsed() >= 1000) {
      sinceMemory.restart();
      emit memorySampled(toSnapshot(engine_->memory_usage()));
    }
  };
  try {
    if (!engine().loaded()) hearth::fail(hearth::ErrorCode::kInvalidArgument, "no model is loaded");
    // Tokenized here, once, so that the prompt's length is known while it runs.
    hearth::GenerationRequest request = job.request;
    request.prompt_tokens = engine().encode_prompt(request);
    emit promptReady(job.id, qint64(request.prompt_tokens.size()));
    clock.restart();
    const hearth::GenerationResult result = engine().generate(request, onText, job.cancel);
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
      emit generationFinished(job.id, streamed, stats, -1);
    } else {
      emit generationFailed(job.id, toFailure(e));
    }
  } catch (const std::exception& e) {
    flush();
    emit generationFailed(job.id, toFailure(e));
  }
  if (engine_ && engine_->loaded()) emit memorySampled(toSnapshot(engine_->memory_usage()));
}

}  // namespace hearth::app
