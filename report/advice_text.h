#pragma once
// The precision advisor's findings in words and cells, stated once for every front end:
// `mantissa-cli advise` prints them, the workbench's Advise panel shows them, and an advice's
// report (AdviceSummary) renders them. Not installed with the report library: it reads the
// advisor's table (engine/advisor, which links GLPK).
#include "engine/advisor/advice.h"
#include "report/advice_summary.h"

#include <QList>
#include <QString>
#include <QStringList>

namespace mantissa::report {

struct AdviceText {
    QStringList header; // layer, FLOPs, per format its columns, chosen
    QList<bool> rightAligned;
    QList<QStringList> rows;
    QList<QStringList> shares; // format, share of FLOPs, share of weights
    QStringList scoreScales;   // score-only: how each format's estimate was scaled
    QString budget;            // what the chosen layers' loss increases add up to, or that none meets it
    QStringList correlations;  // per format, the rank correlation of score and probe
    QStringList misfits;       // the layers a format cannot take, and why
};
AdviceText adviceText(const AdviceTable& table);

// The advice as a report shows it: `subject` says what was advised and at which state, and
// `advisedConfigJson` is the config with the chosen formats. The caller adds the command and,
// when verified, the candidates and margins.
AdviceSummary adviceSummary(const AdviceTable& table, const QString& subject, const QString& advisedConfigJson);

} // namespace mantissa::report
