#include "cli/scale_format.h"

#include "cli/run_format.h"

#include "engine/util/format_number.h"

namespace mantissa::cli {

QString formatScale(double scale)
{
    if (const std::optional<int> exponent = exactPowerOfTwo(scale))
        return QStringLiteral("2^%1").arg(*exponent);
    return formatValue(scale);
}

} // namespace mantissa::cli
