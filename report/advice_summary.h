#pragma once
// What the precision advisor found (docs/advisor.md), as a report shows it: the per-layer
// table and the format shares as `mantissa-cli advise` prints them (one wording for both), the
// loss increase of each layer in each format for the sensitivity chart, and, when the advice
// was verified over seeds, the configurations of the verification sweep in its order
// (ReportData::seeds holds their runs and statistics).
#include "sweep/sweep_statistics.h"

#include <QList>
#include <QString>
#include <QStringList>

namespace mantissa::report {

// A verified configuration: "baseline", "advised" or a rule of thumb, and the share of the
// GEMM layers' FLOPs it puts in the low format.
struct AdviceCandidate {
    QString name;
    double flopShare = 0;
};

struct AdviceSummary {
    QString subject;       // "char-gpt (mixed-bf16), the config trained here first"
    QString command;       // the command that advised, as typed
    QString baselineLabel; // "mixed-bf16"
    QStringList formats;   // the lower formats asked for
    double budget = 0;
    bool estimated = false; // score-only: the costs are estimates, probed where `probed` says

    // The per-layer table and the shares as the command prints them, and its sentences (the
    // budget spent, the rank correlation, the score's scale, the layers a format cannot take).
    QStringList layerHeader;
    QList<QStringList> layerRows;
    QList<bool> layerNumeric;
    QStringList shareHeader;
    QList<QStringList> shareRows;
    QStringList findings;

    // The chart: per layer (model order), per format, the loss increase the choice counted
    // (NaN where the layer cannot take the format), whether a probe measured it, and the
    // index of the chosen format (-1: the baseline's).
    QStringList layers;
    QList<QList<double>> costs;
    QList<QList<bool>> probed;
    QList<int> chosen;

    // The verification sweep's configurations (empty when not verified), in the order of
    // ReportData::seeds->results, and the margins its verdicts used.
    QList<AdviceCandidate> candidates;
    sweep::EquivalenceMargins margins;

    QString advisedConfigJson; // the config with the per-layer formats, as written
};

} // namespace mantissa::report
