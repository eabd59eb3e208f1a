#include "report/report_file.h"

#include "engine/util/check.h"

#include <QSaveFile>

namespace mantissa::report {

void writeReportFile(const QString& path, const QByteArray& bytes)
{
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly) || file.write(bytes) != bytes.size() || !file.commit())
        throw IoError(QStringLiteral("%1: cannot write the report: %2").arg(path, file.errorString()).toStdString());
}

} // namespace mantissa::report
