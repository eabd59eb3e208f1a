#include "report/csv_renderer.h"

#include "report/report_file.h"
#include "storage/run_export.h"

#include <QDir>
#include <QFileInfo>

namespace mantissa::report {

namespace {

// RFC 4180: a field with a comma, quote or line break is quoted, quotes doubled.
QByteArray csvField(const QString& text)
{
    QByteArray field = text.toUtf8();
    if (field.contains(',') || field.contains('"') || field.contains('\n') || field.contains('\r'))
        field = '"' + field.replace("\"", "\"\"") + '"';
    return field;
}

// run_export's table for each run with "run_id,run," in front of every line, so that the
// rows of several runs form one table.
QByteArray combinedCsv(const RunStore& store, const ReportData& data, ExportTable table)
{
    QByteArray out;
    bool header = true;
    for (const RunData& run : data.runs) {
        const QByteArray prefix = QByteArray::number(run.info.id) + ',' + csvField(run.info.name) + ',';
        const QList<QByteArray> lines = exportCsv(store, run.info.id, table).split('\n');
        for (qsizetype i = 0; i < lines.size(); ++i) {
            const QByteArray line = lines[i].endsWith('\r') ? lines[i].chopped(1) : lines[i];
            if (line.isEmpty())
                continue;
            if (i == 0) {
                if (header)
                    out += "run_id,run," + line + '\n';
                header = false;
                continue;
            }
            out += prefix + line + '\n';
        }
    }
    return out;
}

} // namespace

QString epochsCsvPath(const QString& stepsPath)
{
    const QFileInfo info(stepsPath);
    return info.absoluteDir().filePath(info.completeBaseName() + QStringLiteral("-epochs.csv"));
}

QStringList writeCsv(const RunStore& store, const ReportData& data, const QString& path)
{
    const QString stepsPath = QFileInfo(path).absoluteFilePath();
    const QString epochsPath = epochsCsvPath(path);
    writeReportFile(stepsPath, combinedCsv(store, data, ExportTable::Steps));
    writeReportFile(epochsPath, combinedCsv(store, data, ExportTable::Epochs));
    return {stepsPath, epochsPath};
}

} // namespace mantissa::report
