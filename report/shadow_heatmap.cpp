#include "report/shadow_heatmap.h"

#include <qcustomplot.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

namespace mantissa::report {

namespace {

// The colour scale's floor, in log10 of the relative error: an exact tensor is drawn there.
constexpr double kFloor = -8;
// At most this many row labels; with more rows, every few are labelled.
constexpr int kLabelledRows = 16;

} // namespace

ShadowHeatmap addShadowHeatmap(QCustomPlot& plot)
{
    ShadowHeatmap heatmap;
    plot.xAxis->setLabel(QStringLiteral("step"));
    heatmap.map = new QCPColorMap(plot.xAxis, plot.yAxis);
    heatmap.map->setInterpolate(false);
    heatmap.scale = new QCPColorScale(&plot);
    plot.plotLayout()->addElement(0, 1, heatmap.scale);
    heatmap.scale->setType(QCPAxis::atRight);
    heatmap.scale->axis()->setLabel(QStringLiteral("log10 relative RMS error vs fp32"));
    heatmap.map->setColorScale(heatmap.scale);
    QCPColorGradient gradient(QCPColorGradient::gpThermal);
    gradient.setNanHandling(QCPColorGradient::nhNanColor);
    gradient.setNanColor(QColor(40, 110, 255)); // Inf or NaN in the run's tensor: no measure
    heatmap.map->setGradient(gradient);
    auto* margins = new QCPMarginGroup(&plot);
    plot.axisRect()->setMarginGroup(QCP::msBottom | QCP::msTop, margins);
    heatmap.scale->setMarginGroup(QCP::msBottom | QCP::msTop, margins);
    return heatmap;
}

QStringList fillShadowHeatmap(QCustomPlot& plot, const ShadowHeatmap& heatmap, const std::vector<ShadowRecord>& records,
                              ShadowTensor kind)
{
    QCPColorMap& map = *heatmap.map;
    QStringList rows;
    if (records.empty()) {
        map.data()->clear();
        return rows;
    }
    // Rows in the order the first record met them (forward order), later newcomers below.
    std::map<std::string, int> rowOf;
    for (const ShadowRecord& r : records)
        for (const ShadowError& e : r.errors)
            if (e.kind == kind && rowOf.try_emplace(e.tensor, static_cast<int>(rows.size())).second)
                rows << QString::fromStdString(e.tensor);
    const int columns = static_cast<int>(records.size());
    const int rowCount = std::max(1, static_cast<int>(rows.size()));
    const double first = static_cast<double>(records.front().step);
    const double last = static_cast<double>(records.back().step);
    // Row k at value k, and the axis reversed: the first layer at the top.
    map.data()->setSize(columns, rowCount);
    map.data()->setRange(QCPRange(first, last), QCPRange(0, rowCount - 1));
    for (int x = 0; x < columns; ++x)
        for (int y = 0; y < rowCount; ++y)
            map.data()->setCell(x, y, kFloor);
    // The colours span the errors measured, in half decades; exact tensors take the lowest.
    double lowest = 0, highest = kFloor;
    for (int x = 0; x < columns; ++x)
        for (const ShadowError& e : records[static_cast<std::size_t>(x)].errors) {
            if (e.kind != kind)
                continue;
            const double rel = e.energies.relativeRms();
            const double value = std::isnan(rel) ? rel : rel == 0 ? kFloor : std::max(kFloor, std::log10(rel));
            if (!std::isnan(value) && value > kFloor) {
                lowest = std::min(lowest, value);
                highest = std::max(highest, value);
            }
            map.data()->setCell(x, rowOf.at(e.tensor), value);
        }
    if (highest <= kFloor)
        lowest = highest = kFloor; // every tensor exact
    map.setDataRange(
        QCPRange(std::floor(2 * lowest) / 2, std::max(std::ceil(2 * highest) / 2, std::floor(2 * lowest) / 2 + 0.5)));
    QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
    const int every = std::max(1, (static_cast<int>(rows.size()) + kLabelledRows - 1) / kLabelledRows);
    for (int y = 0; y < rows.size(); y += every)
        ticker->addTick(y, rows[y]);
    plot.yAxis->setTicker(ticker);
    plot.yAxis->setRange(-0.5, rowCount - 0.5);
    plot.yAxis->setRangeReversed(true);
    const double half = columns > 1 ? (last - first) / (columns - 1) / 2 : 1;
    plot.xAxis->setRange(first - half, last + half);
    return rows;
}

bool hasShadowTensors(const std::vector<ShadowRecord>& records, ShadowTensor kind)
{
    return std::any_of(records.begin(), records.end(), [kind](const ShadowRecord& r) {
        return std::any_of(r.errors.begin(), r.errors.end(), [kind](const ShadowError& e) { return e.kind == kind; });
    });
}

} // namespace mantissa::report
