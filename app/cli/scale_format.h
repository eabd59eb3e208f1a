#pragma once
// Loss scales on the terminal: powers of two as "2^16", anything else as a number.
#include <QString>

namespace mantissa::cli {

QString formatScale(double scale); // 65536 -> "2^16", 0.5 -> "2^-1", 1000 -> "1000"

} // namespace mantissa::cli
