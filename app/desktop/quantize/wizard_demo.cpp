#include "app/desktop/quantize/wizard_demo.h"

#include <QCoreApplication>
#include <QImage>
#include <QQuickItem>
#include <QQuickWindow>

#include "app/desktop/quantize/quantize_wizard.h"
#include "app/desktop/shell/app_runtime.h"

namespace hearth::app {

namespace {
constexpr int kSettleMs = 500;  // lets a page lay itself out before the capture
}

WizardDemo::WizardDemo(AppRuntime& runtime, QQuickWindow* window, Options options)
    : runtime_(runtime), window_(window), options_(std::move(options)) {
  timeout_.setSingleShot(true);
  timeout_.setInterval(options_.timeoutSeconds * 1000);
  connect(&timeout_, &QTimer::timeout, this,
          [this] { finish(false, QStringLiteral("timed out")); });
}

void WizardDemo::start() {
  QuantizeWizard& w = runtime_.quantizer();
  QObject* dialog =
      window_ ? window_->findChild<QObject*>(QStringLiteral("quantizeDialog")) : nullptr;
  if (!dialog) return finish(false, QStringLiteral("no quantization dialog in the window"));
  connect(w.form(), &QuantizeForm::sourceChanged, this, &WizardDemo::onSourceChecked);
  connect(w.form(), &QuantizeForm::estimateChanged, this, &WizardDemo::onEstimate);
  connect(w.jobs(), &QuantizeJobs::progressChanged, this, &WizardDemo::onProgress);
  connect(w.jobs(), &QuantizeJobs::finished, this, [this] {
    phase_ = Phase::Done;
    QTimer::singleShot(kSettleMs, this, [this] {
      capture(QStringLiteral("result"));
      finish(true, {});
    });
  });
  connect(w.jobs(), &QuantizeJobs::failed, this, [this](const QVariantMap& failure) {
    QTimer::singleShot(kSettleMs, this, [this, failure] {
      capture(QStringLiteral("failed"));
      finish(false, failure.value(QStringLiteral("message")).toString());
    });
  });
  timeout_.start();
  QMetaObject::invokeMethod(dialog, "open");
  w.form()->setSourcePath(options_.source);
}

void WizardDemo::onSourceChecked() {
  QuantizeForm& form = *runtime_.quantizer().form();
  if (phase_ != Phase::Source || form.sourceChecking()) return;
  if (!form.sourceOk()) return finish(false, form.sourceError());
  qInfo("hearth: wizard source ready: %s", qPrintable(form.sourcePath()));
  phase_ = Phase::Size;
  QTimer::singleShot(kSettleMs, this, [this] {
    capture(QStringLiteral("source"));
    runtime_.quantizer().next();  // format: EXL2 by default
    QTimer::singleShot(kSettleMs, this, [this] {
      capture(QStringLiteral("format"));
      runtime_.quantizer().next();  // size: its estimate arrives in onEstimate
      onEstimate();
    });
  });
}

void WizardDemo::onEstimate() {
  QuantizeWizard& w = runtime_.quantizer();
  if (phase_ != Phase::Size || w.step() != QuantizeWizard::Size || w.form()->estimating() ||
      w.form()->estimate().isEmpty())
    return;
  phase_ = Phase::Running;
  QTimer::singleShot(kSettleMs, this, [this] {
    QuantizeWizard& w = runtime_.quantizer();
    capture(QStringLiteral("size"));
    if (!options_.run) return finish(true, {});
    w.next();  // calibration: the built-in set, a little of it (a demo, not a good model)
    w.form()->setCalibrationRows(8);
    w.form()->setCalibrationLength(256);
    QTimer::singleShot(kSettleMs, this, [this] {
      QuantizeWizard& w = runtime_.quantizer();
      capture(QStringLiteral("calibration"));
      w.next();  // review: the proposed folder
      w.form()->setDevice(QStringLiteral("cpu"));
      w.form()->setEvaluationTokens(2048);
      QTimer::singleShot(kSettleMs, this, [this] {
        QuantizeWizard& w = runtime_.quantizer();
        capture(QStringLiteral("review"));
        if (!w.start()) finish(false, w.stepProblem());
      });
    });
  });
}

void WizardDemo::onProgress() {
  const QuantizeJobs& jobs = *runtime_.quantizer().jobs();
  if (capturedRunning_ || !jobs.running() || jobs.stage() != u"quantize" || jobs.layer() < 2)
    return;
  capturedRunning_ = true;
  capture(QStringLiteral("running"));
}

void WizardDemo::capture(const QString& name) {
  if (!window_ || options_.prefix.isEmpty()) return;
  const QString file = options_.prefix + u'_' + name + QStringLiteral(".png");
  const QImage image = window_->grabWindow();
  if (image.isNull() || !image.save(file))
    qWarning("hearth: could not save the screenshot to %s", qPrintable(file));
  else
    qInfo("hearth: screenshot saved to %s (%dx%d)", qPrintable(file), image.width(),
          image.height());
}

void WizardDemo::finish(bool ok, const QString& message) {
  if (done_) return;
  done_ = true;
  timeout_.stop();
  if (!ok) qWarning("hearth: wizard demo failed: %s", qPrintable(message));
  QCoreApplication::exit(ok ? 0 : 1);
}

}  // namespace hearth::app
