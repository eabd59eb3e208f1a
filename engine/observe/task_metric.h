#pragma once
// The figure a run is judged by, which follows from its task: test accuracy for a classifier,
// the root mean squared error for regression (the square root of the test loss, which is the
// mean squared error), and bits per character for a byte-level language model (its loss in
// bits, bits_per_character.h). The CLI, the workbench, the reports and the comparisons show
// a run's metric where they would show accuracy, and ask this which one and how to write it.
#include "engine/config/run_config.h"
#include "engine/observe/bits_per_character.h"
#include "engine/observe/records.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

namespace mantissa {

enum class TaskMetric : std::uint8_t { Accuracy, Rmse, BitsPerCharacter };

// From the config a run was stored with: its data.task is resolved (never auto) once the data
// is read (resolveDataTask, engine/data/dataset.h).
inline TaskMetric taskMetricOf(const RunConfig& config)
{
    if (reportsBitsPerCharacter(config))
        return TaskMetric::BitsPerCharacter;
    if (config.data.dataset == DatasetKind::Files && config.data.task == DataTask::Regression)
        return TaskMetric::Rmse;
    return TaskMetric::Accuracy;
}

// The metric of a stored run, from its stored config JSON; accuracy for one this version
// cannot parse.
TaskMetric taskMetricOfStored(const std::string& configJson);

// The metric of an evaluation from its mean loss and its accuracy (a fraction); NaN where
// either is not known.
inline double taskMetricValue(TaskMetric metric, double loss, double accuracy)
{
    switch (metric) {
    case TaskMetric::Accuracy: return accuracy;
    case TaskMetric::Rmse: return loss >= 0 ? std::sqrt(loss) : NAN;
    case TaskMetric::BitsPerCharacter: return bitsPerCharacter(loss);
    }
    return NAN;
}

inline bool lowerIsBetter(TaskMetric metric) { return metric != TaskMetric::Accuracy; }

// "accuracy", "RMSE", "bits per character".
inline const char* taskMetricName(TaskMetric metric)
{
    switch (metric) {
    case TaskMetric::Accuracy: return "accuracy";
    case TaskMetric::Rmse: return "RMSE";
    case TaskMetric::BitsPerCharacter: return "bits per character";
    }
    return "";
}

// "84.10%", "0.1234" (four significant digits), "2.314"; "-" when not known.
inline std::string formatTaskMetric(TaskMetric metric, double value)
{
    if (!std::isfinite(value))
        return "-";
    char text[32];
    switch (metric) {
    case TaskMetric::Accuracy: std::snprintf(text, sizeof text, "%.2f%%", value * 100); break;
    case TaskMetric::Rmse: std::snprintf(text, sizeof text, "%.4g", value); break;
    case TaskMetric::BitsPerCharacter: std::snprintf(text, sizeof text, "%.3f", value); break;
    }
    return text;
}

// Which evaluation of an epoch: the test set, or the samples data.validation_split holds out.
enum class EvaluationSet : std::uint8_t { Test, Validation };

// An epoch's metric on the test set or on the validation samples (NaN where none were held out).
inline double epochMetricValue(TaskMetric metric, const EpochRecord& e, EvaluationSet set)
{
    return set == EvaluationSet::Test ? taskMetricValue(metric, e.testLoss, e.testAccuracy)
                                      : taskMetricValue(metric, e.validationLoss, e.validationAccuracy);
}

// Whether some epoch was evaluated on validation samples.
template <typename EpochRecords>
bool hasValidation(const EpochRecords& epochs)
{
    for (const EpochRecord& e : epochs)
        if (std::isfinite(e.validationLoss))
            return true;
    return false;
}

// A run's metric at its last epoch and at its best (the highest accuracy, the lowest RMSE or
// bits per character); NaN when no epoch has it.
struct MetricFigures {
    double final = NAN, best = NAN;
};

template <typename EpochRecords>
MetricFigures metricFigures(TaskMetric metric, const EpochRecords& epochs, EvaluationSet set = EvaluationSet::Test)
{
    MetricFigures figures;
    for (const EpochRecord& e : epochs) {
        const double value = epochMetricValue(metric, e, set);
        figures.final = value;
        if (std::isfinite(value) &&
            (!std::isfinite(figures.best) || (lowerIsBetter(metric) ? value < figures.best : value > figures.best)))
            figures.best = value;
    }
    return figures;
}

} // namespace mantissa
