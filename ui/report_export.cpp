#include "ui/report_export.h"

#include "engine/util/check.h"
#include "report/report_writer.h"
#include "storage/run_store.h"

#include <QPointer>
#include <QThread>

#include <memory>
#include <optional>

namespace mantissa::ui {

bool ReportExport::start(const QString& databasePath, const QList<qint64>& runIds, const QString& outputPath,
                         QString* error)
{
    const auto format = report::reportFormatForPath(outputPath);
    if (!format) {
        if (error)
            *error = tr("%1: choose a file ending in .pdf, .html, .md or .csv").arg(outputPath);
        return false;
    }
    if (m_busy || runIds.isEmpty()) {
        if (error)
            *error = m_busy ? tr("a report is already being written") : tr("select at least one run");
        return false;
    }
    m_busy = true;
    emit progress(tr("Reading %n run(s) from the database…", nullptr, static_cast<int>(runIds.size())));

    // The worker's result travels back by value; a shared holder keeps it alive until then.
    struct Loaded {
        std::optional<report::ReportData> data;
        QString error;
    };
    auto loaded = std::make_shared<Loaded>();
    QThread* worker = QThread::create([loaded, databasePath, runIds] {
        // Database connections belong to the thread that opened them: this one is opened,
        // used and closed here.
        try {
            const storage::RunStore store(databasePath);
            loaded->data = report::loadReportData(store, runIds);
        } catch (const Error& e) {
            loaded->error = QString::fromUtf8(e.what());
        }
    });
    QPointer<ReportExport> self(this);
    connect(worker, &QThread::finished, this, [self, worker, loaded, databasePath, outputPath, format] {
        worker->deleteLater();
        if (!self)
            return;
        self->m_busy = false;
        if (!loaded->data) {
            emit self->failed(loaded->error);
            return;
        }
        emit self->progress(tr("Writing %1…").arg(outputPath));
        try {
            const storage::RunStore store(databasePath); // CSV reads the rows again
            const QStringList files = report::writeReport(store, *loaded->data, outputPath, *format);
            emit self->finished(files);
        } catch (const Error& e) {
            emit self->failed(QString::fromUtf8(e.what()));
        }
    });
    worker->start();
    return true;
}

} // namespace mantissa::ui
