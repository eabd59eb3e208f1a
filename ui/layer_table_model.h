#pragma once
// The layer table: one row per top-level layer of the document's model, with what the
// validator inferred (shape, parameters, FLOPs, tensor-core alignment). Edits go through
// the document, so each is one undo step and revalidates the model.
#include <QAbstractTableModel>

namespace mantissa::ui {

class ConfigDocument;

class LayerTableModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { Type, Params, OutputShape, ParamCount, Flops, Precision, TensorCores, ColumnCount };

    explicit LayerTableModel(ConfigDocument* document, QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
    Qt::ItemFlags flags(const QModelIndex& index) const override;
    bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;

    static QStringList precisionNames(); // the engine's LayerPrecision keys: auto, fp32, fp16, bf16

signals:
    // An edit was refused (a parameter that does not parse); the editor shows why.
    void editRejected(const QString& message);

private:
    void onDocumentChanged(bool restructured);
    QVariant tensorCoreData(int row, int role) const;

    ConfigDocument* m_document;
};

} // namespace mantissa::ui
