#include "app/desktop/library/adapter_files.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>

#include "engine/api/engine.h"

namespace hearth::app {

namespace {

bool hasSuffixGguf(const QFileInfo& info) {
  return info.isFile() && info.suffix().compare(u"gguf", Qt::CaseInsensitive) == 0;
}

}  // namespace

bool isAdapterFolder(const QString& path) {
  const QFileInfo info(path);
  return info.isDir() && QDir(path).exists(QStringLiteral("adapter_config.json"));
}

bool isAdapterGguf(const QString& path) {
  return hasSuffixGguf(QFileInfo(path)) && Engine::is_adapter(path.toStdString());
}

bool isAdapterPath(const QString& path) {
  return isAdapterFolder(path) || isAdapterGguf(path);
}

QStringList adapterCandidatesIn(const QString& folder) {
  QStringList out;
  const QDir dir(folder);
  if (!dir.exists()) return out;
  if (isAdapterFolder(dir.absolutePath())) return {dir.absolutePath()};
  const auto consider = [&](const QFileInfo& item) {
    if (hasSuffixGguf(item) ? isAdapterGguf(item.absoluteFilePath())
                            : isAdapterFolder(item.absoluteFilePath())) {
      out << item.absoluteFilePath();
      return true;
    }
    return false;
  };
  const QFileInfoList items =
      dir.entryInfoList(QDir::Files | QDir::Dirs | QDir::NoDotAndDotDot | QDir::Readable,
                        QDir::Name | QDir::IgnoreCase);
  for (const QFileInfo& item : items) {
    if (consider(item) || !item.isDir()) continue;
    // One level deeper, as for models: e.g. models/loras/<name>/ (a model folder holds none).
    const QDir sub(item.absoluteFilePath());
    if (sub.exists(QStringLiteral("config.json"))) continue;
    for (const QFileInfo& inner :
         sub.entryInfoList(QDir::Files | QDir::Dirs | QDir::NoDotAndDotDot | QDir::Readable,
                           QDir::Name | QDir::IgnoreCase))
      consider(inner);
  }
  return out;
}

QString adapterPathFor(const QString& picked) {
  const QFileInfo info(picked);
  const QString name = info.fileName();
  if (info.isFile() && (name == u"adapter_config.json" || name == u"adapter_model.safetensors" ||
                        name == u"adapter_model.bin"))
    return info.absolutePath();
  return QDir::cleanPath(picked);
}

}  // namespace hearth::app
