#pragma once
// Shows training progress: a live bar with ETA, loss, loss scale and samples/s on a
// terminal, plain lines (one per epoch and per event) otherwise. Writes to stderr so
// that stdout carries only the final JSON line.
#include "engine/observe/records.h"
#include "engine/observe/task_metric.h"

#include <chrono>
#include <cstdint>
#include <cstdio>

namespace mantissa::cli {

class ProgressPrinter final : public TrainingObserver {
public:
    ProgressPrinter(std::int64_t totalSteps, bool interactive, std::FILE* out = stderr);

    void onStep(const StepRecord& record) override;
    void onEpoch(const EpochRecord& record) override;
    void onEvent(const EventRecord& record) override;
    void finish();
    // The run's metric (task_metric.h): text runs give each epoch's test loss also in bits per
    // character, regression runs their RMSE in place of accuracies.
    void showMetric(TaskMetric metric) { m_metric = metric; }

private:
    void drawBar(const StepRecord& record);
    void clearBar();

    std::int64_t m_totalSteps;
    bool m_interactive;
    std::FILE* m_out;
    std::chrono::steady_clock::time_point m_lastDraw{};
    float m_smoothedLoss = 0;
    bool m_barVisible = false;
    std::int64_t m_overflows = 0;
    TaskMetric m_metric = TaskMetric::Accuracy;
};

} // namespace mantissa::cli
