#include "ui/shadow_error_panel.h"

#include "engine/lens/shadow_summary.h"
#include "storage/run_store.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

#include <qcustomplot.h>

#include <cmath>
#include <map>

namespace mantissa::ui {

namespace {

constexpr ShadowTensor kKinds[] = {ShadowTensor::Output, ShadowTensor::InputGrad, ShadowTensor::WeightGrad};
// The colour scale's floor, in log10 of the relative error: an exact tensor is drawn there.
constexpr double kFloor = -8;
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
    m_plot->xAxis->setLabel(tr("step"));
    m_map = new QCPColorMap(m_plot->xAxis, m_plot->yAxis);
    m_map->setInterpolate(false);
    m_scale = new QCPColorScale(m_plot);
    m_plot->plotLayout()->addElement(0, 1, m_scale);
    m_scale->setType(QCPAxis::atRight);
    m_scale->axis()->setLabel(tr("log10 relative RMS error vs fp32"));
    m_map->setColorScale(m_scale);
    QCPColorGradient gradient(QCPColorGradient::gpThermal);
    gradient.setNanHandling(QCPColorGradient::nhNanColor);
    gradient.setNanColor(QColor(40, 110, 255)); // Inf or NaN in the run's tensor: no measure
    m_map->setGradient(gradient);
    auto* margins = new QCPMarginGroup(m_plot);
    m_plot->axisRect()->setMarginGroup(QCP::msBottom | QCP::msTop, margins);
    m_scale->setMarginGroup(QCP::msBottom | QCP::msTop, margins);

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
        m_map->data()->clear();
        m_plot->replot();
        return;
    }
    m_note->setText(tr("Each cell: RMS(run − fp32) / RMS(fp32) of one layer's tensor at one shadowed step, on the "
                       "same master weights, batch and dropout masks. Blue: the run's tensor held Inf or NaN."));
    m_note->show();
    // Rows in the order the first record met them (forward order), later newcomers below.
    std::map<std::string, int> rowOf;
    for (const ShadowRecord& r : m_records)
        for (const ShadowError& e : r.errors)
            if (e.kind == kind && rowOf.try_emplace(e.tensor, static_cast<int>(m_rows.size())).second)
                m_rows << text(e.tensor);
    const int columns = static_cast<int>(m_records.size());
    const int rows = std::max(1, static_cast<int>(m_rows.size()));
    const double first = static_cast<double>(m_records.front().step);
    const double last = static_cast<double>(m_records.back().step);
    // Row k at value k, and the axis reversed: the first layer at the top.
    m_map->data()->setSize(columns, rows);
    m_map->data()->setRange(QCPRange(first, last), QCPRange(0, rows - 1));
    for (int x = 0; x < columns; ++x)
        for (int y = 0; y < rows; ++y)
            m_map->data()->setCell(x, y, kFloor);
    // The colours span the errors measured, in half decades; exact tensors take the lowest.
    double lowest = 0, highest = kFloor;
    for (int x = 0; x < columns; ++x)
        for (const ShadowError& e : m_records[static_cast<std::size_t>(x)].errors) {
            if (e.kind != kind)
                continue;
            const double rel = e.energies.relativeRms();
            const double value = std::isnan(rel) ? rel : rel == 0 ? kFloor : std::max(kFloor, std::log10(rel));
            if (!std::isnan(value) && value > kFloor) {
                lowest = std::min(lowest, value);
                highest = std::max(highest, value);
            }
            m_map->data()->setCell(x, rowOf.at(e.tensor), value);
        }
    if (highest <= kFloor)
        lowest = highest = kFloor; // every tensor exact
    m_map->setDataRange(
        QCPRange(std::floor(2 * lowest) / 2, std::max(std::ceil(2 * highest) / 2, std::floor(2 * lowest) / 2 + 0.5)));
    // Labels on the rows; with many, every few.
    QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
    const int every = std::max(1, (static_cast<int>(m_rows.size()) + 15) / 16);
    for (int y = 0; y < m_rows.size(); y += every)
        ticker->addTick(y, m_rows[y]);
    m_plot->yAxis->setTicker(ticker);
    m_plot->yAxis->setRange(-0.5, rows - 0.5);
    m_plot->yAxis->setRangeReversed(true);
    const double half = columns > 1 ? (last - first) / (columns - 1) / 2 : 1;
    m_plot->xAxis->setRange(first - half, last + half);
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
