// The child process of the kill -9 test: writes conversations into a chat store as the app does
// (user message committed whole, answer begun, checkpointed while it streams, then finished) and
// prints a line to stdout after each commit returns, until it is killed:
//   OPEN                   the store is open (migrated, recovered)
//   ACK <message id> <key> <conversation id>    a completed message, committed
//   BEGIN <message id> <key> <conversation id>  a streaming answer started (committed, empty)
//   DELETING <conversation id>  about to delete the oldest conversation and its messages
// Usage: hearth_chat_crash_writer <db path> full|normal <seed>
#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "app/desktop/store/chat_store.h"
#include "tests/app/crash_text.h"

using namespace hearth::app;

namespace {

void say(const char* fmt, long long a = 0, unsigned long long b = 0, long long c = 0) {
  std::printf(fmt, a, b, c);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s <db> full|normal <seed>\n", argv[0]);
    return 2;
  }
  const bool full = std::string(argv[2]) == "full";
  const quint64 seed = std::strtoull(argv[3], nullptr, 10);
  try {
    ChatStore store(QString::fromLocal8Bit(argv[1]),
                    full ? ChatStore::Durability::Full : ChatStore::Durability::Normal);
    say("OPEN\n");
    qint64 conv = 0;
    for (quint64 round = 0;; ++round) {
      if (round % 4 == 0) {
        conv = store.createConversation(QStringLiteral("chat %1").arg(round));
        // Keeps the database small: at most four conversations, the oldest goes first.
        const auto all = store.conversations();
        if (all.size() > 4) {
          qint64 oldest = all.front().id;
          for (const auto& c : all) oldest = std::min(oldest, c.id);
          say("DELETING %lld\n", oldest);
          store.deleteConversation(oldest);
        }
      }
      const quint64 userKey = seed * 1000003ull + round * 2;
      const qint64 user =
          store.addMessage(conv, QStringLiteral("user"), hearth::test::crashText(userKey));
      say("ACK %lld %llu %lld\n", user, userKey, conv);

      const quint64 answerKey = userKey + 1;
      const qint64 answer = store.beginMessage(conv, QStringLiteral("assistant"));
      say("BEGIN %lld %llu %lld\n", answer, answerKey, conv);
      QString text;
      const QStringList pieces = hearth::test::crashTextPieces(answerKey);
      for (int i = 0; i < pieces.size(); ++i) {
        text += pieces[i];
        if (i % 3 == 2) store.checkpointMessage(answer, text);
      }
      MessageStats stats;
      stats.generatedTokens = pieces.size();
      stats.decodeSeconds = 0.01;
      store.finishMessage(answer, text, stats);
      say("ACK %lld %llu %lld\n", answer, answerKey, conv);
    }
  } catch (const StoreError& e) {
    std::fprintf(stderr, "store error: %s\n", e.what());
    return 1;
  }
}
