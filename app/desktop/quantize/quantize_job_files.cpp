#include "app/desktop/quantize/quantize_job_files.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QLocale>

namespace hearth::app {

std::filesystem::path toPath(const QString& path) {
  return std::filesystem::path(path.toStdString());
}

QString fromPath(const std::filesystem::path& path) {
  return QString::fromStdString(path.string());
}

QString cleanPath(const QString& path) {
  return path.isEmpty() ? path : QDir::cleanPath(path);
}

QString workDirFor(const QString& output) {
  if (output.isEmpty() || QDir::isRelativePath(output)) return {};
  return cleanPath(fromPath(hearth::default_work_dir(toPath(output))));
}

QString quantizeTargetText(const hearth::QuantizeOptions& o) {
  if (o.format == hearth::QuantizeFormat::kExl2)
    return QCoreApplication::translate("hearth::app::QuantizeWizard",
                                       "EXL2, %1 bits per weight, head %2 bits")
        .arg(QLocale().toString(o.target_bpw, 'f', 2))
        .arg(o.head_bits);
  if (o.group_size <= 0)
    return QCoreApplication::translate("hearth::app::QuantizeWizard",
                                       "GPTQ, %1 bits, one group per column")
        .arg(o.bits);
  return QCoreApplication::translate("hearth::app::QuantizeWizard", "GPTQ, %1 bits, group size %2")
      .arg(o.bits)
      .arg(o.group_size);
}

QVariantMap describeQuantizeJob(const QString& workDir) {
  QVariantMap m{{QStringLiteral("workDir"), workDir}};
  try {
    const auto status = hearth::find_quantize_job(toPath(workDir));
    if (!status) return {};
    const hearth::QuantizeOptions& o = status->options;
    m.insert(QStringLiteral("source"), fromPath(o.source));
    m.insert(QStringLiteral("sourceName"), QFileInfo(fromPath(o.source)).fileName());
    m.insert(QStringLiteral("output"), cleanPath(fromPath(o.output)));
    m.insert(QStringLiteral("outputName"), QFileInfo(fromPath(o.output)).fileName());
    m.insert(QStringLiteral("format"), QString::fromLatin1(hearth::quantize_format_name(o.format)));
    m.insert(QStringLiteral("target"), quantizeTargetText(o));
    m.insert(QStringLiteral("stage"),
             QString::fromLatin1(hearth::quantize_stage_name(status->stage)));
    m.insert(QStringLiteral("step"), qint64(status->step));
    m.insert(QStringLiteral("steps"), qint64(status->steps));
    m.insert(QStringLiteral("elapsedSeconds"), status->elapsed_s);
    m.insert(QStringLiteral("device"),
             o.device == hearth::DeviceKind::kCuda ? QStringLiteral("gpu") : QStringLiteral("cpu"));
    m.insert(QStringLiteral("damaged"), false);
  } catch (const std::exception& e) {
    m.insert(QStringLiteral("damaged"), true);
    m.insert(QStringLiteral("error"), QString::fromUtf8(e.what()));
    m.insert(QStringLiteral("outputName"), QFileInfo(workDir).fileName());
  }
  return m;
}

QVariantList findQuantizeJobs(const QStringList& folders, const QString& except) {
  QVariantList out;
  QStringList seen;
  for (const QString& folder : folders) {
    const QFileInfoList dirs =
        QDir(folder).entryInfoList({QStringLiteral("*.hearth-quant")},
                                   QDir::Dirs | QDir::NoDotAndDotDot | QDir::Hidden, QDir::Name);
    for (const QFileInfo& d : dirs) {
      const QString wd = cleanPath(d.absoluteFilePath());
      if (seen.contains(wd) || wd == except) continue;
      seen << wd;
      const QVariantMap job = describeQuantizeJob(wd);
      if (!job.isEmpty()) out << job;
    }
  }
  return out;
}

bool discardQuantizeJob(const QString& workDir) {
  const QString wd = cleanPath(workDir);
  // Only what the quantizer made: a *.hearth-quant folder holding a job file.
  if (!wd.endsWith(QLatin1String(".hearth-quant")) ||
      !QFileInfo::exists(wd + QStringLiteral("/job.json")))
    return false;
  QString output;
  try {
    if (const auto status = hearth::find_quantize_job(toPath(wd)))
      output = fromPath(status->options.output);
  } catch (const std::exception&) {
    // A damaged job file: the folder goes all the same.
  }
  if (!QDir(wd).removeRecursively()) return false;
  // The output folder stays unless the job left it empty: a job stopped while evaluating has
  // already written a complete model.
  if (!output.isEmpty() && QDir(output).exists() &&
      QDir(output).isEmpty(QDir::AllEntries | QDir::NoDotAndDotDot | QDir::Hidden))
    QDir().rmdir(output);
  return true;
}

}  // namespace hearth::app
