#include "ui/numerics_view.h"

#include "engine/numerics/tensor_stats.h"
#include "engine/util/format_number.h"
#include "storage/run_store.h"
#include "ui/gemm_input_panel.h"
#include "ui/numerics_table_model.h"
#include "ui/shadow_error_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QTabWidget>
#include <QTableView>
#include <QVBoxLayout>

#include <qcustomplot.h>

#include <algorithm>
#include <cmath>

namespace mantissa::ui {

namespace {

constexpr TensorKind kKinds[] = {TensorKind::WeightGrad, TensorKind::ActivationGrad, TensorKind::Weight,
                                 TensorKind::Activation};

QString kindLabel(TensorKind kind)
{
    switch (kind) {
    case TensorKind::Activation: return NumericsView::tr("activations");
    case TensorKind::ActivationGrad: return NumericsView::tr("activation gradients");
    case TensorKind::Weight: return NumericsView::tr("weights");
    case TensorKind::WeightGrad: return NumericsView::tr("weight gradients");
    }
    return {};
}

bool isGradient(TensorKind kind) { return kind == TensorKind::ActivationGrad || kind == TensorKind::WeightGrad; }

// "2^-14", or "65504 (2^16)" for a limit that is not a power of two.
QString limitText(float value)
{
    if (const std::optional<int> exponent = exactPowerOfTwo(value))
        return QStringLiteral("2^%1").arg(*exponent);
    return QStringLiteral("%1 (2^%2)")
        .arg(QString::number(static_cast<double>(value), 'g', 6))
        .arg(std::lround(std::log2(static_cast<double>(value))));
}
// Fractions below this are drawn as empty: a log colour scale needs a floor.
constexpr double kMinFraction = 1e-5;

} // namespace

NumericsView::NumericsView(QWidget* parent) : QWidget(parent)
{
    m_layer = new QComboBox;
    m_layer->setObjectName("numericsLayer");
    m_kind = new QComboBox;
    m_kind->setObjectName("numericsKind");
    for (TensorKind kind : kKinds)
        m_kind->addItem(kindLabel(kind), static_cast<int>(kind));
    m_step = new QComboBox;
    m_step->setObjectName("numericsStep");
    m_scaled = new QCheckBox(tr("Gradients as scaled"));
    m_scaled->setObjectName("numericsScaled");
    m_scaled->setToolTip(tr("Show gradients multiplied by the loss scale, as the run stored them in fp16, "
                            "instead of their true (unscaled) magnitudes."));
    m_percentile = new QDoubleSpinBox;
    m_percentile->setObjectName("numericsPercentile");
    m_percentile->setRange(0.01, 50);
    m_percentile->setDecimals(2);
    m_percentile->setValue(1);
    m_percentile->setSuffix(tr(" %"));
    m_percentile->setToolTip(tr("The suggested scale lifts this percentile of each tensor's nonzero gradient "
                                "magnitudes into fp16's normal range (at least 2^-14) without overflowing "
                                "its largest value. Lower keeps more of the small gradients."));
    m_note = new QLabel;
    m_note->setWordWrap(true);

    auto* chooser = new QHBoxLayout;
    chooser->addWidget(new QLabel(tr("Layer")));
    chooser->addWidget(m_layer, 1);
    chooser->addWidget(new QLabel(tr("Tensor")));
    chooser->addWidget(m_kind, 1);
    chooser->addWidget(m_scaled);
    chooser->addWidget(new QLabel(tr("Table at step")));
    chooser->addWidget(m_step);
    chooser->addWidget(new QLabel(tr("Suggest for percentile")));
    chooser->addWidget(m_percentile);

    m_plot = new QCustomPlot;
    m_plot->setObjectName("numericsHeatmap");
    m_plot->setMinimumHeight(260);
    m_plot->xAxis->setLabel(tr("step"));
    m_plot->yAxis->setLabel(tr("log2 |x| (binary exponent)"));
    // Room below the histogram's lowest bin for the loss-scaled fp16 floor (2^-24 / 2^16).
    m_plot->yAxis->setRange(kHistogramMinExponent - 6, kHistogramMaxExponent + 1);
    m_map = new QCPColorMap(m_plot->xAxis, m_plot->yAxis);
    m_map->setName(tr("fraction of values"));
    m_map->removeFromLegend();
    m_scale = new QCPColorScale(m_plot);
    m_plot->plotLayout()->addElement(0, 1, m_scale);
    m_scale->setType(QCPAxis::atRight);
    m_scale->setDataScaleType(QCPAxis::stLogarithmic);
    m_scale->axis()->setLabel(tr("fraction of values in the binade"));
    m_scale->axis()->setTicker(QSharedPointer<QCPAxisTickerLog>(new QCPAxisTickerLog));
    m_map->setColorScale(m_scale);
    QCPColorGradient gradient(QCPColorGradient::gpThermal);
    gradient.setNanHandling(QCPColorGradient::nhTransparent);
    m_map->setGradient(gradient);
    m_map->setDataRange(QCPRange(kMinFraction, 1));
    m_map->setInterpolate(false);
    // Keep the colour scale as tall as the plot's axis rect.
    auto* margins = new QCPMarginGroup(m_plot);
    m_plot->axisRect()->setMarginGroup(QCP::msBottom | QCP::msTop, margins);
    m_scale->setMarginGroup(QCP::msBottom | QCP::msTop, margins);
    m_plot->legend->setVisible(true);
    m_plot->legend->setBrush(QColor(255, 255, 255, 220));
    QFont legendFont = font();
    legendFont.setPointSizeF(legendFont.pointSizeF() * 0.85);
    m_plot->legend->setFont(legendFont);
    m_plot->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignLeft);
    connect(m_plot, &QCustomPlot::mousePress, this, &NumericsView::onPlotClicked);
    m_stepMarker = new QCPItemStraightLine(m_plot);
    m_stepMarker->setPen(QPen(QColor(0, 0, 0, 160), 1, Qt::DashDotLine));
    m_stepMarker->setVisible(false);

    m_model = new NumericsTableModel(this);
    m_table = new QTableView;
    m_table->setObjectName("numericsTable");
    m_table->setModel(m_model);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->verticalHeader()->hide();
    // Numbers keep their width; the long tensor names take what is left.
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_table->horizontalHeader()->setSectionResizeMode(NumericsTableModel::Tensor, QHeaderView::Stretch);

    m_gemmInputs = new GemmInputPanel;
    m_tables = new QTabWidget;
    m_tables->setObjectName("numericsTables");
    m_tables->addTab(m_table, tr("Tensors"));
    m_tables->addTab(m_gemmInputs, tr("GEMM inputs (block formats)"));
    m_tables->setTabToolTip(1, tr("What a sub-16-bit recipe's quantisation did to each GEMM input: block scale "
                                  "exponents, clipped blocks, values flushed to zero and the SQNR against fp32."));

    auto* splitter = new QSplitter(Qt::Vertical);
    splitter->addWidget(m_plot);
    splitter->addWidget(m_tables);
    splitter->setStretchFactor(0, 3);
    splitter->setStretchFactor(1, 2);

    auto* statistics = new QWidget;
    auto* layout = new QVBoxLayout(statistics);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addLayout(chooser);
    layout->addWidget(m_note);
    layout->addWidget(splitter, 1);
    m_shadow = new ShadowErrorPanel;
    m_pages = new QTabWidget;
    m_pages->setObjectName("numericsPages");
    m_pages->addTab(statistics, tr("Statistics"));
    m_pages->addTab(m_shadow, tr("Shadow error vs fp32"));
    m_pages->setTabToolTip(1, tr("Every layer's outputs and gradients against the same step in fp32, every N "
                                 "steps (Training → Shadow fp32 comparison every N steps)."));
    auto* outer = new QVBoxLayout(this);
    outer->addWidget(m_pages);

    connect(m_layer, &QComboBox::currentIndexChanged, this, &NumericsView::updateHeatmap);
    connect(m_kind, &QComboBox::currentIndexChanged, this, &NumericsView::updateHeatmap);
    connect(m_scaled, &QCheckBox::toggled, this, &NumericsView::updateHeatmap);
    connect(m_step, &QComboBox::currentIndexChanged, this, &NumericsView::updateTable);
    connect(m_percentile, &QDoubleSpinBox::valueChanged, this,
            [this](double percent) { m_model->setPercentile(percent / 100.0); });
    clear(tr("Open a run with statistics (Training → Statistics every N steps) to see its numerics."));
}

void NumericsView::clear(const QString& note)
{
    m_store = nullptr;
    m_runId = 0;
    m_steps.clear();
    m_tensors.clear();
    {
        const QSignalBlocker a(m_layer), b(m_step);
        m_layer->clear();
        m_step->clear();
    }
    m_model->setRecord({});
    m_gemmInputs->setRecord({});
    m_tables->setTabEnabled(1, false);
    m_tables->setCurrentIndex(0);
    m_shadow->clear();
    m_note->setText(note);
    m_note->setVisible(!note.isEmpty());
    updateHeatmap();
}

void NumericsView::setRun(const storage::RunStore* store, qint64 runId)
{
    const QList<qint64> steps = store ? store->numericsSteps(runId) : QList<qint64>();
    if (steps.isEmpty()) {
        clear(tr("Run %1 has no per-layer statistics: set Training → Statistics every N steps before "
                 "training to record them.")
                  .arg(runId));
        // A run with only the shadow track opens on it.
        m_shadow->setRun(store, runId);
        m_pages->setCurrentWidget(m_shadow->hasSteps() ? static_cast<QWidget*>(m_shadow) : m_pages->widget(0));
        if (m_shadow->hasSteps()) {
            m_store = store;
            m_runId = runId;
        }
        return;
    }
    m_shadow->setRun(store, runId);
    m_store = store;
    m_runId = runId;
    m_steps = steps;
    m_note->hide();
    fillLayers(store->numerics(runId, steps.front()));
    {
        const QSignalBlocker blocker(m_step);
        m_step->clear();
        for (qint64 s : m_steps)
            m_step->addItem(QString::number(s), s);
        m_step->setCurrentIndex(0);
    }
    updateHeatmap();
    updateTable();
}

void NumericsView::follow(const storage::RunStore* store, qint64 runId)
{
    clear(tr("Run %1 is training: its per-layer statistics appear here from the first sampled step.").arg(runId));
    m_store = store;
    m_runId = runId;
    m_shadow->setRun(store, runId);
    refresh();
}

bool NumericsView::refresh()
{
    if (!m_store || m_runId <= 0)
        return false;
    const bool shadowed = m_shadow->refresh();
    const QList<qint64> steps = m_store->numericsSteps(m_runId);
    if (steps.size() <= m_steps.size())
        return shadowed;
    const bool first = m_steps.isEmpty();
    const bool onLatest = m_step->currentIndex() == m_step->count() - 1;
    if (first) {
        m_note->hide();
        fillLayers(m_store->numerics(m_runId, steps.front()));
    }
    {
        const QSignalBlocker blocker(m_step);
        for (qsizetype i = m_steps.size(); i < steps.size(); ++i)
            m_step->addItem(QString::number(steps[i]), steps[i]);
        if (first || onLatest)
            m_step->setCurrentIndex(m_step->count() - 1);
    }
    m_steps = steps;
    updateHeatmap();
    updateTable();
    return true;
}

void NumericsView::fillLayers(const NumericsRecord& first)
{
    m_tensors = QList<TensorNumerics>(first.tensors.begin(), first.tensors.end());
    m_quantisedGemmInputs = !first.gemmInputs.empty();
    const QSignalBlocker blocker(m_layer);
    m_layer->clear();
    for (const TensorNumerics& t : m_tensors) {
        const QString layer = QString::fromStdString(t.layer);
        if (m_layer->findText(layer) < 0)
            m_layer->addItem(layer);
    }
    // Start on the first layer with weights: the weight gradients of the first layers are
    // the ones that fall below fp16's range (flatten or activation layers have none).
    int start = 0;
    for (const TensorNumerics& t : m_tensors)
        if (t.kind == TensorKind::WeightGrad) {
            start = m_layer->findText(QString::fromStdString(t.layer));
            break;
        }
    m_layer->setCurrentIndex(std::max(start, 0));
}

qint64 NumericsView::selectedStep() const
{
    return m_step->currentIndex() >= 0 ? m_step->currentData().toLongLong() : -1;
}

void NumericsView::selectStep(qint64 step, const QString& layer)
{
    if (m_steps.isEmpty())
        return;
    int nearest = 0;
    for (int i = 1; i < m_steps.size(); ++i)
        if (std::llabs(m_steps[i] - step) < std::llabs(m_steps[nearest] - step))
            nearest = i;
    m_highlightedLayer = layer;
    m_model->setHighlightedLayer(layer);
    if (!layer.isEmpty() && m_layer->findText(layer) >= 0)
        m_layer->setCurrentIndex(m_layer->findText(layer));
    m_step->setCurrentIndex(nearest); // updates the table when it changes
    updateTable();
}

void NumericsView::updateTable()
{
    const qint64 step = selectedStep();
    const NumericsRecord record = m_store && step >= 0 ? m_store->numerics(m_runId, step) : NumericsRecord{};
    m_model->setRecord(record);
    m_gemmInputs->setRecord(record);
    // Only a recipe quantises GEMM inputs: the page stays disabled for the 16- and 32-bit modes.
    const bool quantised = !record.gemmInputs.empty();
    m_tables->setTabEnabled(1, quantised);
    if (!quantised && m_tables->currentIndex() == 1)
        m_tables->setCurrentIndex(0);
    const int row = m_model->rowOfLayer(m_highlightedLayer);
    if (row >= 0) {
        m_table->selectRow(row);
        m_table->scrollTo(m_model->index(row, 0));
    }
    // A marker on the heatmap at the step the table shows.
    m_stepMarker->setVisible(step >= 0 && m_store);
    m_stepMarker->point1->setCoords(static_cast<double>(step), 0);
    m_stepMarker->point2->setCoords(static_cast<double>(step), 1);
    m_plot->replot();
}

void NumericsView::updateHeatmap()
{
    for (QCPGraph* g : m_limitGraphs)
        m_plot->removeGraph(g);
    m_limitGraphs.clear();
    m_map->data()->clear();

    const QString layer = m_layer->currentText();
    const auto kind = static_cast<TensorKind>(m_kind->currentData().toInt());
    auto tensor = std::find_if(m_tensors.begin(), m_tensors.end(), [&](const TensorNumerics& t) {
        return QString::fromStdString(t.layer) == layer && t.kind == kind;
    });
    if (m_store) {
        m_note->setText(tensor == m_tensors.end()
                            ? tr("%1 has no %2: choose another layer or tensor.").arg(layer, kindLabel(kind))
                            : QString());
        m_note->setVisible(!m_note->text().isEmpty());
    }
    if (!m_store || tensor == m_tensors.end()) {
        m_plot->xAxis->setRange(0, 1);
        m_plot->replot();
        return;
    }
    const storage::HistogramSeries series =
        m_store->histogramSeries(m_runId, QString::fromStdString(tensor->tensor), kind);
    const int n = static_cast<int>(series.size());
    if (n == 0) {
        m_plot->replot();
        return;
    }
    // The steps are sampled every N, so a uniform grid from the first to the last places
    // each column on its step.
    const double first = static_cast<double>(series.step.front());
    const double last = static_cast<double>(series.step.back());
    const double halfCell = n > 1 ? (last - first) / (2.0 * (n - 1)) : 0.5;
    m_map->data()->setSize(n, kHistogramExponentBins);
    m_map->data()->setRange(QCPRange(first, n > 1 ? last : first + 1e-9),
                            QCPRange(kHistogramMinExponent + 0.5, kHistogramMaxExponent + 0.5));
    // Rows to move a column by to show it the other way (scaled <-> unscaled): the loss
    // scale is a power of two, so this is exact; bins pushed past either end are dropped.
    const bool wantScaled = isGradient(kind) && m_scaled->isChecked();
    const auto log2Scale = [&](int i) {
        return series.lossScale[i] > 0 ? static_cast<int>(std::lround(std::log2(series.lossScale[i]))) : 0;
    };
    for (int x = 0; x < n; ++x) {
        const ExponentHistogram& h = series.counts[x];
        const bool storedScaled = isGradient(kind) && series.scaledGradients[x];
        const int shift = (int(wantScaled) - int(storedScaled)) * log2Scale(x);
        double total = 0;
        for (std::uint32_t c : h)
            total += c;
        for (int y = 0; y < kHistogramExponentBins; ++y) {
            const int from = y - shift;
            const double f = total > 0 && from >= 0 && from < kHistogramExponentBins
                                 ? h[static_cast<std::size_t>(from + 1)] / total
                                 : 0;
            m_map->data()->setCell(x, y, f >= kMinFraction ? f : std::nan(""));
        }
    }
    m_plot->yAxis->setLabel(wantScaled ? tr("log2 |x| × loss scale (binary exponent)")
                                       : tr("log2 |x| (binary exponent)"));
    m_plot->xAxis->setRange(first - halfCell, last + halfCell);
    drawLimits(first - halfCell, last + halfCell, tensor->target);

    // The loss scale's reach: a gradient stored scaled by S survives the target type when
    // |g| * S is at least its smallest subnormal, i.e. log2|g| >= log2(min subnormal) - log2 S
    // (-24 - log2 S in fp16). Values in the band below that line are lost even after scaling.
    // bf16's floor, 2^-133, lies below the histogram: no band.
    const double minSubnormalLog2 = std::log2(static_cast<double>(dtypeLimits(tensor->target).minSubnormal));
    const QString targetName = QString::fromUtf8(dtypeName(tensor->target).data());
    if (isGradient(kind) && minSubnormalLog2 >= kHistogramMinExponent) {
        QVector<double> keys, floor, bottom;
        for (int i = 0; i < n; ++i) {
            // Shown scaled, the values already include the shift: the floor is fp16's own.
            const double shift = wantScaled ? 0 : log2Scale(i);
            keys << static_cast<double>(series.step[i]);
            floor << minSubnormalLog2 - shift;
            bottom << kHistogramMinExponent;
        }
        QCPGraph* base = m_plot->addGraph();
        base->setData(keys, bottom);
        base->setPen(Qt::NoPen);
        base->removeFromLegend();
        QCPGraph* reach = m_plot->addGraph();
        const QString subnormal = limitText(dtypeLimits(tensor->target).minSubnormal);
        reach->setName(wantScaled
                           ? tr("lost in %1: below %2 as stored").arg(targetName, subnormal)
                           : tr("%1 floor after loss scaling (%2 / scale): lost below").arg(targetName, subnormal));
        reach->setData(keys, floor);
        reach->setLineStyle(QCPGraph::lsStepLeft);
        reach->setPen(QPen(QColor(0, 170, 255), 2));
        reach->setBrush(QColor(0, 170, 255, 50));
        reach->setChannelFillGraph(base);
        m_limitGraphs << base << reach;
    }
    m_plot->replot();
}

void NumericsView::drawLimits(double firstStep, double lastStep, DType target)
{
    const auto line = [&](double y, const QString& name, const QPen& pen) {
        QCPGraph* g = m_plot->addGraph();
        g->setName(name);
        g->setPen(pen);
        if (!std::isnan(y))
            g->setData(QVector<double>{firstStep, lastStep}, QVector<double>{y, y});
        m_limitGraphs << g;
    };
    // The limits of the type the lens measured the tensor against (TensorNumerics::target: the
    // run's own 16-bit type, or fp16 for an fp32 run), from the engine's table. A limit outside
    // the histogram's 2^-40..2^20 (bf16's) is named in the legend without a line.
    const DTypeLimits limits = dtypeLimits(target);
    const QString name = QString::fromUtf8(dtypeName(target).data(), qsizetype(dtypeName(target).size()));
    const auto limit = [&](float value, const QString& what, const QPen& pen) {
        const double y = std::log2(static_cast<double>(value));
        const bool onScale = y >= kHistogramMinExponent && y <= kHistogramMaxExponent + 1;
        line(onScale ? y : std::nan(""),
             QStringLiteral("%1 %2 %3%4").arg(name, what, limitText(value), onScale ? QString() : tr(": off-scale")),
             pen);
    };
    limit(limits.maxFinite, tr("max"), QPen(Qt::red, 2));
    limit(limits.minNormal, tr("min normal"), QPen(QColor(0, 140, 0), 2, Qt::DashLine));
    limit(limits.minSubnormal, tr("min subnormal"), QPen(Qt::magenta, 2, Qt::DashLine));
    // A recipe quantises the GEMM inputs in blocks whose scales follow each block's values:
    // no fixed line says what they lose, the GEMM inputs page does.
    if (m_quantisedGemmInputs)
        line(std::nan(""), tr("GEMM inputs: scaled per block; what they lose is on the GEMM inputs page"),
             QPen(Qt::gray, 1, Qt::DotLine));
}

void NumericsView::onPlotClicked(QMouseEvent* event)
{
    if (m_steps.isEmpty() || event->button() != Qt::LeftButton)
        return;
    const double key = m_plot->xAxis->pixelToCoord(event->position().x());
    selectStep(static_cast<qint64>(std::lround(key)), m_highlightedLayer);
}

} // namespace mantissa::ui
