#pragma once
// The numerics lens for sub-16-bit recipes on the terminal: one row per quantised GEMM input of
// a sampled step (layer, GEMM, operand) with its format, its block count, the blocks whose
// largest value clipped, the values flushed to zero, the SQNR against the fp32 values and the
// range of the block scales' exponents.
#include "engine/observe/records.h"

#include <QString>

#include <cstddef>
#include <map>

namespace mantissa::cli {

// Prints the table of `record`'s GEMM inputs whose layer matches `layerFilter` (empty: all; a
// top-level layer's name or index also selects the layers nested in it). Returns the rows printed.
int printGemmInputs(const NumericsRecord& record, const QString& layerFilter);

// "12.5" (dB, one decimal), "exact" when no error at all, "-" without signal.
QString formatSqnr(double db);
// "-9..-2" (binary exponents of the block scales), "-3" when one, "-" when none.
QString formatExponentRange(const std::map<int, std::size_t>& exponents);

} // namespace mantissa::cli
