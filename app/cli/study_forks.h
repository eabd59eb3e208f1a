#pragma once
// The fork arms of a study, run here: each missing fork (sweep::studyForkTasks) as a
// `mantissa-cli fork PARENT --at STEP --set ...` process of this same binary, up to `jobs` at
// once, its new run tagged with the fork's key (studyForkTag) so that a study started again
// finds it. A line per fork on stderr; Ctrl-C stops the running forks at a step boundary and
// starts no more.
#include "sweep/study_results.h"

#include <QString>

namespace mantissa::cli {

struct StudyForkOutcome {
    int ran = 0, results = 0, failed = 0, notStarted = 0;
};

StudyForkOutcome runStudyForks(storage::RunStore& store, const sweep::StudySpec& spec,
                               const std::vector<sweep::ForkTask>& tasks, int jobs, int threads);

} // namespace mantissa::cli
