#include "app/desktop/quantize/quantize_form.h"

#include <QCoro/QCoroFuture>
#include <QCoro/QCoroTask>
#include <QDir>
#include <QFileInfo>
#include <QLocale>
#include <QtConcurrent/QtConcurrentRun>
#include <algorithm>
#include <cmath>

#include "app/desktop/library/model_library.h"
#include "app/desktop/quantize/quantize_job_files.h"
#include "app/desktop/settings/app_settings.h"
#include "engine/api/engine.h"

namespace hearth::app {

namespace {

constexpr int kDefaultContext = 8192;  // as the load panel proposes

// "4.0" for 4.0, "4.25" for 4.25: the usual way EXL2 folders are named.
QString bpwText(double bpw) {
  QString s = QString::number(bpw, 'f', 2);
  if (s.endsWith(QLatin1String("0"))) s.chop(1);
  return s;
}

}  // namespace

QuantizeForm::QuantizeForm(ModelLibrary* library, AppSettings* settings, QObject* parent)
    : QObject(parent), library_(library), settings_(settings) {
  device_ = cudaAvailable() ? QStringLiteral("gpu") : QStringLiteral("cpu");
  estimateTimer_.setSingleShot(true);
  estimateTimer_.setInterval(120);  // a dragged slider asks once it rests
  connect(&estimateTimer_, &QTimer::timeout, this, [this] { computeEstimate(++estimateSerial_); });
  if (library_) {
    connect(library_, &QAbstractItemModel::modelReset, this, &QuantizeForm::updateCandidates);
    connect(library_, &QAbstractItemModel::rowsRemoved, this, &QuantizeForm::updateCandidates);
    connect(library_, &QAbstractItemModel::rowsInserted, this, &QuantizeForm::updateCandidates);
    updateCandidates();
  }
}

QuantizeForm::~QuantizeForm() = default;

void QuantizeForm::retranslate() {
  if (!sourcePath_.isEmpty() && !sourceChecking_) checkSource(sourcePath_, ++sourceSerial_);
}

// ------------------------------------------------------------------ source

void QuantizeForm::setSourcePath(const QString& path) {
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
  if (!p.isEmpty()) checkSource(p, ++sourceSerial_);
}

void QuantizeForm::chooseSource(const QUrl& location) {
  setSourcePath(location.isLocalFile() ? location.toLocalFile() : location.toString());
}

int QuantizeForm::sourceLayers() const {
  return sourceOk() ? source_->summary.value(QStringLiteral("layers")).toInt() : 0;
}

QCoro::Task<void> QuantizeForm::checkSource(QString path, quint64 serial) {
  QPointer<QuantizeForm> self(this);
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
  }
  emit sourceChanged();
  emit settingsChanged();
  updateDefaultOutput();
  scheduleEstimate();
}

void QuantizeForm::updateCandidates() {
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

void QuantizeForm::settingChanged() {
  emit settingsChanged();
  updateDefaultOutput();
  scheduleEstimate();
}

void QuantizeForm::setFormat(const QString& format) {
  if (format == format_) return;
  format_ = format;
  settingChanged();
}

void QuantizeForm::setBpw(double bpw) {
  if (!std::isfinite(bpw)) return;
  bpw = std::round(bpw * 100) / 100;  // the slider's resolution; names stay short
  if (bpw == bpw_) return;
  bpw_ = bpw;
  settingChanged();
}

void QuantizeForm::setHeadBits(int bits) {
  if (bits == headBits_) return;
  headBits_ = bits;
  settingChanged();
}

void QuantizeForm::setBits(int bits) {
  if (bits == bits_) return;
  bits_ = bits;
  settingChanged();
}

void QuantizeForm::setGroupSize(int size) {
  if (size == groupSize_) return;
  groupSize_ = size;
  settingChanged();
}

void QuantizeForm::setActOrder(bool on) {
  if (on == actOrder_) return;
  actOrder_ = on;
  settingChanged();
}

void QuantizeForm::setContext(int tokens) {
  tokens = std::clamp(tokens, 128, 1 << 22);
  contextChosen_ = true;
  if (tokens == context_) return;
  context_ = tokens;
  settingChanged();
}

void QuantizeForm::setCalibrationFile(const QString& path) {
  const QString p = path.trimmed();
  if (p == calibrationFile_) return;
  calibrationFile_ = p;
  settingChanged();
}

void QuantizeForm::chooseCalibration(const QUrl& file) {
  setCalibrationFile(file.isLocalFile() ? file.toLocalFile() : file.toString());
}

void QuantizeForm::setCalibrationRows(int rows) {
  rows = std::clamp(rows, 0, 100000);
  if (rows == rows_) return;
  rows_ = rows;
  settingChanged();
}

void QuantizeForm::setCalibrationLength(int length) {
  length = std::clamp(length, 0, 65536);
  if (length == length_) return;
  length_ = length;
  settingChanged();
}

void QuantizeForm::setOutputPath(const QString& path) {
  outputChosen_ = true;
  const QString p = cleanPath(path.trimmed());
  if (p == outputPath_) return;
  outputPath_ = p;
  emit settingsChanged();
  emit outputPathChanged();
}

void QuantizeForm::chooseOutputFolder(const QUrl& parentFolder) {
  const QString parent =
      parentFolder.isLocalFile() ? parentFolder.toLocalFile() : parentFolder.toString();
  setOutputPath(QDir(parent).filePath(defaultOutputName()));
}

QString QuantizeForm::defaultOutputName() const {
  QString base = QFileInfo(sourcePath_).fileName();
  if (base.endsWith(QLatin1String(".gguf"), Qt::CaseInsensitive)) base.chop(5);
  if (base.isEmpty()) base = QStringLiteral("model");
  if (format_ == u"gptq")
    return base + QStringLiteral("-gptq-%1bit").arg(bits_) +
           (groupSize_ > 0 ? QStringLiteral("-g%1").arg(groupSize_) : QString());
  return base + QStringLiteral("-exl2-%1bpw").arg(bpwText(bpw_));
}

void QuantizeForm::updateDefaultOutput() {
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
  emit outputPathChanged();
}

void QuantizeForm::setDevice(const QString& device) {
  if (device == device_) return;
  device_ = device;
  settingChanged();
}

bool QuantizeForm::cudaAvailable() {
  static const bool available = hearth::Engine::cuda_available();
  return available;
}

void QuantizeForm::setEvaluate(bool on) {
  if (on == evaluate_) return;
  evaluate_ = on;
  settingChanged();
}

void QuantizeForm::setEvaluationTokens(int tokens) {
  tokens = std::max(64, tokens);
  if (tokens == evaluationTokens_) return;
  evaluationTokens_ = tokens;
  settingChanged();
}

hearth::QuantizeOptions QuantizeForm::options() const {
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

void QuantizeForm::applyJobOptions(const hearth::QuantizeOptions& o) {
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
  emit outputPathChanged();
  scheduleEstimate();
}

// ------------------------------------------------------------------ validation

QString QuantizeForm::sourceProblem() const {
  if (sourcePath_.isEmpty()) return tr("Choose a model to quantize.");
  if (sourceChecking_) return tr("Reading the model…");
  if (!sourceOk()) return sourceError();
  return {};
}

QString QuantizeForm::formatProblem() const {
  if (format_ != u"exl2" && format_ != u"gptq") return tr("Choose EXL2 or GPTQ.");
  return {};
}

QString QuantizeForm::sizeProblem() const {
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

QString QuantizeForm::calibrationProblem() const {
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

QString QuantizeForm::outputPathProblem() const {
  if (outputPath_.isEmpty()) return tr("Choose where to write the quantized model.");
  if (QDir::isRelativePath(outputPath_))
    return tr("The output folder must be a full path, such as %1.")
        .arg(QDir::homePath() + QStringLiteral("/models/my-model-exl2"));
  return {};
}

QString QuantizeForm::outputFolderProblem() const {
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

// ------------------------------------------------------------------ estimates

void QuantizeForm::scheduleEstimate() {
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

QCoro::Task<void> QuantizeForm::computeEstimate(quint64 serial) {
  QPointer<QuantizeForm> self(this);
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
}

}  // namespace hearth::app
