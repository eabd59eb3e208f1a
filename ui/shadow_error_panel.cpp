#include "ui/shadow_error_panel.h"

#include "engine/lens/shadow_summary.h"
#include "report/shadow_heatmap.h"
#include "storage/run_store.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

#include <qcustomplot.h>

#include <algorithm>

namespace mantissa::ui {

namespace {

constexpr ShadowTensor kKinds[] = {ShadowTensor::Output, ShadowTensor::InputGrad, ShadowTensor::WeightGrad};
constexpr int kWorstShown = 8;

QString kindLabel(ShadowTensor kind)
{
    switch (kind) {
    case ShadowTensor::Output: return QObject::tr("Outputs");
    case ShadowTensor::InputGrad: return QObject::tr("Input gradients");
    case ShadowTensor::WeightGrad: return QObject::tr("Weight gradients");
    }
    return {};
}

QString text(const std::string& s) { return QString::fromStdString(s); }

} // namespace

ShadowErrorPanel::ShadowErrorPanel(QWidget* parent) : QWidget(parent)
{
    m_kind = new QComboBox;
    m_kind->setObjectName("shadowKind");
    for (ShadowTensor kind : kKinds)
        m_kind->addItem(kindLabel(kind), static_cast<int>(kind));
    m_note = new QLabel;
    m_note->setWordWrap(true);

    m_plot = new QCustomPlot;
    m_plot->setObjectName("shadowHeatmap");
    m_plot->setMinimumHeight(240);
    const report::ShadowHeatmap heatmap = report::addShadowHeatmap(*m_plot);
    m_map = heatmap.map;
    m_scale = heatmap.scale;

    m_worst = new QTableWidget(0, 5);
    m_worst->setObjectName("shadowWorst");
    m_worst->setHorizontalHeaderLabels(
        {tr("Largest errors"), tr("mean rel RMS"), tr("mean SQNR"), tr("worst (step)"), tr("non-finite steps")});
    m_worst->verticalHeader()->hide();
    m_worst->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_worst->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_worst->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);

    auto* chooser = new QHBoxLayout;
    chooser->addWidget(new QLabel(tr("Tensor")));
    chooser->addWidget(m_kind);
    chooser->addStretch(1);
    auto* splitter = new QSplitter(Qt::Vertical);
    splitter->addWidget(m_plot);
    splitter->addWidget(m_worst);
    splitter->setStretchFactor(0, 4);
    splitter->setStretchFactor(1, 1);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(chooser);
    layout->addWidget(m_note);
    layout->addWidget(splitter, 1);
    connect(m_kind, &QComboBox::currentIndexChanged, this, &ShadowErrorPanel::update);
    clear();
}

void ShadowErrorPanel::clear()
{
    m_store = nullptr;
    m_runId = 0;
    m_records.clear();
    update();
}

void ShadowErrorPanel::setRun(const storage::RunStore* store, qint64 runId)
{
    m_store = store;
    m_runId = runId;
    m_records = store ? store->shadowRecords(runId) : std::vector<ShadowRecord>();
    update();
}

bool ShadowErrorPanel::refresh()
{
    if (!m_store || m_runId <= 0)
        return false;
    std::vector<ShadowRecord> more = m_store->shadowRecords(m_runId, m_records.empty() ? 0 : m_records.back().step);
    if (more.empty())
        return false;
    for (ShadowRecord& r : more)
        m_records.push_back(std::move(r));
    update();
    return true;
}

void ShadowErrorPanel::update()
{
    const auto kind = static_cast<ShadowTensor>(m_kind->currentData().toInt());
    m_rows.clear();
    m_worst->setRowCount(0);
    if (m_records.empty()) {
        m_note->setText(tr("No shadow error track: set Training → Shadow fp32 comparison every N steps before "
                           "training to compare every layer with the same step in fp32."));
        m_note->show();
        report::fillShadowHeatmap(*m_plot, {m_map, m_scale}, m_records, kind);
        m_plot->replot();
        return;
    }
    m_note->setText(tr("Each cell: RMS(run − fp32) / RMS(fp32) of one layer's tensor at one shadowed step, on the "
                       "same master weights, batch and dropout masks. Blue: the run's tensor held Inf or NaN."));
    m_note->show();
    m_rows = report::fillShadowHeatmap(*m_plot, {m_map, m_scale}, m_records, kind);
    m_plot->replot();

    const std::vector<ShadowTensorSummary> ranked = rankShadowTensors(m_records, kind);
    const int shown = std::min(static_cast<int>(ranked.size()), kWorstShown);
    m_worst->setRowCount(shown);
    for (int i = 0; i < shown; ++i) {
        const ShadowTensorSummary& s = ranked[static_cast<std::size_t>(i)];
        const QStringList cells{
            text(s.tensor), text(formatRelativeRms(s.meanRelativeRms)), text(formatSqnrDb(s.meanSqnrDb())),
            QStringLiteral("%1 (%2)").arg(text(formatRelativeRms(s.worstRelativeRms))).arg(s.worstStep),
            QString::number(s.nonFiniteSteps)};
        for (int c = 0; c < cells.size(); ++c)
            m_worst->setItem(i, c, new QTableWidgetItem(cells[c]));
    }
}

} // namespace mantissa::ui
