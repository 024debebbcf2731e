// The LoRA adapters the Adapters tab offers (QML singleton AdapterList): those found in the
// models folders (ModelLibrary's: the default one first, then the user's), those added one by one
// and those switched on, each checked against the loaded model by Engine::inspect_adapter. That
// check is static (it needs no loaded engine), so it runs on the thread pool, awaited with QCoro
// as the model library's inspections are, rather than on the engine's thread, where it would
// wait for the answer being written.
//
// The user's choices (on or off, weight) live in AppSettings and go with every load (LoadPanel
// sends them); a change while a model is loaded goes to EngineController::applyAdapters, which
// applies it without reloading the model. The list shows what the engine holds after each change
// and what it refused, in words.
#pragma once

#include <QtQml/qqmlregistration.h>
#include <QAbstractListModel>
#include <QHash>
#include <QQmlEngine>
#include <QStringList>
#include <QUrl>

#include "app/desktop/engine/engine_types.h"

namespace QCoro {
template <typename T>
class Task;
}

namespace hearth::app {

class AppSettings;
class EngineController;

struct AdapterEntry {
  QString path;
  QString name;
  QString format;  // "peft" or "gguf"
  qint64 rank = 0;
  double alpha = 0;
  QStringList targets;  // "q_proj", ..., "down_proj"
  qint64 layers = 0;
  quint64 bytes = 0;
  QString source;          // the folder it was found in, "" when added by hand
  bool inspected = false;  // checked against the loaded model (modelPath)
  QString error;           // why it cannot be applied to that model, or cannot be read
};

class AdapterList : public QAbstractListModel {
  Q_OBJECT
  QML_ELEMENT
  QML_SINGLETON
  Q_PROPERTY(int count READ rowCount NOTIFY countChanged)
  Q_PROPERTY(bool scanning READ scanning NOTIFY scanningChanged)
  // A change is on its way to the engine (it waits for the answer being written, if any).
  Q_PROPERTY(bool applying READ applying NOTIFY applyingChanged)
  // What the latest change took on the engine's thread, the serving loop's pause included; -1:
  // none since the model loaded.
  Q_PROPERTY(double lastApplySeconds READ lastApplySeconds NOTIFY applyingChanged)
  Q_PROPERTY(int activeCount READ activeCount NOTIFY choicesChanged)
  Q_PROPERTY(int maxActive READ maxActive CONSTANT)
  // The latest refusal, in words ("" when none).
  Q_PROPERTY(QString notice READ notice NOTIFY noticeChanged)

 public:
  enum Role {
    PathRole = Qt::UserRole + 1,
    NameRole,
    FormatRole,
    RankRole,
    AlphaRole,
    TargetsRole,
    LayersRole,
    BytesRole,
    SourceRole,
    InspectedRole,
    FitsRole,
    ErrorRole,
    ActiveRole,
    WeightRole,
    AppliedRole,
    AppliedWeightRole,
    ApplyErrorRole,
  };

  AdapterList(AppSettings* settings, EngineController* engine, QObject* parent = nullptr);
  ~AdapterList() override;
  static AdapterList* create(QQmlEngine*, QJSEngine*);
  static void setInstance(AdapterList* instance);

  int rowCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QHash<int, QByteArray> roleNames() const override;

  bool scanning() const { return scanning_; }
  bool applying() const { return applyId_ != 0; }
  double lastApplySeconds() const { return lastApplySeconds_; }
  int activeCount() const;
  int maxActive() const;
  QString notice() const { return notice_; }

  Q_INVOKABLE void rescan();
  // Switches an adapter on (false, with a notice, when it cannot be) or off, and applies the
  // change when a model is loaded.
  Q_INVOKABLE bool setActive(const QString& path, bool active);
  Q_INVOKABLE void setWeight(const QString& path, double weight);  // 0..2
  // A PEFT folder (or its adapter_config.json) or a GGUF adapter; "" or why it was refused.
  Q_INVOKABLE QString addAdapter(const QUrl& location);
  Q_INVOKABLE void removeAdapter(const QString& path);  // one added by hand; switched off first
  Q_INVOKABLE int indexOfPath(const QString& path) const;
  Q_INVOKABLE QVariantMap entry(const QString& path) const;

  // Describes one adapter, checked against `modelPath` when it is not empty (blocking; call off
  // the UI thread).
  static AdapterEntry describe(const QString& path, const QString& source,
                               const QString& modelPath);

 signals:
  void countChanged();
  void scanningChanged();
  void applyingChanged();
  void choicesChanged();
  void noticeChanged();
  void scanFinished();
  // The engine's answer to a change or a load: what it holds now (see the rows' applied roles).
  void applied();

 private:
  QCoro::Task<void> scan(quint64 serial);
  void apply();
  void onApplied(quint64 id, const AdapterReport& report);
  void onModelChanged();
  QStringList folders() const;
  QVector<AdapterChoice> choices() const;
  void saveChoices(const QVector<AdapterChoice>& choices);
  void setNotice(const QString& notice);
  void refreshRows();

  AppSettings* settings_;
  EngineController* engine_;
  QVector<AdapterEntry> entries_;
  QHash<QString, double> offWeights_;  // weights of adapters switched off, this session
  QVector<LoadedAdapter> loaded_;      // what the engine holds, as of its latest report
  QHash<QString, QString> applyErrors_;
  QString modelPath_;  // the model the entries were checked against
  bool scanning_ = false;
  quint64 scanSerial_ = 0;
  quint64 applyId_ = 0;  // the change waited for, 0 when none
  double lastApplySeconds_ = -1;
  QString notice_;
};

}  // namespace hearth::app
