#pragma once
// The layer table: one row per top-level layer of the document's model, with what the
// validator inferred (shape, parameters, FLOPs, tensor-core alignment). A composite layer (a
// transformer block, a residual block) is one row that expands into its parts, read-only: the
// block is edited as a whole. Edits go through the document, so each is one undo step and
// revalidates the model.
#include <QAbstractItemModel>

#include <vector>

namespace mantissa {
struct LayerSpec;
}

namespace mantissa::ui {

class ConfigDocument;

class LayerTableModel : public QAbstractItemModel {
    Q_OBJECT
public:
    enum Column { Index, Type, Params, OutputShape, ParamCount, Flops, Precision, TensorCores, ColumnCount };

    explicit LayerTableModel(ConfigDocument* document, QObject* parent = nullptr);

    QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
    QModelIndex parent(const QModelIndex& child) const override;
    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
    Qt::ItemFlags flags(const QModelIndex& index) const override;
    bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;

    // The top-level layer an index belongs to (its own row, or its block's for a part); -1 if none.
    static int layerRow(const QModelIndex& index);

    // The engine's LayerPrecision keys: auto, fp32, fp16, bf16 and the recipes' (fp8-hybrid ... nvfp4).
    static QStringList precisionNames();

signals:
    // An edit was refused (a parameter that does not parse); the editor shows why.
    void editRejected(const QString& message);

private:
    void onDocumentChanged(bool restructured);
    // A block part's Precision cell: its entry in model.precision_overrides ("auto" removes it).
    bool setPartFormat(const QModelIndex& index, const QString& text);
    QVariant layerData(int row, int column, int role) const;
    QVariant partData(int layer, int part, int column, int role) const;
    QVariant tensorCoreData(int row, int role) const;
    // How many parts the validator reported for top-level layer `row` (0 for a plain layer).
    int partCount(int row) const;

    ConfigDocument* m_document;
    // The part counts the view was last told about: a row's children change only through a
    // reset, so an edit that changes them (a residual body, an invalid block) resets the model.
    std::vector<int> m_partCounts;
};

} // namespace mantissa::ui
