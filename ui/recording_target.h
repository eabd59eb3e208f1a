#pragma once
// Where the GUI records its runs: the workbench's database (and comparison group), handed to
// the training worker, which records through storage::RunRecorder on its own thread.
#include <QString>

#include <optional>

namespace mantissa::ui {

struct RecordingTarget {
    QString databasePath;          // empty: the run is not recorded
    std::optional<qint64> groupId; // comparison group
};

} // namespace mantissa::ui
