#pragma once
// Internal: who writes a run, and whether that writer is still alive. A run left
// "running" by a killed process must become "interrupted" at the next open, while a run
// whose writer is alive (another mantissa process training right now) must not.
#include <QDateTime>
#include <QString>

namespace mantissa::storage {

struct WriterIdentity {
    qint64 pid = 0;
    QString host;          // QSysInfo::machineHostName()
    QString boot;          // QSysInfo::bootUniqueId(): a reboot kills every writer
    qint64 startTicks = 0; // the process's start time (Linux /proc/PID/stat), 0 if unknown;
                           // tells a reused PID from the writer
};

WriterIdentity currentWriterIdentity();

// How long a run written on another host may go without a heartbeat before it counts as
// interrupted: we cannot ask another machine about its processes, and a database copied
// from another machine must not show a run as running forever.
constexpr qint64 kForeignHeartbeatTimeoutSeconds = 3600;

// True when the recorded writer may still be writing: on this host and boot, a live,
// non-zombie process with the same PID and start time; on another host, a heartbeat
// younger than kForeignHeartbeatTimeoutSeconds. An unknown writer (pid 0) is dead.
bool isWriterAlive(const WriterIdentity& writer, const QDateTime& heartbeat,
                   const QDateTime& now = QDateTime::currentDateTimeUtc());

} // namespace mantissa::storage
