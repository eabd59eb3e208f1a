#include "engine/observe/task_metric.h"

#include "engine/util/check.h"

namespace mantissa {

TaskMetric taskMetricOfStored(const std::string& configJson)
{
    try {
        return taskMetricOf(parseRunConfig(configJson, "the stored config"));
    } catch (const ConfigError&) {
        return TaskMetric::Accuracy;
    }
}

} // namespace mantissa
