#include "ui/advisor_job.h"

#include "engine/data/dataset.h"
#include "engine/train/trainer.h"
#include "engine/train/training_backend.h"
#include "engine/util/check.h"
#include "engine/util/enum_table.h"
#include "stats/rank_correlation.h"
#include "ui/enum_combo.h"

#include <QDir>
#include <QTemporaryDir>
#include <QThread>

#include <exception>

namespace mantissa::ui {

AdvisorJob::AdvisorJob(AdvisorJobSettings settings, QObject* parent) : QObject(parent), m_settings(std::move(settings))
{}

AdvisorJob::~AdvisorJob()
{
    if (m_thread) {
        cancel();
        m_thread->wait();
    }
}

void AdvisorJob::start()
{
    if (m_thread)
        return;
    m_thread = QThread::create([this] { work(); });
    m_thread->setParent(this);
    connect(m_thread, &QThread::finished, this, &AdvisorJob::finished);
    m_thread->start();
}

void AdvisorJob::cancel()
{
    m_cancel = true;
    const std::lock_guard lock(m_trainerMutex);
    if (m_trainer)
        m_trainer->requestStop();
}

bool AdvisorJob::isRunning() const { return m_thread && m_thread->isRunning(); }

void AdvisorJob::work()
{
    try {
        const RunConfig& config = m_settings.config;
        BackendSelection selection = selectBackend(config);
        const DatasetSplits data = loadDatasets(config.data, config.training.seed);
        QTemporaryDir stateDir(QDir::tempPath() + "/mantissa-advise-XXXXXX");
        std::string checkpoint = m_settings.checkpoint;
        if (checkpoint.empty() && m_settings.trainFirst) {
            emit progress(0, 0,
                          tr("training the baseline (%1) before the probes").arg(QString::fromStdString(config.name)));
            Trainer trainer(config, *selection.backend, data);
            {
                const std::lock_guard lock(m_trainerMutex);
                m_trainer = &trainer;
            }
            RunSummary summary;
            if (!m_cancel)
                summary = trainer.run();
            {
                const std::lock_guard lock(m_trainerMutex);
                m_trainer = nullptr;
            }
            if (m_cancel)
                return;
            if (summary.status != RunStatus::Finished)
                throw ConfigError("the baseline's training ended " + std::string(runStatusName(summary.status)) +
                                  (summary.message.empty() ? "" : ": " + summary.message) +
                                  "; a state to probe needs a finished run");
            checkpoint = stateDir.filePath("baseline.ckpt").toStdString();
            trainer.saveCheckpoint(checkpoint);
        }
        AdvisorProbeOptions options = m_settings.probe;
        options.batchSize = config.training.batchSize;
        emit progress(0, 0, tr("measuring the baseline and the scores"));
        PrecisionProbe probe(config, *selection.backend, data, checkpoint, options);
        AdviceHooks hooks;
        hooks.stopRequested = [this] { return m_cancel.load(); };
        hooks.rankCorrelation = stats::spearmanCorrelation;
        hooks.probing = [this](std::size_t index, std::size_t total, const std::string& layer, LayerPrecision format) {
            emit progress(static_cast<int>(index) - 1, static_cast<int>(total),
                          tr("probe %1 of %2: %3 in %4")
                              .arg(index)
                              .arg(total)
                              .arg(QString::fromStdString(layer), fromView(enumKey(format))));
        };
        m_result = adviseLayers(probe, m_settings.request, config.recipe, precisionModeName(config.precision), hooks);
    } catch (const std::exception& error) {
        m_result.reset();
        m_error = QString::fromStdString(error.what());
    }
}

} // namespace mantissa::ui
