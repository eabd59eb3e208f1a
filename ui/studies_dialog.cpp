#include "ui/studies_dialog.h"

#include "storage/run_store.h"
#include "sweep/study_files.h"
#include "sweep/study_results.h"

#include <QDialogButtonBox>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QSplitter>
#include <QTextBrowser>
#include <QVBoxLayout>

namespace mantissa::ui {

StudiesDialog::StudiesDialog(const storage::RunStore* store, QWidget* parent)
    : QDialog(parent), m_store(store), m_list(new QListWidget), m_report(new QTextBrowser),
      m_showSweep(new QPushButton(tr("Show sweep in Comparison")))
{
    setWindowTitle(tr("Studies"));
    setObjectName("studiesDialog");
    m_list->setObjectName("studyList");
    m_report->setObjectName("studyReport");
    m_showSweep->setObjectName("showStudySweep");
    m_report->setOpenExternalLinks(true);
    auto* splitter = new QSplitter;
    splitter->addWidget(m_list);
    splitter->addWidget(m_report);
    splitter->setStretchFactor(1, 3);
    auto* hint = new QLabel(tr("Each study reruns a paper's claim as arms x seeds. Run one with "
                               "<code>mantissa-cli study NAME --jobs 2</code> into this run database; "
                               "the report below is computed from the runs it holds."));
    hint->setWordWrap(true);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close);
    buttons->addButton(m_showSweep, QDialogButtonBox::ActionRole);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(m_showSweep, &QPushButton::clicked, this, [this] {
        const int row = m_list->currentRow();
        if (row >= 0 && m_entries[std::size_t(row)].sweepId > 0)
            emit showSweepRequested(m_entries[std::size_t(row)].sweepId);
    });
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(hint);
    layout->addWidget(splitter, 1);
    layout->addWidget(buttons);
    connect(m_list, &QListWidget::currentRowChanged, this, &StudiesDialog::showEntry);
    resize(1200, 800);
    load();
}

void StudiesDialog::load()
{
    for (const QString& file : sweep::studyFiles()) {
        Entry entry{file, QFileInfo(file).completeBaseName(), {}, 0};
        QString status;
        try {
            const sweep::StudySpec spec = sweep::loadStudySpecFile(file.toStdString(), false);
            if (!m_store) {
                entry.markdown = tr("No run database is open.");
                status = tr("no database");
            } else {
                const sweep::StudyResults results = sweep::collectStudyResults(*m_store, spec);
                entry.sweepId = results.sweep ? results.sweep->id : 0;
                entry.markdown = sweep::studyReportMarkdown(results);
                int done = 0, planned = 0;
                for (const sweep::ConfigurationResults& arm : results.arms) {
                    done += arm.results();
                    planned += arm.planned;
                }
                status = done == 0        ? tr("not run")
                         : done < planned ? tr("%1 of %2 runs").arg(done).arg(planned)
                                          : results.verdict.outcome;
                if (done == 0)
                    entry.markdown.prepend(
                        tr("*Not run in this database yet: `mantissa-cli study %1 --jobs 2`.*\n\n").arg(entry.name));
            }
        } catch (const std::exception& e) {
            entry.markdown = tr("This study cannot be shown: %1").arg(QString::fromLocal8Bit(e.what()));
            status = tr("error (see the report)");
        }
        m_list->addItem(QStringLiteral("%1\n  %2").arg(entry.name, status));
        m_entries.push_back(std::move(entry));
    }
    if (m_entries.empty())
        m_report->setMarkdown(tr("No studies found: set MANTISSA_STUDIES_DIR to a folder of study specs."));
    else
        m_list->setCurrentRow(0);
}

void StudiesDialog::showEntry(int row)
{
    if (row < 0 || row >= int(m_entries.size())) {
        m_showSweep->setEnabled(false);
        return;
    }
    const Entry& entry = m_entries[std::size_t(row)];
    m_report->setMarkdown(entry.markdown);
    m_showSweep->setEnabled(entry.sweepId > 0);
}

bool StudiesDialog::selectStudy(const QString& name)
{
    for (std::size_t i = 0; i < m_entries.size(); ++i)
        if (m_entries[i].name == name) {
            m_list->setCurrentRow(int(i));
            return true;
        }
    return false;
}

QString StudiesDialog::reportText() const
{
    const int row = m_list->currentRow();
    return row < 0 ? QString() : m_entries[std::size_t(row)].markdown;
}

} // namespace mantissa::ui
