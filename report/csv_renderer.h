#pragma once
// CSV of every stored row, for spreadsheets and pandas: FILE.csv holds the per-step rows
// and FILE-epochs.csv beside it the per-epoch rows, each with the run's id and name in
// front of the columns of storage/run_export.h (the database's own column names).
#include "report/report_data.h"

#include <QStringList>

namespace mantissa::report {

// Returns the files written: the steps file, then the epochs file.
QStringList writeCsv(const RunStore& store, const ReportData& data, const QString& path);

// The path of the epochs file that goes with a steps file: "out.csv" -> "out-epochs.csv".
QString epochsCsvPath(const QString& stepsPath);

} // namespace mantissa::report
