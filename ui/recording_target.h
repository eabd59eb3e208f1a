#pragma once
// Where the GUI records its runs: the workbench's database (and comparison group), handed to
// the training worker, which records through storage::RunRecorder on its own thread.
#include <QString>

#include <optional>

namespace mantissa::ui {

struct RecordingTarget {
    QString databasePath;          // empty: the run is not recorded
    std::optional<qint64> groupId; // comparison group
    QString runName;               // empty: generated
    // A fork: the saved training state it continues (Trainer::resumeFrom), and the parent run
    // and step it is recorded as the fork of.
    QString resumeFrom;
    qint64 parentRunId = 0, parentStep = 0;
};

} // namespace mantissa::ui
