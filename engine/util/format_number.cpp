#include "engine/util/format_number.h"

#include <cstdio>

namespace mantissa {

std::string formatNumber(double value)
{
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%g", value);
    return buffer;
}

} // namespace mantissa
