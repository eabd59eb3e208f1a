#pragma once
// How a report writes numbers: the same spelling in every format and section, so that a
// figure in the results table reads exactly as it does in the sentence below it.
#include <QString>

#include <optional>

namespace mantissa::report {

// Placeholder for a value a run never reached ("not known" in the store).
QString notKnown();

// 0.9123 -> "91.2%"; an unset value -> notKnown().
QString formatPercent(std::optional<double> fraction, int decimals = 1);
// 42.1 -> "42.1 s", 192 -> "3 min 12 s", 3725 -> "1 h 02 min".
QString formatDuration(std::optional<double> seconds);
// Loss scales are powers of two in practice: 65536 -> "65536 (2^16)", 0.5 -> "0.5 (2^-1)".
QString formatScale(std::optional<double> scale);
// Ratios: 1.93 -> "1.93x", the engine's formatRatio (engine/util/format_number.h).
QString formatRatio(double ratio);
// Loss values and other floats: up to 4 significant digits, "nan" and "inf" spelled out.
QString formatValue(std::optional<double> value, int significant = 4);
// Losses with four decimals, so that a column of them lines up: 0.58 -> "0.5800".
QString formatLoss(std::optional<double> value);
// Integers with thin grouping: 1234567 -> "1,234,567".
QString formatCount(std::optional<qint64> count);
// Throughput: 17342.5 -> "17,343 samples/s".
QString formatThroughput(std::optional<double> samplesPerSecond);

} // namespace mantissa::report
