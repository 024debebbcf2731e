// Value types that travel between the engine's worker thread and the UI thread in queued
// signals: Qt-friendly copies of the engine's results, and what the UI needs to show an error.
#pragma once

#include <QHash>
#include <QMetaType>
#include <QString>
#include <QVariantMap>
#include <QVector>

#include "app/desktop/store/chat_store.h"

namespace hearth::app {

struct ModelSummary {
  QString path;
  QString name;
  QString format;  // "fp16", "gguf", "exl2", "gptq"
  qint64 parameters = 0;
  double bitsPerWeight = 0;
  quint64 fileBytes = 0;
  qint64 trainedContext = 0;  // max_position_embeddings
  qint64 maxSeqLen = 0;       // what the load allowed
  QString deviceName;
  QString storedTypes;
  QString quantization;
  bool hasChatTemplate = false;
  QVariantMap rope;  // the model's rope settings, for the load panel's defaults

  QVariantMap toMap() const;
};

struct MemorySnapshot {
  quint64 weights = 0;
  quint64 kvCache = 0;
  quint64 activations = 0;
  quint64 workspace = 0;
  quint64 deviceFree = 0;
  quint64 deviceTotal = 0;

  QVariantMap toMap() const;
};

// An error as the user sees it: a title, what happened, and for memory errors the numbers.
struct EngineFailure {
  QString code;     // hearth::error_code_name, or "internal"
  QString message;  // the engine's message, naming file, field, offset
  bool outOfMemory = false;
  quint64 needed = 0;
  quint64 available = 0;
  QString advice;
  QString deviceName;

  QVariantMap toMap() const;
};

// A LoRA adapter the user chose, and its weight.
struct AdapterChoice {
  QString path;
  double weight = 1.0;

  bool operator==(const AdapterChoice&) const = default;
};

// A LoRA adapter the engine holds now.
struct LoadedAdapter {
  QString path;  // as the app named it
  QString name;
  int id = 0;  // the engine's
  double weight = 1.0;
};

// What a change of adapters (or a load) left loaded, and what it took.
struct AdapterReport {
  QVector<LoadedAdapter> loaded;     // in the order they were loaded
  QHash<QString, QString> problems;  // path → the engine's message, for adapters it refused
  bool changed = false;              // false: the engine held these adapters already
  double seconds = 0;                // the change, the serving loop's pause included
  QString error;                     // set when nothing could be tried (no model loaded)

  QVariantList loadedList() const;  // [{path, name, weight}]
};

}  // namespace hearth::app

Q_DECLARE_METATYPE(hearth::app::ModelSummary)
Q_DECLARE_METATYPE(hearth::app::MemorySnapshot)
Q_DECLARE_METATYPE(hearth::app::EngineFailure)
Q_DECLARE_METATYPE(hearth::app::MessageStats)
Q_DECLARE_METATYPE(hearth::app::AdapterReport)
