#include "ui/combo_delegate.h"

#include <QComboBox>

namespace mantissa::ui {

ComboDelegate::ComboDelegate(QStringList choices, QObject* parent)
    : QStyledItemDelegate(parent), m_choices(std::move(choices))
{}

QWidget* ComboDelegate::createEditor(QWidget* parent, const QStyleOptionViewItem&, const QModelIndex&) const
{
    auto* combo = new QComboBox(parent);
    combo->addItems(m_choices);
    // Commit on choice: otherwise the edit only lands when focus leaves the cell.
    connect(combo, &QComboBox::activated, this, [this, combo] {
        emit const_cast<ComboDelegate*>(this)->commitData(combo);
        emit const_cast<ComboDelegate*>(this)->closeEditor(combo);
    });
    return combo;
}

void ComboDelegate::setEditorData(QWidget* editor, const QModelIndex& index) const
{
    auto* combo = static_cast<QComboBox*>(editor);
    combo->setCurrentIndex(std::max(0, static_cast<int>(m_choices.indexOf(index.data(Qt::EditRole).toString()))));
}

void ComboDelegate::setModelData(QWidget* editor, QAbstractItemModel* model, const QModelIndex& index) const
{
    model->setData(index, static_cast<QComboBox*>(editor)->currentText(), Qt::EditRole);
}

} // namespace mantissa::ui
