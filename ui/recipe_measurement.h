#pragma once
// What a recorded run measured of the three tensors a sub-16-bit recipe quantises (issue 17),
// reduced from one sampled step's NumericsRecord to one figure set per GEMM operand, so that
// the precision panel can put a format's range beside the range the tensors really have.
//  - Activations: every layer's output (the next layer's GEMM input x).
//  - Weights: every ".weight" parameter (biases are not GEMM inputs).
//  - Gradients: every layer's input gradient (the previous layer's output gradient dy) and
//    the loss gradient (the last layer's dy).
// The ranges come from the per-tensor statistics any run with sampling records, whatever its
// precision; what the quantisation did (clipped blocks, values flushed, SQNR) exists only for
// a run that used a recipe, merged over its layers and GEMMs.
#include "engine/config/run_config.h"
#include "engine/observe/records.h"

#include <QString>

#include <array>
#include <optional>

namespace mantissa::storage {
class RunStore;
}

namespace mantissa::ui {

struct OperandMeasurement {
    int tensors = 0;                     // measured tensors of this operand; 0: none
    float amaxLow = 0;                   // the smallest per-tensor amax
    float amaxHigh = 0;                  // the largest
    std::optional<int> smallest;         // binary exponent of the smallest nonzero |x| over all of them
    double widestSpanBinades = 0;        // largest log2(amax / smallest nonzero |x|) of one tensor
    std::optional<QuantStats> quantized; // the run's GEMM inputs of this operand, merged
};

// Exponent below which the lens's histogram does not tell values apart (tensor_stats.h): a
// smallest exponent equal to it means "this small or smaller".
int lowestMeasurableExponent();

struct RecipeMeasurement {
    QString runName; // "mlp · mxfp4"
    qint64 runId = 0;
    qint64 step = 0;                              // the sampled step measured (the run's last)
    RunConfig config;                             // the run's config: which model and precision the figures belong to
    std::array<OperandMeasurement, 3> operands{}; // by GemmOperand

    const OperandMeasurement& operator[](GemmOperand operand) const
    {
        return operands[static_cast<std::size_t>(operand)];
    }
};

// Reduces one sampled step to the three operands.
std::array<OperandMeasurement, 3> measureOperands(const NumericsRecord& record);

// The last sampled step of recorded run `runId` (trained with `config`, shown as `name`);
// nullopt when the run sampled none. Throws what the store throws.
std::optional<RecipeMeasurement> readRecipeMeasurement(const storage::RunStore& store, qint64 runId,
                                                       const RunConfig& config, const QString& name);

} // namespace mantissa::ui
