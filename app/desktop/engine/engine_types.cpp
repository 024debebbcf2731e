#include "app/desktop/engine/engine_types.h"

namespace hearth::app {

QVariantMap ModelSummary::toMap() const {
  return {{QStringLiteral("path"), path},
          {QStringLiteral("name"), name},
          {QStringLiteral("format"), format},
          {QStringLiteral("parameters"), parameters},
          {QStringLiteral("bitsPerWeight"), bitsPerWeight},
          {QStringLiteral("fileBytes"), fileBytes},
          {QStringLiteral("trainedContext"), trainedContext},
          {QStringLiteral("maxSeqLen"), maxSeqLen},
          {QStringLiteral("deviceName"), deviceName},
          {QStringLiteral("storedTypes"), storedTypes},
          {QStringLiteral("quantization"), quantization},
          {QStringLiteral("hasChatTemplate"), hasChatTemplate},
          {QStringLiteral("rope"), rope}};
}

QVariantMap MemorySnapshot::toMap() const {
  return {{QStringLiteral("weights"), double(weights)},
          {QStringLiteral("kvCache"), double(kvCache)},
          {QStringLiteral("activations"), double(activations)},
          {QStringLiteral("workspace"), double(workspace)},
          {QStringLiteral("used"), double(weights + kvCache + activations + workspace)},
          {QStringLiteral("deviceFree"), double(deviceFree)},
          {QStringLiteral("deviceTotal"), double(deviceTotal)}};
}

QVariantMap EngineFailure::toMap() const {
  return {{QStringLiteral("code"), code},
          {QStringLiteral("message"), message},
          {QStringLiteral("outOfMemory"), outOfMemory},
          {QStringLiteral("needed"), double(needed)},
          {QStringLiteral("available"), double(available)},
          {QStringLiteral("advice"), advice},
          {QStringLiteral("deviceName"), deviceName}};
}

QVariantList AdapterReport::loadedList() const {
  QVariantList out;
  for (const LoadedAdapter& a : loaded)
    out.append(QVariantMap{{QStringLiteral("path"), a.path},
                           {QStringLiteral("name"), a.name},
                           {QStringLiteral("weight"), a.weight}});
  return out;
}

}  // namespace hearth::app
