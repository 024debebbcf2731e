// The UI thread's face of the engine (QML singleton EngineController): the loaded model, load
// progress and cancellation, the memory plan of a load before it happens, live memory and
// speed figures. It owns the worker thread and never calls the engine itself: requests go to
// EngineWorker as queued calls; Engine::plan runs on the thread pool, awaited with QCoro.
#pragma once

#include <QtQml/qqmlregistration.h>
#include <QObject>
#include <QPointer>
#include <QQmlEngine>
#include <QThread>
#include <QTimer>
#include <QVariantList>
#include <QVariantMap>
#include <memory>
#include <optional>
#include <vector>

#include "app/desktop/engine/engine_types.h"
#include "engine/api/engine.h"

namespace QCoro {
template <typename T>
class Task;
}

namespace hearth::app {

class EngineWorker;
class ServerHost;

class EngineController : public QObject {
  Q_OBJECT
  QML_ELEMENT
  QML_SINGLETON

  Q_PROPERTY(State state READ state NOTIFY stateChanged)
  Q_PROPERTY(bool loaded READ loaded NOTIFY stateChanged)
  Q_PROPERTY(bool busy READ busy NOTIFY stateChanged)
  Q_PROPERTY(bool cudaAvailable READ cudaAvailable CONSTANT)
  // The GPUs a load can use: [{index, name, totalBytes}] (the plan has their free memory).
  Q_PROPERTY(QVariantList gpus READ gpus CONSTANT)
  // The driver and GPU found or, without a usable GPU, why and what to install (the engine's
  // words, probed once).
  Q_PROPERTY(QString gpuStatus READ gpuStatus CONSTANT)
  Q_PROPERTY(QVariantMap model READ model NOTIFY modelChanged)
  Q_PROPERTY(QString loadStage READ loadStage NOTIFY loadProgressChanged)
  Q_PROPERTY(double loadFraction READ loadFraction NOTIFY loadProgressChanged)
  Q_PROPERTY(QVariantMap memory READ memory NOTIFY memoryChanged)
  Q_PROPERTY(QVariantMap plan READ plan NOTIFY planChanged)
  Q_PROPERTY(bool planning READ planning NOTIFY planChanged)
  // The figures of the answer being generated, else of the last one: live while it streams
  // (the prompt's once it is processed), the engine's own at its end.
  Q_PROPERTY(qint64 promptTokens READ promptTokens NOTIFY statsChanged)
  Q_PROPERTY(double promptTokensPerSecond READ promptTps NOTIFY statsChanged)  // 0: not yet
  Q_PROPERTY(qint64 generatedTokens READ generatedTokens NOTIFY statsChanged)
  // Of promptTokens, those the engine found in its cache from an earlier answer (known when
  // the answer ends).
  Q_PROPERTY(qint64 cachedPromptTokens READ cachedPromptTokens NOTIFY statsChanged)
  // Speculative decoding of the last answer: proposals checked and kept (known when it ends).
  Q_PROPERTY(qint64 proposedTokens READ proposedTokens NOTIFY statsChanged)
  Q_PROPERTY(qint64 acceptedTokens READ acceptedTokens NOTIFY statsChanged)
  Q_PROPERTY(double decodeTokensPerSecond READ decodeTps NOTIFY statsChanged)  // 0: not yet
  Q_PROPERTY(qint64 contextUsed READ contextUsed NOTIFY statsChanged)
  Q_PROPERTY(double liveTokensPerSecond READ liveTps NOTIFY liveChanged)
  Q_PROPERTY(QVariantList rateHistory READ rateHistory NOTIFY liveChanged)
  Q_PROPERTY(qint64 maxSeqLen READ maxSeqLen NOTIFY modelChanged)
  // Set while a quantization job holds the GPU: why GPU loads are refused now.
  Q_PROPERTY(QString gpuReservation READ gpuReservation NOTIFY gpuReservationChanged)

 public:
  enum State { Empty, Loading, Ready, Generating };
  Q_ENUM(State)

  // No default constructor: Qt 6.4 would build a second instance for QML instead of calling
  // create().
  explicit EngineController(QObject* parent);
  ~EngineController() override;

  // The instance the app created (QML_SINGLETON factory).
  static EngineController* create(QQmlEngine*, QJSEngine*);
  static void setInstance(EngineController* instance);

  State state() const { return state_; }
  bool loaded() const { return state_ == Ready || state_ == Generating; }
  bool busy() const { return state_ == Loading || state_ == Generating; }
  bool cudaAvailable() const;
  QVariantList gpus() const;
  QString gpuStatus() const;
  QVariantMap model() const { return model_; }
  QString loadStage() const { return loadStage_; }
  double loadFraction() const { return loadFraction_; }
  QVariantMap memory() const { return memory_; }
  QVariantMap plan() const { return plan_; }
  bool planning() const { return planning_; }
  qint64 promptTokens() const { return promptTokens_; }
  double promptTps() const { return promptTps_; }
  qint64 generatedTokens() const { return generatedTokens_; }
  qint64 cachedPromptTokens() const { return cachedPromptTokens_; }
  qint64 proposedTokens() const { return proposedTokens_; }
  qint64 acceptedTokens() const { return acceptedTokens_; }
  double decodeTps() const { return decodeTps_; }
  qint64 contextUsed() const { return contextUsed_; }
  double liveTps() const { return liveTps_; }
  QVariantList rateHistory() const { return rateHistory_; }
  qint64 maxSeqLen() const { return model_.value(QStringLiteral("maxSeqLen")).toLongLong(); }
  QString gpuReservation() const { return gpuReservation_; }
  // The quantization wizard reserves the GPU for a job ("" releases it); GPU loads are refused
  // with `reason` meanwhile.
  void setGpuReservation(const QString& reason);

  // Settings keys: see toLoadOptions in engine_convert.h.
  Q_INVOKABLE void load(const QVariantMap& settings);
  Q_INVOKABLE void cancelLoad();
  Q_INVOKABLE void unload();
  Q_INVOKABLE void requestPlan(const QVariantMap& settings);
  Q_INVOKABLE void stop();  // the running generation
  // Whether `path` names the loaded model's file or folder (through links too).
  Q_INVOKABLE bool isLoadedModel(const QString& path) const;

  // For LocalServer: the local server's host, which serves the model the worker loads.
  std::shared_ptr<ServerHost> serverHost() const { return serverHost_; }

  // For ChatSession: starts a request; the result arrives as generation* signals with this id.
  quint64 generate(const std::vector<hearth::ChatMessage>& messages, const QVariantMap& sampling,
                   int maxTokens);
  // For AdapterList: the LoRA adapters the engine should hold from now on, with their weights,
  // applied without reloading the model (after the answer being written, if one is). The outcome
  // arrives as adaptersApplied with this id; 0 when no model is loaded or loading.
  quint64 applyAdapters(const QVector<AdapterChoice>& adapters);

 signals:
  void stateChanged();
  void modelChanged();
  void loadProgressChanged();
  void memoryChanged();
  void planChanged();
  void statsChanged();
  void liveChanged();
  void gpuReservationChanged();
  void loadSucceeded();
  void loadCancelled();
  // A failure to show: failure is EngineFailure::toMap(); context says what was attempted.
  void failed(const QVariantMap& failure, const QString& context);
  void generationText(quint64 id, const QString& text);
  void generationDone(quint64 id, const QString& text, const hearth::app::MessageStats& stats);
  void generationError(quint64 id, const QVariantMap& failure);
  // The adapters the engine holds after applyAdapters (its id) or after a load (the load's).
  void adaptersApplied(quint64 id, const hearth::app::AdapterReport& report);

 private:
  void setState(State s);
  QCoro::Task<void> computePlan(QVariantMap settings, quint64 serial);
  void onLoadFinished(quint64 id, const ModelSummary& summary, const MemorySnapshot& memory);
  void onLoadFailed(quint64 id, const EngineFailure& failure, bool cancelled);
  void onPromptReady(quint64 id, qint64 promptTokens);
  void onText(quint64 id, const QString& text, qint64 pieces, double seconds, double firstPiece);
  void onFinished(quint64 id, const QString& text, const MessageStats& stats, qint64 contextUsed);
  void onGenerationFailed(quint64 id, const EngineFailure& failure);

  QThread thread_;
  QPointer<EngineWorker> worker_;
  std::shared_ptr<ServerHost> serverHost_;
  QTimer memoryTimer_;
  State state_ = Empty;
  quint64 nextId_ = 1;
  quint64 loadId_ = 0;
  quint64 generationId_ = 0;
  hearth::CancelToken loadCancel_;
  hearth::CancelToken generationCancel_;
  QVariantMap model_;
  QVariantMap memory_;
  QVariantMap plan_;
  bool planning_ = false;
  quint64 planSerial_ = 0;
  QString loadStage_;
  double loadFraction_ = 0;
  qint64 promptTokens_ = 0;
  double promptTps_ = 0;
  qint64 generatedTokens_ = 0;
  qint64 cachedPromptTokens_ = 0;
  qint64 proposedTokens_ = 0;
  qint64 acceptedTokens_ = 0;
  double decodeTps_ = 0;
  qint64 contextUsed_ = 0;
  double liveTps_ = 0;
  QVariantList rateHistory_;
  QString gpuReservation_;
};

}  // namespace hearth::app
