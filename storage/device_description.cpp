#include "storage/device_description.h"

#include <QFile>
#include <QRegularExpression>

namespace mantissa::storage {

namespace {

// Linux only; elsewhere the backend's own name has to do.
QString cpuModel()
{
    QFile cpuinfo(QStringLiteral("/proc/cpuinfo"));
    if (!cpuinfo.open(QIODevice::ReadOnly | QIODevice::Text))
        return {};
    static const QRegularExpression modelName(QStringLiteral("^model name\\s*:\\s*(.+)$"),
                                              QRegularExpression::MultilineOption);
    const QRegularExpressionMatch match = modelName.match(QString::fromLocal8Bit(cpuinfo.readAll()));
    return match.hasMatch() ? match.captured(1).simplified() : QString();
}

} // namespace

QString deviceDescription(const Backend& backend)
{
    QString description = QString::fromStdString(backend.name());
    if (description.startsWith(QStringLiteral("cpu"))) {
        if (const QString model = cpuModel(); !model.isEmpty())
            description += QStringLiteral(": ") + model;
    }
    return description;
}

} // namespace mantissa::storage
