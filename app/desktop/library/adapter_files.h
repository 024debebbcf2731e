// Telling LoRA adapters from models on disk, for the model library (which must not offer an
// adapter as a model) and the adapter list (which lists only adapters): a folder holding
// adapter_config.json (PEFT), or a GGUF file whose general.type is "adapter" (llama.cpp;
// Engine::is_adapter reads its header). Whether an adapter fits a model is
// Engine::inspect_adapter's business.
#pragma once

#include <QString>
#include <QStringList>

namespace hearth::app {

bool isAdapterFolder(const QString& path);
bool isAdapterGguf(const QString& path);
bool isAdapterPath(const QString& path);  // either of the two

// Adapters in one folder, found as ModelLibrary finds models: the folder itself when it is an
// adapter, else the adapters in it and one level deeper (e.g. adapters/<name>/ or
// models/<vendor>/<file>.gguf).
QStringList adapterCandidatesIn(const QString& folder);

// A path the user picked for an adapter: adapter_config.json or a PEFT weights file stand for
// their folder.
QString adapterPathFor(const QString& picked);

}  // namespace hearth::app
