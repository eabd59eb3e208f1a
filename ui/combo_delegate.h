#pragma once
// An item delegate that edits a cell with a combo box of fixed choices (layer type,
// per-layer precision), committing as soon as a choice is made.
#include <QStringList>
#include <QStyledItemDelegate>

namespace mantissa::ui {

class ComboDelegate : public QStyledItemDelegate {
    Q_OBJECT
public:
    // `acceptsText`: the combo also takes typed text (a layer's per-role format,
    // "inputs=bf16, weights=mxfp4"), which the model checks when it is committed.
    ComboDelegate(QStringList choices, QObject* parent = nullptr, bool acceptsText = false);

    QWidget* createEditor(QWidget* parent, const QStyleOptionViewItem& option, const QModelIndex& index) const override;
    void setEditorData(QWidget* editor, const QModelIndex& index) const override;
    void setModelData(QWidget* editor, QAbstractItemModel* model, const QModelIndex& index) const override;

private:
    QStringList m_choices;
    bool m_acceptsText = false;
};

} // namespace mantissa::ui
