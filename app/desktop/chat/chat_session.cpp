#include "app/desktop/chat/chat_session.h"

#include <QJSEngine>
#include <QJsonObject>

#include "app/desktop/chat/conversation_list.h"
#include "app/desktop/engine/engine_controller.h"
#include "app/desktop/settings/app_settings.h"

namespace hearth::app {

namespace {

ChatSession* g_instance = nullptr;
constexpr int kCheckpointMs = 1000;  // at most this much of a streaming answer is lost on a crash
constexpr int kTitleChars = 48;

QString titleFrom(const QString& text) {
  QString line = text.simplified();
  if (line.size() <= kTitleChars) return line;
  line.truncate(kTitleChars);
  const qsizetype space = line.lastIndexOf(u' ');
  if (space > kTitleChars / 2) line.truncate(space);
  return line + u'…';
}

}  // namespace

ChatSession::ChatSession(ChatStore* store, EngineController* engine, AppSettings* settings,
                         ConversationList* conversations, QObject* parent)
    : QObject(parent),
      store_(store),
      engine_(engine),
      settings_(settings),
      conversations_(conversations) {
  checkpointTimer_.setInterval(kCheckpointMs);
  connect(&checkpointTimer_, &QTimer::timeout, this, &ChatSession::checkpoint);
  connect(engine_, &EngineController::generationText, this, &ChatSession::onText);
  connect(engine_, &EngineController::generationDone, this, &ChatSession::onDone);
  connect(engine_, &EngineController::generationError, this, &ChatSession::onError);
  connect(conversations_, &ConversationList::conversationRemoved, this, [this](qint64 id) {
    if (id == conversationId_) startNew();
  });
  connect(&messages_, &MessageList::countChanged, this, &ChatSession::messagesChanged);
  systemPrompt_ = settings_->systemPrompt();
}

ChatSession::~ChatSession() {
  // Whatever streamed so far is kept, flagged incomplete on the next start.
  checkpoint();
  if (g_instance == this) g_instance = nullptr;
}

ChatSession* ChatSession::create(QQmlEngine*, QJSEngine*) {
  Q_ASSERT_X(g_instance, "ChatSession", "the app creates the instance before QML uses it");
  QJSEngine::setObjectOwnership(g_instance, QJSEngine::CppOwnership);
  return g_instance;
}

void ChatSession::setInstance(ChatSession* instance) {
  g_instance = instance;
}

bool ChatSession::canRegenerate() const {
  return !generating() && !messages_.all().isEmpty() && messages_.all().back().role == u"assistant";
}

void ChatSession::fail(const QString& message) {
  lastError_ = message;
  emit errorOccurred(message);
}

void ChatSession::open(qint64 conversationId) {
  if (generating()) {
    stop();
    answerRow_ = -1;  // the answer is finished in the store when the engine returns
  }
  try {
    const auto c = store_->conversation(conversationId);
    if (!c) return;
    conversationId_ = c->id;
    title_ = c->title;
    systemPrompt_ = c->systemPrompt;
    sampling_ = c->sampling.toVariantMap();
    messages_.reset(store_->messages(conversationId));
  } catch (const StoreError& e) {
    fail(e.message());
  }
  emit conversationChanged();
  emit messagesChanged();
}

void ChatSession::startNew() {
  if (generating()) {
    stop();
    answerRow_ = -1;
  }
  conversationId_ = 0;
  title_.clear();
  systemPrompt_ = settings_->systemPrompt();
  sampling_.clear();
  messages_.reset({});
  emit conversationChanged();
  emit messagesChanged();
}

void ChatSession::setSystemPrompt(const QString& prompt) {
  if (prompt == systemPrompt_) return;
  systemPrompt_ = prompt;
  if (conversationId_) store_->setSystemPrompt(conversationId_, prompt);
  emit conversationChanged();
}

void ChatSession::setSampling(const QVariantMap& sampling) {
  sampling_ = sampling;
  if (conversationId_) store_->setSampling(conversationId_, QJsonObject::fromVariantMap(sampling));
  emit conversationChanged();
}

QVariantMap ChatSession::effectiveSampling() const {
  QVariantMap s = settings_->defaultSampling();
  for (auto it = sampling_.cbegin(); it != sampling_.cend(); ++it) s.insert(it.key(), it.value());
  return s;
}

bool ChatSession::send(const QString& text) {
  const QString content = text.trimmed();
  if (content.isEmpty() || generating()) return false;
  if (!engine_->loaded()) {
    fail(tr("Load a model first: choose one in the model bar or the library."));
    return false;
  }
  try {
    if (!conversationId_) {
      conversationId_ = store_->createConversation(titleFrom(content), systemPrompt_,
                                                   QJsonObject::fromVariantMap(sampling_));
      title_ = titleFrom(content);
      emit conversationChanged();
    }
    MessageRecord user;
    user.conversationId = conversationId_;
    user.role = QStringLiteral("user");
    user.content = content;
    user.id = store_->addMessage(conversationId_, user.role, content);
    user.created = QDateTime::currentDateTime();
    messages_.append(user);
    conversations_->refresh();
  } catch (const StoreError& e) {
    fail(e.message());
    return false;
  }
  return startAnswer();
}

bool ChatSession::startAnswer() {
  std::vector<hearth::ChatMessage> history;
  if (!systemPrompt_.trimmed().isEmpty())
    history.push_back({"system", systemPrompt_.toStdString()});
  for (const MessageRecord& m : messages_.all())
    if (!m.content.isEmpty()) history.push_back({m.role.toStdString(), m.content.toStdString()});

  const QVariantMap sampling = effectiveSampling();
  const int maxTokens = sampling.value(QStringLiteral("maxTokens"), 1024).toInt();
  MessageRecord answer;
  answer.conversationId = conversationId_;
  answer.role = QStringLiteral("assistant");
  answer.state = MessageState::Streaming;
  answer.created = QDateTime::currentDateTime();
  try {
    answer.id = store_->beginMessage(conversationId_, answer.role);
  } catch (const StoreError& e) {
    fail(e.message());
    return false;
  }
  requestId_ = engine_->generate(history, sampling, maxTokens);
  if (!requestId_) {
    store_->truncateFrom(answer.id);
    fail(tr("The model is busy or not loaded."));
    return false;
  }
  messages_.append(answer);
  answer_ = answer;
  answerRow_ = int(messages_.rowCount()) - 1;
  dirty_ = false;
  checkpointTimer_.start();
  emit generatingChanged();
  emit messagesChanged();
  return true;
}

void ChatSession::stop() {
  if (generating()) engine_->stop();
}

bool ChatSession::regenerate() {
  if (!canRegenerate()) return false;
  const int row = int(messages_.rowCount()) - 1;
  try {
    store_->truncateFrom(messages_.at(row).id);
  } catch (const StoreError& e) {
    fail(e.message());
    return false;
  }
  messages_.truncate(row);
  if (!engine_->loaded()) {
    fail(tr("Load a model first: choose one in the model bar or the library."));
    return false;
  }
  return startAnswer();
}

bool ChatSession::editAndResend(int row, const QString& text) {
  if (generating() || row < 0 || row >= messages_.rowCount()) return false;
  if (messages_.at(row).role != u"user" || text.trimmed().isEmpty()) return false;
  if (!engine_->loaded()) {
    fail(tr("Load a model first: choose one in the model bar or the library."));
    return false;
  }
  try {
    store_->truncateFrom(messages_.at(row).id);
  } catch (const StoreError& e) {
    fail(e.message());
    return false;
  }
  messages_.truncate(row);
  return send(text);
}

void ChatSession::onText(quint64 id, const QString& text) {
  if (id != requestId_) return;
  answer_.content += text;
  if (answerRow_ >= 0) messages_.appendText(answerRow_, text);
  dirty_ = true;
}

void ChatSession::checkpoint() {
  if (!dirty_ || !answer_.id) return;
  try {
    store_->checkpointMessage(answer_.id, answer_.content);
    dirty_ = false;
  } catch (const StoreError& e) {
    fail(e.message());
  }
}

void ChatSession::endRequest() {
  checkpointTimer_.stop();
  requestId_ = 0;
  answerRow_ = -1;
  answer_ = MessageRecord();
  dirty_ = false;
  emit generatingChanged();
  emit messagesChanged();
}

void ChatSession::onDone(quint64 id, const QString& text, const MessageStats& stats) {
  if (id != requestId_) return;
  MessageRecord m = answer_;
  if (!text.isEmpty()) m.content = text;
  m.state = MessageState::Complete;
  m.stats = stats;
  try {
    store_->finishMessage(m.id, m.content, stats);
  } catch (const StoreError& e) {
    fail(e.message());
  }
  if (answerRow_ >= 0) messages_.update(answerRow_, m);
  conversations_->refresh();
  endRequest();
  emit answerFinished(stats.finishReason);
}

void ChatSession::onError(quint64 id, const QVariantMap& failure) {
  if (id != requestId_) return;
  MessageRecord m = answer_;
  m.state = MessageState::Incomplete;
  try {
    if (m.content.isEmpty()) {
      store_->truncateFrom(m.id);
      if (answerRow_ >= 0) messages_.truncate(answerRow_);
    } else {
      store_->interruptMessage(m.id, m.content);
      if (answerRow_ >= 0) messages_.update(answerRow_, m);
    }
  } catch (const StoreError& e) {
    fail(e.message());
  }
  endRequest();
  lastError_ = failure.value(QStringLiteral("message")).toString();
  emit answerFinished(QStringLiteral("error"));
}

}  // namespace hearth::app
