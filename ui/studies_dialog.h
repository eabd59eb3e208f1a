#pragma once
// The Studies window: the shipped studies (studies/, sweep/study_files.h), each with how many
// of its runs the open run database holds, and the selected study's report as the CLI writes
// it (the claim, the setup, each arm's statistics, the verdicts and whether the claim
// reproduces). "Show sweep" opens its trained arms in the Comparison tab. Studies run from the
// command line (`mantissa-cli study NAME`), which the window says for a study not yet run.
#include <QDialog>
#include <QString>

#include <vector>

class QListWidget;
class QPushButton;
class QTextBrowser;

namespace mantissa::storage {
class RunStore;
}

namespace mantissa::ui {

class StudiesDialog : public QDialog {
    Q_OBJECT
public:
    // `store` may be null (no run database open): the reports then say so.
    StudiesDialog(const storage::RunStore* store, QWidget* parent = nullptr);
    // Selects the study of this name; false when there is none.
    bool selectStudy(const QString& name);
    int studyCount() const { return int(m_entries.size()); }
    QString reportText() const; // the selected study's report as shown (Markdown)

signals:
    void showSweepRequested(qint64 sweepId);

private:
    struct Entry {
        QString file, name;
        QString markdown; // the report, or why there is none
        qint64 sweepId = 0;
    };
    void load();
    void showEntry(int row);

    const storage::RunStore* m_store;
    std::vector<Entry> m_entries;
    QListWidget* m_list;
    QTextBrowser* m_report;
    QPushButton* m_showSweep;
};

} // namespace mantissa::ui
