#include "app/desktop/shell/ui_helpers.h"

#include <QClipboard>
#include <QFileInfo>
#include <QGuiApplication>
#include <QLocale>
#include <QPalette>

namespace hearth::app {

UiHelpers::UiHelpers(QObject* parent) : QObject(parent) {}

bool UiHelpers::systemPrefersDark() const {
  // Qt 6.4 has no colour-scheme hint; the platform palette tells the same.
  const QPalette palette = QGuiApplication::palette();
  return palette.color(QPalette::Window).lightness() <
         palette.color(QPalette::WindowText).lightness();
}

void UiHelpers::copyText(const QString& text) const {
  QGuiApplication::clipboard()->setText(text);
}

QString UiHelpers::clipboardText() const {
  return QGuiApplication::clipboard()->text();
}

QString UiHelpers::formatBytes(double bytes) const {
  return QLocale().formattedDataSize(qint64(bytes), 1, QLocale::DataSizeIecFormat);
}

QString UiHelpers::formatCount(double count) const {
  const QLocale locale;
  if (count >= 1e9)
    return tr("%1 B", "billions, e.g. of parameters").arg(locale.toString(count / 1e9, 'f', 1));
  if (count >= 1e6)
    return tr("%1 M", "millions, e.g. of parameters").arg(locale.toString(count / 1e6, 'f', 0));
  if (count >= 1e3) return tr("%1 K", "thousands").arg(locale.toString(count / 1e3, 'f', 0));
  return locale.toString(qint64(count));
}

QString UiHelpers::formatNumber(double value, int decimals) const {
  return QLocale().toString(value, 'f', decimals);
}

QString UiHelpers::urlToPath(const QUrl& url) const {
  return url.isLocalFile() ? url.toLocalFile() : url.toString();
}

QUrl UiHelpers::pathToUrl(const QString& path) const {
  return QUrl::fromLocalFile(path);
}

QString UiHelpers::fileName(const QString& path) const {
  return QFileInfo(path).fileName();
}

}  // namespace hearth::app
