#pragma once
// What `mantissa-cli advise` prints: the per-layer table (FLOPs, the probe's loss increase,
// the score, the output's error against fp32, the format chosen), the share of the FLOPs and
// of the weights in each format, the rank correlation of score and probe, and the same as a
// JSON line.
#include "engine/advisor/advice.h"
#include "report/advice_text.h"

#include <nlohmann/json.hpp>

#include <cstdio>

namespace mantissa::cli {

void printAdvice(std::FILE* out, const AdviceTable& table);
nlohmann::json adviceJson(const AdviceTable& table);

} // namespace mantissa::cli
