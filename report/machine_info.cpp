#include "report/machine_info.h"

#include <QFile>
#include <QRegularExpression>
#include <QSet>
#include <QSysInfo>

namespace mantissa::report {

namespace {

QString captured(const QString& text, const QString& pattern)
{
    const QRegularExpressionMatch match = QRegularExpression(pattern).match(text);
    return match.hasMatch() ? match.captured(1).trimmed() : QString();
}

// "cuda: NVIDIA H100 80GB HBM3, driver 550.54.15, CUDA 12.4, cuDNN 9.1.0" and the
// variants a backend may write ("cuda:0 (NVIDIA A100, driver 535, CUDA 12.2)").
void parseCuda(const QString& rest, DeviceInfo& info)
{
    info.driver = captured(rest, QStringLiteral("[Dd]river\\s*:?\\s*v?([0-9][0-9.]*)"));
    info.cudaVersion = captured(rest, QStringLiteral("\\bCUDA\\s*:?\\s*v?([0-9][0-9.]*)"));
    info.cudnnVersion = captured(rest, QStringLiteral("\\bcu[Dd][Nn][Nn]\\s*:?\\s*v?([0-9][0-9.]*)"));
    static const QRegularExpression versionField(QStringLiteral("^(driver|CUDA|cuDNN|cudnn)\\b"),
                                                 QRegularExpression::CaseInsensitiveOption);
    QString fields = rest;
    fields.remove(QRegularExpression(QStringLiteral("^[:\\s(]+|[)\\s]+$")));
    for (const QString& field : fields.split(QLatin1Char(','), Qt::SkipEmptyParts)) {
        const QString trimmed = field.trimmed();
        if (!trimmed.isEmpty() && !versionField.match(trimmed).hasMatch()) {
            info.name = trimmed;
            break;
        }
    }
}

// "cpu (OpenBLAS, 8 threads, F16C): Intel(R) Xeon(R) ..." as the CLI records it.
void parseCpu(const QString& rest, DeviceInfo& info)
{
    const QRegularExpressionMatch match =
        QRegularExpression(QStringLiteral("^\\s*(?:\\(([^)]*)\\))?\\s*:?\\s*(.*)$")).match(rest);
    QStringList details;
    for (const QString& part : match.captured(1).split(QLatin1Char(','), Qt::SkipEmptyParts)) {
        const QString trimmed = part.trimmed();
        const QRegularExpressionMatch threads =
            QRegularExpression(QStringLiteral("^(\\d+)\\s+threads?$")).match(trimmed);
        if (threads.hasMatch())
            info.threads = threads.captured(1).toInt();
        else
            details << trimmed;
    }
    info.backendDetails = details.join(QStringLiteral(", "));
    info.name = match.captured(2).trimmed();
}

} // namespace

MachineInfo parseCpuInfo(const QString& cpuinfo)
{
    MachineInfo info;
    QSet<QString> cores;
    QString physicalId;
    for (const QString& line : cpuinfo.split(QLatin1Char('\n'))) {
        const qsizetype colon = line.indexOf(QLatin1Char(':'));
        if (colon < 0)
            continue;
        const QString key = line.left(colon).trimmed();
        const QString value = line.mid(colon + 1).trimmed();
        if (key == QLatin1String("processor"))
            ++info.logicalCores;
        else if (info.cpuModel.isEmpty() && (key == QLatin1String("model name") || key == QLatin1String("Model")))
            info.cpuModel = value.simplified();
        else if (key == QLatin1String("physical id"))
            physicalId = value;
        else if (key == QLatin1String("core id"))
            cores.insert(physicalId + QLatin1Char('/') + value);
    }
    info.physicalCores = int(cores.size());
    return info;
}

MachineInfo localMachineInfo()
{
    MachineInfo info;
    QFile file(QStringLiteral("/proc/cpuinfo"));
    if (file.open(QIODevice::ReadOnly | QIODevice::Text))
        info = parseCpuInfo(QString::fromLocal8Bit(file.readAll()));
    info.hostName = QSysInfo::machineHostName();
    info.operatingSystem = QStringLiteral("%1, %2 %3")
                               .arg(QSysInfo::prettyProductName(), QSysInfo::kernelType(), QSysInfo::kernelVersion());
    return info;
}

DeviceInfo parseDeviceDescription(const QString& device)
{
    DeviceInfo info;
    info.description = device.trimmed();
    const QRegularExpressionMatch match =
        QRegularExpression(QStringLiteral("^(cpu|cuda)(?::\\d+)?(.*)$"), QRegularExpression::CaseInsensitiveOption)
            .match(info.description);
    if (!match.hasMatch())
        return info;
    info.kind = match.captured(1).toLower();
    if (info.kind == QLatin1String("cuda"))
        parseCuda(match.captured(2), info);
    else
        parseCpu(match.captured(2), info);
    return info;
}

} // namespace mantissa::report
