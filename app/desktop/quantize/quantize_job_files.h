// Quantization jobs on disk, as the wizard lists and handles them: the work folder of an output
// ("<output>.hearth-quant"), a job described for the UI, the interrupted jobs in some folders,
// and discarding one (only folders the quantizer made). Blocking; call the scan off the UI thread.
#pragma once

#include <QString>
#include <QStringList>
#include <QVariantList>
#include <QVariantMap>
#include <filesystem>

#include "engine/quantizer/quantize_job.h"

namespace hearth::app {

std::filesystem::path toPath(const QString& path);
QString fromPath(const std::filesystem::path& path);
QString cleanPath(const QString& path);  // "" stays ""

// "" for an empty or relative output.
QString workDirFor(const QString& output);

// "EXL2, 4.00 bits per weight, head 6 bits" (translated).
QString quantizeTargetText(const hearth::QuantizeOptions& options);

// Keys: workDir, source, sourceName, output, outputName, format, target, stage, step, steps,
// elapsedSeconds, device, damaged (and error when damaged). {} when the folder holds no job.
QVariantMap describeQuantizeJob(const QString& workDir);

// The jobs in *.hearth-quant folders directly inside `folders`, by name, skipping `except`.
QVariantList findQuantizeJobs(const QStringList& folders, const QString& except);

// Deletes a job's work folder when it is one (a *.hearth-quant folder holding job.json), and its
// output folder when the job left that empty. False when nothing was deleted.
bool discardQuantizeJob(const QString& workDir);

}  // namespace hearth::app
