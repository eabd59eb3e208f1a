#pragma once
// The Model tab of an imported model (model.onnx): its nodes in the order they run, with the
// output shape, parameters and FLOPs of each, the precision each runs in under the current mode
// (recomputed when the mode changes), and the nodes that cannot train marked. The layer editor's
// counterpart for a model that is a file rather than a list.
#include "engine/config/run_config.h"

#include <QWidget>

#include <optional>

class QLabel;
class QTableWidget;
class QTableWidgetItem;

namespace mantissa::ui {

class ConfigDocument;

class ModelFileView : public QWidget {
    Q_OBJECT
public:
    explicit ModelFileView(ConfigDocument* document, QWidget* parent = nullptr);

    QTableWidget* table() const { return m_table; }
    QString summaryText() const;
    // Why the model does not compile under the current settings; empty when it does.
    QString problemText() const;

    // The precision last: its text is the longest, and the column stretches. Format is the
    // node's entry in model.precision_overrides (editable; auto follows the run's mode).
    enum Column { Index, Node, Op, OutputShape, Parameters, Flops, Trains, Format, Precision, ColumnCount };

private:
    void refresh();
    // A Format cell edited: the node's entry in model.precision_overrides set, or removed for auto.
    void formatEdited(QTableWidgetItem* item);

    bool m_filling = false; // refresh() is writing the cells

    ConfigDocument* m_document;
    QLabel* m_summary;
    QTableWidget* m_table;
    QLabel* m_problem;
    // What the table depends on, as it was computed: the file, its shapes and the precision.
    struct Shown {
        ModelSpec model;
        PrecisionMode precision = PrecisionMode::Fp32;
        RecipeOptions recipe;
        PrecisionOverrides overrides;
    };
    std::optional<Shown> m_shown;
};

} // namespace mantissa::ui
