#pragma once
// A byte-level language model's loss in bits per character (per byte): the mean cross-entropy
// in nats divided by ln 2, the unit text-compression and character-level language-model results
// are quoted in (issue 18). `train` prints it beside each epoch's test loss, `show` per epoch.
#include "engine/config/run_config.h"

#include <cmath>

namespace mantissa::cli {

inline bool reportsBitsPerCharacter(const RunConfig& config) { return config.data.dataset == DatasetKind::Text; }

inline double bitsPerCharacter(double lossInNats) { return lossInNats / std::log(2.0); }

} // namespace mantissa::cli
