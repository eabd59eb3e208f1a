#pragma once
// The run browser: every run in the database, sortable and filterable, with open, compare,
// rename, notes, tags, delete, and the selected run's checkpoints, whose weights the next run
// can start from, the precision advisor can probe (Advise…) and, for a byte-level language
// model, sample text from (SamplingDialog). Opening, comparing and starting are the workbench's job; the browser says
// which runs.
#include <QList>
#include <QWidget>

class QLabel;
class QLineEdit;
class QMenu;
class QPushButton;
class QSortFilterProxyModel;
class QTableView;

namespace mantissa::storage {
class RunStore;
}

namespace mantissa::ui {

class ReportExport;
class RunListModel;

class RunBrowser : public QWidget {
    Q_OBJECT
public:
    explicit RunBrowser(QWidget* parent = nullptr);

    void setStore(storage::RunStore* store);
    void reload();
    RunListModel* runModel() const { return m_model; }
    QSortFilterProxyModel* proxyModel() const { return m_proxy; }
    QTableView* view() const { return m_view; }
    // Selected runs, in the view's order.
    QList<qint64> selectedRunIds() const;
    void selectRuns(const QList<qint64>& ids);
    // Writes a report of the selected runs (the first is the baseline) to `path`; the
    // "Export report..." button asks for the path and calls this.
    bool exportReport(const QString& path);
    ReportExport* reportExport() const { return m_export; }
    // "Sample text…": opens the sampling dialog on the selected run's latest checkpoint; null when
    // the selection is not one language-model run with a checkpoint.
    class SamplingDialog* openSamplingDialog();
    // The table's context menu for the current selection: the buttons' actions on one run
    // (Open, Advise…, Start from its weights, Sample text…), each enabled as its button is.
    // The caller owns it.
    QMenu* makeContextMenu();

signals:
    void openRequested(qint64 runId);
    void compareRequested(const QList<qint64>& runIds);
    // "Start from its weights": the next run starts from this run's latest checkpoint.
    void initFromRequested(qint64 runId);
    // "Advise…": the precision advisor on this run's config at its latest checkpoint.
    void adviseRequested(qint64 runId);
    void storeError(const QString& message);

private:
    void updateButtons();
    // The selected run's checkpoints under the table; whether it has any.
    bool showCheckpoints(const QList<qint64>& selected);
    int currentSourceRow() const;
    void editNotes();
    void editTags();
    void deleteSelected();
    void exportWithDialog();
    // Why the selected run cannot be sampled from (empty when it can).
    QString whyNotSampleable(const QList<qint64>& selected) const;

    RunListModel* m_model;
    QSortFilterProxyModel* m_proxy;
    QLabel* m_where;
    QLineEdit* m_filter;
    QTableView* m_view;
    QPushButton *m_open, *m_compare, *m_rename, *m_notes, *m_tags, *m_delete, *m_report, *m_initFrom, *m_sample,
        *m_advise;
    QLabel* m_checkpoints;
    storage::RunStore* m_store = nullptr;
    ReportExport* m_export;
    QString m_databasePath;
};

} // namespace mantissa::ui
