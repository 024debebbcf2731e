#include "app/desktop/engine/local_server.h"

#include <QByteArray>
#include <QJSEngine>
#include <QRandomGenerator>
#include <QtConcurrent/QtConcurrentRun>
#include <array>

#include "app/desktop/settings/app_settings.h"

namespace hearth::app {

namespace {

LocalServer* g_instance = nullptr;

LocalServer::Status toStatus(const LocalServerStatus& s) {
  using State = LocalServerStatus::State;
  switch (s.state) {
    case State::Off:
      return LocalServer::Off;
    case State::WaitingForModel:
      return LocalServer::WaitingForModel;
    case State::Running:
      return LocalServer::Running;
    case State::Failed:
      return s.portUnavailable ? LocalServer::PortUnavailable : LocalServer::Failed;
    case State::Unavailable:
      return LocalServer::Unavailable;
  }
  return LocalServer::Failed;
}

}  // namespace

LocalServer::LocalServer(std::shared_ptr<ServerHost> host, AppSettings* settings, QObject* parent)
    : QObject(parent), host_(std::move(host)), settings_(settings) {
  Q_ASSERT(host_ && settings_);
  applier_.setMaxThreadCount(1);
  // The host calls from the thread that changed the status, under its lock: post it here.
  host_->setListener([this](const LocalServerStatus& s) {
    QMetaObject::invokeMethod(
        this, [this, s] { onStatus(s); }, Qt::QueuedConnection);
  });
  onStatus(host_->status());
  // Whoever writes the settings (this object, QML, a test), the server follows.
  for (auto signal : {&AppSettings::serverEnabledChanged, &AppSettings::serverPortChanged,
                      &AppSettings::serverApiKeyChanged})
    connect(settings_, signal, this, &LocalServer::apply);
  connect(settings_, &AppSettings::serverEnabledChanged, this, &LocalServer::enabledChanged);
  connect(settings_, &AppSettings::serverPortChanged, this, &LocalServer::portChanged);
  connect(settings_, &AppSettings::serverPortChanged, this, &LocalServer::urlChanged);
  connect(settings_, &AppSettings::serverApiKeyChanged, this, &LocalServer::apiKeyChanged);
  counterTimer_.setInterval(1000);
  connect(&counterTimer_, &QTimer::timeout, this, &LocalServer::pollCounters);
  apply();
}

LocalServer::~LocalServer() {
  host_->setListener({});
  applier_.waitForDone();
  // A server nobody can see or turn off must not go on listening.
  host_->configure({});
  if (g_instance == this) g_instance = nullptr;
}

LocalServer* LocalServer::create(QQmlEngine*, QJSEngine*) {
  Q_ASSERT_X(g_instance, "LocalServer", "the app creates the instance before QML uses it");
  QJSEngine::setObjectOwnership(g_instance, QJSEngine::CppOwnership);
  return g_instance;
}

void LocalServer::setInstance(LocalServer* instance) {
  g_instance = instance;
}

bool LocalServer::enabled() const {
  return settings_ && settings_->serverEnabled();
}

void LocalServer::setEnabled(bool value) {
  if (settings_) settings_->setServerEnabled(value);
}

int LocalServer::port() const {
  return settings_ ? settings_->serverPort() : 0;
}

void LocalServer::setPort(int value) {
  if (settings_) settings_->setServerPort(qBound(0, value, 65535));
}

QString LocalServer::apiKey() const {
  return settings_ ? settings_->serverApiKey() : QString();
}

void LocalServer::setApiKey(const QString& value) {
  if (settings_) settings_->setServerApiKey(value.trimmed());
}

QString LocalServer::url() const {
  if (status_ == Running) return runningUrl_;
  return QStringLiteral("http://127.0.0.1:%1/v1").arg(port());
}

QString LocalServer::generateApiKey() {
  std::array<quint32, 8> words;
  QRandomGenerator::system()->generate(words.begin(), words.end());
  const QString key = QString::fromLatin1(
      QByteArray(reinterpret_cast<const char*>(words.data()), sizeof(words)).toHex());
  setApiKey(key);
  return key;
}

void LocalServer::waitUntilApplied() {
  applier_.waitForDone();
}

void LocalServer::apply() {
  LocalServerConfig config;
  config.enabled = enabled();
  config.port = port();
  config.apiKey = apiKey();
  // Captures the host, not this object: a change still queued when this object goes applies
  // to the host alone.
  (void)QtConcurrent::run(&applier_, [host = host_, config] { host->configure(config); });
}

void LocalServer::onStatus(const LocalServerStatus& s) {
  const QString oldUrl = url();
  status_ = toStatus(s);
  runningUrl_ = s.url;
  model_ = s.model;
  error_ = s.error;
  if (status_ == Running)
    counterTimer_.start();
  else
    counterTimer_.stop();
  pollCounters();
  emit statusChanged();
  if (url() != oldUrl) emit urlChanged();
}

void LocalServer::pollCounters() {
  const LocalServerCounters c = host_->counters();
  if (c.inFlight == counters_.inFlight && c.served == counters_.served) return;
  counters_ = c;
  emit countersChanged();
}

}  // namespace hearth::app
