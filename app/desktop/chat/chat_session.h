// The open conversation (QML singleton ChatSession): sends a message, streams the answer into
// the message list, checkpoints it into the store every second while it streams and commits it
// when it ends; stop, regenerate, edit-and-resend; the conversation's system prompt and sampling.
#pragma once

#include <QtQml/qqmlregistration.h>
#include <QObject>
#include <QQmlEngine>
#include <QTimer>
#include <QVariantMap>

#include "app/desktop/chat/message_list.h"
#include "app/desktop/store/chat_store.h"

namespace hearth::app {

class AppSettings;
class ConversationList;
class EngineController;

class ChatSession : public QObject {
  Q_OBJECT
  QML_ELEMENT
  QML_SINGLETON
  Q_PROPERTY(qint64 conversationId READ conversationId NOTIFY conversationChanged)
  Q_PROPERTY(QString title READ title NOTIFY conversationChanged)
  Q_PROPERTY(
      QString systemPrompt READ systemPrompt WRITE setSystemPrompt NOTIFY conversationChanged)
  Q_PROPERTY(QVariantMap sampling READ sampling WRITE setSampling NOTIFY conversationChanged)
  Q_PROPERTY(hearth::app::MessageList* messages READ messages CONSTANT)
  Q_PROPERTY(bool generating READ generating NOTIFY generatingChanged)
  Q_PROPERTY(bool canRegenerate READ canRegenerate NOTIFY messagesChanged)
  Q_PROPERTY(QString lastError READ lastError NOTIFY errorOccurred)

 public:
  ChatSession(ChatStore* store, EngineController* engine, AppSettings* settings,
              ConversationList* conversations, QObject* parent = nullptr);
  ~ChatSession() override;
  static ChatSession* create(QQmlEngine*, QJSEngine*);
  static void setInstance(ChatSession* instance);

  qint64 conversationId() const { return conversationId_; }
  QString title() const { return title_; }
  QString systemPrompt() const { return systemPrompt_; }
  void setSystemPrompt(const QString& prompt);
  QVariantMap sampling() const { return sampling_; }  // this conversation's overrides
  void setSampling(const QVariantMap& sampling);
  MessageList* messages() { return &messages_; }
  bool generating() const { return requestId_ != 0; }
  bool canRegenerate() const;
  QString lastError() const { return lastError_; }

  Q_INVOKABLE void open(qint64 conversationId);
  Q_INVOKABLE void startNew();  // an empty view; the conversation is created on first send
  Q_INVOKABLE bool send(const QString& text);
  Q_INVOKABLE void stop();
  Q_INVOKABLE bool regenerate();
  Q_INVOKABLE bool editAndResend(int row, const QString& text);
  // The defaults from the settings with this conversation's overrides on top.
  Q_INVOKABLE QVariantMap effectiveSampling() const;

 signals:
  void conversationChanged();
  void generatingChanged();
  void messagesChanged();
  void errorOccurred(const QString& message);
  void answerFinished(const QString& finishReason);

 private:
  bool startAnswer();
  void onText(quint64 id, const QString& text);
  void onDone(quint64 id, const QString& text, const MessageStats& stats);
  void onError(quint64 id, const QVariantMap& failure);
  void checkpoint();
  void fail(const QString& message);
  void endRequest();

  ChatStore* store_;
  EngineController* engine_;
  AppSettings* settings_;
  ConversationList* conversations_;
  MessageList messages_;
  qint64 conversationId_ = 0;
  QString title_;
  QString systemPrompt_;
  QVariantMap sampling_;
  quint64 requestId_ = 0;
  // The answer being generated, kept apart from the view: the user may open another
  // conversation while it is cancelled, and it must still be stored whole.
  MessageRecord answer_;
  int answerRow_ = -1;  // its row in messages_, or -1 when another conversation is shown
  bool dirty_ = false;
  QTimer checkpointTimer_;
  QString lastError_;
};

}  // namespace hearth::app
