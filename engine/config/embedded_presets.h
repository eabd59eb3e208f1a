#pragma once
// Generated at configure time from resources/presets (see cmake/EmbedPresets.cmake).
#include <span>

namespace mantissa {

struct EmbeddedPreset {
    const char* name;
    const char* json;
};

std::span<const EmbeddedPreset> embeddedPresets();

} // namespace mantissa
