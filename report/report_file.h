#pragma once
// Writes a finished report file in one go: a report is either complete or not there
// (QSaveFile), so a failed run never leaves half a file in the place of a good one.
#include <QByteArray>
#include <QString>

namespace mantissa::report {

// Throws IoError naming the file and the reason.
void writeReportFile(const QString& path, const QByteArray& bytes);

} // namespace mantissa::report
