#include "engine/config/presets.h"

#include "engine/config/embedded_presets.h"
#include "engine/util/check.h"

namespace mantissa {

std::vector<std::string> presetNames()
{
    std::vector<std::string> names;
    for (const auto& p : embeddedPresets())
        names.emplace_back(p.name);
    return names;
}

std::string presetJson(const std::string& name)
{
    for (const auto& p : embeddedPresets())
        if (name == p.name)
            return p.json;
    std::string known;
    for (const auto& n : presetNames())
        known += (known.empty() ? "" : ", ") + n;
    throw ConfigError("unknown preset \"" + name + "\"; the presets are " + known);
}

RunConfig presetConfig(const std::string& name) { return parseRunConfig(presetJson(name), "preset " + name); }

} // namespace mantissa
