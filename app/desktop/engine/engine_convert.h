// Conversions between the engine's types and the app's: results to Qt values, and the load
// panel's settings (a QVariantMap from QML) to hearth::LoadOptions.
#pragma once

#include <QVariantMap>

#include "app/desktop/engine/engine_types.h"
#include "engine/api/engine.h"
#include "engine/core/error.h"

namespace hearth::app {

ModelSummary toSummary(const hearth::ModelInfo& info);
QVariantMap ropeToMap(const hearth::ModelConfig& config);
MemorySnapshot toSnapshot(const hearth::MemoryUsage& usage);
// Besides the byte counts: kvCacheType (the type planned), cacheChoices, a list of
// {type, bytesPerToken, tokensThatFit} for each cache type the model allows, and gpus, each GPU's
// share of a CUDA load: {device, name, firstLayer, layers, weights, kvCache, activations,
// workspace, needed, deviceFree, deviceTotal, limit, fits}.
QVariantMap planToMap(const hearth::MemoryPlan& plan);
MessageStats toStats(const hearth::GenerationResult& result, const QString& model);
EngineFailure toFailure(const hearth::Error& error);
EngineFailure toFailure(const std::exception& error);

// Keys: path, device ("cpu" | "gpu"), cudaDevice, maxSeqLen, cacheTokens, cpuThreads,
// rope ("model" | "none" | "linear" | "ntk" | "yarn" | "llama3"), ropeFactor, ntkAlpha,
// originalContext, lowFreqFactor, highFreqFactor, betaFast, betaSlow, speculation, draftPath,
// kvCacheType ("fp16" | "q8" | "q6" | "q4"), adapters (a list of {path, weight}: the LoRA
// adapters to apply once the model is loaded), gpus (GPU indices in layer order; more than one
// splits the model), gpuSplit ("layer" | "tensor"), gpuSplitGib (GiB per GPU of gpus; empty: by
// free memory).
// Throws hearth::Error(kInvalidArgument) naming the bad key.
hearth::LoadOptions toLoadOptions(const QVariantMap& settings);
// A list of {path, weight} maps (AppSettings::activeAdapters); throws like toLoadOptions.
std::vector<hearth::AdapterSpec> toAdapterSpecs(const QVariant& adapters);

// Keys: temperature, topK, topP, minP, repetitionPenalty, frequencyPenalty, presencePenalty, seed.
hearth::SamplingParams toSampling(const QVariantMap& sampling);

}  // namespace hearth::app
