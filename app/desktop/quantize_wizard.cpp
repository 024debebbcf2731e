#include "app/desktop/quantize_wizard.h"

#include <QCoreApplication>
#include <QCoro/QCoroFuture>
#include <QCoro/QCoroTask>
#include <QDir>
#include <QEvent>
#include <QFileInfo>
#include <QJSEngine>
#include <QLocale>
#include <QRegularExpression>
#include <QtConcurrent/QtConcurrentRun>
#include <algorithm>
#include <cmath>
#include <filesystem>

#include "app/desktop/app_settings.h"
#include "app/desktop/engine_controller.h"
#include "app/desktop/model_library.h"
#include "app/desktop/quantize_job_files.h"
#include "engine/core/error.h"

namespace hearth::app {

namespace {

QuantizeWizard* g_instance = nullptr;
constexpr int kLogLines = 500;
constexpr int kDefaultContext = 8192;  // as the load panel proposes

// "4.0" for 4.0, "4.25" for 4.25: the usual way EXL2 folders are named.
QString bpwText(double bpw) {
  QString s = QString::number(bpw, 'f', 2);
  if (s.endsWith(QLatin1String("0"))) s.chop(1);
  return s;
}

}  // namespace

QuantizeWizard::QuantizeWizard(EngineController* engine, ModelLibrary* library,
                               AppSettings* settings, QObject* parent)
    : QObject(parent), engine_(engine), library_(library), settings_(settings) {
  device_ = cudaAvailable() ? QStringLiteral("gpu") : QStringLiteral("cpu");

  worker_ = new QuantizeWorker();
  worker_->moveToThread(&thread_);
  connect(&thread_, &QThread::finished, worker_, &QObject::deleteLater);
  connect(worker_, &QuantizeWorker::progressed, this, &QuantizeWizard::onProgress);
  connect(worker_, &QuantizeWorker::finished, this, &QuantizeWizard::onFinished);
  connect(worker_, &QuantizeWorker::failed, this, &QuantizeWizard::onFailed);
  thread_.setObjectName(QStringLiteral("hearth-quantizer"));
  thread_.start(QThread::LowPriority);  // the UI and the chat engine come first

  estimateTimer_.setSingleShot(true);
  estimateTimer_.setInterval(120);  // a dragged slider asks once it rests
  connect(&estimateTimer_, &QTimer::timeout, this, [this] { computeEstimate(++estimateSerial_); });
  clock_.setInterval(1000);
  connect(&clock_, &QTimer::timeout, this, &QuantizeWizard::clockChanged);

  if (engine_) {
    // Busy or loaded on the GPU changes what the review step allows and says.
    connect(engine_, &EngineController::stateChanged, this, &QuantizeWizard::refresh);
    connect(engine_, &EngineController::modelChanged, this, &QuantizeWizard::refresh);
  }
  if (library_) {
    connect(library_, &QAbstractItemModel::modelReset, this, &QuantizeWizard::updateCandidates);
    connect(library_, &QAbstractItemModel::rowsRemoved, this, &QuantizeWizard::updateCandidates);
    connect(library_, &QAbstractItemModel::rowsInserted, this, &QuantizeWizard::updateCandidates);
    updateCandidates();
  }
  if (QCoreApplication::instance()) QCoreApplication::instance()->installEventFilter(this);
}

QuantizeWizard::~QuantizeWizard() {
  // A running job stops at its next check and stays resumable in its work folder.
  cancel_.cancel();
  thread_.quit();
  thread_.wait();
  releaseGpu();
  if (g_instance == this) g_instance = nullptr;
}

QuantizeWizard* QuantizeWizard::create(QQmlEngine*, QJSEngine*) {
  Q_ASSERT_X(g_instance, "QuantizeWizard", "the app creates the instance before QML uses it");
  QJSEngine::setObjectOwnership(g_instance, QJSEngine::CppOwnership);
  return g_instance;
}

void QuantizeWizard::setInstance(QuantizeWizard* instance) {
  g_instance = instance;
}

bool QuantizeWizard::eventFilter(QObject* watched, QEvent* event) {
  if (event->type() == QEvent::LanguageChange && watched == QCoreApplication::instance()) {
    // Messages made in C++ are translated when made: make them again.
    if (!sourcePath_.isEmpty() && !sourceChecking_) checkSource(sourcePath_, ++sourceSerial_);
    scanForJobs();
    refresh();
  }
  return QObject::eventFilter(watched, event);
}

// ------------------------------------------------------------------ navigation

void QuantizeWizard::setStep(Step s) {
  if (s == step_) return;
  step_ = s;
  emit stepChanged();
  emit stateChanged();
}

void QuantizeWizard::refresh() {
  emit stateChanged();
}

bool QuantizeWizard::canGoBack() const {
  return !running_ && step_ > Source && step_ <= Run;
}

bool QuantizeWizard::canGoNext() const {
  return !running_ && step_ < Review && problemOf(step_).isEmpty();
}

bool QuantizeWizard::canStart() const {
  return step_ == Review && problemOf(Review).isEmpty();
}

QString QuantizeWizard::problemOf(int step) const {
  switch (step) {
    case Source:
      if (sourcePath_.isEmpty()) return tr("Choose a model to quantize.");
      if (sourceChecking_) return tr("Reading the model…");
      if (!sourceOk()) return sourceError();
      return {};
    case Format:
      if (format_ != u"exl2" && format_ != u"gptq") return tr("Choose EXL2 or GPTQ.");
      return {};
    case Size:
      return sizeProblem();
    case Calibration:
      return calibrationProblem();
    case Review:
      for (int s = Source; s < Review; ++s) {
        const QString p = problemOf(s);
        if (!p.isEmpty()) return p;
      }
      if (const QString p = outputProblem(); !p.isEmpty()) return p;
      return busyProblem();
    default:
      return {};
  }
}

QString QuantizeWizard::sizeProblem() const {
  if (format_ == u"exl2") {
    static const int kHeadBits[] = {2, 3, 4, 5, 6, 8};
    if (std::find(std::begin(kHeadBits), std::end(kHeadBits), headBits_) == std::end(kHeadBits))
      return tr("Head bits must be 2, 3, 4, 5, 6 or 8.");
    if (!(bpw_ >= 2.0 - 1e-9 && bpw_ <= 8.0 + 1e-9))
      return tr("Choose between 2.0 and 8.0 bits per weight.");
  } else {
    if (bits_ != 2 && bits_ != 3 && bits_ != 4 && bits_ != 8)
      return tr("GPTQ bits must be 2, 3, 4 or 8.");
    if (groupSize_ != -1 && groupSize_ < 1)
      return tr("The group size must be positive, or −1 for one group per column.");
  }
  if (!sourceOk()) return {};  // the source step says why
  if (estimate_.isEmpty()) return tr("Working out the size…");
  if (!estimate_.value(QStringLiteral("valid")).toBool())
    return tr("The size cannot be estimated: %1")
        .arg(estimate_.value(QStringLiteral("error")).toString());
  if (format_ == u"exl2") {
    const double minBpw = estimate_.value(QStringLiteral("minBpw")).toDouble();
    if (bpw_ < minBpw - 1e-9)
      return tr("This model needs at least %1 bits per weight (the cheapest setting of every "
                "layer).")
          .arg(QLocale().toString(std::ceil(minBpw * 100) / 100, 'f', 2));
  }
  return {};
}

QString QuantizeWizard::calibrationProblem() const {
  if (calibrationFile_.isEmpty()) return {};
  const QFileInfo f(calibrationFile_);
  if (!f.exists()) return tr("%1 does not exist.").arg(calibrationFile_);
  if (!f.isFile()) return tr("%1 is not a file.").arg(calibrationFile_);
  const QString suffix = f.suffix().toLower();
  if (suffix != u"txt" && suffix != u"md" && suffix != u"jsonl")
    return tr("Calibration text must be a .txt, .md or .jsonl file.");
  if (!f.isReadable()) return tr("%1 cannot be read.").arg(calibrationFile_);
  if (f.size() == 0) return tr("%1 is empty.").arg(calibrationFile_);
  return {};
}

QString QuantizeWizard::outputProblem() const {
  if (outputPath_.isEmpty()) return tr("Choose where to write the quantized model.");
  if (QDir::isRelativePath(outputPath_))
    return tr("The output folder must be a full path, such as %1.")
        .arg(QDir::homePath() + QStringLiteral("/models/my-model-exl2"));
  if (!outputJob().isEmpty())
    return tr("An interrupted job is writing to this folder: resume it or discard it first.");
  const QFileInfo out(outputPath_);
  if (out.exists()) {
    if (!out.isDir()) return tr("%1 exists and is not a folder.").arg(outputPath_);
    if (!QDir(outputPath_).isEmpty(QDir::AllEntries | QDir::NoDotAndDotDot | QDir::Hidden))
      return tr("%1 exists and is not empty: choose another folder.").arg(outputPath_);
  }
  // The nearest folder that exists must let us create the rest.
  QString existing = out.absoluteFilePath();
  while (!QFileInfo::exists(existing) && existing != QDir::rootPath())
    existing = QFileInfo(existing).absolutePath();
  const QFileInfo anchor(existing);
  if (!anchor.isDir() || !anchor.isWritable()) return tr("%1 is not writable.").arg(existing);
  return {};
}

QString QuantizeWizard::busyProblem() const {
  if (running_) return tr("A quantization job is already running.");
  if (device_ == u"gpu") {
    if (!cudaAvailable())
      return tr(
          "No CUDA GPU is available here (no device, no driver, or a build without CUDA): quantize "
          "on the CPU.");
    if (engine_ && engine_->busy())
      return tr(
          "The chat model is busy. Wait until it has finished answering or loading, or "
          "stop it, then start the job.");
  } else if (device_ != u"cpu") {
    return tr("Choose the GPU or the CPU.");
  }
  return {};
}

bool QuantizeWizard::next() {
  if (!canGoNext()) return false;
  setStep(Step(step_ + 1));
  if (step_ == Review) scanForJobs();
  return true;
}

bool QuantizeWizard::back() {
  if (!canGoBack()) return false;
  setStep(step_ == Run ? Review : Step(step_ - 1));
  return true;
}

bool QuantizeWizard::goToStep(int s) {
  if (running_ || s < Source) return false;
  if (s == step_ + 1 && step_ < Review) return next();
  if (s < step_ && s <= Review && step_ <= Run) {
    setStep(Step(s));
    if (step_ == Review) scanForJobs();
    return true;
  }
  return false;
}

void QuantizeWizard::startOver() {
  if (running_) return;
  failure_.clear();
  result_.clear();
  resumable_ = false;
  progress_ = {};
  log_.clear();
  emit runChanged();
  emit progressChanged();
  setStep(Source);
  scanForJobs();
}

// ------------------------------------------------------------------ source

void QuantizeWizard::setSourcePath(const QString& path) {
  QString p = path.trimmed();
  if (p.endsWith(QLatin1String("/config.json"))) p.chop(int(sizeof("/config.json") - 1));
  if (p.size() > 1 && p.endsWith(u'/')) p.chop(1);
  if (p == sourcePath_) return;
  sourcePath_ = p;
  source_.reset();
  sourceChecking_ = !p.isEmpty();
  estimate_.clear();
  emit sourceChanged();
  emit estimateChanged();
  updateDefaultOutput();
  refresh();
  if (!p.isEmpty()) checkSource(p, ++sourceSerial_);
}

void QuantizeWizard::chooseSource(const QUrl& location) {
  setSourcePath(location.isLocalFile() ? location.toLocalFile() : location.toString());
}

QCoro::Task<void> QuantizeWizard::checkSource(QString path, quint64 serial) {
  QPointer<QuantizeWizard> self(this);
  sourceChecking_ = true;
  // GCC 12 destroys temporaries of a co_await expression twice: await a named future.
  QFuture<QuantizeSource> future =
      QtConcurrent::run([path] { return inspectQuantizeSource(path); });
  const QuantizeSource checked = co_await future;
  if (!self || serial != sourceSerial_) co_return;
  source_ = checked;
  sourceChecking_ = false;
  if (checked.ok) {
    const qint64 trained = checked.summary.value(QStringLiteral("contextLength")).toLongLong();
    if (!contextChosen_ && trained > 0) context_ = int(std::min<qint64>(trained, kDefaultContext));
    if (!running_) layerCount_ = checked.summary.value(QStringLiteral("layers")).toInt();
  }
  emit sourceChanged();
  emit settingsChanged();
  updateDefaultOutput();
  scheduleEstimate();
  refresh();
}

void QuantizeWizard::updateCandidates() {
  QVariantList list;
  if (library_) {
    for (int row = 0; row < library_->rowCount(); ++row) {
      const QModelIndex i = library_->index(row);
      const QString format = library_->data(i, ModelLibrary::FormatRole).toString();
      if (!library_->data(i, ModelLibrary::ErrorRole).toString().isEmpty()) continue;
      if (format != u"fp16" && format != u"gguf") continue;
      const QString stored = library_->data(i, ModelLibrary::StoredTypesRole).toString();
      list << QVariantMap{
          {QStringLiteral("path"), library_->data(i, ModelLibrary::PathRole)},
          {QStringLiteral("name"), library_->data(i, ModelLibrary::NameRole)},
          {QStringLiteral("format"), format},
          {QStringLiteral("parameters"), library_->data(i, ModelLibrary::ParametersRole)},
          {QStringLiteral("fileBytes"), library_->data(i, ModelLibrary::FileBytesRole)},
          {QStringLiteral("quantized"), format == u"gguf" && ggufIsQuantized(stored)}};
    }
  }
  if (list == candidates_) return;
  candidates_ = list;
  emit candidatesChanged();
}

// ------------------------------------------------------------------ settings

void QuantizeWizard::settingChanged() {
  emit settingsChanged();
  updateDefaultOutput();
  scheduleEstimate();
  refresh();
}

void QuantizeWizard::setFormat(const QString& format) {
  if (format == format_) return;
  format_ = format;
  settingChanged();
}

void QuantizeWizard::setBpw(double bpw) {
  if (!std::isfinite(bpw)) return;
  bpw = std::round(bpw * 100) / 100;  // the slider's resolution; names stay short
  if (bpw == bpw_) return;
  bpw_ = bpw;
  settingChanged();
}

void QuantizeWizard::setHeadBits(int bits) {
  if (bits == headBits_) return;
  headBits_ = bits;
  settingChanged();
}

void QuantizeWizard::setBits(int bits) {
  if (bits == bits_) return;
  bits_ = bits;
  settingChanged();
}

void QuantizeWizard::setGroupSize(int size) {
  if (size == groupSize_) return;
  groupSize_ = size;
  settingChanged();
}

void QuantizeWizard::setActOrder(bool on) {
  if (on == actOrder_) return;
  actOrder_ = on;
  settingChanged();
}

void QuantizeWizard::setContext(int tokens) {
  tokens = std::clamp(tokens, 128, 1 << 22);
  contextChosen_ = true;
  if (tokens == context_) return;
  context_ = tokens;
  settingChanged();
}

void QuantizeWizard::setCalibrationFile(const QString& path) {
  const QString p = path.trimmed();
  if (p == calibrationFile_) return;
  calibrationFile_ = p;
  settingChanged();
}

void QuantizeWizard::chooseCalibration(const QUrl& file) {
  setCalibrationFile(file.isLocalFile() ? file.toLocalFile() : file.toString());
}

void QuantizeWizard::setCalibrationRows(int rows) {
  rows = std::clamp(rows, 0, 100000);
  if (rows == rows_) return;
  rows_ = rows;
  settingChanged();
}

void QuantizeWizard::setCalibrationLength(int length) {
  length = std::clamp(length, 0, 65536);
  if (length == length_) return;
  length_ = length;
  settingChanged();
}

void QuantizeWizard::setOutputPath(const QString& path) {
  outputChosen_ = true;
  const QString p = cleanPath(path.trimmed());
  if (p == outputPath_) return;
  outputPath_ = p;
  emit settingsChanged();
  emit jobsChanged();
  refresh();
}

void QuantizeWizard::chooseOutputFolder(const QUrl& parentFolder) {
  const QString parent =
      parentFolder.isLocalFile() ? parentFolder.toLocalFile() : parentFolder.toString();
  setOutputPath(QDir(parent).filePath(defaultOutputName()));
}

QString QuantizeWizard::defaultOutputName() const {
  QString base = QFileInfo(sourcePath_).fileName();
  if (base.endsWith(QLatin1String(".gguf"), Qt::CaseInsensitive)) base.chop(5);
  if (base.isEmpty()) base = QStringLiteral("model");
  if (format_ == u"gptq")
    return base + QStringLiteral("-gptq-%1bit").arg(bits_) +
           (groupSize_ > 0 ? QStringLiteral("-g%1").arg(groupSize_) : QString());
  return base + QStringLiteral("-exl2-%1bpw").arg(bpwText(bpw_));
}

void QuantizeWizard::updateDefaultOutput() {
  if (outputChosen_ || !settings_ || sourcePath_.isEmpty()) return;
  const QDir folder(AppSettings::defaultModelsFolder());
  const QString name = defaultOutputName();
  QString path = folder.filePath(name);
  // A finished or unrelated folder of that name stays untouched: number the new one.
  for (int n = 2; n < 1000; ++n) {
    const QFileInfo f(path);
    const bool taken =
        f.exists() && !(f.isDir() && QDir(path).isEmpty(QDir::AllEntries | QDir::NoDotAndDotDot));
    if (!taken && !QFileInfo::exists(workDirFor(path))) break;
    path = folder.filePath(name + QStringLiteral("-%1").arg(n));
  }
  if (path == outputPath_) return;
  outputPath_ = path;
  emit settingsChanged();
  emit jobsChanged();
}

void QuantizeWizard::setDevice(const QString& device) {
  if (device == device_) return;
  device_ = device;
  settingChanged();
}

// A CUDA build on a machine without a GPU (or its driver) counts as no CUDA.
bool QuantizeWizard::cudaAvailable() const {
  static const bool available = hearth::Engine::cuda_available();
  return available;
}

void QuantizeWizard::setEvaluate(bool on) {
  if (on == evaluate_) return;
  evaluate_ = on;
  settingChanged();
}

void QuantizeWizard::setEvaluationTokens(int tokens) {
  tokens = std::max(64, tokens);
  if (tokens == evaluationTokens_) return;
  evaluationTokens_ = tokens;
  settingChanged();
}

bool QuantizeWizard::chatModelOnGpu() const {
  return engine_ && engine_->loaded() &&
         engine_->model().value(QStringLiteral("deviceName")).toString() == u"GPU";
}

QString QuantizeWizard::deviceNotice() const {
  if (device_ == u"gpu") {
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

hearth::QuantizeOptions QuantizeWizard::options() const {
  hearth::QuantizeOptions o;
  o.source = toPath(sourcePath_);
  o.output = toPath(outputPath_);
  o.work_dir = toPath(workDirFor(outputPath_));
  o.keep_work = false;
  o.format = format_ == u"gptq" ? hearth::QuantizeFormat::kGptq : hearth::QuantizeFormat::kExl2;
  o.target_bpw = bpw_;
  o.head_bits = headBits_;
  o.bits = bits_;
  o.group_size = groupSize_;
  o.act_order = actOrder_;
  o.symmetric = true;
  o.calibration_file = toPath(calibrationFile_);
  // The rows the user asks for serve the measurement too (its default is fewer).
  o.rows = rows_;
  o.measure_rows = rows_;
  o.length = length_;
  o.device = device_ == u"gpu" ? hearth::DeviceKind::kCuda : hearth::DeviceKind::kCpu;
  o.cpu_threads = 0;
  o.evaluate = evaluate_;
  o.eval_max_tokens = evaluationTokens_;
  return o;
}

// ------------------------------------------------------------------ estimates

void QuantizeWizard::scheduleEstimate() {
  if (!sourceOk()) {
    estimateTimer_.stop();
    ++estimateSerial_;  // drops any estimate under way
    if (estimating_ || !estimate_.isEmpty()) {
      estimating_ = false;
      estimate_.clear();
      emit estimateChanged();
    }
    return;
  }
  if (!estimating_) {
    estimating_ = true;
    emit estimateChanged();
  }
  estimateTimer_.start();
}

QCoro::Task<void> QuantizeWizard::computeEstimate(quint64 serial) {
  QPointer<QuantizeWizard> self(this);
  if (!source_) co_return;
  const hearth::QuantizeOptions o = options();
  const hearth::ModelInfo info = source_->info;
  const int64_t context = context_;
  const bool queryGpu = cudaAvailable();
  QFuture<QVariantMap> future = QtConcurrent::run([o, info, context, queryGpu] {
    return estimateQuantizeSize(o, info, context, queryGpu).toMap();
  });
  const QVariantMap map = co_await future;
  if (!self || serial != estimateSerial_) co_return;
  estimate_ = map;
  estimating_ = false;
  emit estimateChanged();
  refresh();
}

// ------------------------------------------------------------------ interrupted jobs

void QuantizeWizard::scanForJobs() {
  findJobs(++jobsSerial_);
}

QCoro::Task<void> QuantizeWizard::findJobs(quint64 serial) {
  QPointer<QuantizeWizard> self(this);
  QStringList folders;
  if (library_)
    folders = library_->folders();
  else if (settings_)
    folders << AppSettings::defaultModelsFolder();
  if (settings_) folders << settings_->quantizeFolders();
  if (!outputPath_.isEmpty() && !QDir::isRelativePath(outputPath_))
    folders << QFileInfo(outputPath_).absolutePath();
  folders.removeDuplicates();
  const QString runningWorkDir = running_ ? cleanPath(fromPath(jobOptions_.work_dir)) : QString();
  QFuture<QVariantList> future = QtConcurrent::run(
      [folders, runningWorkDir] { return findQuantizeJobs(folders, runningWorkDir); });
  QVariantList jobs = co_await future;
  if (!self || serial != jobsSerial_) co_return;
  if (running_) {  // a job started while the scan ran is not interrupted
    const QString workDir = cleanPath(fromPath(jobOptions_.work_dir));
    jobs.erase(std::remove_if(jobs.begin(), jobs.end(),
                              [&](const QVariant& v) {
                                return v.toMap().value(QStringLiteral("workDir")).toString() ==
                                       workDir;
                              }),
               jobs.end());
  }
  jobs_ = jobs;
  emit jobsChanged();
  refresh();
}

QVariantMap QuantizeWizard::outputJob() const {
  const QString wd = workDirFor(outputPath_);
  if (wd.isEmpty() || (running_ && wd == cleanPath(fromPath(jobOptions_.work_dir)))) return {};
  if (!QFileInfo::exists(fromPath(hearth::default_work_dir(toPath(outputPath_)) / "job.json")))
    return {};
  for (const QVariant& v : jobs_) {
    const QVariantMap job = v.toMap();
    if (job.value(QStringLiteral("workDir")).toString() == wd) return job;
  }
  return {{QStringLiteral("workDir"), wd}, {QStringLiteral("output"), outputPath_}};
}

bool QuantizeWizard::discardJob(const QString& workDir) {
  const QString wd = cleanPath(workDir);
  if (running_ && wd == cleanPath(fromPath(jobOptions_.work_dir))) return false;
  if (!discardQuantizeJob(wd)) return false;
  if (cleanPath(fromPath(jobOptions_.work_dir)) == wd) {
    resumable_ = false;
    emit runChanged();
  }
  jobs_.erase(std::remove_if(jobs_.begin(), jobs_.end(),
                             [&](const QVariant& v) {
                               return v.toMap().value(QStringLiteral("workDir")).toString() == wd;
                             }),
              jobs_.end());
  emit jobsChanged();
  updateDefaultOutput();
  scanForJobs();
  refresh();
  return true;
}

bool QuantizeWizard::discard() {
  if (running_ || !resumable_) return false;
  return discardJob(fromPath(jobOptions_.work_dir));
}

void QuantizeWizard::applyJobOptions(const hearth::QuantizeOptions& o) {
  setSourcePath(fromPath(o.source));
  format_ = QString::fromLatin1(hearth::quantize_format_name(o.format));
  bpw_ = o.target_bpw;
  headBits_ = o.head_bits;
  bits_ = o.bits;
  groupSize_ = int(o.group_size);
  actOrder_ = o.act_order;
  calibrationFile_ = fromPath(o.calibration_file);
  outputChosen_ = true;
  outputPath_ = cleanPath(fromPath(o.output));
  device_ = o.device == hearth::DeviceKind::kCuda ? QStringLiteral("gpu") : QStringLiteral("cpu");
  emit settingsChanged();
  emit jobsChanged();
  scheduleEstimate();
}

// ------------------------------------------------------------------ the job

bool QuantizeWizard::start() {
  if (!canStart()) return false;
  hearth::QuantizeOptions o = options();
  if (o.device == hearth::DeviceKind::kCuda && chatModelOnGpu()) {
    startWhenGpuIsFree(std::move(o));
    return true;
  }
  return launch(std::move(o));
}

bool QuantizeWizard::resume() {
  if (running_ || !resumable_) return false;
  return resumeJob(fromPath(jobOptions_.work_dir));
}

bool QuantizeWizard::resumeJob(const QString& workDir) {
  if (running_) return false;
  std::optional<hearth::QuantizeJobStatus> status;
  try {
    status = hearth::find_quantize_job(toPath(workDir));
  } catch (const std::exception& e) {
    failure_ = {{QStringLiteral("code"), QStringLiteral("invalid_file")},
                {QStringLiteral("message"), QString::fromUtf8(e.what())},
                {QStringLiteral("cancelled"), false}};
    emit runChanged();
    return false;
  }
  if (!status) return false;
  applyJobOptions(status->options);
  if (const QString p = busyProblem(); !p.isEmpty()) {
    failure_ = {{QStringLiteral("code"), QStringLiteral("busy")},
                {QStringLiteral("message"), p},
                {QStringLiteral("cancelled"), false}};
    setStep(Review);
    emit runChanged();
    return false;
  }
  hearth::QuantizeOptions o = status->options;
  o.work_dir = toPath(cleanPath(workDir));
  o.resume = true;
  o.restart = false;
  o.keep_work = false;
  o.cpu_threads = 0;
  o.evaluate = evaluate_;
  o.eval_max_tokens = evaluationTokens_;
  if (o.device == hearth::DeviceKind::kCuda && chatModelOnGpu()) {
    startWhenGpuIsFree(std::move(o));
    return true;
  }
  return launch(std::move(o));
}

void QuantizeWizard::startWhenGpuIsFree(hearth::QuantizeOptions options) {
  // Shown as a job that has not begun: cancel() abandons the wait.
  jobOptions_ = options;
  running_ = true;
  cancelling_ = false;
  failure_.clear();
  result_.clear();
  progress_ = {};
  log_ = QStringList{tr("Unloading the chat model to free the GPU…")};
  setStep(Run);
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

bool QuantizeWizard::launch(hearth::QuantizeOptions options) {
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
  if (source_ && source_->ok)
    layerCount_ = source_->summary.value(QStringLiteral("layers")).toInt();
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
  const QString workDir = cleanPath(fromPath(options.work_dir));
  jobs_.erase(std::remove_if(jobs_.begin(), jobs_.end(),
                             [&](const QVariant& v) {
                               return v.toMap().value(QStringLiteral("workDir")).toString() ==
                                      workDir;
                             }),
              jobs_.end());
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
  setStep(Run);
  emit runChanged();
  emit progressChanged();
  emit clockChanged();
  refresh();
  const QuantizeTask task{id, std::move(options), cancel_};
  QMetaObject::invokeMethod(worker_, [w = worker_, task] { w->run(task); });
  return true;
}

void QuantizeWizard::cancel() {
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
    refresh();
    return;
  }
  cancelling_ = true;
  cancel_.cancel();
  emit runChanged();
}

void QuantizeWizard::releaseGpu() {
  if (engine_) engine_->setGpuReservation({});
}

double QuantizeWizard::elapsedSeconds() const {
  if (!running_) return progress_.elapsedSeconds;
  return progress_.elapsedSeconds + double(sinceProgress_.elapsed()) / 1000.0;
}

double QuantizeWizard::remainingSeconds() const {
  if (progress_.remainingSeconds < 0) return -1;
  if (!running_) return progress_.remainingSeconds;
  return std::max(0.0, progress_.remainingSeconds - double(sinceProgress_.elapsed()) / 1000.0);
}

void QuantizeWizard::onProgress(quint64 id, const QuantizeUpdate& update) {
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

void QuantizeWizard::onFinished(quint64 id, const QuantizeOutcome& outcome) {
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
  result_.insert(QStringLiteral("estimatedBytes"), estimate_.value(QStringLiteral("outputBytes")));
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
  setStep(Result);
  scanForJobs();
  refresh();
  emit finished();
}

void QuantizeWizard::onFailed(quint64 id, const EngineFailure& failure, bool cancelled) {
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
  refresh();
  emit failed(failure_);
}

void QuantizeWizard::addToLibrary(const QString& output) {
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

void QuantizeWizard::loadResult() {
  const QString path = result_.value(QStringLiteral("output")).toString();
  if (path.isEmpty()) return;
  if (settings_) settings_->setLastModel(path);
  if (engine_) {
    const bool gpu = jobOptions_.device == hearth::DeviceKind::kCuda && cudaAvailable();
    engine_->load({{QStringLiteral("path"), path},
                   {QStringLiteral("device"), gpu ? QStringLiteral("gpu") : QStringLiteral("cpu")},
                   {QStringLiteral("maxSeqLen"), context_}});
  }
  emit loadRequested();
}

}  // namespace hearth::app
