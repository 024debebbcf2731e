// Switches the user interface language at run time (QML singleton Language): installs the
// compiled translation from the resources (:/i18n/hearth_<code>.qm) and asks the QML engine to
// re-evaluate every qsTr binding.
#pragma once

#include <QtQml/qqmlregistration.h>
#include <QObject>
#include <QPointer>
#include <QQmlEngine>
#include <QTranslator>
#include <QVariantList>
#include <memory>

class QQmlEngine;

namespace hearth::app {

class LanguageManager : public QObject {
  Q_OBJECT
  QML_NAMED_ELEMENT(Language)
  QML_SINGLETON
  Q_PROPERTY(QString current READ current NOTIFY changed)
  Q_PROPERTY(QVariantList available READ available NOTIFY changed)

 public:
  // No default constructor: Qt 6.4 would build a second instance for QML instead of calling
  // create().
  explicit LanguageManager(QObject* parent);
  ~LanguageManager() override;
  static LanguageManager* create(QQmlEngine* engine, QJSEngine*);
  static LanguageManager* instance();

  void setEngine(QQmlEngine* engine) { engine_ = engine; }
  QString current() const { return current_; }
  QVariantList available() const;

  // "system" follows the system locale; "en" is the untranslated source text.
  Q_INVOKABLE bool apply(const QString& code);
  // The language "system" resolves to, among those Hearth ships.
  static QString systemLanguage();

 signals:
  void changed();

 private:
  QPointer<QQmlEngine> engine_;
  std::unique_ptr<QTranslator> translator_;
  QString current_ = QStringLiteral("en");
};

}  // namespace hearth::app
