#pragma once
// What `mantissa-cli advise` prints: the per-layer table (FLOPs, the probe's loss increase,
// the score, the output's error against fp32, the format chosen), the share of the FLOPs and
// of the weights in each format, the rank correlation of score and probe, and the same as a
// JSON line.
#include "engine/advisor/advice.h"

#include <QList>
#include <QStringList>
#include <nlohmann/json.hpp>

#include <cstdio>

namespace mantissa::cli {

// The advice in words and cells, as the command prints it and its report shows it.
struct AdviceText {
    QStringList header; // layer, FLOPs, per format its columns, chosen
    QList<bool> rightAligned;
    QList<QStringList> rows;
    QList<QStringList> shares; // format, share of FLOPs, share of weights
    QStringList scoreScales;   // score-only: how each format's estimate was scaled
    QString budget;            // what the chosen layers' loss increases add up to
    QStringList correlations;  // per format, the rank correlation of score and probe
    QStringList misfits;       // the layers a format cannot take, and why
};
AdviceText adviceText(const AdviceTable& table);

void printAdvice(std::FILE* out, const AdviceTable& table);
nlohmann::json adviceJson(const AdviceTable& table);

} // namespace mantissa::cli
