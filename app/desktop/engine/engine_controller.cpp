#include "app/desktop/engine/engine_controller.h"

#include <QCoro/QCoroFuture>
#include <QCoro/QCoroTask>
#include <QFileInfo>
#include <QJSEngine>
#include <QtConcurrent/QtConcurrentRun>

#include "app/desktop/engine/engine_convert.h"
#include "app/desktop/engine/engine_worker.h"

namespace hearth::app {

namespace {

EngineController* g_instance = nullptr;
constexpr int kRateHistoryPoints = 90;

}  // namespace

EngineController::EngineController(QObject* parent) : QObject(parent) {
  worker_ = new EngineWorker();
  serverHost_ = worker_->serverHost();
  worker_->moveToThread(&thread_);
  connect(&thread_, &QThread::finished, worker_, &QObject::deleteLater);
  connect(worker_, &EngineWorker::loadProgress, this,
          [this](quint64 id, const QString& stage, qint64 done, qint64 total) {
            if (id != loadId_) return;
            loadStage_ = stage;
            loadFraction_ = total > 0 ? double(done) / double(total) : 0.0;
            emit loadProgressChanged();
          });
  connect(worker_, &EngineWorker::loadFinished, this, &EngineController::onLoadFinished);
  connect(worker_, &EngineWorker::loadFailed, this, &EngineController::onLoadFailed);
  connect(worker_, &EngineWorker::unloaded, this, [this] {
    if (state_ == Loading) return;  // a new load is already under way
    model_.clear();
    memory_.clear();
    contextUsed_ = 0;
    setState(Empty);
    emit modelChanged();
    emit memoryChanged();
    emit statsChanged();
  });
  connect(worker_, &EngineWorker::promptReady, this, &EngineController::onPromptReady);
  connect(worker_, &EngineWorker::textStreamed, this, &EngineController::onText);
  connect(worker_, &EngineWorker::generationFinished, this, &EngineController::onFinished);
  connect(worker_, &EngineWorker::generationFailed, this, &EngineController::onGenerationFailed);
  connect(worker_, &EngineWorker::adaptersApplied, this, &EngineController::adaptersApplied);
  connect(worker_, &EngineWorker::memorySampled, this, [this](const MemorySnapshot& m) {
    if (!loaded()) return;
    memory_ = m.toMap();
    emit memoryChanged();
  });
  thread_.setObjectName(QStringLiteral("hearth-engine"));
  thread_.start();

  memoryTimer_.setInterval(2000);
  connect(&memoryTimer_, &QTimer::timeout, this, [this] {
    if (state_ == Ready) QMetaObject::invokeMethod(worker_, [w = worker_] { w->sampleMemory(); });
  });
}

EngineController::~EngineController() {
  loadCancel_.cancel();
  generationCancel_.cancel();
  thread_.quit();
  thread_.wait();
  if (g_instance == this) g_instance = nullptr;
}

EngineController* EngineController::create(QQmlEngine*, QJSEngine*) {
  if (!g_instance) g_instance = new EngineController(nullptr);
  QJSEngine::setObjectOwnership(g_instance, QJSEngine::CppOwnership);
  return g_instance;
}

void EngineController::setInstance(EngineController* instance) {
  g_instance = instance;
}

bool EngineController::isLoadedModel(const QString& path) const {
  if (!loaded() || path.isEmpty()) return false;
  const QString current = model_.value(QStringLiteral("path")).toString();
  if (current == path) return true;
  const QString a = QFileInfo(current).canonicalFilePath();
  return !a.isEmpty() && a == QFileInfo(path).canonicalFilePath();
}

// A CUDA build on a machine without a GPU (or its driver) counts as no CUDA.
bool EngineController::cudaAvailable() const {
  return hearth::Engine::cuda_status().available;
}

QVariantList EngineController::gpus() const {
  // Listed once: the devices do not change while the app runs.
  static const QVariantList list = [] {
    QVariantList out;
    const std::vector<hearth::DeviceMemoryInfo> gpus = hearth::Engine::gpus();
    for (size_t i = 0; i < gpus.size(); ++i)
      out.append(QVariantMap{{QStringLiteral("index"), int(i)},
                             {QStringLiteral("name"), QString::fromStdString(gpus[i].name)},
                             {QStringLiteral("totalBytes"), double(gpus[i].total_bytes)}});
    return out;
  }();
  return list;
}

QString EngineController::gpuStatus() const {
  return QString::fromStdString(hearth::Engine::cuda_status().summary);
}

void EngineController::setState(State s) {
  if (s == state_) return;
  state_ = s;
  if (s == Ready)
    memoryTimer_.start();
  else if (s == Empty)
    memoryTimer_.stop();
  emit stateChanged();
}

void EngineController::load(const QVariantMap& settings) {
  if (state_ == Loading || state_ == Generating) return;
  LoadJob job;
  try {
    job.options = toLoadOptions(settings);
  } catch (const hearth::Error& e) {
    emit failed(toFailure(e).toMap(), tr("The model could not be loaded."));
    return;
  }
  if (job.options.device == hearth::DeviceKind::kCuda && !gpuReservation_.isEmpty()) {
    EngineFailure f;
    f.code = QStringLiteral("busy");
    f.message = gpuReservation_;
    emit failed(f.toMap(), tr("The model could not be loaded."));
    return;
  }
  job.id = nextId_++;
  loadId_ = job.id;
  loadCancel_ = hearth::CancelToken();
  job.cancel = loadCancel_;
  loadStage_ = tr("Starting");
  loadFraction_ = 0;
  emit loadProgressChanged();
  setState(Loading);
  QMetaObject::invokeMethod(worker_, [w = worker_, job] { w->load(job); });
}

void EngineController::setGpuReservation(const QString& reason) {
  if (reason == gpuReservation_) return;
  gpuReservation_ = reason;
  emit gpuReservationChanged();
}

void EngineController::cancelLoad() {
  if (state_ == Loading) loadCancel_.cancel();
}

void EngineController::unload() {
  if (state_ == Generating) generationCancel_.cancel();
  if (state_ == Loading) loadCancel_.cancel();
  QMetaObject::invokeMethod(worker_, [w = worker_] { w->unload(); });
}

void EngineController::stop() {
  if (state_ == Generating) generationCancel_.cancel();
}

void EngineController::requestPlan(const QVariantMap& settings) {
  const quint64 serial = ++planSerial_;
  planning_ = true;
  emit planChanged();
  computePlan(settings, serial);
}

QCoro::Task<void> EngineController::computePlan(QVariantMap settings, quint64 serial) {
  QPointer<EngineController> self(this);
  // Engine::plan reads the model's header and asks the device for free memory: off the UI thread.
  // GCC 12 destroys temporaries of a co_await expression twice: build the future in its own
  // statement and await a named variable.
  const auto work = [settings]() -> QVariantMap {
    try {
      hearth::LoadOptions options = toLoadOptions(settings);
      try {
        return planToMap(hearth::Engine::plan(options));
      } catch (const hearth::Error& e) {
        if (options.adapters.empty()) throw;
        // An adapter that does not fit this model is left out when the model loads (the
        // Adapters tab says why); the plan says so and counts the model alone.
        options.adapters.clear();
        QVariantMap plan = planToMap(hearth::Engine::plan(options));
        plan.insert(QStringLiteral("adapterError"), QString::fromUtf8(e.what()));
        return plan;
      }
    } catch (const hearth::Error& e) {
      return {{QStringLiteral("valid"), false},
              {QStringLiteral("error"), QString::fromUtf8(e.what())}};
    } catch (const std::exception& e) {
      return {{QStringLiteral("valid"), false},
              {QStringLiteral("error"), QString::fromUtf8(e.what())}};
    }
  };
  QFuture<QVariantMap> future = QtConcurrent::run(work);
  const QVariantMap result = co_await future;
  if (!self || serial != planSerial_) co_return;  // a newer request replaced this one
  plan_ = result;
  planning_ = false;
  emit planChanged();
}

void EngineController::onLoadFinished(quint64 id, const ModelSummary& summary,
                                      const MemorySnapshot& memory) {
  if (id != loadId_) return;
  model_ = summary.toMap();
  memory_ = memory.toMap();
  contextUsed_ = 0;
  loadFraction_ = 1;
  setState(Ready);
  emit modelChanged();
  emit memoryChanged();
  emit loadProgressChanged();
  emit statsChanged();
  emit loadSucceeded();
}

void EngineController::onLoadFailed(quint64 id, const EngineFailure& failure, bool cancelled) {
  if (id != loadId_) return;
  // A failed load leaves nothing loaded (Engine::load's guarantee).
  model_.clear();
  memory_.clear();
  setState(Empty);
  emit modelChanged();
  emit memoryChanged();
  if (cancelled) {
    emit loadCancelled();
    return;
  }
  emit failed(failure.toMap(), tr("The model could not be loaded."));
}

quint64 EngineController::generate(const std::vector<hearth::ChatMessage>& messages,
                                   const QVariantMap& sampling, int maxTokens) {
  if (state_ != Ready) return 0;
  GenerateJob job;
  job.id = nextId_++;
  job.request.messages = messages;
  job.request.max_tokens = maxTokens;
  try {
    job.request.sampling = toSampling(sampling);
  } catch (const hearth::Error& e) {
    emit failed(toFailure(e).toMap(), tr("The answer could not be generated."));
    return 0;
  }
  generationCancel_ = hearth::CancelToken();
  job.cancel = generationCancel_;
  generationId_ = job.id;
  // From now on the figures are this answer's.
  promptTokens_ = 0;
  cachedPromptTokens_ = 0;
  proposedTokens_ = 0;
  acceptedTokens_ = 0;
  promptTps_ = 0;
  generatedTokens_ = 0;
  decodeTps_ = 0;
  liveTps_ = 0;
  rateHistory_.clear();
  emit statsChanged();
  emit liveChanged();
  setState(Generating);
  QMetaObject::invokeMethod(worker_, [w = worker_, job] { w->generate(job); });
  return job.id;
}

quint64 EngineController::applyAdapters(const QVector<AdapterChoice>& adapters) {
  if (state_ == Empty) return 0;
  AdapterJob job{nextId_++, adapters};
  QMetaObject::invokeMethod(worker_, [w = worker_, job] { w->applyAdapters(job); });
  return job.id;
}

void EngineController::onPromptReady(quint64 id, qint64 promptTokens) {
  if (id != generationId_) return;
  promptTokens_ = promptTokens;
  contextUsed_ = promptTokens;
  emit statsChanged();
}

void EngineController::onText(quint64 id, const QString& text, qint64 pieces, double seconds,
                              double firstPiece) {
  if (id != generationId_) return;
  // The figures first, so that whoever reacts to the text sees them.
  if (firstPiece > 0) promptTps_ = double(promptTokens_) / firstPiece;
  generatedTokens_ = pieces;
  contextUsed_ = promptTokens_ + pieces;
  if (firstPiece >= 0 && seconds > firstPiece && pieces > 1) {
    liveTps_ = double(pieces - 1) / (seconds - firstPiece);
    decodeTps_ = liveTps_;
    rateHistory_.append(liveTps_);
    while (rateHistory_.size() > kRateHistoryPoints) rateHistory_.removeFirst();
    emit liveChanged();
  }
  emit statsChanged();
  emit generationText(id, text);
}

void EngineController::onFinished(quint64 id, const QString& text, const MessageStats& stats,
                                  qint64 contextUsed) {
  if (id != generationId_) return;
  generationId_ = 0;
  // The engine's own figures; a stopped answer has none for its prompt, so the live ones stay.
  if (stats.promptTokens > 0) promptTokens_ = stats.promptTokens;
  cachedPromptTokens_ = stats.cachedPromptTokens;
  proposedTokens_ = stats.proposedTokens;
  acceptedTokens_ = stats.acceptedTokens;
  if (stats.promptSeconds > 0) promptTps_ = stats.promptTokens / stats.promptSeconds;
  generatedTokens_ = stats.generatedTokens;
  if (stats.decodeSeconds > 0) decodeTps_ = stats.generatedTokens / stats.decodeSeconds;
  contextUsed_ = contextUsed >= 0 ? contextUsed : promptTokens_ + generatedTokens_;
  emit statsChanged();
  setState(Ready);
  emit generationDone(id, text, stats);
}

void EngineController::onGenerationFailed(quint64 id, const EngineFailure& failure) {
  if (id != generationId_) return;
  generationId_ = 0;
  setState(loaded() ? Ready : Empty);
  emit generationError(id, failure.toMap());
  emit failed(failure.toMap(), tr("The answer could not be generated."));
}

}  // namespace hearth::app
