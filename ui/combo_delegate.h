#pragma once
// An item delegate that edits a cell with a combo box of fixed choices (layer type,
// per-layer precision), committing as soon as a choice is made.
#include <QStringList>
#include <QStyledItemDelegate>

namespace mantissa::ui {

class ComboDelegate : public QStyledItemDelegate {
    Q_OBJECT
public:
    ComboDelegate(QStringList choices, QObject* parent = nullptr);

    QWidget* createEditor(QWidget* parent, const QStyleOptionViewItem& option, const QModelIndex& index) const override;
    void setEditorData(QWidget* editor, const QModelIndex& index) const override;
    void setModelData(QWidget* editor, QAbstractItemModel* model, const QModelIndex& index) const override;

private:
    QStringList m_choices;
};

} // namespace mantissa::ui
