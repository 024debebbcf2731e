#include "app/desktop/engine/engine_convert.h"

#include <cmath>

namespace hearth::app {

namespace {

QString fromStd(const std::string& s) {
  return QString::fromStdString(s);
}

double number(const QVariantMap& m, const char* key, double fallback) {
  const QVariant v = m.value(QLatin1String(key));
  if (!v.isValid() || v.isNull()) return fallback;
  bool ok = false;
  const double d = v.toDouble(&ok);
  if (!ok || !std::isfinite(d))
    hearth::fail(hearth::ErrorCode::kInvalidArgument,
                 std::string("load setting \"") + key + "\" is not a number");
  return d;
}

}  // namespace

std::vector<hearth::AdapterSpec> toAdapterSpecs(const QVariant& adapters) {
  std::vector<hearth::AdapterSpec> out;
  if (!adapters.isValid() || adapters.isNull()) return out;
  const QVariantList list = adapters.toList();
  for (qsizetype i = 0; i < list.size(); ++i) {
    const QVariantMap a = list[i].toMap();
    const std::string key = "load setting \"adapters\"[" + std::to_string(i) + "]";
    const QString path = a.value(QStringLiteral("path")).toString();
    if (path.isEmpty()) hearth::fail(hearth::ErrorCode::kInvalidArgument, key + " has no path");
    const double weight = number(a, "weight", 1.0);
    out.push_back({std::filesystem::path(path.toStdString()), float(weight)});
  }
  return out;
}

QVariantMap ropeToMap(const hearth::ModelConfig& c) {
  const hearth::RopeScaling& r = c.rope_scaling;
  return {{QStringLiteral("type"), QString::fromLatin1(hearth::rope_scaling_name(r.type))},
          {QStringLiteral("factor"), r.factor},
          {QStringLiteral("lowFreqFactor"), r.low_freq_factor},
          {QStringLiteral("highFreqFactor"), r.high_freq_factor},
          {QStringLiteral("originalContext"),
           qint64(r.original_max_position_embeddings > 0 ? r.original_max_position_embeddings
                                                         : c.max_position_embeddings)},
          {QStringLiteral("betaFast"), r.beta_fast},
          {QStringLiteral("betaSlow"), r.beta_slow},
          {QStringLiteral("theta"), c.rope_theta},
          {QStringLiteral("ntkAlpha"), c.ntk_alpha},
          {QStringLiteral("trainedContext"), qint64(c.max_position_embeddings)}};
}

ModelSummary toSummary(const hearth::ModelInfo& info) {
  ModelSummary s;
  s.path = QString::fromStdString(info.path.string());
  s.name = fromStd(info.name);
  if (s.name.isEmpty()) s.name = QString::fromStdString(info.path.filename().string());
  s.format = QString::fromLatin1(hearth::model_format_name(info.format));
  s.parameters = info.parameters;
  s.bitsPerWeight = info.bits_per_weight;
  s.fileBytes = info.file_bytes;
  s.trainedContext = info.config.max_position_embeddings;
  s.storedTypes = fromStd(info.stored_types);
  s.quantization = fromStd(info.quantization);
  s.hasChatTemplate = info.has_chat_template;
  s.rope = ropeToMap(info.config);
  return s;
}

MemorySnapshot toSnapshot(const hearth::MemoryUsage& u) {
  return {u.weights, u.kv_cache, u.activations, u.workspace, u.device_free, u.device_total};
}

QVariantMap planToMap(const hearth::MemoryPlan& p) {
  // Every cache type the model allows, so the panel can say what each would hold before the
  // user picks one.
  QVariantList choices;
  for (const hearth::CacheChoice& c : p.cache_choices)
    choices.append(QVariantMap{
        {QStringLiteral("type"), QString::fromLatin1(hearth::kv_cache_type_name(c.type))},
        {QStringLiteral("bytesPerToken"), double(c.bytes_per_token)},
        {QStringLiteral("tokensThatFit"), double(c.tokens_that_fit)}});
  QVariantList gpus;
  for (const hearth::GpuShare& g : p.gpus)
    gpus.append(QVariantMap{{QStringLiteral("device"), g.device},
                            {QStringLiteral("name"), fromStd(g.name)},
                            {QStringLiteral("firstLayer"), double(g.first_layer)},
                            {QStringLiteral("layers"), double(g.layers)},
                            {QStringLiteral("weights"), double(g.weights)},
                            {QStringLiteral("kvCache"), double(g.kv_cache)},
                            {QStringLiteral("activations"), double(g.activations)},
                            {QStringLiteral("workspace"), double(g.workspace)},
                            {QStringLiteral("needed"), double(g.needed())},
                            {QStringLiteral("deviceFree"), double(g.device_free)},
                            {QStringLiteral("deviceTotal"), double(g.device_total)},
                            {QStringLiteral("limit"), double(g.limit)},
                            {QStringLiteral("fits"), g.fits}});
  return {{QStringLiteral("weights"), double(p.weights)},
          {QStringLiteral("kvCache"), double(p.kv_cache)},
          {QStringLiteral("activations"), double(p.activations)},
          {QStringLiteral("workspace"), double(p.workspace)},
          {QStringLiteral("adapters"), double(p.adapters)},
          {QStringLiteral("needed"), double(p.needed())},
          {QStringLiteral("deviceFree"), double(p.device_free)},
          {QStringLiteral("deviceTotal"), double(p.device_total)},
          {QStringLiteral("fits"), p.fits},
          {QStringLiteral("advice"), fromStd(p.advice)},
          {QStringLiteral("deviceName"), fromStd(p.device_name)},
          {QStringLiteral("kvCacheType"),
           QString::fromLatin1(hearth::kv_cache_type_name(p.kv_cache_type))},
          {QStringLiteral("cacheChoices"), choices},
          {QStringLiteral("gpus"), gpus},
          {QStringLiteral("valid"), true}};
}

MessageStats toStats(const hearth::GenerationResult& r, const QString& model) {
  MessageStats s;
  s.promptTokens = r.stats.prompt_tokens;
  s.cachedPromptTokens = r.stats.cached_prompt_tokens;
  s.proposedTokens = r.stats.proposed_tokens;
  s.acceptedTokens = r.stats.accepted_tokens;
  s.generatedTokens = r.stats.generated_tokens;
  s.promptSeconds = r.stats.prompt_seconds;
  s.decodeSeconds = r.stats.decode_seconds;
  s.finishReason = QString::fromLatin1(hearth::finish_reason_name(r.finish));
  s.model = model;
  for (const hearth::AppliedAdapter& a : r.adapters)
    s.adapters.push_back({fromStd(a.name), QString::fromStdString(a.path.string()), a.weight});
  return s;
}

EngineFailure toFailure(const hearth::Error& e) {
  EngineFailure f;
  f.code = QString::fromLatin1(hearth::error_code_name(e.code()));
  f.message = QString::fromUtf8(e.what());
  f.outOfMemory = e.code() == hearth::ErrorCode::kOutOfMemory;
  return f;
}

EngineFailure toFailure(const std::exception& e) {
  EngineFailure f;
  f.code = QStringLiteral("internal");
  f.message = QString::fromUtf8(e.what());
  return f;
}

hearth::LoadOptions toLoadOptions(const QVariantMap& m) {
  hearth::LoadOptions o;
  const QString path = m.value(QStringLiteral("path")).toString();
  if (path.isEmpty())
    hearth::fail(hearth::ErrorCode::kInvalidArgument, "no model chosen (load setting \"path\")");
  o.model_path = std::filesystem::path(path.toStdString());
  const QString device = m.value(QStringLiteral("device"), QStringLiteral("cpu")).toString();
  if (device == u"gpu")
    o.device = hearth::DeviceKind::kCuda;
  else if (device == u"cpu")
    o.device = hearth::DeviceKind::kCpu;
  else
    hearth::fail(hearth::ErrorCode::kInvalidArgument,
                 "load setting \"device\" must be cpu or gpu, not " + device.toStdString());
  o.cuda_device = int(number(m, "cudaDevice", 0));
  for (const QVariant& g : m.value(QStringLiteral("gpus")).toList()) {
    bool ok = false;
    const int index = g.toInt(&ok);
    if (!ok || index < 0)
      hearth::fail(
          hearth::ErrorCode::kInvalidArgument,
          "load setting \"gpus\" must list GPU numbers, not " + g.toString().toStdString());
    o.gpus.push_back(index);
  }
  const QString split = m.value(QStringLiteral("gpuSplit"), QStringLiteral("layer")).toString();
  if (split == u"tensor")
    o.gpu_split = hearth::GpuSplit::kTensor;
  else if (split != u"layer")
    hearth::fail(hearth::ErrorCode::kInvalidArgument,
                 "load setting \"gpuSplit\" must be layer or tensor, not " + split.toStdString());
  for (const QVariant& g : m.value(QStringLiteral("gpuSplitGib")).toList()) {
    bool ok = false;
    const double gib = g.toDouble(&ok);
    if (!ok || !(gib > 0))
      hearth::fail(hearth::ErrorCode::kInvalidArgument,
                   "load setting \"gpuSplitGib\" must list positive sizes in GiB, not " +
                       g.toString().toStdString());
    o.gpu_split_gib.push_back(gib);
  }
  o.max_seq_len = qint64(number(m, "maxSeqLen", 0));
  o.cache_tokens = qint64(number(m, "cacheTokens", 0));
  o.cpu_threads = int(number(m, "cpuThreads", 0));
  if (o.max_seq_len < 0 || o.cache_tokens < 0)
    hearth::fail(hearth::ErrorCode::kInvalidArgument, "context and cache sizes cannot be negative");
  const QString speculation =
      m.value(QStringLiteral("speculation"), QStringLiteral("off")).toString();
  const auto mode = hearth::parse_speculation(speculation.toStdString());
  if (!mode)
    hearth::fail(hearth::ErrorCode::kInvalidArgument,
                 "load setting \"speculation\" must be off, ngram or draft, not " +
                     speculation.toStdString());
  o.speculation = *mode;
  const QString draft = m.value(QStringLiteral("draftPath")).toString();
  if (o.speculation == hearth::Speculation::kDraft) {
    if (draft.isEmpty())
      hearth::fail(hearth::ErrorCode::kInvalidArgument,
                   "choose a draft model for draft speculation");
    o.draft_model_path = std::filesystem::path(draft.toStdString());
  }
  const QString kvCacheType =
      m.value(QStringLiteral("kvCacheType"), QStringLiteral("fp16")).toString();
  const auto cacheType = hearth::parse_kv_cache_type(kvCacheType.toStdString());
  if (!cacheType)
    hearth::fail(hearth::ErrorCode::kInvalidArgument,
                 "load setting \"kvCacheType\" must be fp16, q8, q6 or q4, not " +
                     kvCacheType.toStdString());
  o.kv_cache_type = *cacheType;
  o.adapters = toAdapterSpecs(m.value(QStringLiteral("adapters")));

  const QString rope = m.value(QStringLiteral("rope"), QStringLiteral("model")).toString();
  if (rope == u"model") return o;
  hearth::RopeScaling r;
  r.factor = number(m, "ropeFactor", 1.0);
  r.original_max_position_embeddings = qint64(number(m, "originalContext", 0));
  if (rope == u"none") {
    r.type = hearth::RopeScalingType::kNone;
    r.factor = 1.0;
  } else if (rope == u"linear") {
    r.type = hearth::RopeScalingType::kLinear;
  } else if (rope == u"ntk") {
    r.type = hearth::RopeScalingType::kNone;
    r.factor = 1.0;
    o.ntk_alpha = number(m, "ntkAlpha", 1.0);
    if (*o.ntk_alpha < 1.0)
      hearth::fail(hearth::ErrorCode::kInvalidArgument, "NTK alpha must be at least 1");
  } else if (rope == u"yarn") {
    r.type = hearth::RopeScalingType::kYarn;
    r.beta_fast = number(m, "betaFast", 32.0);
    r.beta_slow = number(m, "betaSlow", 1.0);
  } else if (rope == u"llama3") {
    r.type = hearth::RopeScalingType::kLlama3;
    r.low_freq_factor = number(m, "lowFreqFactor", 1.0);
    r.high_freq_factor = number(m, "highFreqFactor", 4.0);
  } else {
    hearth::fail(hearth::ErrorCode::kInvalidArgument,
                 "unknown RoPE scaling \"" + rope.toStdString() + "\"");
  }
  if (r.factor < 1.0)
    hearth::fail(hearth::ErrorCode::kInvalidArgument, "RoPE scaling factor must be at least 1");
  o.rope_scaling = r;
  return o;
}

hearth::SamplingParams toSampling(const QVariantMap& m) {
  hearth::SamplingParams p;
  p.temperature = float(number(m, "temperature", p.temperature));
  p.top_k = int32_t(number(m, "topK", p.top_k));
  p.top_p = float(number(m, "topP", p.top_p));
  p.min_p = float(number(m, "minP", p.min_p));
  p.repetition_penalty = float(number(m, "repetitionPenalty", p.repetition_penalty));
  p.frequency_penalty = float(number(m, "frequencyPenalty", p.frequency_penalty));
  p.presence_penalty = float(number(m, "presencePenalty", p.presence_penalty));
  p.seed = uint64_t(number(m, "seed", 0));
  return p;
}

}  // namespace hearth::app
