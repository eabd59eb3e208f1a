#include "storage/process_liveness.h"

#include <QCoreApplication>
#include <QFile>
#include <QSysInfo>

#include <cerrno>
#include <optional>

#include <signal.h>
#include <unistd.h>

namespace mantissa::storage {

namespace {

struct ProcStat {
    char state = '?';
    qint64 startTicks = 0;
};

// /proc/PID/stat: "pid (comm) state ppid ... starttime(22nd field) ...". comm may hold
// spaces and parentheses, so fields are counted from the last ')'.
std::optional<ProcStat> readProcStat(qint64 pid)
{
    QFile file(QStringLiteral("/proc/%1/stat").arg(pid));
    if (!file.open(QIODevice::ReadOnly))
        return std::nullopt;
    const QByteArray text = file.readAll();
    const qsizetype close = text.lastIndexOf(')');
    if (close < 0)
        return std::nullopt;
    const QList<QByteArray> fields = text.mid(close + 2).split(' '); // fields[0] is field 3
    if (fields.size() < 20)
        return std::nullopt;
    ProcStat stat;
    stat.state = fields[0].isEmpty() ? '?' : fields[0][0];
    stat.startTicks = fields[19].toLongLong();
    return stat;
}

bool processExists(qint64 pid)
{
    // Signal 0 checks existence; EPERM means it exists but belongs to someone else.
    return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

} // namespace

WriterIdentity currentWriterIdentity()
{
    WriterIdentity identity;
    identity.pid = QCoreApplication::applicationPid();
    identity.host = QSysInfo::machineHostName();
    identity.boot = QString::fromLatin1(QSysInfo::bootUniqueId());
    if (const auto stat = readProcStat(identity.pid))
        identity.startTicks = stat->startTicks;
    return identity;
}

bool isWriterAlive(const WriterIdentity& writer, const QDateTime& heartbeat, const QDateTime& now)
{
    if (writer.pid <= 0)
        return false;
    const WriterIdentity self = currentWriterIdentity();
    if (writer.host != self.host) {
        return heartbeat.isValid() && heartbeat.secsTo(now) < kForeignHeartbeatTimeoutSeconds;
    }
    if (!writer.boot.isEmpty() && !self.boot.isEmpty() && writer.boot != self.boot)
        return false;
    if (!processExists(writer.pid))
        return false;
    if (const auto stat = readProcStat(writer.pid)) {
        // A killed child stays a zombie until its parent reaps it: dead all the same.
        if (stat->state == 'Z' || stat->state == 'X')
            return false;
        if (writer.startTicks != 0 && stat->startTicks != writer.startTicks)
            return false; // the PID was reused by another process
    }
    return true;
}

} // namespace mantissa::storage
