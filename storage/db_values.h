#pragma once
// Internal: conversions between C++ values and the column conventions of docs/storage.md:
// times are ISO 8601 UTC text with milliseconds ("2025-01-31T12:00:00.000Z", sortable and
// understood by SQLite's date functions), "not known" is NULL, and NaN is NULL too
// (SQLite stores a bound NaN as NULL).
#include <QDateTime>
#include <QVariant>

#include <optional>

namespace mantissa::storage {

QString toDbTime(const QDateTime& time);
QString nowDbTime();
QDateTime fromDbTime(const QVariant& value); // invalid for NULL

template <typename T>
QVariant nullable(const std::optional<T>& value)
{
    return value ? QVariant::fromValue(*value) : QVariant();
}

// A new random UUID without braces: runs.uid, sweeps.uid.
QString newUid();

// For NOT NULL text columns: Qt binds a null QString (QString()) as NULL.
QVariant text(const QString& value);

std::optional<double> optionalDouble(const QVariant& value);
std::optional<qint64> optionalInt(const QVariant& value);
double doubleOrNan(const QVariant& value);

} // namespace mantissa::storage
