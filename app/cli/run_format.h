#pragma once
// How run values read on the terminal. A value the database does not know (NULL: a run
// that never reached an evaluation) prints as "-", never as a misleading 0.
#include "storage/run_types.h"

#include <QDateTime>
#include <QString>

#include <optional>

namespace mantissa::cli {

QString formatSeconds(std::optional<double> seconds);                        // "8.4 s", "3:07", "1:02:09"
QString formatMemory(std::optional<qint64> bytes);                           // formatBytes() of the engine: "412.5 MiB"
QString formatPercent(std::optional<double> fraction);                       // 0.8751 -> "87.51%"
QString formatValue(std::optional<double> value, int significantDigits = 5); // "0.43172", "65536", "nan"
QString formatCount(std::optional<qint64> count);
QString formatRate(std::optional<double> samplesPerSecond); // "25310/s"
QString formatLocalTime(const QDateTime& utc);              // "2025-03-14 10:26:53", local time
QString formatSpeedup(double ratio);                        // "1.84x": the engine's formatRatio
// A fork's place in its parent: "#3 at step 40", "(deleted) at step 40"; "-" for a run that is
// not a fork. The run browser's "Forked from" column says the same.
QString formatLineage(const std::optional<storage::RunLineage>& parent);

} // namespace mantissa::cli
