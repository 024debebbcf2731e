// The local server in the app (Settings > Local server), with the real EngineController and its
// worker on the CPU and real HTTP requests: it waits for a model without listening, serves the
// loaded model (/v1/models names it), the chat and the server's requests run in one batch (the
// chat's greedy answer is the one it gets alone), loading another model restarts the server over
// it while a server request is cut short cleanly, unloading during both a chat answer and a
// server request works, a key is required once set (401 otherwise), a port in use is reported
// and turning it off closes the port. Its settings persist, the key file readable by its owner
// alone.
#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <QScopeGuard>
#include <QTemporaryDir>
#include <QTest>
#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "app/desktop/engine/engine_controller.h"
#include "app/desktop/engine/local_server.h"
#include "app/desktop/engine/server_host.h"
#include "app/desktop/settings/app_settings.h"
#include "tests/common/test_paths.h"
#include "tests/unit/quantizer/quantizer_test_model.h"

using namespace hearth::app;

namespace {

// A port nothing listens on now (the system's pick, released at once).
int freePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    close(fd);
    return -1;
  }
  close(fd);
  return ntohs(addr.sin_port);
}

struct Http {
  int status = 0;  // 0: no answer (nothing listens)
  QJsonObject json;
  QString body;
};

Http request(int port, const std::string& method, const std::string& path,
             const QJsonObject& body = {}, const std::string& key = {}) {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(2, 0);
  client.set_read_timeout(120, 0);
  httplib::Headers headers;
  if (!key.empty()) headers.emplace("Authorization", "Bearer " + key);
  const httplib::Result res =
      method == "GET" ? client.Get(path, headers)
                      : client.Post(path, headers, QJsonDocument(body).toJson().toStdString(),
                                    "application/json");
  Http out;
  if (!res) return out;
  out.status = res->status;
  out.body = QString::fromStdString(res->body);
  out.json = QJsonDocument::fromJson(QByteArray::fromStdString(res->body)).object();
  return out;
}

QJsonObject chatBody(const QString& content, int maxTokens) {
  return {{"messages", QJsonArray{QJsonObject{{"role", "user"}, {"content", content}}}},
          {"max_tokens", maxTokens},
          {"temperature", 0},
          {"ignore_eos", true}};
}

struct Answer {
  bool done = false;
  QString text;
  MessageStats stats;
};

}  // namespace

class LocalServerTest : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  QString tinyPath_;
  std::unique_ptr<AppSettings> settings_;
  std::unique_ptr<EngineController> controller_;
  std::unique_ptr<LocalServer> server_;
  int port_ = 0;

  ServerHost& host() { return *controller_->serverHost(); }

  // A request is admitted when the KV cache can hold its whole run: room for a chat answer and a
  // long server request at once.
  bool load(const QString& path) {
    controller_->load({{QStringLiteral("path"), path},
                       {QStringLiteral("device"), QStringLiteral("cpu")},
                       {QStringLiteral("maxSeqLen"), 1024},
                       {QStringLiteral("cacheTokens"), 4096}});
    (void)QTest::qWaitFor([&] { return controller_->state() != EngineController::Loading; },
                          120000);
    return controller_->state() == EngineController::Ready;
  }

  // Starts a greedy chat answer through the worker; `answer` is filled when it ends.
  void startChat(const QString& prompt, int maxTokens, Answer* answer) {
    auto* context = new QObject(this);
    connect(controller_.get(), &EngineController::generationDone, context,
            [answer, context](quint64, const QString& text, const MessageStats& stats) {
              answer->done = true;
              answer->text = text;
              answer->stats = stats;
              context->deleteLater();
            });
    QVERIFY(controller_->generate({{"user", prompt.toStdString()}},
                                  {{QStringLiteral("temperature"), 0}}, maxTokens) != 0);
  }

  Answer chat(const QString& prompt, int maxTokens) {
    Answer a;
    startChat(prompt, maxTokens, &a);
    (void)QTest::qWaitFor([&] { return a.done; }, 120000);
    return a;
  }

  // Waits until the changes made so far are applied and their status arrived.
  void settle() {
    server_->waitUntilApplied();
    QCoreApplication::processEvents();
  }

  void waitForInFlight() {
    QVERIFY(QTest::qWaitFor([&] { return host().counters().inFlight > 0; }, 60000));
  }

 private slots:
  void initTestCase() {
    QVERIFY2(QFile::exists(QString::fromStdString(hearth::test::test_model().string())),
             "the default model is missing: run scripts/setup.sh");
    tinyPath_ = dir_.filePath(QStringLiteral("tiny-alpha"));
    hearth::quantizer::test::TinySpec tiny;
    tiny.tied = false;
    hearth::quantizer::test::write_tiny_model(tinyPath_.toStdString(), tiny);
    settings_ =
        std::make_unique<AppSettings>(dir_.filePath(QStringLiteral("settings.ini")), nullptr);
    controller_ = std::make_unique<EngineController>(nullptr);
    server_ = std::make_unique<LocalServer>(controller_->serverHost(), settings_.get());
    QVERIFY(server_->available());
    port_ = freePort();
    QVERIFY(port_ > 0);
  }

  void cleanupTestCase() {
    server_.reset();
    controller_.reset();
  }

  void offByDefault() {
    settle();
    QVERIFY(!server_->enabled());
    QCOMPARE(server_->status(), LocalServer::Off);
    QCOMPARE(server_->port(), 8080);
    QVERIFY(server_->apiKey().isEmpty());
  }

  void waitsForAModelWithoutListening() {
    server_->setPort(port_);
    server_->setEnabled(true);
    settle();
    QTRY_COMPARE(server_->status(), LocalServer::WaitingForModel);
    QVERIFY(!server_->running());
    QCOMPARE(server_->url(), QStringLiteral("http://127.0.0.1:%1/v1").arg(port_));
    QCOMPARE(request(port_, "GET", "/v1/models").status, 0);
  }

  void servesTheLoadedModel() {
    QVERIFY(load(QString::fromStdString(hearth::test::test_model().string())));
    const QString name = controller_->model().value(QStringLiteral("name")).toString();
    QTRY_COMPARE(server_->status(), LocalServer::Running);
    QCOMPARE(server_->url(), QStringLiteral("http://127.0.0.1:%1/v1").arg(port_));
    QCOMPARE(server_->model(), name);

    const Http models = request(port_, "GET", "/v1/models");
    QCOMPARE(models.status, 200);
    QCOMPARE(models.json[u"data"].toArray().first()[u"id"].toString(), name);

    const Http answer =
        request(port_, "POST", "/v1/chat/completions", chatBody(QStringLiteral("Hi"), 6));
    QVERIFY2(answer.status == 200, qPrintable(answer.body));
    QCOMPARE(answer.json[u"model"].toString(), name);
    QCOMPARE(answer.json[u"usage"][u"completion_tokens"].toInt(), 6);
    QVERIFY(!answer.json[u"choices"][0][u"message"][u"content"].toString().isEmpty());
    // The counts reach the settings by themselves (polled while it runs).
    QTRY_VERIFY_WITH_TIMEOUT(server_->requestsServed() >= 2, 5000);
    QTRY_COMPARE(server_->requestsInFlight(), 0);
  }

  void chatAndServerShareOneBatcher() {
    const QString prompt = QStringLiteral("Name three colours.");
    const Answer alone = chat(prompt, 24);
    QVERIFY(alone.done);
    QVERIFY(!alone.text.isEmpty());

    // A long server request runs from before the chat's answer starts until after it ends.
    Http served;
    std::jthread client([&] {
      served = request(port_, "POST", "/v1/chat/completions",
                       chatBody(QStringLiteral("Tell me about the sea."), 160));
    });
    waitForInFlight();
    const Answer together = chat(prompt, 24);
    const int inFlightAtTheEnd = host().counters().inFlight;
    client.join();

    QVERIFY(together.done);
    QCOMPARE(together.text, alone.text);
    QCOMPARE(together.stats.generatedTokens, alone.stats.generatedTokens);
    QCOMPARE(inFlightAtTheEnd, 1);  // they did run together
    QVERIFY2(served.status == 200, qPrintable(served.body));
    QCOMPARE(served.json[u"usage"][u"completion_tokens"].toInt(), 160);
  }

  void wrongKeyIsRefused() {
    const QString key = server_->generateApiKey();
    settle();
    QTRY_COMPARE(server_->status(), LocalServer::Running);
    QCOMPARE(request(port_, "GET", "/v1/models").status, 401);
    QCOMPARE(request(port_, "GET", "/v1/models", {}, "not-the-key").status, 401);
    QCOMPARE(request(port_, "POST", "/v1/chat/completions", chatBody("Hi", 2), "x").status, 401);
    QCOMPARE(request(port_, "GET", "/v1/models", {}, key.toStdString()).status, 200);
    server_->setApiKey(QString());
    settle();
    QTRY_COMPARE(server_->status(), LocalServer::Running);
    QCOMPARE(request(port_, "GET", "/v1/models").status, 200);
  }

  // Loading another model stops the server (its request ends early but cleanly), the loop and
  // the engine, and serves the new model on the same address.
  void anotherModelIsServedAfterALoad() {
    Http served;
    std::jthread client([&] {
      served = request(port_, "POST", "/v1/chat/completions",
                       chatBody(QStringLiteral("Count to a thousand."), 600));
    });
    waitForInFlight();
    QVERIFY(load(tinyPath_));
    client.join();
    QVERIFY2(served.status == 200, qPrintable(served.body));
    QVERIFY(served.json[u"usage"][u"completion_tokens"].toInt() < 600);

    QTRY_COMPARE(server_->status(), LocalServer::Running);
    QCOMPARE(server_->model(), QStringLiteral("tiny-alpha"));
    QCOMPARE(server_->url(), QStringLiteral("http://127.0.0.1:%1/v1").arg(port_));
    const Http models = request(port_, "GET", "/v1/models");
    QCOMPARE(models.status, 200);
    QCOMPARE(models.json[u"data"].toArray().first()[u"id"].toString(),
             QStringLiteral("tiny-alpha"));
    QCOMPARE(request(port_, "POST", "/v1/chat/completions", chatBody("Hi", 4)).status, 200);
    QVERIFY(chat(QStringLiteral("Hi"), 4).done);
  }

  // The worker waits on the chat's stream; an unload then must stop the server and the loop
  // after the chat's answer ends, not hang.
  void unloadWhileTheChatAndTheServerGenerate() {
    QVERIFY(load(QString::fromStdString(hearth::test::test_model().string())));
    QTRY_COMPARE(server_->status(), LocalServer::Running);
    Http served;
    std::jthread client([&] {
      served = request(port_, "POST", "/v1/chat/completions",
                       chatBody(QStringLiteral("Write a long story."), 600));
    });
    waitForInFlight();
    Answer answer;
    startChat(QStringLiteral("Write a long poem."), 600, &answer);
    QTRY_VERIFY_WITH_TIMEOUT(controller_->generatedTokens() > 0, 60000);
    controller_->unload();
    QTRY_VERIFY_WITH_TIMEOUT(answer.done, 30000);
    QCOMPARE(answer.stats.finishReason, QStringLiteral("cancelled"));
    QTRY_COMPARE_WITH_TIMEOUT(controller_->state(), EngineController::Empty, 30000);
    client.join();
    QVERIFY2(served.status == 200, qPrintable(served.body));
    QVERIFY(served.json[u"usage"][u"completion_tokens"].toInt() < 600);
    QTRY_COMPARE(server_->status(), LocalServer::WaitingForModel);
    QCOMPARE(request(port_, "GET", "/health").status, 0);
    QCOMPARE(server_->requestsInFlight(), 0);
  }

  void portInUseIsReported() {
    QVERIFY(load(tinyPath_));
    QTRY_COMPARE(server_->status(), LocalServer::Running);
    // Another program listens on the port asked for (a plain socket: cpp-httplib's own sockets
    // set SO_REUSEPORT, which would let a second one of them bind the same port).
    const int squatter = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    QVERIFY(bind(squatter, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    QVERIFY(listen(squatter, 4) == 0);
    QVERIFY(getsockname(squatter, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    const int other = ntohs(addr.sin_port);
    const auto closeSquatter = qScopeGuard([squatter] { close(squatter); });
    server_->setPort(other);
    settle();
    QTRY_COMPARE(server_->status(), LocalServer::PortUnavailable);
    QVERIFY(!server_->running());
    QVERIFY2(server_->error().contains(QString::number(other)), qPrintable(server_->error()));
    QCOMPARE(server_->url(), QStringLiteral("http://127.0.0.1:%1/v1").arg(other));
    // Another port: it runs again.
    server_->setPort(port_);
    settle();
    QTRY_COMPARE(server_->status(), LocalServer::Running);
    QCOMPARE(request(port_, "GET", "/health").status, 200);
  }

  void offClosesThePort() {
    QCOMPARE(request(port_, "GET", "/health").status, 200);
    server_->setEnabled(false);
    settle();
    QTRY_COMPARE(server_->status(), LocalServer::Off);
    QCOMPARE(request(port_, "GET", "/health").status, 0);
    QCOMPARE(request(port_, "GET", "/v1/models").status, 0);
    // The chat does not need it.
    QVERIFY(chat(QStringLiteral("Hi"), 4).done);
  }

  // The settings persist, and the key is readable by its owner alone.
  void settingsPersist() {
    const QString ini = dir_.filePath(QStringLiteral("persist.ini"));
    auto host = std::make_shared<ServerHost>();  // no model: nothing listens
    QString key;
    {
      AppSettings settings(ini, nullptr);
      LocalServer server(host, &settings);
      key = server.generateApiKey();
      QVERIFY2(QRegularExpression(QStringLiteral("^[0-9a-f]{64}$")).match(key).hasMatch(),
               qPrintable(key));
      QVERIFY(server.generateApiKey() != key);  // random, not fixed
      key = server.apiKey();
      server.setPort(9123);
      server.setEnabled(true);
      server.waitUntilApplied();
      QCOMPARE(server.url(), QStringLiteral("http://127.0.0.1:9123/v1"));
    }
    const QFileDevice::Permissions others = QFileDevice::ReadGroup | QFileDevice::WriteGroup |
                                            QFileDevice::ReadOther | QFileDevice::WriteOther;
    QCOMPARE(QFile::permissions(ini) & others, QFileDevice::Permissions());
    AppSettings settings(ini, nullptr);
    QCOMPARE(settings.serverApiKey(), key);
    QCOMPARE(settings.serverPort(), 9123);
    QVERIFY(settings.serverEnabled());
    LocalServer server(host, &settings);
    QCOMPARE(server.apiKey(), key);
    QVERIFY(server.enabled());
    server.waitUntilApplied();
    QTRY_COMPARE(server.status(), LocalServer::WaitingForModel);
  }
};

QTEST_GUILESS_MAIN(LocalServerTest)
#include "local_server_test.moc"
