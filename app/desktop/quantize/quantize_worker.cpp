#include "app/desktop/quantize/quantize_worker.h"

#include "app/desktop/engine/engine_convert.h"
#include "engine/core/error.h"

namespace hearth::app {

QVariantMap QuantizeOutcome::toMap() const {
  return {{QStringLiteral("output"), output},
          {QStringLiteral("bytesOnDisk"), double(bytesOnDisk)},
          {QStringLiteral("bitsPerWeight"), bitsPerWeight},
          {QStringLiteral("headBitsPerWeight"), headBitsPerWeight},
          {QStringLiteral("seconds"), seconds},
          {QStringLiteral("evaluated"), evaluated},
          {QStringLiteral("evaluationTokens"), evaluationTokens},
          {QStringLiteral("perplexitySource"), perplexitySource},
          {QStringLiteral("perplexityQuant"), perplexityQuant},
          {QStringLiteral("klMean"), klMean},
          {QStringLiteral("klP999"), klP999},
          {QStringLiteral("top1Agreement"), top1Agreement},
          {QStringLiteral("warnings"), warnings}};
}

QuantizeWorker::QuantizeWorker(int progressIntervalMs, QObject* parent)
    : QObject(parent), progressIntervalMs_(progressIntervalMs) {}

QuantizeUpdate QuantizeWorker::toUpdate(const hearth::QuantizeProgress& p) {
  QuantizeUpdate u;
  u.stage = QString::fromLatin1(hearth::quantize_stage_name(p.stage));
  u.step = p.step;
  u.steps = p.steps;
  u.item = QString::fromStdString(p.item);
  u.fraction = p.fraction;
  u.elapsedSeconds = p.elapsed_s;
  u.remainingSeconds = p.remaining_s;
  u.message = QString::fromStdString(p.message);
  return u;
}

QuantizeOutcome QuantizeWorker::toOutcome(const hearth::QuantizeResult& r) {
  QuantizeOutcome o;
  o.output = QString::fromStdString(r.output.string());
  o.bytesOnDisk = r.bytes_on_disk;
  o.bitsPerWeight = r.bits_per_weight;
  o.headBitsPerWeight = r.head_bits_per_weight;
  o.seconds = r.seconds;
  if (r.evaluation) {
    o.evaluated = true;
    o.evaluationTokens = r.evaluation->tokens;
    o.perplexitySource = r.evaluation->perplexity_source;
    o.perplexityQuant = r.evaluation->perplexity_quant;
    o.klMean = r.evaluation->kl_mean;
    o.klP999 = r.evaluation->kl_p999;
    o.top1Agreement = r.evaluation->top1_agreement;
  }
  for (const std::string& w : r.warnings) o.warnings << QString::fromStdString(w);
  return o;
}

void QuantizeWorker::run(const QuantizeTask& task) {
  QElapsedTimer sinceEmit;
  sinceEmit.start();
  QuantizeUpdate last;
  bool pending = false;
  // Called on this thread by the quantizer. Stage changes, new steps and log lines always go
  // out; the rest (sub-step fractions) at most every progressIntervalMs_.
  const auto progress = [&](const hearth::QuantizeProgress& p) {
    QuantizeUpdate u = toUpdate(p);
    const bool important = u.stage != last.stage || u.step != last.step || u.steps != last.steps ||
                           !u.message.isEmpty();
    last = u;
    if (!important && sinceEmit.elapsed() < progressIntervalMs_) {
      pending = true;
      return;
    }
    pending = false;
    sinceEmit.restart();
    emit progressed(task.id, u);
  };
  try {
    const hearth::QuantizeResult result =
        hearth::quantize_model(task.options, progress, task.cancel);
    if (pending) emit progressed(task.id, last);
    emit finished(task.id, toOutcome(result));
  } catch (const hearth::Error& e) {
    const bool cancelled = e.code() == hearth::ErrorCode::kCancelled;
    emit failed(task.id, toFailure(e), cancelled || task.cancel.cancelled());
  } catch (const std::exception& e) {
    emit failed(task.id, toFailure(e), false);
  }
}

}  // namespace hearth::app
