#pragma once
// A byte-level language model's loss in bits per character (per byte): the mean cross-entropy
// in nats divided by ln 2, the unit text-compression and character-level language-model results
// are quoted in (issue 18). mantissa-cli's train and show, the workbench's plots and the reports
// all give a text run's losses in it.
#include "engine/config/run_config.h"

#include <cmath>

namespace mantissa {

inline bool reportsBitsPerCharacter(const RunConfig& config) { return config.data.dataset == DatasetKind::Text; }

inline double bitsPerCharacter(double lossInNats) { return lossInNats / std::log(2.0); }

} // namespace mantissa
