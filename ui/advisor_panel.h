#pragma once
// The Advise panel (docs/advisor.md, "In the workbench"): the precision advisor on the
// workbench's current config (trained first, or its initial weights), or on a stored run's
// config and latest saved state (the Runs tab's Advise…, as `mantissa-cli advise RUN`). The lower formats come from the engine's format table; the
// probe runs on a worker thread (AdvisorJob) with a progress bar and a Cancel that stops
// between probes; the result table, the FLOP share per format and the rank correlation of
// score and probe are shown when it ends; Apply writes the chosen per-layer formats into
// model.precision_overrides as one undoable edit. Verification over seeds stays with
// `mantissa-cli advise --verify`, whose command the panel shows.
#include "engine/advisor/advice.h"
#include "ui/advisor_job.h"

#include <QWidget>

#include <memory>
#include <optional>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QListWidget;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTableWidget;

namespace mantissa::storage {
class RunStore;
}

namespace mantissa::ui {

class ConfigDocument;

class AdvisorPanel : public QWidget {
    Q_OBJECT
public:
    explicit AdvisorPanel(ConfigDocument* document, QWidget* parent = nullptr);
    ~AdvisorPanel() override;

    // Advise on run `runId` of `store`: its stored config at its latest saved state, which the
    // probes measure without training. False, with the reason in the panel (a run without a
    // checkpoint, one whose file is gone, a config this version cannot read), when it cannot;
    // the panel then stays on what it advised on before. Nothing starts until Advise.
    bool adviseStoredRun(const storage::RunStore& store, qint64 runId);
    // Back to the workbench's current config.
    void adviseCurrentConfig();
    bool isOnStoredRun() const { return m_storedRun.has_value(); }

    // Starts the advisor on its source (the current config or the stored run); false (the reason in the panel) when
    // the settings cannot run (no format chosen, a config that cannot run) or one is running.
    bool startAdvice();
    void cancel();
    // Writes the advice's per-layer formats into the current config (one undo step); false when
    // there is no advice.
    bool applyAdvice();
    // Writes the advice as a report (.pdf, .html or .md: the sensitivity chart, the table, the
    // shares); returns the files written, empty (the reason in the panel) when there is no advice
    // or the file cannot be written. Export report… asks for the file and calls this.
    QStringList exportReport(const QString& path);
    bool isRunning() const;
    const std::optional<AdviceTable>& advice() const { return m_advice; }

    QListWidget* formats() const { return m_formats; }
    QDoubleSpinBox* budget() const { return m_budget; }
    QComboBox* objective() const { return m_objective; }
    QCheckBox* scoreOnly() const { return m_scoreOnly; }
    QCheckBox* trainFirst() const { return m_trainFirst; }
    QSpinBox* heldOutBatches() const { return m_heldOut; }
    QProgressBar* progressBar() const { return m_progress; }
    QLabel* statusLabel() const { return m_status; }
    QLabel* errorLabel() const { return m_error; }
    QTableWidget* table() const { return m_table; }
    QLabel* summary() const { return m_summary; }
    QPushButton* adviseButton() const { return m_advise; }
    QPushButton* cancelButton() const { return m_cancel; }
    QPushButton* applyButton() const { return m_apply; }
    QPushButton* exportButton() const { return m_export; }
    QLabel* sourceLabel() const { return m_source; }
    QPushButton* currentConfigButton() const { return m_useCurrent; }

signals:
    // The job ended: with advice, cancelled, or failed (the error label says which).
    void finished();
    // A job is about to start (tests hook onto its progress here).
    void jobStarting(AdvisorJob* job);

private:
    void onProgress(int index, int total, const QString& text);
    void onJobFinished();
    void showError(const QString& message);
    void showAdvice(const AdviceTable& table);
    void updateButtons();
    void chooseReportFile();
    std::vector<LayerPrecision> checkedFormats() const;
    QString verifyCommand() const;

    // What a stored run gives the advisor: its config and the state the probes load.
    struct StoredRunSource {
        RunConfig config;
        std::string checkpoint;
        qint64 runId = 0;
        QString description; // "run 3 (mlp-fp32-1), epoch 1, step 20"
    };
    void showSource();
    void clearAdvice();

    ConfigDocument* m_document;
    std::optional<StoredRunSource> m_storedRun;
    QLabel* m_source;
    QPushButton* m_useCurrent;
    QListWidget* m_formats;
    QDoubleSpinBox* m_budget;
    QComboBox* m_objective;
    QCheckBox* m_scoreOnly;
    QCheckBox* m_trainFirst;
    QSpinBox* m_heldOut;
    QPushButton* m_advise;
    QPushButton* m_cancel;
    QPushButton* m_apply;
    QPushButton* m_export;
    QProgressBar* m_progress;
    QLabel* m_status;
    QLabel* m_error;
    QTableWidget* m_table;
    QLabel* m_summary;
    QLabel* m_verify;
    std::unique_ptr<AdvisorJob> m_job;
    std::optional<AdviceTable> m_advice;
};

} // namespace mantissa::ui
