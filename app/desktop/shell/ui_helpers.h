// Small services the QML views need (QML singleton Ui): the clipboard, human-readable sizes and
// counts in the current locale, file URLs, and whether the system prefers a dark theme.
#pragma once

#include <QtQml/qqmlregistration.h>
#include <QObject>
#include <QQmlEngine>
#include <QUrl>

namespace hearth::app {

class UiHelpers : public QObject {
  Q_OBJECT
  QML_NAMED_ELEMENT(Ui)
  QML_SINGLETON
  Q_PROPERTY(bool systemPrefersDark READ systemPrefersDark CONSTANT)

 public:
  explicit UiHelpers(QObject* parent = nullptr);

  bool systemPrefersDark() const;
  Q_INVOKABLE void copyText(const QString& text) const;
  Q_INVOKABLE QString clipboardText() const;
  Q_INVOKABLE QString formatBytes(double bytes) const;  // "1.2 GiB"
  Q_INVOKABLE QString formatCount(double count) const;  // "135 M", "7.2 B"
  Q_INVOKABLE QString formatNumber(double value, int decimals) const;
  Q_INVOKABLE QString urlToPath(const QUrl& url) const;
  Q_INVOKABLE QUrl pathToUrl(const QString& path) const;
  Q_INVOKABLE QString fileName(const QString& path) const;
};

}  // namespace hearth::app
