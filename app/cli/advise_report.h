#pragma once
// What `mantissa-cli advise` prints: the per-layer table (FLOPs, the probe's loss increase,
// the score, the output's error against fp32, the format chosen), the share of the FLOPs and
// of the weights in each format, the rank correlation of score and probe, and the same as a
// JSON line.
#include "engine/advisor/format_assignment.h"
#include "engine/advisor/precision_probe.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <optional>
#include <vector>

namespace mantissa::cli {

struct AdviceTable {
    std::vector<AdvisorLayer> layers;
    std::vector<LayerPrecision> formats;
    // [layer][format]; probes empty in --score-only.
    std::vector<std::vector<LayerProbeResult>> probes;
    std::vector<std::vector<double>> scores;
    std::vector<std::vector<std::string>> misfits;
    Assignment assignment;
    double budget = 0;
    bool scoreOnly = false;
    double baselineLoss = 0;
    std::string baselineLabel; // "mixed-fp16"
    // Per format: Spearman's correlation of score and probe over the layers measured in it.
    std::vector<std::optional<double>> rankCorrelations;
};

// The chosen format of layer `l` ("" for the baseline's).
std::string chosenFormat(const AdviceTable& table, std::size_t l);
void printAdvice(std::FILE* out, const AdviceTable& table);
nlohmann::json adviceJson(const AdviceTable& table);

} // namespace mantissa::cli
