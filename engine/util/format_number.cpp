#include "engine/util/format_number.h"

#include <array>
#include <cmath>
#include <cstdio>

namespace mantissa {

std::string formatNumber(double value)
{
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%g", value);
    return buffer;
}

std::string formatSi(double value)
{
    const char* prefixes[] = {"", " k", " M", " G", " T"};
    int prefix = 0;
    while (std::abs(value) >= 1000 && prefix < 4) {
        value /= 1000;
        ++prefix;
    }
    return formatNumber(value) + prefixes[prefix];
}

std::string formatBytes(std::uint64_t bytes)
{
    static constexpr std::array<const char*, 5> kUnits{"B", "KiB", "MiB", "GiB", "TiB"};
    double value = static_cast<double>(bytes);
    std::size_t unit = 0;
    while (value >= 1024 && unit + 1 < kUnits.size()) {
        value /= 1024;
        ++unit;
    }
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, unit == 0 ? "%.0f %s" : "%.1f %s", value, kUnits[unit]);
    return buffer;
}

std::optional<int> exactPowerOfTwo(double value)
{
    if (!(value > 0) || !std::isfinite(value))
        return std::nullopt;
    int exponent = 0;
    if (std::frexp(value, &exponent) != 0.5)
        return std::nullopt;
    return exponent - 1;
}

std::string formatDuration(double seconds)
{
    if (!std::isfinite(seconds) || seconds < 0)
        return {};
    char text[48];
    if (seconds < 60) {
        std::snprintf(text, sizeof text, "%.*f s", seconds < 10 ? 2 : 1, seconds);
        return text;
    }
    const auto total = std::llround(seconds);
    if (total < 3600)
        std::snprintf(text, sizeof text, "%lld:%02lld", total / 60, total % 60);
    else
        std::snprintf(text, sizeof text, "%lld:%02lld:%02lld", total / 3600, total / 60 % 60, total % 60);
    return text;
}

std::string formatScale(double scale)
{
    if (!std::isfinite(scale) || scale <= 0)
        return {};
    char text[48];
    std::snprintf(text, sizeof text, "%.8g", scale);
    std::string plain = text;
    if (const std::optional<int> exponent = exactPowerOfTwo(scale))
        return plain + " (2^" + std::to_string(*exponent) + ")";
    return plain;
}

std::string formatRatio(double ratio)
{
    if (!std::isfinite(ratio) || ratio <= 0)
        return {};
    char text[32];
    std::snprintf(text, sizeof text, "%.2fx", ratio);
    return text;
}

} // namespace mantissa
