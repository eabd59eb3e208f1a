#pragma once
// Which settings a fork may change: everything but the model's shape. A fork continues a run's
// saved training state (Trainer::resumeFrom), so each of the fork's parameters must take the
// saved tensor of the same name and shape; precision, master weights, optimizer settings, the
// schedule and the data order may all differ. mantissa-cli fork, the GUI's fork dialog and
// Workbench::startFork ask this before anything is recorded; resumeFrom checks the checkpoint
// itself as the last word (a model file changed on disk since, say).
#include "engine/config/run_config.h"

#include <optional>
#include <string>

namespace mantissa {

// Nothing when `fork` keeps `parent`'s model shape; else what changed, in words that name the
// setting or layer and both values: "a fork keeps its parent's model shape (the saved weights
// must fit): layer 0 (linear) has 4224 parameters in the fork but 2112 in the parent"; layers are
// counted from 0, as the model editor counts them.
std::optional<std::string> forkShapeChange(const RunConfig& parent, const RunConfig& fork);

} // namespace mantissa
