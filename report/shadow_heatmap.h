#pragma once
// The shadow error heatmap (numerics.shadow_every): one tensor kind's relative RMS error against
// the same step in fp32, layers down in forward order, shadowed steps across, coloured by the
// error's log10 on the thermal scale; blue where the run's tensor held Inf or NaN. The Numerics
// tab and reports draw it with these two calls, so both read the same.
#include "engine/observe/records.h"

#include <QStringList>

#include <vector>

class QCPColorMap;
class QCPColorScale;
class QCustomPlot;

namespace mantissa::report {

struct ShadowHeatmap {
    QCPColorMap* map = nullptr;
    QCPColorScale* scale = nullptr;
};

// Adds an empty heatmap and its colour scale (right of the axes) to `plot`.
ShadowHeatmap addShadowHeatmap(QCustomPlot& plot);

// Shows `kind`'s tensors of `records` (steps in increasing order) on `heatmap`, with `plot`'s
// axes fitted to them; returns the rows, top to bottom. No records: an empty map. Does not replot.
QStringList fillShadowHeatmap(QCustomPlot& plot, const ShadowHeatmap& heatmap, const std::vector<ShadowRecord>& records,
                              ShadowTensor kind);

// Whether `records` hold any tensor of `kind`.
bool hasShadowTensors(const std::vector<ShadowRecord>& records, ShadowTensor kind);

} // namespace mantissa::report
