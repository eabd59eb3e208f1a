#pragma once
// fp32 values of the sub-16-bit formats on the terminal and in JSON: the shortest decimal that
// reads back as the same float, powers of two as "2^k" where that is clearer, and NaN and
// infinities as text (JSON has no number for them).
#include <QString>

#include <nlohmann/json.hpp>

namespace mantissa::cli {

QString formatFloat(float value);      // 957 -> "957", 0.1f -> "0.1", NaN -> "nan"
QString formatPowerOfTwo(float value); // 0.015625 -> "2^-6"; otherwise formatFloat
nlohmann::json floatJson(float value); // a number, or "nan" / "inf" / "-inf"
QString formatCode(unsigned code);     // 0x7e

} // namespace mantissa::cli
