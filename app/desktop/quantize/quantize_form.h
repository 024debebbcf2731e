// The settings of the next quantization job, as the wizard's pages edit them (QuantizeWizard.form
// in QML): the source model (inspected off the UI thread), format and size, calibration, output
// folder and device; what is wrong with each group of settings, and the size and GPU memory
// estimate for them. It knows nothing of running jobs, so that the pages and the validation can
// be read without the job's lifecycle; QuantizeJobs runs what options() describes.
#pragma once

#include <QtQml/qqmlregistration.h>
#include <QObject>
#include <QPointer>
#include <QTimer>
#include <QUrl>
#include <QVariantList>
#include <QVariantMap>
#include <optional>

#include "app/desktop/quantize/quantize_estimate.h"
#include "engine/quantizer/quantize_job.h"

namespace QCoro {
template <typename T>
class Task;
}

namespace hearth::app {

class AppSettings;
class ModelLibrary;

class QuantizeForm : public QObject {
  Q_OBJECT
  QML_ELEMENT
  QML_UNCREATABLE("owned by QuantizeWizard")

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

 public:
  // Either collaborator may be null (tests): no candidates, no proposed output folder.
  QuantizeForm(ModelLibrary* library, AppSettings* settings, QObject* parent = nullptr);
  ~QuantizeForm() override;

  QString sourcePath() const { return sourcePath_; }
  void setSourcePath(const QString& path);
  bool sourceChecking() const { return sourceChecking_; }
  bool sourceOk() const { return source_.has_value() && source_->ok; }
  QString sourceError() const { return source_ ? source_->error : QString(); }
  QString sourceNote() const { return source_ ? source_->note : QString(); }
  QVariantMap sourceInfo() const { return source_ ? source_->summary : QVariantMap(); }
  QVariantList sourceCandidates() const { return candidates_; }
  int sourceLayers() const;  // 0 until the source is read

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
  // A CUDA build on a machine without a GPU (or its driver) counts as no CUDA.
  static bool cudaAvailable();
  bool evaluate() const { return evaluate_; }
  void setEvaluate(bool on);
  int evaluationTokens() const { return evaluationTokens_; }
  void setEvaluationTokens(int tokens);

  // File pickers hand over URLs.
  Q_INVOKABLE void chooseSource(const QUrl& location);
  Q_INVOKABLE void chooseCalibration(const QUrl& file);
  Q_INVOKABLE void chooseOutputFolder(const QUrl& parentFolder);  // the output goes inside

  // What is wrong with each group of settings (translated), or "".
  QString sourceProblem() const;
  QString formatProblem() const;
  QString sizeProblem() const;
  QString calibrationProblem() const;
  QString outputPathProblem() const;    // no folder, or not a full path
  QString outputFolderProblem() const;  // the folder is taken or cannot be made

  // The output folder name the form proposes for the current settings.
  QString defaultOutputName() const;
  // The options a job with these settings runs with.
  hearth::QuantizeOptions options() const;
  // Shows an interrupted job's own settings (resuming it).
  void applyJobOptions(const hearth::QuantizeOptions& o);
  // Proposes the output folder again unless the user chose one (also after folders on disk
  // changed, such as a discarded job's).
  void updateDefaultOutput();
  // Messages made in C++ are translated when made: after a language change, make them again.
  void retranslate();

 signals:
  void sourceChanged();
  void candidatesChanged();
  void settingsChanged();
  void estimateChanged();
  void outputPathChanged();  // besides settingsChanged: the interrupted job in the way may differ

 private:
  void settingChanged();
  void updateCandidates();
  void scheduleEstimate();
  QCoro::Task<void> checkSource(QString path, quint64 serial);
  QCoro::Task<void> computeEstimate(quint64 serial);

  QPointer<ModelLibrary> library_;
  QPointer<AppSettings> settings_;

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
};

}  // namespace hearth::app
