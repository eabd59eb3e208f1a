#include "ui/recipe_measurement.h"

#include "storage/run_store.h"

#include <algorithm>
#include <cmath>
#include <string_view>

namespace mantissa::ui {

namespace {

// The operand a measured tensor stands for, if any.
std::optional<GemmOperand> operandOf(const TensorNumerics& t)
{
    switch (t.kind) {
    // A layer's own output only ("3.linear.output"; the layer's name in older records):
    // attention scores and norm statistics are measured as activations of their layer too,
    // under their own names, and are no GEMM's input.
    case TensorKind::Activation:
        return t.tensor == t.layer || t.tensor == t.layer + ".output" ? std::optional(GemmOperand::Activation)
                                                                      : std::nullopt;
    case TensorKind::ActivationGrad: return GemmOperand::Gradient;
    case TensorKind::Weight:
        return std::string_view(t.tensor).ends_with(".weight") ? std::optional(GemmOperand::Weight) : std::nullopt;
    case TensorKind::WeightGrad: return std::nullopt; // a GEMM's output, not an input
    }
    return std::nullopt;
}

// The binary exponent of the smallest nonzero finite value in the histogram.
std::optional<int> smallestExponent(const ExponentHistogram& histogram)
{
    for (int bin = 1; bin <= kHistogramExponentBins; ++bin)
        if (histogram[static_cast<std::size_t>(bin)] > 0)
            return histogramExponentOfBin(bin);
    return std::nullopt;
}

} // namespace

int lowestMeasurableExponent() { return kHistogramMinExponent; }

std::array<OperandMeasurement, 3> measureOperands(const NumericsRecord& record)
{
    std::array<OperandMeasurement, 3> result{};
    for (const TensorNumerics& t : record.tensors) {
        const auto operand = operandOf(t);
        if (!operand || t.stats.count == 0)
            continue;
        OperandMeasurement& m = result[static_cast<std::size_t>(*operand)];
        const float amax = t.stats.amax;
        m.amaxLow = m.tensors == 0 ? amax : std::min(m.amaxLow, amax);
        m.amaxHigh = m.tensors == 0 ? amax : std::max(m.amaxHigh, amax);
        ++m.tensors;
        const std::optional<int> smallest = smallestExponent(t.stats.histogram);
        if (!smallest)
            continue; // all zero
        m.smallest = m.smallest ? std::min(*m.smallest, *smallest) : *smallest;
        if (amax > 0)
            m.widestSpanBinades = std::max(m.widestSpanBinades, std::log2(double(amax)) - *smallest);
    }
    for (const GemmInputNumerics& g : record.gemmInputs) {
        std::optional<QuantStats>& q = result[static_cast<std::size_t>(g.operand)].quantized;
        if (!q)
            q = QuantStats{};
        q->merge(g.stats);
    }
    return result;
}

std::optional<RecipeMeasurement> readRecipeMeasurement(const storage::RunStore& store, qint64 runId,
                                                       const RunConfig& config, const QString& name)
{
    const QList<qint64> steps = store.numericsSteps(runId);
    if (steps.isEmpty())
        return std::nullopt;
    RecipeMeasurement m;
    m.runName = name;
    m.runId = runId;
    m.step = steps.last();
    m.config = config;
    m.operands = measureOperands(store.numerics(runId, m.step));
    return m;
}

} // namespace mantissa::ui
