#include "app/desktop/quantize/quantize_jobs.h"

#include <QCoro/QCoroFuture>
#include <QCoro/QCoroTask>
#include <QDir>
#include <QFileInfo>
#include <QRegularExpression>
#include <QUrl>
#include <QtConcurrent/QtConcurrentRun>
#include <algorithm>

#include "app/desktop/engine/engine_controller.h"
#include "app/desktop/library/model_library.h"
#include "app/desktop/quantize/quantize_form.h"
#include "app/desktop/quantize/quantize_job_files.h"
#include "app/desktop/settings/app_settings.h"

namespace hearth::app {

namespace {
constexpr int kLogLines = 500;
}

QuantizeJobs::QuantizeJobs(QuantizeForm* form, EngineController* engine, ModelLibrary* library,
                           AppSettings* settings, QObject* parent)
    : QObject(parent), form_(form), engine_(engine), library_(library), settings_(settings) {
  worker_ = new QuantizeWorker();
  worker_->moveToThread(&thread_);
  connect(&thread_, &QThread::finished, worker_, &QObject::deleteLater);
  connect(worker_, &QuantizeWorker::progressed, this, &QuantizeJobs::onProgress);
  connect(worker_, &QuantizeWorker::finished, this, &QuantizeJobs::onFinished);
  connect(worker_, &QuantizeWorker::failed, this, &QuantizeJobs::onFailed);
  thread_.setObjectName(QStringLiteral("hearth-quantizer"));
  thread_.start(QThread::LowPriority);  // the UI and the chat engine come first

  clock_.setInterval(1000);
  connect(&clock_, &QTimer::timeout, this, &QuantizeJobs::clockChanged);

  connect(form_, &QuantizeForm::outputPathChanged, this, &QuantizeJobs::jobsChanged);
  connect(form_, &QuantizeForm::settingsChanged, this, &QuantizeJobs::deviceNoticeChanged);
  connect(form_, &QuantizeForm::sourceChanged, this, [this] {
    // The run page counts layers of the model about to be quantized.
    if (running_ || !form_->sourceOk() || form_->sourceLayers() == layerCount_) return;
    layerCount_ = form_->sourceLayers();
    emit progressChanged();
  });
  if (engine_) {
    // A model loaded on the GPU changes what starting a GPU job does.
    connect(engine_, &EngineController::stateChanged, this, &QuantizeJobs::deviceNoticeChanged);
    connect(engine_, &EngineController::modelChanged, this, &QuantizeJobs::deviceNoticeChanged);
  }
}

QuantizeJobs::~QuantizeJobs() {
  // A running job stops at its next check and stays resumable in its work folder.
  cancel_.cancel();
  thread_.quit();
  thread_.wait();
  releaseGpu();
}

void QuantizeJobs::retranslate() {
  scanForJobs();
  emit deviceNoticeChanged();
}

// ------------------------------------------------------------------ the GPU

bool QuantizeJobs::chatModelOnGpu() const {
  return engine_ && engine_->loaded() &&
         engine_->model().value(QStringLiteral("deviceName")).toString() == u"GPU";
}

QString QuantizeJobs::deviceNotice() const {
  if (form_->device() == u"gpu") {
    if (chatModelOnGpu())
      return tr("“%1” is loaded on the GPU. Starting the job unloads it, so that the quantizer "
                "has the GPU's memory; while the job runs, models load on the CPU only.")
          .arg(engine_->model().value(QStringLiteral("name")).toString());
    return tr(
        "While the job runs, models load on the CPU only: the quantizer needs the GPU's "
        "memory.");
  }
  return tr(
      "The job uses every CPU core: a model answering on the CPU is slower until it "
      "finishes.");
}

QString QuantizeJobs::busyProblem() const {
  if (running_) return tr("A quantization job is already running.");
  const QString device = form_->device();
  if (device == u"gpu") {
    if (!QuantizeForm::cudaAvailable())
      return tr(
          "No CUDA GPU is available here (no device, no driver, or a build without CUDA): quantize "
          "on the CPU.");
    if (engine_ && engine_->busy())
      return tr(
          "The chat model is busy. Wait until it has finished answering or loading, or "
          "stop it, then start the job.");
  } else if (device != u"cpu") {
    return tr("Choose the GPU or the CPU.");
  }
  return {};
}

void QuantizeJobs::releaseGpu() {
  if (engine_) engine_->setGpuReservation({});
}

// ------------------------------------------------------------------ interrupted jobs

void QuantizeJobs::scanForJobs() {
  findJobs(++jobsSerial_);
}

QCoro::Task<void> QuantizeJobs::findJobs(quint64 serial) {
  QPointer<QuantizeJobs> self(this);
  QStringList folders;
  if (library_)
    folders = library_->folders();
  else if (settings_)
    folders << AppSettings::defaultModelsFolder();
  if (settings_) folders << settings_->quantizeFolders();
  const QString output = form_->outputPath();
  if (!output.isEmpty() && !QDir::isRelativePath(output))
    folders << QFileInfo(output).absolutePath();
  folders.removeDuplicates();
  const QString runningWorkDir = running_ ? workDir() : QString();
  QFuture<QVariantList> future = QtConcurrent::run(
      [folders, runningWorkDir] { return findQuantizeJobs(folders, runningWorkDir); });
  QVariantList jobs = co_await future;
  if (!self || serial != jobsSerial_) co_return;
  jobs_ = jobs;
  if (running_) forgetInterrupted(workDir());  // a job started while the scan ran
  emit jobsChanged();
}

void QuantizeJobs::forgetInterrupted(const QString& workDir) {
  jobs_.erase(std::remove_if(jobs_.begin(), jobs_.end(),
                             [&](const QVariant& v) {
                               return v.toMap().value(QStringLiteral("workDir")).toString() ==
                                      workDir;
                             }),
              jobs_.end());
}

QVariantMap QuantizeJobs::outputJob() const {
  const QString output = form_->outputPath();
  const QString wd = workDirFor(output);
  if (wd.isEmpty() || (running_ && wd == workDir())) return {};
  if (!QFileInfo::exists(fromPath(hearth::default_work_dir(toPath(output)) / "job.json")))
    return {};
  for (const QVariant& v : jobs_) {
    const QVariantMap job = v.toMap();
    if (job.value(QStringLiteral("workDir")).toString() == wd) return job;
  }
  return {{QStringLiteral("workDir"), wd}, {QStringLiteral("output"), output}};
}

bool QuantizeJobs::discardJob(const QString& workDir) {
  const QString wd = cleanPath(workDir);
  if (running_ && wd == this->workDir()) return false;
  if (!discardQuantizeJob(wd)) return false;
  if (this->workDir() == wd) {
    resumable_ = false;
    emit runChanged();
  }
  forgetInterrupted(wd);
  emit jobsChanged();
  form_->updateDefaultOutput();
  scanForJobs();
  return true;
}

bool QuantizeJobs::discard() {
  if (running_ || !resumable_) return false;
  return discardJob(workDir());
}

QString QuantizeJobs::workDir() const {
  return cleanPath(fromPath(jobOptions_.work_dir));
}

// ------------------------------------------------------------------ the job

bool QuantizeJobs::start(hearth::QuantizeOptions options) {
  if (options.device == hearth::DeviceKind::kCuda && chatModelOnGpu()) {
    startWhenGpuIsFree(std::move(options));
    return true;
  }
  return launch(std::move(options));
}

QuantizeJobs::Resume QuantizeJobs::resumeJob(const QString& workDir) {
  if (running_) return Resume::Failed;
  std::optional<hearth::QuantizeJobStatus> status;
  try {
    status = hearth::find_quantize_job(toPath(workDir));
  } catch (const std::exception& e) {
    failure_ = {{QStringLiteral("code"), QStringLiteral("invalid_file")},
                {QStringLiteral("message"), QString::fromUtf8(e.what())},
                {QStringLiteral("cancelled"), false}};
    emit runChanged();
    return Resume::Failed;
  }
  if (!status) return Resume::Failed;
  form_->applyJobOptions(status->options);
  if (const QString p = busyProblem(); !p.isEmpty()) {
    failure_ = {{QStringLiteral("code"), QStringLiteral("busy")},
                {QStringLiteral("message"), p},
                {QStringLiteral("cancelled"), false}};
    emit runChanged();
    return Resume::Refused;
  }
  hearth::QuantizeOptions o = status->options;
  o.work_dir = toPath(cleanPath(workDir));
  o.resume = true;
  o.restart = false;
  o.keep_work = false;
  o.cpu_threads = 0;
  o.evaluate = form_->evaluate();
  o.eval_max_tokens = form_->evaluationTokens();
  return start(std::move(o)) ? Resume::Started : Resume::Failed;
}

void QuantizeJobs::startWhenGpuIsFree(hearth::QuantizeOptions options) {
  // Shown as a job that has not begun: cancel() abandons the wait.
  jobOptions_ = options;
  running_ = true;
  cancelling_ = false;
  failure_.clear();
  result_.clear();
  progress_ = {};
  log_ = QStringList{tr("Unloading the chat model to free the GPU…")};
  emit runChanged();
  emit progressChanged();
  waitForUnload_ = connect(engine_, &EngineController::stateChanged, this, [this, options] {
    if (engine_->state() != EngineController::Empty) return;
    disconnect(waitForUnload_);
    waitForUnload_ = {};
    running_ = false;
    launch(options);
  });
  engine_->unload();
}

bool QuantizeJobs::launch(hearth::QuantizeOptions options) {
  jobOptions_ = options;
  const quint64 id = ++jobId_;
  cancel_ = hearth::CancelToken();
  running_ = true;
  cancelling_ = false;
  failure_.clear();
  result_.clear();
  resumable_ = false;
  progress_ = {};
  progress_.stage = QStringLiteral("prepare");
  log_.clear();
  layer_ = 0;
  if (form_->sourceOk()) layerCount_ = form_->sourceLayers();
  stages_.clear();
  stages_ << QStringLiteral("prepare");
  if (options.format == hearth::QuantizeFormat::kExl2)
    stages_ << QStringLiteral("measure") << QStringLiteral("optimize");
  stages_ << QStringLiteral("quantize") << QStringLiteral("write");
  if (options.evaluate) stages_ << QStringLiteral("evaluate");
  if (options.device == hearth::DeviceKind::kCuda && engine_)
    engine_->setGpuReservation(
        tr("The GPU is in use by a quantization job. Load the model on the CPU, or wait until "
           "the job has finished or is cancelled."));
  // The job is running, no longer interrupted.
  forgetInterrupted(workDir());
  emit jobsChanged();
  if (settings_) {
    // Remembered, so that the job is found again after a restart wherever it writes.
    QStringList folders = settings_->quantizeFolders();
    const QString parent = QFileInfo(fromPath(options.output)).absolutePath();
    folders.removeAll(parent);
    folders.prepend(parent);
    while (folders.size() > 20) folders.removeLast();
    settings_->setQuantizeFolders(folders);
  }
  sinceProgress_.start();
  clock_.start();
  emit runChanged();
  emit progressChanged();
  emit clockChanged();
  const QuantizeTask task{id, std::move(options), cancel_};
  QMetaObject::invokeMethod(worker_, [w = worker_, task] { w->run(task); });
  return true;
}

void QuantizeJobs::cancel() {
  if (!running_) return;
  if (waitForUnload_) {
    // Still waiting for the chat model to unload: nothing has started.
    disconnect(waitForUnload_);
    waitForUnload_ = {};
    running_ = false;
    failure_ = {{QStringLiteral("code"), QStringLiteral("cancelled")},
                {QStringLiteral("message"), tr("Stopped before the job began.")},
                {QStringLiteral("cancelled"), true}};
    emit runChanged();
    return;
  }
  cancelling_ = true;
  cancel_.cancel();
  emit runChanged();
}

void QuantizeJobs::clearOutcome() {
  if (running_) return;
  failure_.clear();
  result_.clear();
  resumable_ = false;
  progress_ = {};
  log_.clear();
  emit runChanged();
  emit progressChanged();
}

double QuantizeJobs::elapsedSeconds() const {
  if (!running_) return progress_.elapsedSeconds;
  return progress_.elapsedSeconds + double(sinceProgress_.elapsed()) / 1000.0;
}

double QuantizeJobs::remainingSeconds() const {
  if (progress_.remainingSeconds < 0) return -1;
  if (!running_) return progress_.remainingSeconds;
  return std::max(0.0, progress_.remainingSeconds - double(sinceProgress_.elapsed()) / 1000.0);
}

void QuantizeJobs::onProgress(quint64 id, const QuantizeUpdate& update) {
  if (id != jobId_ || !running_) return;
  progress_ = update;
  if (!update.message.isEmpty()) {
    log_ << update.message;
    while (log_.size() > kLogLines) log_.removeFirst();
  }
  static const QRegularExpression layerPattern(QStringLiteral("layers\\.(\\d+)"));
  const QRegularExpressionMatch m = layerPattern.match(update.item);
  layer_ = m.hasMatch() ? m.captured(1).toInt() + 1 : 0;
  sinceProgress_.restart();
  emit progressChanged();
  emit clockChanged();
}

void QuantizeJobs::onFinished(quint64 id, const QuantizeOutcome& outcome) {
  if (id != jobId_) return;
  running_ = false;
  cancelling_ = false;
  clock_.stop();
  releaseGpu();
  progress_.stage = QStringLiteral("done");
  progress_.fraction = 1;
  progress_.remainingSeconds = 0;
  progress_.elapsedSeconds = outcome.seconds;
  result_ = outcome.toMap();
  result_.insert(QStringLiteral("format"),
                 QString::fromLatin1(hearth::quantize_format_name(jobOptions_.format)));
  result_.insert(QStringLiteral("target"), quantizeTargetText(jobOptions_));
  result_.insert(QStringLiteral("sourceName"), QFileInfo(fromPath(jobOptions_.source)).fileName());
  result_.insert(QStringLiteral("outputName"), QFileInfo(outcome.output).fileName());
  result_.insert(QStringLiteral("estimatedBytes"),
                 form_->estimate().value(QStringLiteral("outputBytes")));
  // The tensors alone, which is what the estimate is about.
  double weightBytes = 0;
  for (const QFileInfo& f :
       QDir(outcome.output).entryInfoList({QStringLiteral("*.safetensors")}, QDir::Files))
    weightBytes += double(f.size());
  result_.insert(QStringLiteral("weightBytes"), weightBytes);
  addToLibrary(outcome.output);
  emit runChanged();
  emit progressChanged();
  emit clockChanged();
  scanForJobs();
  emit finished();
}

void QuantizeJobs::onFailed(quint64 id, const EngineFailure& failure, bool cancelled) {
  if (id != jobId_) return;
  running_ = false;
  cancelling_ = false;
  clock_.stop();
  releaseGpu();
  failure_ = failure.toMap();
  failure_.insert(QStringLiteral("cancelled"), cancelled);
  resumable_ = QFileInfo::exists(fromPath(jobOptions_.work_dir / "job.json"));
  if (cancelled)
    log_ << tr("Stopped. The work done so far is kept in %1.").arg(fromPath(jobOptions_.work_dir));
  emit runChanged();
  emit progressChanged();
  emit clockChanged();
  scanForJobs();
  emit failed(failure_);
}

void QuantizeJobs::addToLibrary(const QString& output) {
  if (!library_) return;
  const QString parent = QFileInfo(output).absolutePath();
  const QString canonicalParent = QFileInfo(parent).canonicalFilePath();
  for (const QString& folder : library_->folders()) {
    const QString c = QFileInfo(folder).canonicalFilePath();
    if (!c.isEmpty() && c == canonicalParent) {
      library_->rescan();  // found there by the scan
      return;
    }
  }
  library_->importModel(QUrl::fromLocalFile(output));
}

void QuantizeJobs::loadResult() {
  const QString path = result_.value(QStringLiteral("output")).toString();
  if (path.isEmpty()) return;
  if (settings_) settings_->setLastModel(path);
  if (engine_) {
    const bool gpu =
        jobOptions_.device == hearth::DeviceKind::kCuda && QuantizeForm::cudaAvailable();
    engine_->load({{QStringLiteral("path"), path},
                   {QStringLiteral("device"), gpu ? QStringLiteral("gpu") : QStringLiteral("cpu")},
                   {QStringLiteral("maxSeqLen"), form_->context()}});
  }
  emit loadRequested();
}

}  // namespace hearth::app
