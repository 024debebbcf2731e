// The quantization wizard's state (QML singleton QuantizeWizard): the steps from the source model
// to the finished quantized model, what each step needs before the next one, the size and GPU
// memory estimates, and the job itself — started, cancelled, resumed and finished on the
// quantizer's own thread (QuantizeWorker), with progress arriving as queued signals.
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
#include <QQmlEngine>
#include <QThread>
#include <QTimer>
#include <QUrl>
#include <QVariantList>
#include <QVariantMap>
#include <optional>

#include "app/desktop/quantize_estimate.h"
#include "app/desktop/quantize_worker.h"
#include "engine/api/engine.h"
#include "engine/quantizer/quantize_job.h"

namespace QCoro {
template <typename T>
class Task;
}

namespace hearth::app {

class AppSettings;
class EngineController;
class ModelLibrary;

class QuantizeWizard : public QObject {
  Q_OBJECT
  QML_ELEMENT
  QML_SINGLETON

  // --- navigation ---
  Q_PROPERTY(Step step READ step NOTIFY stepChanged)
  Q_PROPERTY(bool canGoBack READ canGoBack NOTIFY stateChanged)
  Q_PROPERTY(bool canGoNext READ canGoNext NOTIFY stateChanged)
  Q_PROPERTY(bool canStart READ canStart NOTIFY stateChanged)
  // Why the current step cannot go on (translated), or "".
  Q_PROPERTY(QString stepProblem READ stepProblem NOTIFY stateChanged)

  // --- source ---
  Q_PROPERTY(QString sourcePath READ sourcePath WRITE setSourcePath NOTIFY sourceChanged)
  Q_PROPERTY(bool sourceChecking READ sourceChecking NOTIFY sourceChanged)
  Q_PROPERTY(bool sourceOk READ sourceOk NOTIFY sourceChanged)
  Q_PROPERTY(QString sourceError READ sourceError NOTIFY sourceChanged)
  Q_PROPERTY(QString sourceNote READ sourceNote NOTIFY sourceChanged)
  Q_PROPERTY(QVariantMap sourceInfo READ sourceInfo NOTIFY sourceChanged)
  // Library models that can be quantized: fp16 folders and GGUF files.
  Q_PROPERTY(QVariantList sourceCandidates READ sourceCandidates NOTIFY candidatesChanged)

  // --- format and size ---
  Q_PROPERTY(QString format READ format WRITE setFormat NOTIFY settingsChanged)  // exl2, gptq
  Q_PROPERTY(double bpw READ bpw WRITE setBpw NOTIFY settingsChanged)
  Q_PROPERTY(int headBits READ headBits WRITE setHeadBits NOTIFY settingsChanged)
  Q_PROPERTY(int bits READ bits WRITE setBits NOTIFY settingsChanged)
  Q_PROPERTY(int groupSize READ groupSize WRITE setGroupSize NOTIFY settingsChanged)
  Q_PROPERTY(bool actOrder READ actOrder WRITE setActOrder NOTIFY settingsChanged)
  // The context length the GPU memory estimate is for.
  Q_PROPERTY(int context READ context WRITE setContext NOTIFY settingsChanged)
  Q_PROPERTY(QVariantMap estimate READ estimate NOTIFY estimateChanged)
  Q_PROPERTY(bool estimating READ estimating NOTIFY estimateChanged)

  // --- calibration ---
  // "" is Hearth's built-in set; else a .txt, .md or .jsonl file.
  Q_PROPERTY(
      QString calibrationFile READ calibrationFile WRITE setCalibrationFile NOTIFY settingsChanged)
  Q_PROPERTY(int calibrationRows READ calibrationRows WRITE setCalibrationRows NOTIFY
                 settingsChanged)  // 0: automatic
  Q_PROPERTY(int calibrationLength READ calibrationLength WRITE setCalibrationLength NOTIFY
                 settingsChanged)  // 0: automatic

  // --- output and device ---
  Q_PROPERTY(QString outputPath READ outputPath WRITE setOutputPath NOTIFY settingsChanged)
  Q_PROPERTY(QString device READ device WRITE setDevice NOTIFY settingsChanged)  // cpu, gpu
  Q_PROPERTY(bool cudaAvailable READ cudaAvailable CONSTANT)
  Q_PROPERTY(bool evaluate READ evaluate WRITE setEvaluate NOTIFY settingsChanged)
  // Tokens of held-out text the evaluation scores at most.
  Q_PROPERTY(
      int evaluationTokens READ evaluationTokens WRITE setEvaluationTokens NOTIFY settingsChanged)
  // What starting the job does to the chat model (translated), or "".
  Q_PROPERTY(QString deviceNotice READ deviceNotice NOTIFY stateChanged)
  // An interrupted job writing to outputPath (see interruptedJobs for the keys), or {}.
  Q_PROPERTY(QVariantMap outputJob READ outputJob NOTIFY jobsChanged)
  // Interrupted jobs found in the library's folders and next to the output folder.
  Q_PROPERTY(QVariantList interruptedJobs READ interruptedJobs NOTIFY jobsChanged)

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

 public:
  enum Step { Source, Format, Size, Calibration, Review, Run, Result };
  Q_ENUM(Step)

  // No default constructor: Qt 6.4 would build a second instance for QML instead of calling
  // create(). Any of the collaborators may be null (tests).
  QuantizeWizard(EngineController* engine, ModelLibrary* library, AppSettings* settings,
                 QObject* parent = nullptr);
  ~QuantizeWizard() override;
  static QuantizeWizard* create(QQmlEngine*, QJSEngine*);
  static void setInstance(QuantizeWizard* instance);

  Step step() const { return step_; }
  bool canGoBack() const;
  bool canGoNext() const;
  bool canStart() const;
  QString stepProblem() const { return problemOf(step_); }
  // Why `step` cannot go on, or "" (Review includes what start() would refuse).
  Q_INVOKABLE QString problemOf(int step) const;

  QString sourcePath() const { return sourcePath_; }
  void setSourcePath(const QString& path);
  bool sourceChecking() const { return sourceChecking_; }
  bool sourceOk() const { return source_.has_value() && source_->ok; }
  QString sourceError() const { return source_ ? source_->error : QString(); }
  QString sourceNote() const { return source_ ? source_->note : QString(); }
  QVariantMap sourceInfo() const { return source_ ? source_->summary : QVariantMap(); }
  QVariantList sourceCandidates() const { return candidates_; }

  QString format() const { return format_; }
  void setFormat(const QString& format);
  double bpw() const { return bpw_; }
  void setBpw(double bpw);
  int headBits() const { return headBits_; }
  void setHeadBits(int bits);
  int bits() const { return bits_; }
  void setBits(int bits);
  int groupSize() const { return groupSize_; }
  void setGroupSize(int size);
  bool actOrder() const { return actOrder_; }
  void setActOrder(bool on);
  int context() const { return context_; }
  void setContext(int tokens);
  QVariantMap estimate() const { return estimate_; }
  bool estimating() const { return estimating_; }

  QString calibrationFile() const { return calibrationFile_; }
  void setCalibrationFile(const QString& path);
  int calibrationRows() const { return rows_; }
  void setCalibrationRows(int rows);
  int calibrationLength() const { return length_; }
  void setCalibrationLength(int length);

  QString outputPath() const { return outputPath_; }
  void setOutputPath(const QString& path);  // the user's choice: no longer follows the settings
  QString device() const { return device_; }
  void setDevice(const QString& device);
  bool cudaAvailable() const;
  bool evaluate() const { return evaluate_; }
  void setEvaluate(bool on);
  int evaluationTokens() const { return evaluationTokens_; }
  void setEvaluationTokens(int tokens);
  QString deviceNotice() const;
  QVariantMap outputJob() const;
  QVariantList interruptedJobs() const { return jobs_; }

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

  // Navigation.
  Q_INVOKABLE bool next();
  Q_INVOKABLE bool back();
  Q_INVOKABLE bool goToStep(int step);  // an earlier step, or the next one when allowed
  Q_INVOKABLE void startOver();         // after a result or a failure: back to the source

  // File pickers hand over URLs.
  Q_INVOKABLE void chooseSource(const QUrl& location);
  Q_INVOKABLE void chooseCalibration(const QUrl& file);
  Q_INVOKABLE void chooseOutputFolder(const QUrl& parentFolder);  // the output goes inside

  // The job.
  Q_INVOKABLE bool start();
  Q_INVOKABLE void cancel();
  Q_INVOKABLE bool resume();                           // the job that just failed or was cancelled
  Q_INVOKABLE bool resumeJob(const QString& workDir);  // an interrupted job found on disk
  Q_INVOKABLE bool discardJob(const QString& workDir);
  Q_INVOKABLE bool discard();  // the job that just failed or was cancelled
  Q_INVOKABLE void scanForJobs();
  // "Load now": the finished model goes to the load panel and is loaded with the wizard's device
  // and context.
  Q_INVOKABLE void loadResult();

  // The output folder name the wizard proposes for the current settings.
  QString defaultOutputName() const;
  // The options start() would run with.
  hearth::QuantizeOptions options() const;
  // For tests: the worker, whose signals are emitted on the quantizer's thread.
  QuantizeWorker* worker() const { return worker_; }

 signals:
  void stepChanged();
  void stateChanged();
  void sourceChanged();
  void candidatesChanged();
  void settingsChanged();
  void estimateChanged();
  void jobsChanged();
  void runChanged();
  void progressChanged();
  void clockChanged();
  void finished();                          // a job ended with a result
  void failed(const QVariantMap& failure);  // a job ended with an error or was cancelled
  void loadRequested();                     // "Load now": show the load panel

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void setStep(Step s);
  void refresh();  // validity changed: re-emit stateChanged
  void settingChanged();
  void updateDefaultOutput();
  void updateCandidates();
  void scheduleEstimate();
  QCoro::Task<void> checkSource(QString path, quint64 serial);
  QCoro::Task<void> computeEstimate(quint64 serial);
  QCoro::Task<void> findJobs(quint64 serial);
  QString outputProblem() const;
  QString calibrationProblem() const;
  QString sizeProblem() const;
  QString busyProblem() const;
  bool chatModelOnGpu() const;
  void applyJobOptions(const hearth::QuantizeOptions& o);
  bool launch(hearth::QuantizeOptions options);
  void startWhenGpuIsFree(hearth::QuantizeOptions options);
  void releaseGpu();
  void onProgress(quint64 id, const QuantizeUpdate& update);
  void onFinished(quint64 id, const QuantizeOutcome& outcome);
  void onFailed(quint64 id, const EngineFailure& failure, bool cancelled);
  void addToLibrary(const QString& output);

  QPointer<EngineController> engine_;
  QPointer<ModelLibrary> library_;
  QPointer<AppSettings> settings_;
  QThread thread_;
  QPointer<QuantizeWorker> worker_;

  Step step_ = Source;
  QString sourcePath_;
  bool sourceChecking_ = false;
  std::optional<QuantizeSource> source_;
  quint64 sourceSerial_ = 0;
  QVariantList candidates_;

  QString format_ = QStringLiteral("exl2");
  double bpw_ = 4.0;
  int headBits_ = 6;
  int bits_ = 4;
  int groupSize_ = 128;
  bool actOrder_ = true;
  int context_ = 4096;
  bool contextChosen_ = false;
  QVariantMap estimate_;
  bool estimating_ = false;
  quint64 estimateSerial_ = 0;
  QTimer estimateTimer_;

  QString calibrationFile_;
  int rows_ = 0;
  int length_ = 0;

  QString outputPath_;
  bool outputChosen_ = false;
  QString device_;
  bool evaluate_ = true;
  int evaluationTokens_ = 16384;
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
