// Everything the app is made of, created in dependency order and destroyed in reverse: the
// settings, the history store, the engine controller (and its worker thread), the conversation
// list, the chat session, the model library, the adapter list, the language manager, the
// quantization wizard and the local server. main() creates one; the Qt Quick tests create one on
// temporary files.
#pragma once

#include <QString>
#include <memory>

class QQmlEngine;

namespace hearth::app {

class AdapterList;
class AppSettings;
class ChatSession;
class ChatStore;
class ConversationList;
class EngineController;
class LanguageManager;
class LocalServer;
class ModelLibrary;
class QuantizeWizard;

class AppRuntime {
 public:
  struct Paths {
    QString database;  // empty: ChatStore::defaultPath()
    QString settings;  // empty: the user's settings.ini
  };
  explicit AppRuntime(const Paths& paths = {});
  ~AppRuntime();

  // Makes the instances the QML singletons and gives the language manager its engine.
  void attach(QQmlEngine* engine);

  // Set when the history could not be opened (the app then keeps history in memory only).
  const QString& storeError() const { return storeError_; }

  AppSettings& settings() { return *settings_; }
  ChatStore& store() { return *store_; }
  EngineController& engine() { return *engine_; }
  ConversationList& conversations() { return *conversations_; }
  ChatSession& session() { return *session_; }
  ModelLibrary& library() { return *library_; }
  AdapterList& adapters() { return *adapters_; }
  LanguageManager& language() { return *language_; }
  QuantizeWizard& quantizer() { return *quantizer_; }
  LocalServer& localServer() { return *localServer_; }

 private:
  std::unique_ptr<AppSettings> settings_;
  std::unique_ptr<ChatStore> store_;
  std::unique_ptr<EngineController> engine_;
  std::unique_ptr<ConversationList> conversations_;
  std::unique_ptr<ChatSession> session_;
  std::unique_ptr<ModelLibrary> library_;
  std::unique_ptr<AdapterList> adapters_;
  std::unique_ptr<LanguageManager> language_;
  std::unique_ptr<QuantizeWizard> quantizer_;
  std::unique_ptr<LocalServer> localServer_;
  QString storeError_;
};

}  // namespace hearth::app
