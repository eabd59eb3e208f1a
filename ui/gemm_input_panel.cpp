#include "ui/gemm_input_panel.h"

#include "ui/gemm_input_table_model.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QSplitter>
#include <QTableView>

#include <qcustomplot.h>

#include <algorithm>
#include <optional>

namespace mantissa::ui {

GemmInputPanel::GemmInputPanel(QWidget* parent) : QWidget(parent)
{
    m_model = new GemmInputTableModel(this);
    m_table = new QTableView;
    m_table->setObjectName("gemmInputTable");
    m_table->setModel(m_model);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->verticalHeader()->hide();
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);

    m_plot = new QCustomPlot;
    m_plot->setObjectName("scaleExponentHistogram");
    m_plot->setMinimumWidth(220);
    m_plot->setMaximumWidth(320); // the table's numbers come first
    m_plot->xAxis->setLabel(tr("block scale exponent (log2)"));
    m_plot->yAxis->setLabel(tr("blocks"));
    // One bar per binary exponent: integer ticks, however few bars.
    QSharedPointer<QCPAxisTickerFixed> ticker(new QCPAxisTickerFixed);
    ticker->setTickStep(1);
    ticker->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
    m_plot->xAxis->setTicker(ticker);
    m_bars = new QCPBars(m_plot->xAxis, m_plot->yAxis);
    m_bars->setWidth(0.8);
    m_bars->setPen(QPen(QColor(40, 90, 160)));
    m_bars->setBrush(QColor(70, 130, 200, 180));
    m_plot->plotLayout()->insertRow(0);
    m_plot->plotLayout()->addElement(0, 0,
                                     new QCPTextElement(m_plot, QString(), QFont(font().family(), -1, QFont::Bold)));

    auto* splitter = new QSplitter(Qt::Horizontal);
    splitter->addWidget(m_table);
    splitter->addWidget(m_plot);
    splitter->setStretchFactor(0, 3);
    splitter->setStretchFactor(1, 1);
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(splitter);

    connect(m_table->selectionModel(), &QItemSelectionModel::selectionChanged, this, &GemmInputPanel::updateHistogram);
}

void GemmInputPanel::setRecord(const NumericsRecord& record)
{
    const int previous = selectedRow();
    std::optional<GemmInputNumerics> kept;
    if (previous >= 0)
        kept = m_model->inputs()[static_cast<std::size_t>(previous)];
    m_model->setRecord(record);
    int row = m_model->rowCount() > 0 ? 0 : -1;
    if (kept) {
        const auto& inputs = m_model->inputs();
        const auto same = std::find_if(inputs.begin(), inputs.end(), [&](const GemmInputNumerics& g) {
            return g.layer == kept->layer && g.pass == kept->pass && g.operand == kept->operand;
        });
        if (same != inputs.end())
            row = static_cast<int>(same - inputs.begin());
    }
    selectRow(row);
}

void GemmInputPanel::selectRow(int row)
{
    if (row >= 0 && row < m_model->rowCount())
        m_table->selectRow(row);
    else
        m_table->clearSelection();
    updateHistogram();
}

int GemmInputPanel::selectedRow() const
{
    const QModelIndexList rows = m_table->selectionModel()->selectedRows();
    return rows.isEmpty() ? -1 : rows.first().row();
}

void GemmInputPanel::updateHistogram()
{
    auto* title = static_cast<QCPTextElement*>(m_plot->plotLayout()->element(0, 0));
    const int row = selectedRow();
    QVector<double> keys, counts;
    if (row < 0) {
        title->setText(tr("Select a row to see its block scales"));
    } else {
        const GemmInputNumerics& g = m_model->inputs()[static_cast<std::size_t>(row)];
        for (const auto& [exponent, count] : g.stats.scaleExponents) {
            keys << exponent;
            counts << static_cast<double>(count);
        }
        const std::string_view pass = enumKey(g.pass), operand = enumKey(g.operand);
        title->setText(tr("%1 %2 %3\n%4 blocks, %5 clipped")
                           .arg(QString::fromStdString(g.layer),
                                QString::fromLatin1(pass.data(), qsizetype(pass.size())),
                                QString::fromLatin1(operand.data(), qsizetype(operand.size())))
                           .arg(g.stats.blocks)
                           .arg(g.stats.clippedBlocks));
    }
    m_bars->setData(keys, counts, true);
    if (keys.isEmpty()) {
        m_plot->xAxis->setRange(-1, 1);
        m_plot->yAxis->setRange(0, 1);
    } else {
        m_plot->xAxis->setRange(keys.front() - 1, keys.back() + 1);
        m_plot->yAxis->setRange(0, *std::max_element(counts.begin(), counts.end()) * 1.1);
    }
    m_plot->replot();
}

} // namespace mantissa::ui
