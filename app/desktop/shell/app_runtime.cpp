#include "app/desktop/shell/app_runtime.h"

#include <QQmlEngine>

#include "app/desktop/chat/chat_session.h"
#include "app/desktop/chat/conversation_list.h"
#include "app/desktop/engine/adapter_list.h"
#include "app/desktop/engine/engine_controller.h"
#include "app/desktop/engine/local_server.h"
#include "app/desktop/library/model_library.h"
#include "app/desktop/quantize/quantize_wizard.h"
#include "app/desktop/settings/app_settings.h"
#include "app/desktop/settings/language_manager.h"
#include "app/desktop/store/chat_store.h"

namespace hearth::app {

AppRuntime::AppRuntime(const Paths& paths) {
  settings_ = paths.settings.isEmpty() ? std::make_unique<AppSettings>(nullptr)
                                       : std::make_unique<AppSettings>(paths.settings, nullptr);
  AppSettings::setInstance(settings_.get());
  const QString db = paths.database.isEmpty() ? ChatStore::defaultPath() : paths.database;
  try {
    store_ = std::make_unique<ChatStore>(db);
  } catch (const StoreError& e) {
    storeError_ = e.message();
    store_ = std::make_unique<ChatStore>(QStringLiteral(":memory:"));
  }
  engine_ = std::make_unique<EngineController>(nullptr);
  EngineController::setInstance(engine_.get());
  conversations_ = std::make_unique<ConversationList>(store_.get());
  ConversationList::setInstance(conversations_.get());
  session_ = std::make_unique<ChatSession>(store_.get(), engine_.get(), settings_.get(),
                                           conversations_.get());
  ChatSession::setInstance(session_.get());
  library_ = std::make_unique<ModelLibrary>(settings_.get());
  ModelLibrary::setInstance(library_.get());
  adapters_ = std::make_unique<AdapterList>(settings_.get(), engine_.get());
  AdapterList::setInstance(adapters_.get());
  language_ = std::make_unique<LanguageManager>(nullptr);
  quantizer_ = std::make_unique<QuantizeWizard>(engine_.get(), library_.get(), settings_.get());
  QuantizeWizard::setInstance(quantizer_.get());
  localServer_ = std::make_unique<LocalServer>(engine_->serverHost(), settings_.get());
  LocalServer::setInstance(localServer_.get());
}

AppRuntime::~AppRuntime() {
  localServer_.reset();  // its server stops before the engine's loop goes
  quantizer_.reset();    // stops a running job (it stays resumable) before the engine goes
  language_.reset();
  adapters_.reset();
  library_.reset();
  session_.reset();
  conversations_.reset();
  engine_.reset();
  store_.reset();
  AppSettings::setInstance(nullptr);
  settings_.reset();
}

void AppRuntime::attach(QQmlEngine* engine) {
  language_->setEngine(engine);
}

}  // namespace hearth::app
