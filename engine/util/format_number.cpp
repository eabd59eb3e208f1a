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

std::string formatRatio(double ratio)
{
    if (!std::isfinite(ratio) || ratio <= 0)
        return {};
    char text[32];
    std::snprintf(text, sizeof text, "%.2fx", ratio);
    return text;
}

} // namespace mantissa
