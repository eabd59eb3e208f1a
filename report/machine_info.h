#pragma once
// What a report says about hardware: the machine that writes the report (from
// /proc/cpuinfo) and the device each run trained on, read back from the run's "device"
// column ("cpu (OpenBLAS, 8 threads, F16C): <model>" or "cuda: <GPU>, driver ..., CUDA
// ..., cuDNN ..."). The store keeps the device as free text, so parsing is lenient: what
// it cannot recognise stays in `description`.
#include <QString>

namespace mantissa::report {

struct MachineInfo {
    QString hostName;
    QString operatingSystem; // "Debian GNU/Linux 12 (bookworm), kernel 6.1.0"
    QString cpuModel;        // empty when /proc/cpuinfo is not there (not Linux)
    int logicalCores = 0;    // "processor" entries
    int physicalCores = 0;   // distinct (physical id, core id) pairs; 0 when not listed
};

// Parses the text of /proc/cpuinfo (x86 and ARM spellings of the model).
MachineInfo parseCpuInfo(const QString& cpuinfo);
// This machine: /proc/cpuinfo, host name and OS.
MachineInfo localMachineInfo();

struct DeviceInfo {
    QString description;                       // the stored text, verbatim
    QString kind;                              // "cpu", "cuda" or "" when not recognised
    QString name;                              // CPU model or GPU name
    QString backendDetails;                    // "OpenBLAS, F16C" for the CPU backend
    int threads = 0;                           // CPU threads the run used; 0 when not recorded
    QString driver, cudaVersion, cudnnVersion; // CUDA runs, when recorded
};

DeviceInfo parseDeviceDescription(const QString& device);

} // namespace mantissa::report
