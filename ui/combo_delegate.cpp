#include "ui/combo_delegate.h"

#include <QAbstractItemView>
#include <QComboBox>

namespace mantissa::ui {

ComboDelegate::ComboDelegate(QStringList choices, QObject* parent, bool acceptsText)
    : QStyledItemDelegate(parent), m_choices(std::move(choices)), m_acceptsText(acceptsText)
{}

QWidget* ComboDelegate::createEditor(QWidget* parent, const QStyleOptionViewItem&, const QModelIndex&) const
{
    auto* combo = new QComboBox(parent);
    combo->addItems(m_choices);
    combo->setEditable(m_acceptsText);
    // The list as wide as its longest choice ("fp8-delayed"), however narrow the cell.
    combo->view()->setMinimumWidth(combo->view()->sizeHintForColumn(0) + 2 * combo->view()->frameWidth());
    combo->setInsertPolicy(QComboBox::NoInsert);
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
    const QString current = index.data(Qt::EditRole).toString();
    combo->setCurrentIndex(std::max(0, static_cast<int>(m_choices.indexOf(current))));
    if (m_acceptsText)
        combo->setEditText(current);
}

void ComboDelegate::setModelData(QWidget* editor, QAbstractItemModel* model, const QModelIndex& index) const
{
    model->setData(index, static_cast<QComboBox*>(editor)->currentText(), Qt::EditRole);
}

} // namespace mantissa::ui
