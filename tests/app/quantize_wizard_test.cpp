// QuantizeWizard, the quantization wizard's C++ side (its steps, its form and its jobs), with
// real jobs on a tiny synthetic Llama (the quantizer tests' model): the steps and what each needs
// before the next; the size and GPU memory estimates against the quantizer's estimate_quantize and
// an independent KV-cache computation; start, progress through every stage and layer, the result
// (size on disk counted here, quality measured) added to the library and loaded; cancel and
// resume in the same session and after a restart give the bytes of an uninterrupted run; discard;
// the GPU reservation.
#include <QDirIterator>
#include <QFile>
#include <QSemaphore>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <cmath>
#include <fstream>
#include <memory>

#include "app/desktop/engine/engine_controller.h"
#include "app/desktop/library/model_library.h"
#include "app/desktop/quantize/quantize_wizard.h"
#include "app/desktop/settings/app_settings.h"
#include "engine/quantizer/quantize_job.h"
#include "tests/common/test_paths.h"
#include "tests/unit/quantizer/quantizer_test_model.h"

using namespace hearth::app;

namespace {

QByteArray readAll(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

// Everything under a folder, counted here (not by the quantizer).
quint64 bytesUnder(const QString& folder) {
  quint64 total = 0;
  QDirIterator it(folder, QDir::Files | QDir::Hidden, QDirIterator::Subdirectories);
  while (it.hasNext()) {
    it.next();
    total += quint64(it.fileInfo().size());
  }
  return total;
}

}  // namespace

class QuantizeWizardTest : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  hearth::quantizer::test::TinySpec spec_;
  QString model_;
  QString calibration_;
  std::unique_ptr<AppSettings> settings_;
  std::unique_ptr<EngineController> engine_;
  std::unique_ptr<ModelLibrary> library_;
  std::unique_ptr<QuantizeWizard> wizard_;
  QString exl2Output_;  // the uninterrupted EXL2 run
  QString gptqOutput_;  // the uninterrupted GPTQ run

  QString path(const QString& name) const { return dir_.filePath(name); }

  std::unique_ptr<QuantizeWizard> makeWizard() {
    return std::make_unique<QuantizeWizard>(engine_.get(), library_.get(), settings_.get());
  }

  // Source → Review with small calibration settings, through the wizard's own navigation.
  void walkToReview(QuantizeWizard& w, const QString& format, const QString& output) {
    w.startOver();
    w.form()->setSourcePath(model_);
    QTRY_VERIFY_WITH_TIMEOUT(w.form()->sourceOk(), 20000);
    QVERIFY(w.next());
    w.form()->setFormat(format);
    QVERIFY(w.next());
    w.form()->setBpw(4.0);
    w.form()->setHeadBits(6);
    w.form()->setBits(4);
    w.form()->setGroupSize(32);
    QTRY_VERIFY_WITH_TIMEOUT(w.canGoNext(), 20000);
    QVERIFY(w.next());
    w.form()->setCalibrationFile(calibration_);
    w.form()->setCalibrationRows(3);
    w.form()->setCalibrationLength(48);
    QVERIFY(w.next());
    QCOMPARE(w.step(), QuantizeWizard::Review);
    w.form()->setDevice(QStringLiteral("cpu"));
    if (!output.isEmpty()) w.form()->setOutputPath(output);
    w.form()->setEvaluate(false);
  }

  // Cancels the job through QuantizeJobs::cancel() when the worker reports `stage` step
  // `step`: the worker thread waits until the UI thread has raised the cancel, so the job stops
  // right there whatever the machine's speed.
  QMetaObject::Connection cancelAt(QuantizeWizard& w, const QString& stage, qint64 step) {
    auto done = std::make_shared<bool>(false);
    return connect(
        w.jobs()->worker(), &QuantizeWorker::progressed, w.jobs()->worker(),
        [&w, stage, step, done](quint64, const QuantizeUpdate& u) {
          if (*done || u.stage != stage || u.step != step) return;
          *done = true;
          QSemaphore raised;
          QMetaObject::invokeMethod(&w, [&w, &raised] {
            w.jobs()->cancel();
            raised.release();
          });
          raised.tryAcquire(1, 30000);
        },
        Qt::DirectConnection);
  }

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    // The default models folder inside the temporary folder.
    qputenv("XDG_DATA_HOME", path(QStringLiteral("data")).toUtf8());
    model_ = path(QStringLiteral("tiny"));
    spec_.layers = 3;
    spec_.tied = false;  // a head of its own, quantized too; logits of a sensible scale
    hearth::quantizer::test::write_tiny_model(model_.toStdString(), spec_);
    calibration_ = path(QStringLiteral("calibration.txt"));
    std::ofstream out(calibration_.toStdString());
    for (int i = 0; i < 60; ++i)
      out << "Paragraph " << i << ": the quick brown fox jumps over the lazy dog, "
          << "and numbers like " << i * 37 % 101 << " appear between words.\n\n";
    out.close();
    settings_ = std::make_unique<AppSettings>(path(QStringLiteral("settings.ini")), nullptr);
    engine_ = std::make_unique<EngineController>(nullptr);
    library_ = std::make_unique<ModelLibrary>(settings_.get());
    wizard_ = makeWizard();
  }

  void cleanupTestCase() {
    wizard_.reset();
    library_.reset();
    engine_.reset();
    settings_.reset();
  }

  void sourceStepNeedsAModelTheQuantizerTakes() {
    QuantizeWizard& w = *wizard_;
    QCOMPARE(w.step(), QuantizeWizard::Source);
    QVERIFY(!w.canGoNext());
    QVERIFY(!w.next());
    QVERIFY(!w.canGoBack());
    QVERIFY(w.stepProblem().contains(QStringLiteral("Choose a model")));

    const QString missing = path(QStringLiteral("missing"));
    w.form()->setSourcePath(missing);
    QTRY_VERIFY_WITH_TIMEOUT(!w.form()->sourceChecking(), 20000);
    QVERIFY(!w.form()->sourceOk());
    QVERIFY2(w.form()->sourceError().contains(missing), qPrintable(w.form()->sourceError()));
    QVERIFY(!w.canGoNext());

    // A folder without config.json.
    QDir().mkpath(path(QStringLiteral("empty")));
    w.form()->setSourcePath(path(QStringLiteral("empty")));
    QTRY_VERIFY_WITH_TIMEOUT(!w.form()->sourceChecking(), 20000);
    QVERIFY(!w.form()->sourceOk());
    QVERIFY(!w.form()->sourceError().isEmpty());

    // A GGUF file is a source; a block-quantized one comes with a note.
    const QString gguf = QString::fromStdString(hearth::test::test_model().string());
    w.form()->setSourcePath(gguf);
    QTRY_VERIFY_WITH_TIMEOUT(!w.form()->sourceChecking(), 20000);
    QVERIFY2(w.form()->sourceOk(), qPrintable(w.form()->sourceError()));
    QCOMPARE(w.form()->sourceInfo().value(QStringLiteral("format")).toString(),
             QStringLiteral("gguf"));
    QVERIFY2(w.form()->sourceNote().contains(QStringLiteral("Q4_1")),
             qPrintable(w.form()->sourceNote()));
    QCOMPARE(QFileInfo(w.form()->outputPath()).fileName(),
             QStringLiteral("SmolLM2-135M-Instruct.Q4_1-exl2-4.0bpw"));

    // "…/config.json" is taken as its folder.
    w.form()->setSourcePath(model_ + QStringLiteral("/config.json"));
    QCOMPARE(w.form()->sourcePath(), model_);
    QTRY_VERIFY_WITH_TIMEOUT(w.form()->sourceOk(), 20000);
    const QVariantMap info = w.form()->sourceInfo();
    QCOMPARE(info.value(QStringLiteral("format")).toString(), QStringLiteral("fp16"));
    QCOMPARE(info.value(QStringLiteral("layers")).toLongLong(), spec_.layers);
    QCOMPARE(info.value(QStringLiteral("contextLength")).toLongLong(), 512);
    const qint64 H = spec_.hidden, I = spec_.inter, V = spec_.vocab;
    const qint64 Q = spec_.heads * spec_.head_dim, KV = spec_.kv_heads * spec_.head_dim;
    const qint64 params = V * H + spec_.layers * (2 * H + H * Q + 2 * H * KV + Q * H + 3 * H * I) +
                          H + (spec_.tied ? 0 : V * H);
    QCOMPARE(info.value(QStringLiteral("parameters")).toLongLong(), params);
    QVERIFY(w.form()->sourceNote().isEmpty());
    // The context for the memory estimate follows the model's trained context.
    QCOMPARE(w.form()->context(), 512);
    QVERIFY(w.canGoNext());
  }

  void sizeStepEstimatesWithTheEngine() {
    QuantizeWizard& w = *wizard_;
    QVERIFY(w.next());
    QCOMPARE(w.step(), QuantizeWizard::Format);
    QVERIFY(w.canGoBack());
    w.form()->setFormat(QStringLiteral("exl2"));
    QVERIFY(w.next());
    QCOMPARE(w.step(), QuantizeWizard::Size);
    w.form()->setBpw(4.0);
    QTRY_VERIFY_WITH_TIMEOUT(!w.form()->estimating() && !w.form()->estimate().isEmpty(), 20000);
    QVariantMap e = w.form()->estimate();
    QVERIFY2(e.value(QStringLiteral("valid")).toBool(),
             qPrintable(e.value(QStringLiteral("error")).toString()));

    // The weights: exactly the quantizer's estimate for these options.
    hearth::QuantizeOptions o;
    o.source = model_.toStdString();
    o.format = hearth::QuantizeFormat::kExl2;
    o.target_bpw = 4.0;
    o.head_bits = 6;
    const hearth::QuantizeEstimate q = hearth::estimate_quantize(o);
    QCOMPARE(e.value(QStringLiteral("outputBytes")).toDouble(), double(q.output_bytes));
    QCOMPARE(e.value(QStringLiteral("minBpw")).toDouble(), q.min_bpw);
    QCOMPARE(e.value(QStringLiteral("maxBpw")).toDouble(), q.max_bpw);
    QCOMPARE(e.value(QStringLiteral("vramWeights")).toDouble(), double(q.output_bytes));

    // The cache: K and V in fp16 for every layer, in pages of 256 tokens, computed here.
    const auto cacheBytes = [&](int context) {
      const double pages = std::ceil(context / 256.0);
      return 2.0 * double(spec_.layers) * double(spec_.kv_heads * spec_.head_dim) * 2.0 * pages *
             256.0;
    };
    QCOMPARE(e.value(QStringLiteral("vramCache")).toDouble(), cacheBytes(512));
    const double needed512 = e.value(QStringLiteral("vramNeeded")).toDouble();
    w.form()->setContext(2048);
    QTRY_VERIFY_WITH_TIMEOUT(!w.form()->estimating(), 20000);
    e = w.form()->estimate();
    QCOMPARE(e.value(QStringLiteral("vramCache")).toDouble(), cacheBytes(2048));
    QCOMPARE(e.value(QStringLiteral("vramNeeded")).toDouble() - needed512,
             cacheBytes(2048) - cacheBytes(512));
    QVERIFY(!e.value(QStringLiteral("deviceKnown")).toBool());  // no CUDA in this build

    // More bits: the decoder's weights grow by Δbpw / 8 bytes each.
    w.form()->setBpw(6.0);
    QTRY_VERIFY_WITH_TIMEOUT(!w.form()->estimating(), 20000);
    const double grown = w.form()->estimate().value(QStringLiteral("outputBytes")).toDouble() -
                         e.value(QStringLiteral("outputBytes")).toDouble();
    QVERIFY(std::abs(grown - 2.0 * double(q.decoder_weights) / 8.0) <= 1.0);

    // Below the cheapest setting, out of range, a head width EXL2 does not have.
    w.form()->setBpw(2.0);
    QVERIFY(q.min_bpw > 2.0);  // this model's smallest layers cannot go that low
    QTRY_VERIFY_WITH_TIMEOUT(!w.form()->estimating(), 20000);
    QVERIFY(!w.canGoNext());
    QVERIFY2(w.stepProblem().contains(QStringLiteral("at least")), qPrintable(w.stepProblem()));
    w.form()->setBpw(8.5);
    QVERIFY(!w.canGoNext());
    w.form()->setBpw(4.0);
    w.form()->setHeadBits(7);
    QVERIFY(w.stepProblem().contains(QStringLiteral("Head bits")));
    w.form()->setHeadBits(6);
    QTRY_VERIFY_WITH_TIMEOUT(w.canGoNext(), 20000);

    // GPTQ: its own checks, and its own size.
    w.form()->setFormat(QStringLiteral("gptq"));
    w.form()->setBits(5);
    QVERIFY(w.stepProblem().contains(QStringLiteral("2, 3, 4 or 8")));
    w.form()->setBits(4);
    w.form()->setGroupSize(0);
    QVERIFY(w.stepProblem().contains(QStringLiteral("group size")));
    w.form()->setGroupSize(32);
    QTRY_VERIFY_WITH_TIMEOUT(!w.form()->estimating() && w.canGoNext(), 20000);
    o.format = hearth::QuantizeFormat::kGptq;
    o.bits = 4;
    o.group_size = 32;
    QCOMPARE(w.form()->estimate().value(QStringLiteral("outputBytes")).toDouble(),
             double(hearth::estimate_quantize(o).output_bytes));
    w.form()->setFormat(QStringLiteral("exl2"));
    // The proposed folder follows the settings.
    QCOMPARE(QFileInfo(w.form()->outputPath()).fileName(), QStringLiteral("tiny-exl2-4.0bpw"));
    QCOMPARE(QFileInfo(w.form()->outputPath()).absolutePath(), AppSettings::defaultModelsFolder());
  }

  void calibrationStepChecksTheFile() {
    QuantizeWizard& w = *wizard_;
    QVERIFY(w.next());
    QCOMPARE(w.step(), QuantizeWizard::Calibration);
    QVERIFY(w.canGoNext());  // the built-in set
    w.form()->setCalibrationFile(path(QStringLiteral("nothing.txt")));
    QVERIFY(w.stepProblem().contains(QStringLiteral("does not exist")));
    QFile pdf(path(QStringLiteral("calibration.pdf")));
    QVERIFY(pdf.open(QIODevice::WriteOnly));
    pdf.write("x");
    pdf.close();
    w.form()->setCalibrationFile(pdf.fileName());
    QVERIFY(w.stepProblem().contains(QStringLiteral(".jsonl")));
    QFile empty(path(QStringLiteral("empty.md")));
    QVERIFY(empty.open(QIODevice::WriteOnly));
    empty.close();
    w.form()->setCalibrationFile(empty.fileName());
    QVERIFY(w.stepProblem().contains(QStringLiteral("is empty")));
    w.form()->setCalibrationFile(model_);
    QVERIFY(w.stepProblem().contains(QStringLiteral("not a file")));
    w.form()->setCalibrationFile(calibration_);
    QVERIFY(w.canGoNext());
    w.form()->setCalibrationRows(-3);
    QCOMPARE(w.form()->calibrationRows(), 0);
    w.form()->setCalibrationRows(3);  // as walkToReview, for the byte comparisons below
    w.form()->setCalibrationLength(48);
  }

  void reviewStepChecksTheOutput() {
    QuantizeWizard& w = *wizard_;
    QVERIFY(w.next());
    QCOMPARE(w.step(), QuantizeWizard::Review);
    QVERIFY(!w.canGoNext());  // Start, not Next
    w.form()->setDevice(QStringLiteral("gpu"));
    QVERIFY2(w.stepProblem().contains(QStringLiteral("CUDA")), qPrintable(w.stepProblem()));
    QVERIFY(!w.canStart());
    w.form()->setDevice(QStringLiteral("cpu"));
    QVERIFY(w.jobs()->deviceNotice().contains(QStringLiteral("CPU")));
    const QString chosen = w.form()->outputPath();
    w.form()->setOutputPath(QStringLiteral("relative/folder"));
    QVERIFY(w.stepProblem().contains(QStringLiteral("full path")));
    QDir().mkpath(path(QStringLiteral("occupied")));
    QFile(path(QStringLiteral("occupied/file"))).open(QIODevice::WriteOnly);
    w.form()->setOutputPath(path(QStringLiteral("occupied")));
    QVERIFY(w.stepProblem().contains(QStringLiteral("not empty")));
    w.form()->setOutputPath(chosen);
    QVERIFY2(w.canStart(), qPrintable(w.stepProblem()));
    // The steps before can be revisited; later ones only through Next.
    QVERIFY(w.goToStep(QuantizeWizard::Format));
    QCOMPARE(w.step(), QuantizeWizard::Format);
    QVERIFY(!w.goToStep(QuantizeWizard::Review));
    QVERIFY(w.goToStep(QuantizeWizard::Size));
    QVERIFY(w.next() && w.next());
    QCOMPARE(w.step(), QuantizeWizard::Review);
  }

  void exl2JobRunsToTheResult() {
    QuantizeWizard& w = *wizard_;
    w.form()->setEvaluate(true);
    w.form()->setEvaluationTokens(600);
    QStringList stagesSeen;
    int maxLayer = 0;
    int badFractions = 0;
    QObject context;
    connect(w.jobs(), &QuantizeJobs::progressChanged, &context, [&] {
      if (stagesSeen.isEmpty() || stagesSeen.last() != w.jobs()->stage())
        stagesSeen << w.jobs()->stage();
      if (w.jobs()->stage() == u"quantize") maxLayer = std::max(maxLayer, w.jobs()->layer());
      if (!(w.jobs()->fraction() >= 0 && w.jobs()->fraction() <= 1)) ++badFractions;
    });
    QSignalSpy finished(w.jobs(), &QuantizeJobs::finished);
    QVERIFY(w.start());
    QCOMPARE(w.step(), QuantizeWizard::Run);
    QVERIFY(w.jobs()->running());
    QVERIFY(!w.canGoBack());
    QVERIFY(!w.start());
    QCOMPARE(w.jobs()->stages(),
             (QStringList{"prepare", "measure", "optimize", "quantize", "write", "evaluate"}));
    QCOMPARE(w.jobs()->layerCount(), int(spec_.layers));
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 120000);
    QVERIFY(!w.jobs()->running());
    QCOMPARE(w.step(), QuantizeWizard::Result);
    QVERIFY2(w.jobs()->failure().isEmpty(),
             qPrintable(w.jobs()->failure().value(QStringLiteral("message")).toString()));
    // Every stage in order, every layer in the final pass.
    QStringList order = stagesSeen;
    order.removeAll(QStringLiteral("done"));
    QCOMPARE(order, w.jobs()->stages());
    QCOMPARE(maxLayer, int(spec_.layers));
    QCOMPARE(badFractions, 0);

    const QVariantMap r = w.jobs()->result();
    exl2Output_ = r.value(QStringLiteral("output")).toString();
    QCOMPARE(QFileInfo(exl2Output_).fileName(), QStringLiteral("tiny-exl2-4.0bpw"));
    QCOMPARE(quint64(r.value(QStringLiteral("bytesOnDisk")).toDouble()), bytesUnder(exl2Output_));
    QVERIFY(QFileInfo::exists(exl2Output_ + QStringLiteral("/output.safetensors")));
    // The estimate was close to what the quantizer wrote.
    const double estimated = r.value(QStringLiteral("estimatedBytes")).toDouble();
    const double tensors = QFileInfo(exl2Output_ + QStringLiteral("/output.safetensors")).size();
    qInfo("estimated %.0f bytes, wrote %.0f bytes of tensors", estimated, tensors);
    QVERIFY(std::abs(estimated / tensors - 1.0) < 0.35);
    QVERIFY(r.value(QStringLiteral("bitsPerWeight")).toDouble() <= 4.0 + 1e-9);
    QVERIFY(r.value(QStringLiteral("bitsPerWeight")).toDouble() > 3.0);
    QVERIFY(r.value(QStringLiteral("evaluated")).toBool());
    const double pq = r.value(QStringLiteral("perplexityQuant")).toDouble();
    const double ps = r.value(QStringLiteral("perplexitySource")).toDouble();
    const double kl = r.value(QStringLiteral("klMean")).toDouble();
    qInfo("perplexity %.3f (source %.3f), KL %.4f", pq, ps, kl);
    QVERIFY(std::isfinite(pq) && pq > 1 && std::isfinite(ps) && ps > 1);
    QVERIFY(kl >= 0 && kl < 1.0);
    QVERIFY(r.value(QStringLiteral("evaluationTokens")).toLongLong() > 100);
    QCOMPARE(w.jobs()->fraction(), 1.0);
    // The work folder is gone; the model is in the library (found in the default folder).
    QTRY_VERIFY_WITH_TIMEOUT(!library_->scanning(), 20000);
    QVERIFY(!QFileInfo::exists(exl2Output_ + QStringLiteral(".hearth-quant")));
    QTRY_VERIFY_WITH_TIMEOUT(library_->indexOfPath(exl2Output_) >= 0, 20000);
    QCOMPARE(library_->entry(exl2Output_).value(QStringLiteral("format")).toString(),
             QStringLiteral("exl2"));
    // The wizard does not offer an EXL2 model as a source, nor takes one.
    for (const QVariant& c : w.form()->sourceCandidates())
      QVERIFY(c.toMap().value(QStringLiteral("path")).toString() != exl2Output_);
    QuantizeForm other(nullptr, nullptr);
    other.setSourcePath(exl2Output_);
    QTRY_VERIFY_WITH_TIMEOUT(!other.sourceChecking(), 20000);
    QVERIFY(!other.sourceOk());
    QVERIFY2(other.sourceError().contains(QStringLiteral("already quantized (EXL2)")),
             qPrintable(other.sourceError()));

    // "Load now": the engine loads it, and the load panel will show it.
    QSignalSpy loadRequested(w.jobs(), &QuantizeJobs::loadRequested);
    QSignalSpy loaded(engine_.get(), &EngineController::loadSucceeded);
    w.jobs()->loadResult();
    QCOMPARE(loadRequested.count(), 1);
    QCOMPARE(settings_->lastModel(), exl2Output_);
    QTRY_COMPARE_WITH_TIMEOUT(loaded.count(), 1, 60000);
    QCOMPARE(engine_->model().value(QStringLiteral("path")).toString(), exl2Output_);
    QCOMPARE(engine_->model().value(QStringLiteral("format")).toString(), QStringLiteral("exl2"));
    engine_->unload();
    QTRY_COMPARE_WITH_TIMEOUT(engine_->state(), EngineController::Empty, 20000);
  }

  void gptqCancelAndResumeGiveTheSameBytes() {
    QuantizeWizard& w = *wizard_;
    // An uninterrupted run.
    gptqOutput_ = path(QStringLiteral("gptq-straight"));
    walkToReview(w, QStringLiteral("gptq"), gptqOutput_);
    QSignalSpy finished(w.jobs(), &QuantizeJobs::finished);
    QVERIFY2(w.start(), qPrintable(w.stepProblem()));
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 120000);
    QVERIFY(QFileInfo::exists(gptqOutput_ + QStringLiteral("/model.safetensors")));
    // The same job, stopped in the middle of the final pass.
    const QString output = path(QStringLiteral("gptq-resumed"));
    walkToReview(w, QStringLiteral("gptq"), output);
    QSignalSpy failed(w.jobs(), &QuantizeJobs::failed);
    const auto stop = cancelAt(w, QStringLiteral("quantize"), 1);
    QVERIFY(w.start());
    QTRY_COMPARE_WITH_TIMEOUT(failed.count(), 1, 120000);
    disconnect(stop);
    QVERIFY(!w.jobs()->running());
    QCOMPARE(w.step(), QuantizeWizard::Run);
    QVERIFY(w.jobs()->failure().value(QStringLiteral("cancelled")).toBool());
    QVERIFY(w.jobs()->resumable());
    QVERIFY(w.jobs()->log().last().contains(QStringLiteral(".hearth-quant")));
    // Back at the review, the folder's job is in the way until resumed or discarded.
    QVERIFY(w.back());
    QCOMPARE(w.step(), QuantizeWizard::Review);
    QVERIFY(!w.jobs()->outputJob().isEmpty());
    QVERIFY(w.stepProblem().contains(QStringLiteral("interrupted")));
    QTRY_VERIFY_WITH_TIMEOUT(
        !w.jobs()->outputJob().value(QStringLiteral("stage")).toString().isEmpty(), 20000);
    QCOMPARE(w.jobs()->outputJob().value(QStringLiteral("stage")).toString(),
             QStringLiteral("quantize"));
    // Resume: the same bytes as the uninterrupted run.
    QVERIFY(w.resume());
    QVERIFY(w.jobs()->running());
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 2, 120000);
    QCOMPARE(w.step(), QuantizeWizard::Result);
    for (const char* f : {"model.safetensors", "config.json", "quantize_config.json"}) {
      const QByteArray a = readAll(gptqOutput_ + u'/' + QLatin1String(f));
      QVERIFY2(!a.isEmpty(), f);
      QVERIFY2(a == readAll(output + u'/' + QLatin1String(f)), f);
    }
    QVERIFY(!QFileInfo::exists(output + QStringLiteral(".hearth-quant")));
  }

  void exl2ResumesAfterARestart() {
    const QString output = path(QStringLiteral("exl2-restarted"));
    {
      auto w = makeWizard();
      walkToReview(*w, QStringLiteral("exl2"), output);
      QSignalSpy failed(w->jobs(), &QuantizeJobs::failed);
      cancelAt(*w, QStringLiteral("measure"), 1);
      QVERIFY(w->start());
      QTRY_COMPARE_WITH_TIMEOUT(failed.count(), 1, 120000);
      QVERIFY(w->jobs()->failure().value(QStringLiteral("cancelled")).toBool());
    }  // Hearth quits
    auto w = makeWizard();
    w->jobs()->scanForJobs();
    QVariantMap job;
    QTRY_VERIFY_WITH_TIMEOUT(
        [&] {
          for (const QVariant& j : w->jobs()->interruptedJobs())
            if (j.toMap().value(QStringLiteral("output")).toString() == output) job = j.toMap();
          return !job.isEmpty();
        }(),
        20000);
    QCOMPARE(job.value(QStringLiteral("stage")).toString(), QStringLiteral("measure"));
    QCOMPARE(job.value(QStringLiteral("format")).toString(), QStringLiteral("exl2"));
    QVERIFY(!job.value(QStringLiteral("damaged")).toBool());
    QSignalSpy finished(w->jobs(), &QuantizeJobs::finished);
    QVERIFY(w->resumeJob(job.value(QStringLiteral("workDir")).toString()));
    for (const QVariant& j : w->jobs()->interruptedJobs())  // no longer listed once it runs
      QVERIFY(j.toMap().value(QStringLiteral("output")).toString() != output);
    // The wizard shows the job's own settings.
    QCOMPARE(w->form()->sourcePath(), model_);
    QCOMPARE(w->form()->format(), QStringLiteral("exl2"));
    QCOMPARE(w->form()->outputPath(), output);
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 120000);
    QCOMPARE(readAll(output + QStringLiteral("/output.safetensors")),
             readAll(exl2Output_ + QStringLiteral("/output.safetensors")));
    QVERIFY(!QFileInfo::exists(output + QStringLiteral(".hearth-quant")));
  }

  void discardRemovesTheStoppedJob() {
    QuantizeWizard& w = *wizard_;
    const QString output = path(QStringLiteral("gptq-discarded"));
    walkToReview(w, QStringLiteral("gptq"), output);
    QSignalSpy failed(w.jobs(), &QuantizeJobs::failed);
    const auto stop = cancelAt(w, QStringLiteral("quantize"), 1);
    QVERIFY(w.start());
    QTRY_COMPARE_WITH_TIMEOUT(failed.count(), 1, 120000);
    disconnect(stop);
    const QString workDir = output + QStringLiteral(".hearth-quant");
    QVERIFY(QFileInfo::exists(workDir + QStringLiteral("/job.json")));
    // Only the quantizer's own folders are ever deleted.
    QVERIFY(!w.jobs()->discardJob(model_));
    QVERIFY(QFileInfo::exists(model_));
    QVERIFY(w.jobs()->discard());
    QVERIFY(!QFileInfo::exists(workDir));
    QVERIFY(!QFileInfo::exists(output));
    QVERIFY(!w.jobs()->resumable());
    QVERIFY(w.back());
    QVERIFY(w.jobs()->outputJob().isEmpty());
    QVERIFY2(w.canStart(), qPrintable(w.stepProblem()));
  }

  void gpuReservationRefusesGpuLoads() {
    QSignalSpy failed(engine_.get(), &EngineController::failed);
    engine_->setGpuReservation(QStringLiteral("busy quantizing"));
    engine_->load({{QStringLiteral("path"), model_}, {QStringLiteral("device"), "gpu"}});
    QCOMPARE(failed.count(), 1);
    QCOMPARE(failed.first().first().toMap().value(QStringLiteral("message")).toString(),
             QStringLiteral("busy quantizing"));
    QCOMPARE(engine_->state(), EngineController::Empty);
    engine_->setGpuReservation({});
    QCOMPARE(engine_->gpuReservation(), QString());
  }
};

QTEST_MAIN(QuantizeWizardTest)
#include "quantize_wizard_test.moc"
