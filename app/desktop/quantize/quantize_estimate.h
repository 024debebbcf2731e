// What the quantization wizard shows before a job starts, computed off the UI thread from the
// source's headers alone: whether a model can be a source, and for the chosen settings the size
// of the output and the GPU memory it needs at a context length (the quantizer's
// estimate_quantize for the weights, the engine's load planner for cache and activations).
#pragma once

#include <QString>
#include <QVariantMap>
#include <cstdint>

#include "engine/api/engine.h"
#include "engine/quantizer/quantize_job.h"

namespace hearth::app {

struct QuantizeSource {
  bool ok = false;
  QString error;  // why the model cannot be quantized (translated, with the engine's detail)
  QString note;   // something the user should know (a quantized GGUF source)
  hearth::ModelInfo info;
  QVariantMap summary;  // name, format, parameters, layers, contextLength, fileBytes, ...
};

// Engine::inspect plus the wizard's rules: fp16/bf16/fp32 folders and GGUF files only, an
// architecture the quantizer takes (estimate_quantize must accept it). Blocking.
QuantizeSource inspectQuantizeSource(const QString& path);

struct QuantizeSizeEstimate {
  bool valid = false;
  QString error;
  hearth::QuantizeEstimate quant;  // output bytes, decoder weights, EXL2 bpw range, head bpw
  // GPU memory of the output model loaded with max_seq_len = context (Engine's planner).
  uint64_t vramWeights = 0, vramCache = 0, vramActivations = 0, vramWorkspace = 0;
  uint64_t vramNeeded() const { return vramWeights + vramCache + vramActivations + vramWorkspace; }
  bool deviceKnown = false;  // a CUDA device was queried
  uint64_t deviceFree = 0, deviceTotal = 0;
  QString deviceName;

  QVariantMap toMap() const;
};

// Blocking; `source` is the inspected source (its config gives the cache and activations).
QuantizeSizeEstimate estimateQuantizeSize(const hearth::QuantizeOptions& options,
                                          const hearth::ModelInfo& source, int64_t context,
                                          bool queryGpu);

// True when a GGUF's stored types include block-quantized ones (Q4_1, Q8_0, ...).
bool ggufIsQuantized(const QString& storedTypes);

}  // namespace hearth::app
