#include "app/desktop/quantize/quantize_wizard.h"

#include <QCoreApplication>
#include <QEvent>
#include <QJSEngine>

#include "app/desktop/engine/engine_controller.h"

namespace hearth::app {

namespace {
QuantizeWizard* g_instance = nullptr;
}

QuantizeWizard::QuantizeWizard(EngineController* engine, ModelLibrary* library,
                               AppSettings* settings, QObject* parent)
    : QObject(parent), form_(library, settings), jobs_(&form_, engine, library, settings) {
  // What a step allows follows the settings, the jobs and the chat engine (busy, on the GPU).
  for (auto signal : {&QuantizeForm::sourceChanged, &QuantizeForm::settingsChanged,
                      &QuantizeForm::estimateChanged})
    connect(&form_, signal, this, &QuantizeWizard::stateChanged);
  connect(&jobs_, &QuantizeJobs::runChanged, this, &QuantizeWizard::stateChanged);
  connect(&jobs_, &QuantizeJobs::jobsChanged, this, &QuantizeWizard::stateChanged);
  if (engine) {
    connect(engine, &EngineController::stateChanged, this, &QuantizeWizard::stateChanged);
    connect(engine, &EngineController::modelChanged, this, &QuantizeWizard::stateChanged);
  }
  connect(&jobs_, &QuantizeJobs::finished, this, [this] { setStep(Result); });
  if (QCoreApplication::instance()) QCoreApplication::instance()->installEventFilter(this);
}

QuantizeWizard::~QuantizeWizard() {
  if (g_instance == this) g_instance = nullptr;
}

QuantizeWizard* QuantizeWizard::create(QQmlEngine*, QJSEngine*) {
  Q_ASSERT_X(g_instance, "QuantizeWizard", "the app creates the instance before QML uses it");
  QJSEngine::setObjectOwnership(g_instance, QJSEngine::CppOwnership);
  QJSEngine::setObjectOwnership(g_instance->form(), QJSEngine::CppOwnership);
  QJSEngine::setObjectOwnership(g_instance->jobs(), QJSEngine::CppOwnership);
  return g_instance;
}

void QuantizeWizard::setInstance(QuantizeWizard* instance) {
  g_instance = instance;
}

bool QuantizeWizard::eventFilter(QObject* watched, QEvent* event) {
  if (event->type() == QEvent::LanguageChange && watched == QCoreApplication::instance()) {
    form_.retranslate();
    jobs_.retranslate();
    emit stateChanged();
  }
  return QObject::eventFilter(watched, event);
}

void QuantizeWizard::setStep(Step s) {
  if (s == step_) return;
  step_ = s;
  emit stepChanged();
  emit stateChanged();
}

bool QuantizeWizard::canGoBack() const {
  return !jobs_.running() && step_ > Source && step_ <= Run;
}

bool QuantizeWizard::canGoNext() const {
  return !jobs_.running() && step_ < Review && problemOf(step_).isEmpty();
}

bool QuantizeWizard::canStart() const {
  return step_ == Review && problemOf(Review).isEmpty();
}

QString QuantizeWizard::problemOf(int step) const {
  switch (step) {
    case Source:
      return form_.sourceProblem();
    case Format:
      return form_.formatProblem();
    case Size:
      return form_.sizeProblem();
    case Calibration:
      return form_.calibrationProblem();
    case Review:
      for (int s = Source; s < Review; ++s) {
        const QString p = problemOf(s);
        if (!p.isEmpty()) return p;
      }
      if (const QString p = form_.outputPathProblem(); !p.isEmpty()) return p;
      if (!jobs_.outputJob().isEmpty())
        return tr("An interrupted job is writing to this folder: resume it or discard it first.");
      if (const QString p = form_.outputFolderProblem(); !p.isEmpty()) return p;
      return jobs_.busyProblem();
    default:
      return {};
  }
}

bool QuantizeWizard::next() {
  if (!canGoNext()) return false;
  setStep(Step(step_ + 1));
  if (step_ == Review) jobs_.scanForJobs();
  return true;
}

bool QuantizeWizard::back() {
  if (!canGoBack()) return false;
  setStep(step_ == Run ? Review : Step(step_ - 1));
  return true;
}

bool QuantizeWizard::goToStep(int s) {
  if (jobs_.running() || s < Source) return false;
  if (s == step_ + 1 && step_ < Review) return next();
  if (s < step_ && s <= Review && step_ <= Run) {
    setStep(Step(s));
    if (step_ == Review) jobs_.scanForJobs();
    return true;
  }
  return false;
}

void QuantizeWizard::startOver() {
  if (jobs_.running()) return;
  jobs_.clearOutcome();
  setStep(Source);
  jobs_.scanForJobs();
}

bool QuantizeWizard::start() {
  if (!canStart()) return false;
  if (!jobs_.start(form_.options())) return false;
  setStep(Run);
  return true;
}

bool QuantizeWizard::resume() {
  if (jobs_.running() || !jobs_.resumable()) return false;
  return resumeJob(jobs_.workDir());
}

bool QuantizeWizard::resumeJob(const QString& workDir) {
  switch (jobs_.resumeJob(workDir)) {
    case QuantizeJobs::Resume::Started:
      setStep(Run);
      return true;
    case QuantizeJobs::Resume::Refused:
      setStep(Review);  // where the step problem says why
      return false;
    case QuantizeJobs::Resume::Failed:
      return false;
  }
  return false;
}

}  // namespace hearth::app
