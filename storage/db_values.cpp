#include "storage/db_values.h"

#include <QUuid>

#include <limits>

namespace mantissa::storage {

QString toDbTime(const QDateTime& time) { return time.toUTC().toString(Qt::ISODateWithMs); }

QString nowDbTime() { return toDbTime(QDateTime::currentDateTimeUtc()); }

QDateTime fromDbTime(const QVariant& value)
{
    if (value.isNull())
        return {};
    return QDateTime::fromString(value.toString(), Qt::ISODateWithMs).toUTC();
}

QString newUid() { return QUuid::createUuid().toString(QUuid::WithoutBraces); }

QVariant text(const QString& value) { return value.isNull() ? QVariant(QStringLiteral("")) : QVariant(value); }

std::optional<double> optionalDouble(const QVariant& value)
{
    if (value.isNull())
        return std::nullopt;
    return value.toDouble();
}

std::optional<qint64> optionalInt(const QVariant& value)
{
    if (value.isNull())
        return std::nullopt;
    return value.toLongLong();
}

double doubleOrNan(const QVariant& value)
{
    return value.isNull() ? std::numeric_limits<double>::quiet_NaN() : value.toDouble();
}

} // namespace mantissa::storage
