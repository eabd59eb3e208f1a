#include "cli/float_text.h"

#include "engine/util/format_number.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace mantissa::cli {

QString formatFloat(float value)
{
    if (std::isnan(value))
        return QStringLiteral("nan");
    if (std::isinf(value))
        return value > 0 ? QStringLiteral("inf") : QStringLiteral("-inf");
    char text[32];
    for (int digits = 6; digits <= 9; ++digits) { // 9 significant digits always read back exactly
        std::snprintf(text, sizeof text, "%.*g", digits, static_cast<double>(value));
        if (std::strtof(text, nullptr) == value)
            break;
    }
    return QString::fromLatin1(text);
}

QString formatPowerOfTwo(float value)
{
    if (const std::optional<int> exponent = exactPowerOfTwo(value); exponent && (*exponent < -4 || *exponent > 16))
        return QStringLiteral("2^%1").arg(*exponent);
    return formatFloat(value);
}

nlohmann::json floatJson(float value)
{
    if (std::isfinite(value))
        return static_cast<double>(value);
    return formatFloat(value).toStdString();
}

QString formatCode(unsigned code) { return QStringLiteral("0x%1").arg(code, 2, 16, QLatin1Char('0')); }

} // namespace mantissa::cli
