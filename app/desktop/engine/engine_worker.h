// Owns the hearth::Engine on its own thread. Every engine call runs here, never on the UI
// thread; requests arrive as queued calls (EngineController uses QMetaObject::invokeMethod),
// results leave as queued signals. Generated text is batched (one signal per batch interval,
// ~30 ms by default) so that a thousand tokens a second cost the UI thread ~33 updates.
// Cancellation uses the CancelToken passed with each request; the UI thread raises it directly.
//
// With the local server built in, a loaded model is driven by a ServingLoop (a thread of its
// own) from the end of its load until the next load or unload: the chat submits its requests to
// that loop and this thread waits on their streams, so the chat and the local server's requests
// are batched together. The server's host (ServerHost) is attached to each new loop, and
// detached before the loop stops: the server always serves the model loaded here.
//
// LoRA adapters are loaded, re-weighted and unloaded here too, without reloading the model. The
// loop's thread alone may change the engine while the loop runs, so a change pauses serving:
// the server and the loop stop, the engine changes, a new loop and the server start again.
#pragma once

#include <QElapsedTimer>
#include <QObject>
#include <functional>
#include <memory>
#include <string>

#include "app/desktop/engine/engine_types.h"
#include "engine/api/engine.h"
#include "engine/core/error.h"

namespace hearth::server {
class ServingLoop;
}

namespace hearth::app {

class ServerHost;

struct LoadJob {
  quint64 id = 0;
  hearth::LoadOptions options;
  hearth::CancelToken cancel;
};

// The adapters the engine should hold from now on (an empty list unloads them all).
struct AdapterJob {
  quint64 id = 0;
  QVector<AdapterChoice> adapters;
};

struct GenerateJob {
  quint64 id = 0;
  hearth::GenerationRequest request;
  hearth::CancelToken cancel;
};

class EngineWorker : public QObject {
  Q_OBJECT

 public:
  explicit EngineWorker(int batchIntervalMs = 30, QObject* parent = nullptr);
  ~EngineWorker() override;

  // Run on the worker thread.
  void load(const LoadJob& job);
  void unload();
  void generate(const GenerateJob& job);
  void applyAdapters(const AdapterJob& job);
  void sampleMemory();

  // Any thread: the local server's host, which follows this worker's loads (LocalServer
  // configures it).
  std::shared_ptr<ServerHost> serverHost() const { return serverHost_; }

 signals:
  void loadProgress(quint64 id, const QString& stage, qint64 done, qint64 total);
  void loadFinished(quint64 id, const hearth::app::ModelSummary& summary,
                    const hearth::app::MemorySnapshot& memory);
  void loadFailed(quint64 id, const hearth::app::EngineFailure& failure, bool cancelled);
  void unloaded();
  // The request's prompt is tokenized: its length, before the engine processes it.
  void promptReady(quint64 id, qint64 promptTokens);
  // A batch of text (the first piece alone); `pieces` and `seconds` count from the start of the
  // request (for the live figures), firstPieceSeconds is when the first piece came (prompt
  // processing done).
  void textStreamed(quint64 id, const QString& text, qint64 pieces, double seconds,
                    double firstPieceSeconds);
  void generationFinished(quint64 id, const QString& text, const hearth::app::MessageStats& stats,
                          qint64 contextUsed);
  void generationFailed(quint64 id, const hearth::app::EngineFailure& failure);
  void memorySampled(const hearth::app::MemorySnapshot& memory);
  // After applyAdapters, and after each successful load (with the load's id): the adapters the
  // engine holds now.
  void adaptersApplied(quint64 id, const hearth::app::AdapterReport& report);

 private:
  hearth::Engine& engine();
  EngineFailure describeLoadFailure(const hearth::Error& e, const hearth::LoadOptions& options);
  void startServing();  // after a load: the loop, then the server over it
  void stopServing();   // before the engine changes: the server, then the loop
  // Runs one request to its end; `onText` gets its pieces, `onIdle` is called while none come.
  hearth::GenerationResult run(const hearth::GenerationRequest& request,
                               const std::function<void(const std::string&)>& onText,
                               const std::function<void()>& onIdle,
                               const hearth::CancelToken& cancel);
  MemorySnapshot currentMemory() const;
  // Makes the engine hold exactly `wanted` (model loaded): unloads, re-weights, loads.
  AdapterReport changeAdapters(const QVector<AdapterChoice>& wanted);
  // What the chat's requests run with (they leave GenerationRequest::adapters unset): every
  // loaded adapter whose weight is not 0.
  QVector<AdapterUse> adaptersInUse() const;

  const std::shared_ptr<ServerHost> serverHost_;
  std::unique_ptr<hearth::Engine> engine_;  // created on the worker thread, on first use
  // While a model is loaded (server builds); only its thread steps the engine meanwhile.
  std::shared_ptr<hearth::server::ServingLoop> loop_;
  int batchIntervalMs_;
  QString modelName_;
  QVector<LoadedAdapter> adapters_;  // what the engine holds, in load order
};

}  // namespace hearth::app
