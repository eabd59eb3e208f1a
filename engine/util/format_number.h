#pragma once
// Numbers as users wrote them in messages: "0.05", "1e-08", not std::to_string's "0.050000".
#include <string>

namespace mantissa {

// Shortest form with up to 6 significant digits (printf's %g).
std::string formatNumber(double value);

} // namespace mantissa
