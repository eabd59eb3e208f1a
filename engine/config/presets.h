#pragma once
// The built-in presets (resources/presets/*.json), compiled into the engine so that every
// program finds them without an install step.
#include "engine/config/run_config.h"

#include <string>
#include <vector>

namespace mantissa {

std::vector<std::string> presetNames();
// Throws ConfigError listing the known names when `name` is not one of them.
RunConfig presetConfig(const std::string& name);
std::string presetJson(const std::string& name);

} // namespace mantissa
