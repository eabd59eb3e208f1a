#pragma once
// "Export report...": a report of the selected runs, written without blocking the UI.
// The runs are read on a worker thread with its own connection to the database; the
// rendering (QCustomPlot widgets, QPixmaps) then happens on the UI thread, as Qt requires.
#include <QObject>
#include <QStringList>

namespace mantissa::ui {

class ReportExport : public QObject {
    Q_OBJECT

public:
    using QObject::QObject;

    // Starts exporting runs `runIds` of the database at `databasePath` (the first run is the
    // baseline) to `outputPath`, whose suffix picks the format. Returns false, with the
    // reason in `error`, when the suffix names no format; otherwise `finished` or `failed`
    // follows.
    bool start(const QString& databasePath, const QList<qint64>& runIds, const QString& outputPath,
               QString* error = nullptr);
    bool isBusy() const { return m_busy; }

signals:
    void progress(const QString& stage);
    void finished(const QStringList& files);
    void failed(const QString& message);

private:
    bool m_busy = false;
};

} // namespace mantissa::ui
