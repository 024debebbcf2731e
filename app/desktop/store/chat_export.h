// A conversation as a file: Markdown for reading, JSON for moving it to another Hearth.
#pragma once

#include <QByteArray>
#include <QString>

#include "app/desktop/store/chat_store.h"

namespace hearth::app {

// The JSON document's "format" member; "version" is kChatJsonVersion.
inline constexpr char kChatJsonFormat[] = "hearth-conversation";
inline constexpr int kChatJsonVersion = 1;

QString exportMarkdown(ChatStore& store, qint64 conversationId);
QByteArray exportJson(ChatStore& store, qint64 conversationId);
// Creates a new conversation from an exported JSON document; returns its id. Throws StoreError
// naming the member that is missing or malformed; nothing is written then.
qint64 importJson(ChatStore& store, const QByteArray& json);

}  // namespace hearth::app
