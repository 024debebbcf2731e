// The quantization wizard (QML singleton QuantizeWizard): the steps from the source model to the
// finished quantized model and what each step needs before the next one. It owns the settings
// (`form`, a QuantizeForm) and the jobs (`jobs`, QuantizeJobs) and is where the two meet: the
// review step asks both, starting or resuming a job moves to the run step, a result to the last.
// Actions that change the step live here; everything else is on `form` or `jobs`.
#pragma once

#include <QtQml/qqmlregistration.h>
#include <QObject>
#include <QQmlEngine>

#include "app/desktop/quantize/quantize_form.h"
#include "app/desktop/quantize/quantize_jobs.h"

namespace hearth::app {

class AppSettings;
class EngineController;
class ModelLibrary;

class QuantizeWizard : public QObject {
  Q_OBJECT
  QML_ELEMENT
  QML_SINGLETON

  Q_PROPERTY(hearth::app::QuantizeForm* form READ form CONSTANT)
  Q_PROPERTY(hearth::app::QuantizeJobs* jobs READ jobs CONSTANT)

  Q_PROPERTY(Step step READ step NOTIFY stepChanged)
  Q_PROPERTY(bool canGoBack READ canGoBack NOTIFY stateChanged)
  Q_PROPERTY(bool canGoNext READ canGoNext NOTIFY stateChanged)
  Q_PROPERTY(bool canStart READ canStart NOTIFY stateChanged)
  // Why the current step cannot go on (translated), or "".
  Q_PROPERTY(QString stepProblem READ stepProblem NOTIFY stateChanged)

 public:
  enum Step { Source, Format, Size, Calibration, Review, Run, Result };
  Q_ENUM(Step)

  // No default constructor: Qt 6.4 would build a second instance for QML instead of calling
  // create(). Any of the collaborators may be null (tests).
  QuantizeWizard(EngineController* engine, ModelLibrary* library, AppSettings* settings,
                 QObject* parent = nullptr);
  ~QuantizeWizard() override;
  static QuantizeWizard* create(QQmlEngine*, QJSEngine*);
  static void setInstance(QuantizeWizard* instance);

  QuantizeForm* form() { return &form_; }
  QuantizeJobs* jobs() { return &jobs_; }

  Step step() const { return step_; }
  bool canGoBack() const;
  bool canGoNext() const;
  bool canStart() const;
  QString stepProblem() const { return problemOf(step_); }
  // Why `step` cannot go on, or "" (Review includes what start() would refuse).
  Q_INVOKABLE QString problemOf(int step) const;

  Q_INVOKABLE bool next();
  Q_INVOKABLE bool back();
  Q_INVOKABLE bool goToStep(int step);  // an earlier step, or the next one when allowed
  Q_INVOKABLE void startOver();         // after a result or a failure: back to the source

  Q_INVOKABLE bool start();                            // the form's job, from the review step
  Q_INVOKABLE bool resume();                           // the job that just failed or was cancelled
  Q_INVOKABLE bool resumeJob(const QString& workDir);  // an interrupted job found on disk

 signals:
  void stepChanged();
  void stateChanged();

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void setStep(Step s);

  // Declared in this order: the jobs use the form until they are gone.
  QuantizeForm form_;
  QuantizeJobs jobs_;
  Step step_ = Source;
};

}  // namespace hearth::app
