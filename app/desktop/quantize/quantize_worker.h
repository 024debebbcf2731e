// Runs quantization jobs (hearth::quantize_model) on the quantizer's own thread, so that a job of
// hours neither blocks the UI nor the chat engine's worker. Progress leaves as queued signals,
// thinned to about ten a second (every stage change, step and log line still comes through);
// the UI thread cancels through the CancelToken it passed with the job.
#pragma once

#include <QElapsedTimer>
#include <QMetaType>
#include <QObject>
#include <QStringList>
#include <QVariantMap>

#include "app/desktop/engine/engine_types.h"
#include "engine/core/cancel.h"
#include "engine/quantizer/quantize_job.h"

namespace hearth::app {

// One progress event, as the UI shows it.
struct QuantizeUpdate {
  QString stage;  // quantize_stage_name: "prepare", "measure", ...
  qint64 step = 0;
  qint64 steps = 0;
  QString item;  // "model.layers.3.mlp", "lm_head", ...
  double fraction = 0;
  double elapsedSeconds = 0;
  double remainingSeconds = -1;
  QString message;  // a log line, or empty
};

// What a finished job made.
struct QuantizeOutcome {
  QString output;
  quint64 bytesOnDisk = 0;
  double bitsPerWeight = 0;
  double headBitsPerWeight = 0;
  double seconds = 0;
  bool evaluated = false;
  qint64 evaluationTokens = 0;
  double perplexitySource = 0;
  double perplexityQuant = 0;
  double klMean = 0;
  double klP999 = 0;
  double top1Agreement = 0;
  QStringList warnings;

  QVariantMap toMap() const;
};

struct QuantizeTask {
  quint64 id = 0;
  hearth::QuantizeOptions options;
  hearth::CancelToken cancel;
};

class QuantizeWorker : public QObject {
  Q_OBJECT

 public:
  explicit QuantizeWorker(int progressIntervalMs = 100, QObject* parent = nullptr);

  // Run on the quantizer's thread; blocks it until the job ends.
  void run(const QuantizeTask& task);

  static QuantizeUpdate toUpdate(const hearth::QuantizeProgress& progress);
  static QuantizeOutcome toOutcome(const hearth::QuantizeResult& result);

 signals:
  void progressed(quint64 id, const hearth::app::QuantizeUpdate& update);
  void finished(quint64 id, const hearth::app::QuantizeOutcome& outcome);
  // cancelled: stopped on request (the job stays resumable in its work folder).
  void failed(quint64 id, const hearth::app::EngineFailure& failure, bool cancelled);

 private:
  int progressIntervalMs_;
};

}  // namespace hearth::app

Q_DECLARE_METATYPE(hearth::app::QuantizeUpdate)
Q_DECLARE_METATYPE(hearth::app::QuantizeOutcome)
