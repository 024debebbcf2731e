// Quantization jobs (QuantizeWizard.jobs in QML): a job started, cancelled, resumed and finished on
// the quantizer's own thread (QuantizeWorker), with progress arriving as queued signals; the
// interrupted jobs found on disk; and the GPU shared with the chat engine. It runs what a
// QuantizeForm describes and shows a resumed job's settings there, so the form stays free of the
// job's lifecycle.
//
// GPU policy: the quantizer and a chat model would compete for the GPU's memory. A GPU job
// therefore starts only when no chat model is answering or loading; a model loaded on the GPU is
// unloaded first (the review step says so), and EngineController refuses GPU loads while the job
// runs. A CPU job runs beside the chat model (both share the cores).
#pragma once

#include <QtQml/qqmlregistration.h>
#include <QElapsedTimer>
#include <QObject>
#include <QPointer>
#include <QThread>
#include <QTimer>
#include <QVariantList>
#include <QVariantMap>

#include "app/desktop/quantize/quantize_worker.h"
#include "engine/quantizer/quantize_job.h"

namespace QCoro {
template <typename T>
class Task;
}

namespace hearth::app {

class AppSettings;
class EngineController;
class ModelLibrary;
class QuantizeForm;

class QuantizeJobs : public QObject {
  Q_OBJECT
  QML_ELEMENT
  QML_UNCREATABLE("owned by QuantizeWizard")

  // --- the job ---
  Q_PROPERTY(bool running READ running NOTIFY runChanged)
  Q_PROPERTY(bool cancelling READ cancelling NOTIFY runChanged)
  Q_PROPERTY(QStringList stages READ stages NOTIFY runChanged)  // stage names of this job
  Q_PROPERTY(QString stage READ stage NOTIFY progressChanged)
  Q_PROPERTY(qint64 stageStep READ stageStep NOTIFY progressChanged)
  Q_PROPERTY(qint64 stageSteps READ stageSteps NOTIFY progressChanged)
  Q_PROPERTY(QString item READ item NOTIFY progressChanged)
  Q_PROPERTY(int layer READ layer NOTIFY progressChanged)  // 1-based; 0 when not in a layer
  Q_PROPERTY(int layerCount READ layerCount NOTIFY progressChanged)
  Q_PROPERTY(double fraction READ fraction NOTIFY progressChanged)
  Q_PROPERTY(double elapsedSeconds READ elapsedSeconds NOTIFY clockChanged)
  Q_PROPERTY(double remainingSeconds READ remainingSeconds NOTIFY clockChanged)  // < 0: unknown
  Q_PROPERTY(QStringList log READ log NOTIFY progressChanged)
  // The last job's failure: code, message, cancelled; {} when none.
  Q_PROPERTY(QVariantMap failure READ failure NOTIFY runChanged)
  Q_PROPERTY(bool resumable READ resumable NOTIFY runChanged)
  Q_PROPERTY(QVariantMap result READ result NOTIFY runChanged)

  // --- interrupted jobs ---
  // Found in the library's folders and next to the form's output folder.
  Q_PROPERTY(QVariantList interruptedJobs READ interruptedJobs NOTIFY jobsChanged)
  // An interrupted job writing to the form's output folder (keys as interruptedJobs), or {}.
  Q_PROPERTY(QVariantMap outputJob READ outputJob NOTIFY jobsChanged)

  // --- the GPU ---
  // What starting a job on the form's device does to the chat model (translated), or "".
  Q_PROPERTY(QString deviceNotice READ deviceNotice NOTIFY deviceNoticeChanged)

 public:
  // `form` must outlive the jobs; the other collaborators may be null (tests).
  QuantizeJobs(QuantizeForm* form, EngineController* engine, ModelLibrary* library,
               AppSettings* settings, QObject* parent = nullptr);
  ~QuantizeJobs() override;

  bool running() const { return running_; }
  bool cancelling() const { return cancelling_; }
  QStringList stages() const { return stages_; }
  QString stage() const { return progress_.stage; }
  qint64 stageStep() const { return progress_.step; }
  qint64 stageSteps() const { return progress_.steps; }
  QString item() const { return progress_.item; }
  int layer() const { return layer_; }
  int layerCount() const { return layerCount_; }
  double fraction() const { return progress_.fraction; }
  double elapsedSeconds() const;
  double remainingSeconds() const;
  QStringList log() const { return log_; }
  QVariantMap failure() const { return failure_; }
  bool resumable() const { return resumable_; }
  QVariantMap result() const { return result_; }
  QVariantList interruptedJobs() const { return jobs_; }
  QVariantMap outputJob() const;
  QString deviceNotice() const;

  // Why a job on the form's device cannot start now (translated), or "".
  QString busyProblem() const;

  // Starts a job (after unloading a chat model from the GPU when it must). The caller checked
  // the form.
  bool start(hearth::QuantizeOptions options);
  enum class Resume { Started, Refused, Failed };  // Refused: busyProblem() says why
  // An interrupted job found on disk, its settings shown in the form.
  Resume resumeJob(const QString& workDir);
  // The work folder of the running or last job.
  QString workDir() const;
  // Forgets the last job's outcome (starting over).
  void clearOutcome();
  // Messages made in C++ are translated when made: after a language change, make them again.
  void retranslate();

  Q_INVOKABLE void cancel();
  Q_INVOKABLE bool discardJob(const QString& workDir);
  Q_INVOKABLE bool discard();  // the job that just failed or was cancelled
  Q_INVOKABLE void scanForJobs();
  // "Load now": the finished model goes to the load panel and is loaded with the job's device
  // and the form's context.
  Q_INVOKABLE void loadResult();

  // For tests: the worker, whose signals are emitted on the quantizer's thread.
  QuantizeWorker* worker() const { return worker_; }

 signals:
  void runChanged();
  void progressChanged();
  void clockChanged();
  void jobsChanged();
  void deviceNoticeChanged();
  void finished();                          // a job ended with a result
  void failed(const QVariantMap& failure);  // a job ended with an error or was cancelled
  void loadRequested();                     // "Load now": show the load panel

 private:
  QCoro::Task<void> findJobs(quint64 serial);
  bool chatModelOnGpu() const;
  bool launch(hearth::QuantizeOptions options);
  void startWhenGpuIsFree(hearth::QuantizeOptions options);
  void releaseGpu();
  void forgetInterrupted(const QString& workDir);
  void onProgress(quint64 id, const QuantizeUpdate& update);
  void onFinished(quint64 id, const QuantizeOutcome& outcome);
  void onFailed(quint64 id, const EngineFailure& failure, bool cancelled);
  void addToLibrary(const QString& output);

  QuantizeForm* form_;
  QPointer<EngineController> engine_;
  QPointer<ModelLibrary> library_;
  QPointer<AppSettings> settings_;
  QThread thread_;
  QPointer<QuantizeWorker> worker_;

  QVariantList jobs_;
  quint64 jobsSerial_ = 0;

  bool running_ = false;
  bool cancelling_ = false;
  quint64 jobId_ = 0;
  hearth::CancelToken cancel_;
  hearth::QuantizeOptions jobOptions_;  // of the running or last job
  QMetaObject::Connection waitForUnload_;
  QStringList stages_;
  QuantizeUpdate progress_;
  int layer_ = 0;
  int layerCount_ = 0;
  QStringList log_;
  QElapsedTimer sinceProgress_;
  QTimer clock_;
  QVariantMap failure_;
  bool resumable_ = false;
  QVariantMap result_;
};

}  // namespace hearth::app
