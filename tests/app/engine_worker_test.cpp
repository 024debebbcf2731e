// EngineWorker and EngineController with the real default model on the CPU: greedy answers
// streamed through the worker equal Hugging Face transformers' continuations (decoded by its
// tokenizer, tests/fixtures/app/worker_greedy.json), tokens arrive in batches, cancellation
// works during load and during generation, and bad loads (missing file, corrupt file, a cache
// that cannot fit) and a prompt longer than the context fail with readable errors while the
// worker stays usable. LoRA adapters (tests/fixtures/lora) are applied, re-weighted and removed
// without reloading the model, and each answer names the adapters that shaped it.
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QThread>
#include <optional>
#include <utility>

#include "app/desktop/engine/engine_controller.h"
#include "app/desktop/engine/engine_convert.h"
#include "app/desktop/engine/engine_worker.h"
#include "tests/common/test_paths.h"

using namespace hearth::app;

namespace {

struct LoadOutcome {
  bool done = false;
  bool ok = false;
  bool cancelled = false;
  EngineFailure failure;
  ModelSummary summary;
  MemorySnapshot memory;
  std::optional<AdapterReport> adapters;  // sent after a successful load
};

struct GenerationOutcome {
  bool done = false;
  bool failed = false;
  QString streamed;
  int batches = 0;
  QString text;
  MessageStats stats;
  EngineFailure failure;
};

QString modelPath() {
  return QString::fromStdString(hearth::test::test_model().string());
}

QString loraFixture(const char* name) {
  return QStringLiteral(HEARTH_FIXTURES_DIR "/lora/") + QLatin1String(name);
}

}  // namespace

class EngineWorkerTest : public QObject {
  Q_OBJECT

  QThread thread_;
  EngineWorker* worker_ = nullptr;
  QTemporaryDir dir_;

  LoadOutcome load(hearth::LoadOptions options, hearth::CancelToken cancel = {},
                   bool cancelOnFirstProgress = false) {
    LoadOutcome out;
    QObject context;
    QMetaObject::Connection direct;
    if (cancelOnFirstProgress) {
      // Runs on the worker thread, inside the engine's progress callback.
      direct = connect(
          worker_, &EngineWorker::loadProgress, worker_,
          [cancel](quint64, const QString&, qint64, qint64) { cancel.cancel(); },
          Qt::DirectConnection);
    }
    connect(worker_, &EngineWorker::loadFinished, &context,
            [&](quint64, const ModelSummary& s, const MemorySnapshot& m) {
              out.done = out.ok = true;
              out.summary = s;
              out.memory = m;
            });
    connect(worker_, &EngineWorker::loadFailed, &context,
            [&](quint64, const EngineFailure& f, bool cancelled) {
              out.done = true;
              out.cancelled = cancelled;
              out.failure = f;
            });
    connect(worker_, &EngineWorker::adaptersApplied, &context,
            [&](quint64 id, const AdapterReport& r) {
              if (id == 1) out.adapters = r;
            });
    LoadJob job{1, std::move(options), cancel};
    QMetaObject::invokeMethod(worker_, [w = worker_, job] { w->load(job); });
    // The adapters' report follows loadFinished at once, from the same call.
    [&] { QTRY_VERIFY_WITH_TIMEOUT(out.done && (!out.ok || out.adapters), 120000); }();
    disconnect(direct);
    return out;
  }

  // Runs applyAdapters on the worker; the report, and whether the model was loaded again
  // meanwhile (it must not be).
  AdapterReport applyAdapters(const QVector<AdapterChoice>& adapters, bool* reloaded = nullptr) {
    AdapterReport out;
    bool done = false;
    int loads = 0;
    QObject context;
    connect(worker_, &EngineWorker::adaptersApplied, &context,
            [&](quint64 id, const AdapterReport& r) {
              if (id != 3) return;
              out = r;
              done = true;
            });
    connect(worker_, &EngineWorker::loadProgress, &context, [&] { ++loads; });
    connect(worker_, &EngineWorker::loadFinished, &context, [&] { ++loads; });
    const AdapterJob job{3, adapters};
    QMetaObject::invokeMethod(worker_, [w = worker_, job] { w->applyAdapters(job); });
    [&] { QTRY_VERIFY_WITH_TIMEOUT(done, 60000); }();
    if (reloaded) *reloaded = loads > 0;
    return out;
  }

  GenerationOutcome generate(hearth::GenerationRequest request, hearth::CancelToken cancel = {},
                             bool cancelAfterFirstBatch = false) {
    GenerationOutcome out;
    QObject context;
    connect(worker_, &EngineWorker::textStreamed, &context,
            [&](quint64, const QString& text, qint64, double, double) {
              out.streamed += text;
              ++out.batches;
              if (cancelAfterFirstBatch) cancel.cancel();
            });
    connect(worker_, &EngineWorker::generationFinished, &context,
            [&](quint64, const QString& text, const MessageStats& stats, qint64) {
              out.done = true;
              out.text = text;
              out.stats = stats;
            });
    connect(worker_, &EngineWorker::generationFailed, &context,
            [&](quint64, const EngineFailure& f) {
              out.done = out.failed = true;
              out.failure = f;
            });
    GenerateJob job{2, std::move(request), cancel};
    QMetaObject::invokeMethod(worker_, [w = worker_, job] { w->generate(job); });
    [&] { QTRY_VERIFY_WITH_TIMEOUT(out.done, 120000); }();
    return out;
  }

  static hearth::LoadOptions cpuOptions(const QString& path) {
    hearth::LoadOptions o;
    o.model_path = path.toStdString();
    o.device = hearth::DeviceKind::kCpu;
    o.max_seq_len = 1024;
    return o;
  }

 private slots:
  void initTestCase() {
    QVERIFY2(QFile::exists(modelPath()), "the default model is missing: run scripts/setup.sh");
    worker_ = new EngineWorker(30);
    worker_->moveToThread(&thread_);
    connect(&thread_, &QThread::finished, worker_, &QObject::deleteLater);
    thread_.start();
  }

  void cleanupTestCase() {
    thread_.quit();
    thread_.wait();
  }

  void generatingWithoutAModelFails() {
    hearth::GenerationRequest r;
    r.prompt = "Hello";
    const GenerationOutcome g = generate(r);
    QVERIFY(g.failed);
    QVERIFY2(g.failure.message.contains(QStringLiteral("no model")), qPrintable(g.failure.message));
  }

  void missingModelFileFailsNamingIt() {
    const QString path = dir_.filePath(QStringLiteral("does-not-exist.gguf"));
    const LoadOutcome r = load(cpuOptions(path));
    QVERIFY(!r.ok);
    QVERIFY(!r.cancelled);
    QVERIFY2(r.failure.message.contains(QStringLiteral("does-not-exist.gguf")),
             qPrintable(r.failure.message));
  }

  void corruptModelFileFailsAsInvalid() {
    const QString path = dir_.filePath(QStringLiteral("corrupt.gguf"));
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    QByteArray bytes("GGUF");
    bytes.append("\x03\x00\x00\x00", 4);                  // version 3
    bytes.append("\xff\xff\xff\xff\xff\xff\xff\x7f", 8);  // absurd tensor count
    bytes.append(QByteArray(64, '\x5a'));
    f.write(bytes);
    f.close();
    const LoadOutcome r = load(cpuOptions(path));
    QVERIFY(!r.ok);
    QCOMPARE(r.failure.code,
             QString::fromLatin1(hearth::error_code_name(hearth::ErrorCode::kInvalidFile)));
    QVERIFY2(r.failure.message.contains(QStringLiteral("corrupt.gguf")),
             qPrintable(r.failure.message));
  }

  void cancelledBeforeItStartsLoadsNothing() {
    hearth::CancelToken cancel;
    cancel.cancel();
    const LoadOutcome r = load(cpuOptions(modelPath()), cancel);
    QVERIFY(!r.ok);
    QVERIFY(r.cancelled);
  }

  void cancelDuringLoad() {
    hearth::CancelToken cancel;
    const LoadOutcome r = load(cpuOptions(modelPath()), cancel, /*cancelOnFirstProgress=*/true);
    QVERIFY2(!r.ok, "the load ignored the cancellation");
    QVERIFY(r.cancelled);
  }

  void cacheThatCannotFitIsRefusedWithNumbers() {
    hearth::LoadOptions o = cpuOptions(modelPath());
    o.max_seq_len = 4'000'000;
    o.cache_tokens = 4'000'000;  // ~180 GB of fp32 KV cache for SmolLM2-135M
    const LoadOutcome r = load(o);
    QVERIFY(!r.ok);
    QVERIFY2(r.failure.outOfMemory, qPrintable(r.failure.code + u' ' + r.failure.message));
    QVERIFY(r.failure.needed > r.failure.available);
    QVERIFY(r.failure.needed > 100ull << 30);
    QVERIFY(!r.failure.advice.isEmpty());
  }

  void loadsTheDefaultModel() {
    const LoadOutcome r = load(cpuOptions(modelPath()));
    QVERIFY2(r.ok, qPrintable(r.failure.message));
    QCOMPARE(r.summary.format, QStringLiteral("gguf"));
    // SmolLM2-135M: 134.5 M parameters, trained for 8192 tokens (its config.json).
    QVERIFY2(r.summary.parameters > 130'000'000 && r.summary.parameters < 140'000'000,
             qPrintable(QString::number(r.summary.parameters)));
    QCOMPARE(r.summary.trainedContext, 8192);
    QCOMPARE(r.summary.maxSeqLen, 1024);
    QVERIFY(r.memory.weights > 0);
  }

  // The engine refuses it when it is submitted (to the serving loop): the chat gets the error
  // in words, and the worker and the loop stay usable (the tests below generate).
  void aPromptLongerThanTheContextFailsInWords() {
    hearth::GenerationRequest r;
    for (int i = 0; i < 1500; ++i) r.prompt += "word ";
    r.max_tokens = 4;
    const GenerationOutcome g = generate(r);
    QVERIFY(g.failed);
    QCOMPARE(g.failure.code,
             QString::fromLatin1(hearth::error_code_name(hearth::ErrorCode::kInvalidArgument)));
    QVERIFY2(g.failure.message.contains(QStringLiteral("the context holds 1024")),
             qPrintable(g.failure.message));
    QVERIFY(g.streamed.isEmpty());
  }

  void greedyStreamsMatchTransformers() {
    QFile f(QStringLiteral(HEARTH_FIXTURES_DIR "/app/worker_greedy.json"));
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QJsonArray cases = QJsonDocument::fromJson(f.readAll()).object()[u"cases"].toArray();
    QVERIFY(cases.size() >= 5);
    int exact = 0;
    for (const QJsonValue& v : cases) {
      const QJsonObject c = v.toObject();
      hearth::GenerationRequest r;
      r.prompt = c[u"prompt"].toString().toStdString();
      r.max_tokens = c[u"max_tokens"].toInt();
      r.sampling.temperature = 0;
      QElapsedTimer clock;
      clock.start();
      const GenerationOutcome g = generate(r);
      QVERIFY2(!g.failed, qPrintable(g.failure.message));
      // What streamed is what the engine returned, and it came in batches, not per token.
      QCOMPARE(g.streamed, g.text);
      QVERIFY(g.batches >= 1);
      QVERIFY2(
          g.batches <= clock.elapsed() / 30 + 2,
          qPrintable(QStringLiteral("%1 batches in %2 ms").arg(g.batches).arg(clock.elapsed())));
      QVERIFY(g.stats.generatedTokens <= r.max_tokens);
      QVERIFY(g.stats.decodeSeconds > 0);
      if (g.text == c[u"text"].toString())
        ++exact;
      else
        qWarning("differs from transformers for %s:\n ours:   %s\n theirs: %s",
                 qPrintable(c[u"prompt"].toString().left(40)), qPrintable(g.text),
                 qPrintable(c[u"text"].toString()));
    }
    // fp32 on both sides; a near-tie may flip one argmax, never most of them.
    QVERIFY2(exact >= cases.size() - 1,
             qPrintable(QStringLiteral("%1 of %2 match").arg(exact).arg(cases.size())));
  }

  void cancelDuringGeneration() {
    hearth::GenerationRequest r;
    r.prompt = "Once upon a time";
    r.max_tokens = 500;
    r.ignore_eos = true;
    hearth::CancelToken cancel;
    QElapsedTimer clock;
    clock.start();
    const GenerationOutcome g = generate(r, cancel, /*cancelAfterFirstBatch=*/true);
    QVERIFY2(!g.failed, qPrintable(g.failure.message));
    QCOMPARE(g.stats.finishReason, QStringLiteral("cancelled"));
    QVERIFY(g.stats.generatedTokens < 500);
    QVERIFY(g.text.startsWith(g.streamed.left(1)));
  }

  void adaptersApplyWithoutReloading() {
    QVERIFY2(QFileInfo::exists(loraFixture("all_r16/adapter_config.json")),
             "tests/fixtures/lora is missing");
    hearth::GenerationRequest r;
    r.messages = {{"user", "Write one sentence about the sea."}};
    r.max_tokens = 24;
    r.sampling.temperature = 0;
    const GenerationOutcome base = generate(r);
    QVERIFY2(!base.failed, qPrintable(base.failure.message));
    QVERIFY(base.stats.adapters.isEmpty());

    // Switched on: applied in well under a second, the model not loaded again, and the greedy
    // answer is another one, naming the adapter and its weight.
    bool reloaded = true;
    AdapterReport report = applyAdapters({{loraFixture("all_r16"), 1.0}}, &reloaded);
    QVERIFY2(report.error.isEmpty(), qPrintable(report.error));
    QVERIFY2(report.problems.isEmpty(), qPrintable(report.problems.values().join(u'\n')));
    QVERIFY(report.changed);
    QVERIFY(!reloaded);
    qInfo("all_r16 applied in %.1f ms", report.seconds * 1000);
    QVERIFY2(report.seconds < 1.0, qPrintable(QString::number(report.seconds)));
    QCOMPARE(report.loaded.size(), 1);
    QCOMPARE(report.loaded[0].path, loraFixture("all_r16"));
    QCOMPARE(report.loaded[0].name, QStringLiteral("all_r16"));
    QCOMPARE(report.loaded[0].weight, 1.0);
    const GenerationOutcome adapted = generate(r);
    QVERIFY2(!adapted.failed, qPrintable(adapted.failure.message));
    QVERIFY2(adapted.text != base.text, qPrintable(adapted.text));
    QCOMPARE(adapted.stats.adapters.size(), 1);
    QCOMPARE(adapted.stats.adapters[0].name, QStringLiteral("all_r16"));
    QCOMPARE(adapted.stats.adapters[0].weight, 1.0);

    // The same choice again changes nothing; another weight is applied as such.
    QVERIFY(!applyAdapters({{loraFixture("all_r16"), 1.0}}).changed);
    report = applyAdapters({{loraFixture("all_r16"), 0.5}}, &reloaded);
    QVERIFY(report.changed && report.problems.isEmpty() && !reloaded);
    QCOMPARE(report.loaded[0].weight, 0.5);
    const GenerationOutcome half = generate(r);
    QCOMPARE(half.stats.adapters.size(), 1);
    QCOMPARE(half.stats.adapters[0].weight, 0.5);

    // Two at once (a PEFT folder and a GGUF adapter), then none: the base model's answer again.
    report = applyAdapters({{loraFixture("attn_r8"), 1.0}, {loraFixture("all_r16.gguf"), 0.25}});
    QVERIFY2(report.problems.isEmpty(), qPrintable(report.problems.values().join(u'\n')));
    QCOMPARE(report.loaded.size(), 2);
    const GenerationOutcome two = generate(r);
    QCOMPARE(two.stats.adapters.size(), 2);
    report = applyAdapters({});
    QVERIFY(report.changed && report.loaded.isEmpty());
    const GenerationOutcome again = generate(r);
    QCOMPARE(again.text, base.text);
    QVERIFY(again.stats.adapters.isEmpty());

    // One the engine refuses: the reason in words, naming it; the model goes on working.
    const QString missing = dir_.filePath(QStringLiteral("no-such-adapter"));
    report = applyAdapters({{missing, 1.0}});
    QVERIFY(report.loaded.isEmpty());
    QVERIFY(report.problems.contains(missing));
    QVERIFY2(report.problems.value(missing).contains(QStringLiteral("no-such-adapter")),
             qPrintable(report.problems.value(missing)));
    QCOMPARE(generate(r).text, base.text);
    applyAdapters({});
  }

  // The adapters chosen go with a load (EngineController sends AppSettings' choice): loaded one
  // by one after the model, so that one that cannot be applied leaves the model loaded.
  void adaptersGoWithALoad() {
    hearth::LoadOptions o = cpuOptions(modelPath());
    const QString missing = dir_.filePath(QStringLiteral("gone-adapter"));
    o.adapters = {{loraFixture("attn_r8").toStdString(), 1.5f}, {missing.toStdString(), 1.0f}};
    const LoadOutcome l = load(o);
    QVERIFY2(l.ok, qPrintable(l.failure.message));
    QVERIFY(l.adapters);
    QCOMPARE(l.adapters->loaded.size(), 1);
    QCOMPARE(l.adapters->loaded[0].path, loraFixture("attn_r8"));
    QCOMPARE(l.adapters->loaded[0].weight, 1.5);
    QVERIFY(l.adapters->problems.contains(missing));
    hearth::GenerationRequest r;
    r.messages = {{"user", "Name a colour."}};
    r.max_tokens = 8;
    r.sampling.temperature = 0;
    const GenerationOutcome g = generate(r);
    QVERIFY2(!g.failed, qPrintable(g.failure.message));
    QCOMPARE(g.stats.adapters.size(), 1);
    QCOMPARE(g.stats.adapters[0].name, QStringLiteral("attn_r8"));
    QCOMPARE(g.stats.adapters[0].weight, 1.5);
    // A load without adapters drops them.
    const LoadOutcome plain = load(cpuOptions(modelPath()));
    QVERIFY(plain.ok);
    QVERIFY(plain.adapters && plain.adapters->loaded.isEmpty());
    QVERIFY(generate(r).stats.adapters.isEmpty());
  }

  // The memory plan of a load counts the chosen adapters; one that cannot be applied to the
  // model leaves the plan valid (the model loads without it) and says why.
  void planCountsTheAdapters() {
    EngineController controller(nullptr);
    const QVariantMap base{{QStringLiteral("path"), modelPath()},
                           {QStringLiteral("device"), QStringLiteral("cpu")},
                           {QStringLiteral("maxSeqLen"), 1024}};
    const auto plan = [&](const QVariantList& adapters) {
      QVariantMap settings = base;
      settings.insert(QStringLiteral("adapters"), adapters);
      controller.requestPlan(settings);
      [&] { QTRY_VERIFY_WITH_TIMEOUT(!controller.planning(), 60000); }();
      return controller.plan();
    };
    const QVariantMap none = plan({});
    QVERIFY(none.value(QStringLiteral("valid")).toBool());
    QCOMPARE(none.value(QStringLiteral("adapters")).toDouble(), 0.0);
    const QVariantMap one = plan({QVariantMap{{QStringLiteral("path"), loraFixture("all_r16")},
                                              {QStringLiteral("weight"), 1.0}}});
    QVERIFY2(one.value(QStringLiteral("valid")).toBool(),
             qPrintable(one.value(QStringLiteral("error")).toString()));
    QVERIFY(one.value(QStringLiteral("adapters")).toDouble() > 0);
    QCOMPARE(one.value(QStringLiteral("needed")).toDouble(),
             none.value(QStringLiteral("needed")).toDouble() +
                 one.value(QStringLiteral("adapters")).toDouble());
    const QString missing = dir_.filePath(QStringLiteral("missing-adapter"));
    const QVariantMap bad = plan({QVariantMap{{QStringLiteral("path"), missing}}});
    QVERIFY(bad.value(QStringLiteral("valid")).toBool());
    QVERIFY2(bad.value(QStringLiteral("adapterError")).toString().contains(u"missing-adapter"),
             qPrintable(bad.value(QStringLiteral("adapterError")).toString()));
    QCOMPARE(bad.value(QStringLiteral("adapters")).toDouble(), 0.0);
  }

  // The load panel's GPU choice becomes LoadOptions::gpus / gpu_split / gpu_split_gib (a bad
  // value is refused naming its setting), and a plan's per-GPU shares reach the panel.
  void gpuChoiceGoesIntoLoadOptionsAndThePlan() {
    QVariantMap settings{{QStringLiteral("path"), modelPath()},
                         {QStringLiteral("device"), QStringLiteral("gpu")}};
    hearth::LoadOptions o = toLoadOptions(settings);
    QVERIFY(o.gpus.empty());
    QCOMPARE(int(o.gpu_split), int(hearth::GpuSplit::kLayers));
    settings.insert(QStringLiteral("gpus"), QVariantList{1, 0});
    settings.insert(QStringLiteral("gpuSplitGib"), QVariantList{20, 24.5});
    o = toLoadOptions(settings);
    QCOMPARE(o.gpus, (std::vector<int>{1, 0}));
    QCOMPARE(o.gpu_split_gib, (std::vector<double>{20, 24.5}));
    settings.insert(QStringLiteral("gpuSplit"), QStringLiteral("tensor"));
    QCOMPARE(int(toLoadOptions(settings).gpu_split), int(hearth::GpuSplit::kTensor));
    for (const auto& [key, value] :
         {std::pair{"gpus", QVariant(QVariantList{QStringLiteral("first")})},
          std::pair{"gpuSplit", QVariant(QStringLiteral("rows"))},
          std::pair{"gpuSplitGib", QVariant(QVariantList{-2})}}) {
      QVariantMap bad = settings;
      bad.insert(QLatin1String(key), value);
      try {
        toLoadOptions(bad);
        QFAIL(qPrintable(QStringLiteral("accepted a bad %1").arg(QLatin1String(key))));
      } catch (const hearth::Error& e) {
        QCOMPARE(int(e.code()), int(hearth::ErrorCode::kInvalidArgument));
        QVERIFY2(QString::fromUtf8(e.what()).contains(QLatin1String(key)), e.what());
      }
    }

    hearth::MemoryPlan plan;
    hearth::GpuShare share;
    share.device = 1;
    share.name = "cuda:1 Test";
    share.first_layer = 0;
    share.layers = 14;
    share.weights = 1000;
    share.kv_cache = 200;
    share.device_free = 5000;
    share.fits = true;
    plan.gpus = {share, share};
    plan.gpus[1].device = 0;
    plan.gpus[1].first_layer = 14;
    const QVariantList gpus = planToMap(plan).value(QStringLiteral("gpus")).toList();
    QCOMPARE(gpus.size(), 2);
    const QVariantMap first = gpus[0].toMap(), second = gpus[1].toMap();
    QCOMPARE(first.value(QStringLiteral("device")).toInt(), 1);
    QCOMPARE(first.value(QStringLiteral("needed")).toDouble(), 1200.0);
    QCOMPARE(first.value(QStringLiteral("name")).toString(), QStringLiteral("cuda:1 Test"));
    QCOMPARE(second.value(QStringLiteral("firstLayer")).toInt(), 14);
    QVERIFY(second.value(QStringLiteral("fits")).toBool());
  }

  // The load panel's KV cache choice becomes LoadOptions::kv_cache_type (fp16 when not given;
  // anything else is refused, naming the setting), and the plan for it lists what every cache
  // type would hold.
  void kvCacheTypeGoesIntoLoadOptionsAndThePlan() {
    const QVariantMap base{{QStringLiteral("path"), modelPath()},
                           {QStringLiteral("device"), QStringLiteral("cpu")},
                           {QStringLiteral("maxSeqLen"), 1024}};
    QCOMPARE(int(toLoadOptions(base).kv_cache_type), int(hearth::KvCacheType::kF16));
    const std::pair<const char*, hearth::KvCacheType> cases[] = {
        {"fp16", hearth::KvCacheType::kF16},
        {"q8", hearth::KvCacheType::kQ8},
        {"q6", hearth::KvCacheType::kQ6},
        {"q4", hearth::KvCacheType::kQ4}};
    for (const auto& [name, type] : cases) {
      QVariantMap settings = base;
      settings.insert(QStringLiteral("kvCacheType"), QLatin1String(name));
      QCOMPARE(int(toLoadOptions(settings).kv_cache_type), int(type));
    }
    QVariantMap bad = base;
    bad.insert(QStringLiteral("kvCacheType"), QStringLiteral("q5"));
    try {
      toLoadOptions(bad);
      QFAIL("a q5 KV cache was accepted");
    } catch (const hearth::Error& e) {
      QCOMPARE(int(e.code()), int(hearth::ErrorCode::kInvalidArgument));
      QVERIFY2(QString::fromUtf8(e.what()).contains(u"kvCacheType"), e.what());
    }

    EngineController controller(nullptr);
    QVariantMap q4 = base;
    q4.insert(QStringLiteral("kvCacheType"), QStringLiteral("q4"));
    controller.requestPlan(q4);
    QTRY_VERIFY_WITH_TIMEOUT(!controller.planning(), 60000);
    const QVariantMap plan = controller.plan();
    QVERIFY2(plan.value(QStringLiteral("valid")).toBool(),
             qPrintable(plan.value(QStringLiteral("error")).toString()));
    QCOMPARE(plan.value(QStringLiteral("kvCacheType")).toString(), QStringLiteral("q4"));
    const QVariantList choices = plan.value(QStringLiteral("cacheChoices")).toList();
    QStringList types;
    for (const QVariant& c : choices) {
      const QVariantMap m = c.toMap();
      types << m.value(QStringLiteral("type")).toString();
      QVERIFY(m.value(QStringLiteral("bytesPerToken")).toDouble() > 0);
      QVERIFY(m.value(QStringLiteral("tokensThatFit")).toDouble() > 0);
    }
    // SmolLM2's heads have 64 dims: every type is offered.
    QCOMPARE(types, (QStringList{QStringLiteral("fp16"), QStringLiteral("q8"), QStringLiteral("q6"),
                                 QStringLiteral("q4")}));
  }

  // The first answer of a session: its figures flow while it streams, not only at its end.
  void liveFiguresDuringTheFirstAnswer() {
    EngineController controller(nullptr);
    controller.load({{QStringLiteral("path"), modelPath()},
                     {QStringLiteral("device"), QStringLiteral("cpu")},
                     {QStringLiteral("maxSeqLen"), 1024}});
    QTRY_COMPARE_WITH_TIMEOUT(controller.state(), EngineController::Ready, 120000);

    struct Figures {
      qint64 promptTokens = 0, generatedTokens = 0, contextUsed = 0;
      double promptTps = 0, decodeTps = 0;
    };
    QVector<Figures> seen;  // at each batch of text, while the answer streams
    MessageStats stats;
    bool done = false;
    connect(&controller, &EngineController::generationText, this, [&](quint64, const QString&) {
      QCOMPARE(controller.state(), EngineController::Generating);
      seen.append({controller.promptTokens(), controller.generatedTokens(),
                   controller.contextUsed(), controller.promptTps(), controller.decodeTps()});
    });
    connect(&controller, &EngineController::generationDone, this,
            [&](quint64, const QString&, const MessageStats& s) {
              stats = s;
              done = true;
            });
    QVERIFY(controller.generate({{"user", "Write a long story about the sea."}},
                                {{QStringLiteral("temperature"), 0}}, 48) != 0);
    QTRY_VERIFY_WITH_TIMEOUT(done, 120000);
    QVERIFY2(seen.size() >= 2, qPrintable(QString::number(seen.size())));
    // Once the prompt is processed (the first text): its length, exactly as the engine counted
    // it, its speed and the context it takes.
    QCOMPARE(seen.first().promptTokens, stats.promptTokens);
    QVERIFY(seen.first().promptTps > 0);
    QCOMPARE(seen.first().generatedTokens, qint64(1));
    QCOMPARE(seen.first().contextUsed, stats.promptTokens + 1);
    // The generation's tokens, speed and context grow as the text streams.
    for (int i = 1; i < seen.size(); ++i) {
      QVERIFY(seen[i].generatedTokens > seen[i - 1].generatedTokens);
      QCOMPARE(seen[i].contextUsed, seen[i].promptTokens + seen[i].generatedTokens);
      QVERIFY(seen[i].decodeTps > 0);
    }
    QVERIFY(seen.last().generatedTokens <= stats.generatedTokens);
    // At the end, the engine's own figures.
    QCOMPARE(controller.promptTokens(), stats.promptTokens);
    QCOMPARE(controller.generatedTokens(), stats.generatedTokens);
    QCOMPARE(controller.contextUsed(), stats.promptTokens + stats.generatedTokens);
    QCOMPARE(controller.promptTps(), stats.promptTokens / stats.promptSeconds);
    QCOMPARE(controller.decodeTps(), stats.generatedTokens / stats.decodeSeconds);
  }

  // The UI thread's view: states, streamed text, stop.
  void controllerDrivesTheWorker() {
    EngineController controller(nullptr);
    QSignalSpy states(&controller, &EngineController::stateChanged);
    controller.load({{QStringLiteral("path"), modelPath()},
                     {QStringLiteral("device"), QStringLiteral("cpu")},
                     {QStringLiteral("maxSeqLen"), 2048}});
    QCOMPARE(controller.state(), EngineController::Loading);
    QTRY_COMPARE_WITH_TIMEOUT(controller.state(), EngineController::Ready, 120000);
    QCOMPARE(controller.maxSeqLen(), 2048);
    QVERIFY(controller.memory().value(QStringLiteral("weights")).toDouble() > 0);

    QString streamed;
    QString finalText;
    MessageStats stats;
    bool done = false;
    connect(&controller, &EngineController::generationText, this,
            [&](quint64, const QString& t) { streamed += t; });
    connect(&controller, &EngineController::generationDone, this,
            [&](quint64, const QString& t, const MessageStats& s) {
              finalText = t;
              stats = s;
              done = true;
            });
    const quint64 id = controller.generate({{"user", "Name three colours."}},
                                           {{QStringLiteral("temperature"), 0}}, 40);
    QVERIFY(id != 0);
    QCOMPARE(controller.state(), EngineController::Generating);
    QTRY_VERIFY_WITH_TIMEOUT(done, 120000);
    QCOMPARE(streamed, finalText);
    QVERIFY(!finalText.isEmpty());
    QCOMPARE(controller.state(), EngineController::Ready);
    QVERIFY(controller.decodeTps() > 0);
    QVERIFY(controller.contextUsed() > 0);

    // Stop while it runs.
    done = false;
    streamed.clear();
    controller.generate({{"user", "Tell me a very long story."}}, {}, 2000);
    QTRY_VERIFY_WITH_TIMEOUT(!streamed.isEmpty(), 60000);
    controller.stop();
    QTRY_VERIFY_WITH_TIMEOUT(done, 10000);
    QCOMPARE(stats.finishReason, QStringLiteral("cancelled"));

    // The plan for a load, computed off the UI thread. A fast plan may already be done when
    // requestPlan returns (the coroutine resumes at once on a finished future), so the test
    // counts the two notifications (started, finished) instead of sampling `planning` between.
    QSignalSpy planChanges(&controller, &EngineController::planChanged);
    controller.requestPlan(
        {{QStringLiteral("path"), modelPath()}, {QStringLiteral("device"), QStringLiteral("cpu")}});
    QTRY_VERIFY_WITH_TIMEOUT(planChanges.count() >= 2 && !controller.planning(), 60000);
    QVERIFY(controller.plan().value(QStringLiteral("valid")).toBool());
    QVERIFY(controller.plan().value(QStringLiteral("fits")).toBool());

    controller.unload();
    QTRY_COMPARE_WITH_TIMEOUT(controller.state(), EngineController::Empty, 10000);
    QVERIFY(states.count() >= 6);
  }
};

QTEST_GUILESS_MAIN(EngineWorkerTest)
#include "engine_worker_test.moc"
