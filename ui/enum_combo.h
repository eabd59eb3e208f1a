#pragma once
// Combo boxes over the engine's enum tables (engine/util/enum_table.h): the items are exactly
// the values the engine accepts, in its order, so the UI cannot offer a value the config parser
// would refuse nor miss one it gained (issue 15). Each item shows the value's display name,
// carries its key as item data and its description as a tooltip.
#include "engine/util/enum_table.h"

#include <QComboBox>
#include <QString>
#include <QStringList>

namespace mantissa::ui {

inline QString fromView(std::string_view text)
{
    return QString::fromUtf8(text.data(), static_cast<qsizetype>(text.size()));
}

template <typename E>
void fillEnumCombo(QComboBox* combo)
{
    for (const EnumEntry<E>& entry : enumEntries<E>()) {
        combo->addItem(fromView(entry.displayName), fromView(entry.key));
        combo->setItemData(combo->count() - 1, fromView(entry.description), Qt::ToolTipRole);
    }
}

// The value of item `index` of a combo filled by fillEnumCombo.
template <typename E>
E enumComboValue(const QComboBox* combo, int index)
{
    const auto value = parseEnum<E>(combo->itemData(index).toString().toStdString());
    Q_ASSERT(value.has_value());
    return value.value_or(enumEntries<E>().front().value);
}

template <typename E>
void setEnumComboValue(QComboBox* combo, E value)
{
    combo->setCurrentIndex(combo->findData(fromView(enumKey(value))));
}

// E's keys ("auto", "fp32", ...), for editors that work in keys (a table cell's combo).
template <typename E>
QStringList enumKeys()
{
    QStringList keys;
    for (const EnumEntry<E>& entry : enumEntries<E>())
        keys << fromView(entry.key);
    return keys;
}

} // namespace mantissa::ui
