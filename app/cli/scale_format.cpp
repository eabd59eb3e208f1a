#include "cli/scale_format.h"

#include "cli/run_format.h"

#include <cmath>

namespace mantissa::cli {

QString formatScale(double scale)
{
    if (!(scale > 0) || std::isinf(scale))
        return formatValue(scale);
    int exponent = 0;
    const double mantissa = std::frexp(scale, &exponent);
    if (mantissa == 0.5)
        return QStringLiteral("2^%1").arg(exponent - 1);
    return formatValue(scale);
}

} // namespace mantissa::cli
