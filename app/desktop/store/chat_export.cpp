#include "app/desktop/store/chat_export.h"

#include <QCoreApplication>
#include <QJsonArray>
#include <QJsonDocument>
#include <QLocale>

namespace hearth::app {

namespace {

QString roleHeading(const QString& role) {
  if (role == u"user") return QCoreApplication::translate("ChatExport", "You");
  if (role == u"assistant") return QCoreApplication::translate("ChatExport", "Assistant");
  return QCoreApplication::translate("ChatExport", "System");
}

const char* stateName(MessageState s) {
  switch (s) {
    case MessageState::Complete:
      return "complete";
    case MessageState::Streaming:
      return "streaming";
    case MessageState::Incomplete:
      return "incomplete";
  }
  return "complete";
}

ConversationRecord requireConversation(ChatStore& store, qint64 id) {
  auto c = store.conversation(id);
  if (!c) throw StoreError(QStringLiteral("conversation %1 does not exist").arg(id));
  return *c;
}

QString requireString(const QJsonObject& o, const char* key, const QString& where) {
  const QJsonValue v = o.value(QLatin1String(key));
  if (!v.isString())
    throw StoreError(QStringLiteral("%1: \"%2\" must be a string").arg(where, QLatin1String(key)));
  return v.toString();
}

}  // namespace

QString exportMarkdown(ChatStore& store, qint64 conversationId) {
  const ConversationRecord c = requireConversation(store, conversationId);
  QString md;
  md += QStringLiteral("# %1\n\n").arg(c.title);
  md += QStringLiteral("_%1_\n\n")
            .arg(QCoreApplication::translate("ChatExport", "Exported from Hearth on %1")
                     .arg(QLocale().toString(QDateTime::currentDateTime(), QLocale::LongFormat)));
  if (!c.systemPrompt.isEmpty()) {
    md +=
        QStringLiteral("## %1\n\n").arg(QCoreApplication::translate("ChatExport", "System prompt"));
    md += c.systemPrompt + QStringLiteral("\n\n");
  }
  for (const MessageRecord& m : store.messages(conversationId)) {
    md += QStringLiteral("## %1\n\n").arg(roleHeading(m.role));
    md += m.content;
    if (!m.content.endsWith(u'\n')) md += u'\n';
    md += u'\n';
    if (m.state != MessageState::Complete)
      md += QStringLiteral("_%1_\n\n")
                .arg(QCoreApplication::translate("ChatExport", "(answer interrupted)"));
    if (m.stats.generatedTokens > 0 && m.stats.decodeSeconds > 0)
      md += QStringLiteral("_%1_\n\n")
                .arg(QCoreApplication::translate("ChatExport", "%1 tokens, %2 tokens/s")
                         .arg(m.stats.generatedTokens)
                         .arg(QLocale().toString(
                             double(m.stats.generatedTokens) / m.stats.decodeSeconds, 'f', 1)));
    if (!m.stats.adapters.isEmpty()) {
      QStringList names;
      for (const AdapterUse& a : m.stats.adapters)
        names << QStringLiteral("%1 × %2").arg(a.name, QLocale().toString(a.weight, 'f', 2));
      md += QStringLiteral("_%1_\n\n")
                .arg(QCoreApplication::translate("ChatExport", "Adapters: %1")
                         .arg(names.join(QStringLiteral(", "))));
    }
  }
  return md;
}

QByteArray exportJson(ChatStore& store, qint64 conversationId) {
  const ConversationRecord c = requireConversation(store, conversationId);
  QJsonArray messages;
  for (const MessageRecord& m : store.messages(conversationId)) {
    QJsonObject o;
    o[QStringLiteral("role")] = m.role;
    o[QStringLiteral("content")] = m.content;
    o[QStringLiteral("state")] = QLatin1String(stateName(m.state));
    o[QStringLiteral("created")] = m.created.toUTC().toString(Qt::ISODateWithMs);
    if (!m.stats.isEmpty()) o[QStringLiteral("stats")] = m.stats.toJson();
    if (!m.stats.adapters.isEmpty())
      o[QStringLiteral("adapters")] = MessageStats::adaptersToJson(m.stats.adapters);
    messages.append(o);
  }
  QJsonObject doc;
  doc[QStringLiteral("format")] = QLatin1String(kChatJsonFormat);
  doc[QStringLiteral("version")] = kChatJsonVersion;
  doc[QStringLiteral("title")] = c.title;
  doc[QStringLiteral("system_prompt")] = c.systemPrompt;
  doc[QStringLiteral("sampling")] = c.sampling;
  doc[QStringLiteral("created")] = c.created.toUTC().toString(Qt::ISODateWithMs);
  doc[QStringLiteral("messages")] = messages;
  return QJsonDocument(doc).toJson(QJsonDocument::Indented);
}

qint64 importJson(ChatStore& store, const QByteArray& json) {
  QJsonParseError err{};
  const QJsonDocument doc = QJsonDocument::fromJson(json, &err);
  if (err.error != QJsonParseError::NoError)
    throw StoreError(
        QStringLiteral("not valid JSON at byte %1: %2").arg(err.offset).arg(err.errorString()));
  if (!doc.isObject()) throw StoreError(QStringLiteral("the document is not a JSON object"));
  const QJsonObject root = doc.object();
  if (root.value(QStringLiteral("format")).toString() != QLatin1String(kChatJsonFormat))
    throw StoreError(QStringLiteral("\"format\" is not \"%1\": not a Hearth conversation")
                         .arg(QLatin1String(kChatJsonFormat)));
  const int version = root.value(QStringLiteral("version")).toInt(-1);
  if (version < 1 || version > kChatJsonVersion)
    throw StoreError(QStringLiteral("\"version\" %1 is not supported (1 to %2)")
                         .arg(version)
                         .arg(kChatJsonVersion));
  const QString title = requireString(root, "title", QStringLiteral("conversation"));
  const QString systemPrompt = root.value(QStringLiteral("system_prompt")).toString();
  const QJsonValue sampling = root.value(QStringLiteral("sampling"));
  if (!sampling.isUndefined() && !sampling.isObject())
    throw StoreError(QStringLiteral("conversation: \"sampling\" must be an object"));
  const QJsonValue messages = root.value(QStringLiteral("messages"));
  if (!messages.isArray())
    throw StoreError(QStringLiteral("conversation: \"messages\" must be an array"));

  // Validate everything before writing anything.
  struct Pending {
    QString role, content;
    MessageStats stats;
  };
  QVector<Pending> pending;
  const QJsonArray array = messages.toArray();
  for (qsizetype i = 0; i < array.size(); ++i) {
    const QString where = QStringLiteral("messages[%1]").arg(i);
    if (!array[i].isObject()) throw StoreError(where + QStringLiteral(" must be an object"));
    const QJsonObject o = array[i].toObject();
    Pending p{requireString(o, "role", where), requireString(o, "content", where), {}};
    if (p.role != u"system" && p.role != u"user" && p.role != u"assistant")
      throw StoreError(QStringLiteral("%1: unknown role \"%2\"").arg(where, p.role));
    p.stats = MessageStats::fromJson(o.value(QStringLiteral("stats")).toObject());
    p.stats.adapters = MessageStats::adaptersFromJson(o.value(QStringLiteral("adapters")), where);
    pending.push_back(p);
  }

  Transaction tx(store.db());
  const qint64 id = store.createConversation(title, systemPrompt, sampling.toObject());
  for (const Pending& p : pending) store.addMessage(id, p.role, p.content, p.stats);
  tx.commit();
  return id;
}

}  // namespace hearth::app
