#pragma once
// The precision panel's table of a sub-16-bit recipe (issue 17): one column per GEMM operand
// (activations, weights, gradients), one row per fact: the element format and how it is
// scaled (block, scale format, rounding), the element format's range (max, smallest normal,
// smallest subnormal, binades between them), and, when a recorded run measured the tensors,
// their range beside it (per-tensor amax over the layers, the smallest nonzero magnitude, the
// widest span of one tensor) and what the recipe's quantisation did to them (clipped blocks,
// values flushed to zero, SQNR). The table is transposed (operands across) because the
// precision panel is narrow and the facts are many.
#include "engine/precision/gemm_recipe.h"
#include "ui/recipe_measurement.h"

#include <QAbstractTableModel>

#include <optional>

namespace mantissa::ui {

class RecipeFormatTableModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Row {
        Format,
        Element,
        Block,
        Scale,
        Rounding,
        Max,
        MinNormal,
        MinSubnormal,
        SpanBinades,
        MeasuredAmax,
        MeasuredSmallest,
        MeasuredSpan,
        ClippedBlocks,
        Flushed,
        Sqnr,
        RowCount
    };
    // Qt::UserRole of a numeric cell: its value as a double (the range rows, the measured span).
    static constexpr int ValueRole = Qt::UserRole;

    explicit RecipeFormatTableModel(QObject* parent = nullptr);

    // `recipe` None empties the table.
    void setRecipe(GemmRecipe recipe, const RecipeOptions& options);
    // The measured rows show `measurement`'s figures; nullopt leaves them empty. The
    // quantisation rows show only when `sameRecipe` (the run used this recipe and options):
    // another recipe's clipping says nothing about this one's.
    void setMeasurement(std::optional<RecipeMeasurement> measurement, bool sameRecipe);

    GemmRecipe recipe() const { return m_recipe; }
    const OperandFormat& format(GemmOperand operand) const { return m_formats[static_cast<std::size_t>(operand)]; }

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    QVariant display(Row row, GemmOperand operand) const;
    QVariant value(Row row, GemmOperand operand) const;
    bool warns(Row row, GemmOperand operand) const;

    GemmRecipe m_recipe = GemmRecipe::None;
    RecipeOptions m_options;
    std::array<OperandFormat, 3> m_formats{};
    std::optional<RecipeMeasurement> m_measurement;
    bool m_sameRecipe = false;
};

// "448", "57344", "0.015625 (2^-6)": a format limit as the table shows it.
QString formatLimitText(double value);

} // namespace mantissa::ui
