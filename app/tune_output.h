// The text `batchpilot tune` prints: the Pareto front, the recommendation
// and the verification table (cmd_tune.cpp runs the pipeline; this only
// formats its result).
#pragma once

#include "engine/sim/tune/tune_pipeline.h"

#include <QString>
#include <QTextStream>

namespace bp::app {

// "12.3", "inf" (seconds as milliseconds).
QString msText(double seconds);
// "+4%", "-" when either figure is not a finite number.
QString errorText(double predicted, double measured);
// "about 3 min 20 s".
QString durationText(double seconds);

// One candidate's figures as a table row, and the table's header.
QString row(const QString &label, const TuneFigures &f, bool tokenLevel, int width);
QString header(bool tokenLevel, int width);

// The front, the recommendation, its changes and capacity.
// `verdict` and `current`: a server's current settings judged against the
// pick (judgeAgainstCurrent); the recommendation then says whether to keep them.
void printSearch(QTextStream &out, const TuneRun &run, const QString &objectiveName, const QString &baseName,
                 CostNoise noise, const CurrentVerdict *verdict = nullptr,
                 const TuneFigures *current = nullptr);
// figure / predicted / measured / error, one line each.
void printVerification(QTextStream &out, const TuneFigures &predicted, const TuneFigures &measured,
                       bool tokenLevel);
// Predicted vs measured over the verified window (partial: the arrivals sent).
void printVerification(QTextStream &out, const Verification &v, bool tokenLevel);

} // namespace bp::app
