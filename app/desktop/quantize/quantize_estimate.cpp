#include "app/desktop/quantize/quantize_estimate.h"

#include <QCoreApplication>
#include <QStringList>

#include "app/desktop/engine/engine_convert.h"
#include "engine/api/memory_planner.h"
#include "engine/core/error.h"

namespace hearth::app {

bool ggufIsQuantized(const QString& storedTypes) {
  // "Q4_1 ×210, F32 ×61, Q8_0 ×1": anything but float types is a block quantization.
  static const QStringList floats{QStringLiteral("F16"), QStringLiteral("BF16"),
                                  QStringLiteral("F32"), QStringLiteral("F64")};
  for (const QString& part : storedTypes.split(u',', Qt::SkipEmptyParts)) {
    const QString type = part.trimmed().section(u' ', 0, 0).toUpper();
    if (!type.isEmpty() && !floats.contains(type)) return true;
  }
  return false;
}

QuantizeSource inspectQuantizeSource(const QString& path) {
  QuantizeSource s;
  if (path.trimmed().isEmpty()) {
    s.error =
        QCoreApplication::translate("hearth::app::QuantizeWizard", "Choose a model to quantize.");
    return s;
  }
  try {
    s.info = hearth::Engine::inspect(path.toStdString());
  } catch (const std::exception& e) {
    s.error =
        QCoreApplication::translate("hearth::app::QuantizeWizard", "This model cannot be read: %1")
            .arg(QString::fromUtf8(e.what()));
    return s;
  }
  const ModelSummary m = toSummary(s.info);
  s.summary = m.toMap();
  s.summary.insert(QStringLiteral("layers"), qint64(s.info.config.num_layers));
  s.summary.insert(QStringLiteral("hidden"), qint64(s.info.config.hidden_size));
  s.summary.insert(QStringLiteral("vocabulary"), qint64(s.info.config.vocab_size));
  s.summary.insert(QStringLiteral("contextLength"), qint64(s.info.config.max_position_embeddings));
  if (s.info.format == hearth::ModelFormat::kExl2 || s.info.format == hearth::ModelFormat::kGptq) {
    s.error = QCoreApplication::translate(
                  "QuantizeWizard",
                  "This model is already quantized (%1). Choose an fp16 model folder or a GGUF "
                  "file.")
                  .arg(m.format.toUpper());
    return s;
  }
  // The quantizer's own checks (architecture, shapes) on the cheapest settings.
  hearth::QuantizeOptions o;
  o.source = s.info.path;
  try {
    hearth::estimate_quantize(o);
  } catch (const std::exception& e) {
    s.error = QCoreApplication::translate("hearth::app::QuantizeWizard",
                                          "The quantizer cannot take this model: %1")
                  .arg(QString::fromUtf8(e.what()));
    return s;
  }
  if (s.info.format == hearth::ModelFormat::kGguf && ggufIsQuantized(m.storedTypes)) {
    s.note = QCoreApplication::translate(
                 "QuantizeWizard",
                 "This GGUF file is already quantized (%1). Its weights are used as they decode, "
                 "so the result keeps that quantization's error on top of the new one; start "
                 "from an F16 or BF16 model when you have one.")
                 .arg(m.storedTypes);
  }
  s.ok = true;
  return s;
}

QVariantMap QuantizeSizeEstimate::toMap() const {
  return {{QStringLiteral("valid"), valid},
          {QStringLiteral("error"), error},
          {QStringLiteral("outputBytes"), double(quant.output_bytes)},
          {QStringLiteral("decoderWeights"), double(quant.decoder_weights)},
          {QStringLiteral("minBpw"), quant.min_bpw},
          {QStringLiteral("maxBpw"), quant.max_bpw},
          {QStringLiteral("headBitsPerWeight"), quant.head_bits_per_weight},
          {QStringLiteral("vramWeights"), double(vramWeights)},
          {QStringLiteral("vramCache"), double(vramCache)},
          {QStringLiteral("vramActivations"), double(vramActivations)},
          {QStringLiteral("vramWorkspace"), double(vramWorkspace)},
          {QStringLiteral("vramNeeded"), double(vramNeeded())},
          {QStringLiteral("deviceKnown"), deviceKnown},
          {QStringLiteral("deviceFree"), double(deviceFree)},
          {QStringLiteral("deviceTotal"), double(deviceTotal)},
          {QStringLiteral("deviceName"), deviceName}};
}

QuantizeSizeEstimate estimateQuantizeSize(const hearth::QuantizeOptions& options,
                                          const hearth::ModelInfo& source, int64_t context,
                                          bool queryGpu) {
  QuantizeSizeEstimate e;
  try {
    e.quant = hearth::estimate_quantize(options);
    // The output as the load planner will see it: quantized weights of the estimated size, the
    // source's shapes for cache and activations, on the GPU with fp16 activations.
    hearth::ModelInfo out = source;
    out.format = options.format == hearth::QuantizeFormat::kGptq ? hearth::ModelFormat::kGptq
                                                                 : hearth::ModelFormat::kExl2;
    out.file_bytes = e.quant.output_bytes;
    hearth::LoadOptions load;
    load.model_path = source.path;
    load.device = hearth::DeviceKind::kCuda;
    load.max_seq_len = context;
    const hearth::ResolvedLoad resolved = hearth::resolve_load(load, out);
    const hearth::MemoryPlan plan = hearth::estimate_memory(load, out, resolved);
    e.vramWeights = plan.weights;
    e.vramCache = plan.kv_cache;
    e.vramActivations = plan.activations;
    e.vramWorkspace = plan.workspace;
    if (queryGpu && hearth::Engine::cuda_available()) {
      const hearth::DeviceMemoryInfo d =
          hearth::Engine::device_memory(hearth::DeviceKind::kCuda, 0);
      e.deviceKnown = true;
      e.deviceFree = d.free_bytes;
      e.deviceTotal = d.total_bytes;
      e.deviceName = QString::fromStdString(d.name);
    }
    e.valid = true;
  } catch (const std::exception& ex) {
    e.error = QString::fromUtf8(ex.what());
  }
  return e;
}

}  // namespace hearth::app
