// The first page: what the report is about, when it was written, which runs it covers and
// whether any of them had not finished; then the machine.
#include "engine/data/data_fingerprint.h"
#include "report/report_format.h"
#include "report/report_sections.h"

namespace mantissa::report {

namespace {

QString utcTime(const QDateTime& time)
{
    return time.isValid() ? time.toUTC().toString(QStringLiteral("yyyy-MM-dd HH:mm 'UTC'")) : notKnown();
}

// Said on the first page, so that nobody takes a partial curve for a result.
QString statusNotice(const RunData& run)
{
    const QString progress = QStringLiteral("%1 step%2 and %3 evaluated epoch%4")
                                 .arg(formatCount(run.steps.size()), run.steps.size() == 1 ? "" : "s")
                                 .arg(run.epochs.size())
                                 .arg(run.epochs.size() == 1 ? "" : "s");
    const QString why =
        run.info.errorMessage.isEmpty() ? QString() : QStringLiteral(" (%1)").arg(run.info.errorMessage);
    switch (run.info.status) {
    case RunStatus::Running:
        return QStringLiteral("Run %1 is still running: this report shows the %2 committed by %3. "
                              "Its results are not final.")
            .arg(run.info.name, progress, utcTime(run.info.heartbeatAt));
    case RunStatus::Interrupted:
        return QStringLiteral("Run %1 was interrupted: its process ended before the run finished%2. "
                              "The report covers the %3 it committed.")
            .arg(run.info.name, why, progress);
    case RunStatus::Diverged: return QStringLiteral("Run %1 diverged%2.").arg(run.info.name, why);
    case RunStatus::Failed: return QStringLiteral("Run %1 failed%2.").arg(run.info.name, why);
    case RunStatus::Stopped:
        return QStringLiteral("Run %1 was stopped by the user after %2.").arg(run.info.name, progress);
    case RunStatus::Finished: break;
    }
    return {};
}

ReportTable runsTable(const ReportData& data)
{
    ReportTable table;
    table.header = {QStringLiteral("Run"),       QStringLiteral("Id"),     QStringLiteral("Precision"),
                    QStringLiteral("Ranks"),     QStringLiteral("Status"), QStringLiteral("Started"),
                    QStringLiteral("Trained by")};
    for (const RunData& run : data.runs) {
        QString name = run.info.name;
        if (data.isComparison() && &run == &data.baselineRun())
            name += QStringLiteral(" (baseline)");
        table.rows << QStringList{name,
                                  QString::number(run.info.id),
                                  run.precision(),
                                  QString::number(run.info.worldSize),
                                  runStatusName(run.info.status),
                                  utcTime(run.info.createdAt),
                                  QStringLiteral("Mantissa ") + run.info.engineVersion};
    }
    return table;
}

} // namespace

void appendOverview(ReportDocument& document, const ReportData& data)
{
    document.title =
        data.isComparison() ? QStringLiteral("Mantissa comparison report") : QStringLiteral("Mantissa training report");
    document.subtitle = QStringLiteral("%1 · written %2 by Mantissa %3")
                            .arg(data.title(), utcTime(data.generatedAt), data.mantissaVersion);
    for (const RunData& run : data.runs) {
        if (const QString notice = statusNotice(run); !notice.isEmpty())
            document.notice(notice);
    }
    std::vector<FingerprintedRun> fingerprints;
    for (const RunData& run : data.runs)
        fingerprints.push_back({run.info.name.toStdString(), run.info.dataFingerprint.toStdString()});
    if (const std::string warning = dataMismatchWarning(fingerprints); !warning.empty()) {
        QString text = QString::fromStdString(warning);
        text[0] = text[0].toUpper();
        document.notice(text + QLatin1Char('.'));
    }
    document.table(runsTable(data), QStringLiteral("Database: %1").arg(data.databasePath));
    // Runs recorded together often share their notes: say them once.
    QStringList notes;
    QList<QStringList> notedRuns;
    for (const RunData& run : data.runs) {
        if (run.info.notes.isEmpty())
            continue;
        const qsizetype at = notes.indexOf(run.info.notes);
        if (at >= 0) {
            notedRuns[at] << run.info.name;
        } else {
            notes << run.info.notes;
            notedRuns << QStringList{run.info.name};
        }
    }
    for (qsizetype i = 0; i < notes.size(); ++i)
        document.paragraph(QStringLiteral("Notes on %1: %2").arg(notedRuns[i].join(QStringLiteral(" and ")), notes[i]));
    for (const RunData& run : data.runs) {
        if (!run.info.tags.isEmpty())
            document.paragraph(
                QStringLiteral("Tags of %1: %2").arg(run.info.name, run.info.tags.join(QStringLiteral(", "))));
    }
}

void appendMachine(ReportDocument& document, const ReportData& data)
{
    document.heading(QStringLiteral("Machine"));
    const MachineInfo& machine = data.machine;
    QString cores = machine.logicalCores ? QStringLiteral("%1 logical").arg(machine.logicalCores) : notKnown();
    if (machine.physicalCores && machine.physicalCores != machine.logicalCores)
        cores += QStringLiteral(", %1 physical").arg(machine.physicalCores);
    ReportTable host;
    host.header = {QStringLiteral("This machine"), QString()};
    host.rows = {{QStringLiteral("Host"), machine.hostName},
                 {QStringLiteral("CPU"), machine.cpuModel.isEmpty() ? notKnown() : machine.cpuModel},
                 {QStringLiteral("Cores"), cores},
                 {QStringLiteral("System"), machine.operatingSystem}};
    document.table(host, QStringLiteral("The machine that wrote this report."));
    if (data.runs.isEmpty()) // an advice that was not verified trained no run
        return;

    bool anyCuda = false;
    for (const RunData& run : data.runs)
        anyCuda = anyCuda || run.device.kind == QLatin1String("cuda");
    ReportTable devices;
    devices.header = {QStringLiteral("Run"), QStringLiteral("Device"), QStringLiteral("Details"),
                      QStringLiteral("16-bit kernels")};
    if (anyCuda)
        devices.header << QStringLiteral("Driver") << QStringLiteral("CUDA") << QStringLiteral("cuDNN");
    for (const RunData& run : data.runs) {
        const DeviceInfo& device = run.device;
        QString name = device.description.isEmpty() ? QStringLiteral("not recorded") : device.description;
        QStringList details;
        if (device.kind == QLatin1String("cpu")) {
            name = QStringLiteral("CPU: ") + (device.name.isEmpty() ? notKnown() : device.name);
            if (device.threads)
                details << QStringLiteral("%1 thread%2").arg(device.threads).arg(device.threads == 1 ? "" : "s");
            if (!device.backendDetails.isEmpty())
                details << device.backendDetails;
        } else if (device.kind == QLatin1String("cuda")) {
            name = QStringLiteral("GPU: ") + (device.name.isEmpty() ? notKnown() : device.name);
        }
        // Which path each 16-bit type took (runs.kernels), so that a speedup can be read as the
        // hardware's or not; runs before schema 5 and GPU runs have none.
        const QString kernels =
            run.info.kernels.isEmpty() ? QStringLiteral("-") : run.info.kernels.split(u'\n').join(QStringLiteral("; "));
        QStringList row{run.label, name, details.isEmpty() ? notKnown() : details.join(QStringLiteral(", ")), kernels};
        if (anyCuda) {
            const auto value = [](const QString& v) { return v.isEmpty() ? notKnown() : v; };
            row << value(device.driver) << value(device.cudaVersion) << value(device.cudnnVersion);
        }
        devices.rows << row;
    }
    document.table(devices, QStringLiteral("Where each run trained, as recorded with the run."));
}

} // namespace mantissa::report
