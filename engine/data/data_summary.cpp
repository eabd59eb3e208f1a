#include "engine/data/data_summary.h"

#include "engine/data/file_dataset.h"
#include "engine/util/format_number.h"

#include <algorithm>
#include <cmath>

namespace mantissa {

namespace {

// A class that holds this many times fewer samples than the largest is worth a warning.
constexpr double kImbalanceRatio = 10;

std::vector<std::int64_t> countClasses(const Dataset& data)
{
    std::vector<std::int64_t> counts(static_cast<std::size_t>(std::max<std::int64_t>(data.classes, 0)));
    if (data.labelSize() != 1)
        return {};
    for (float y : data.labels)
        if (y >= 0 && static_cast<std::size_t>(y) < counts.size())
            ++counts[static_cast<std::size_t>(y)];
    return counts;
}

std::string className(const DataSummary& s, std::size_t c)
{
    return c < s.classNames.size() ? std::to_string(c) + " (" + s.classNames[c] + ")" : std::to_string(c);
}

std::string memoryText(std::int64_t bytes)
{
    const double b = static_cast<double>(bytes);
    if (b < (1 << 20))
        return formatNumber(std::round(b / (1 << 10) * 10) / 10) + " KiB";
    return formatNumber(std::round(b / (1 << 20) * 10) / 10) + " MiB";
}

} // namespace

DataSummary summarizeData(const DatasetSplits& splits, const DataSpec& spec, std::size_t maxRanges)
{
    DataSummary s;
    if (spec.dataset == DatasetKind::Files) {
        s.source = spec.path;
        s.format = std::string(enumKey(resolveDataFormat(spec.path, spec.format)));
    } else {
        s.source = splits.directory.empty() ? std::string(enumKey(spec.dataset)) : splits.directory;
        s.format = std::string(enumKey(spec.dataset));
    }
    s.trainSamples = splits.train.size();
    s.validationSamples = splits.validation.size();
    s.testSamples = splits.test.size();
    s.sampleShape = splits.train.sampleShape;
    s.labelShape = splits.train.labelShape;
    s.classes = splits.train.classes;
    s.regression = splits.task == DataTask::Regression;
    s.classNames = splits.classNames;
    s.trainCounts = countClasses(splits.train);
    s.testCounts = countClasses(splits.test);
    // The values as read: taken before normalising where the tensors were normalised since.
    s.ranges = splits.normalized ? splits.rawRanges : valueRanges(splits.train);
    s.featureCount = static_cast<std::int64_t>(s.ranges.size());
    if (splits.normalized)
        s.normalization = splits.normalization.describe();
    std::int64_t constant = 0;
    for (const ValueRange& r : s.ranges)
        constant += r.minimum == r.maximum ? 1 : 0;
    if (s.ranges.size() > maxRanges)
        s.ranges.resize(maxRanges);
    for (const Dataset* d : {&splits.train, &splits.validation, &splits.test})
        s.bytes += static_cast<std::int64_t>((d->inputs.size() + d->labels.size()) * sizeof(float));
    s.fingerprint = splits.fingerprint;
    s.notes = splits.notes;

    if (!s.trainCounts.empty()) {
        const auto [smallest, largest] = std::minmax_element(s.trainCounts.begin(), s.trainCounts.end());
        for (std::size_t c = 0; c < s.trainCounts.size(); ++c)
            if (s.trainCounts[c] == 0)
                s.problems.push_back("class " + className(s, c) + " has no training samples");
        if (*smallest > 0 && static_cast<double>(*largest) > kImbalanceRatio * static_cast<double>(*smallest))
            s.problems.push_back("the classes are imbalanced: class " +
                                 className(s, static_cast<std::size_t>(largest - s.trainCounts.begin())) + " has " +
                                 std::to_string(*largest) + " training samples, class " +
                                 className(s, static_cast<std::size_t>(smallest - s.trainCounts.begin())) + " " +
                                 std::to_string(*smallest));
    }
    for (std::size_t c = 0; c < s.testCounts.size(); ++c)
        if (s.testCounts[c] == 0 && !s.trainCounts.empty() && s.trainCounts[c] > 0 && s.testSamples > 0)
            s.problems.push_back("class " + className(s, c) + " has no test samples");
    if (constant > 0 && spec.dataset != DatasetKind::Text)
        s.problems.push_back(std::to_string(constant) + " of " + std::to_string(s.featureCount) +
                             (s.sampleShape.rank() == 3 ? " channels" : " features") +
                             " hold one value in every training sample (they carry no information)");
    return s;
}

std::string dataSummaryText(const DataSummary& s)
{
    std::string out;
    const auto line = [&](const std::string& label, const std::string& value) {
        out += label;
        out.append(label.size() < 13 ? 13 - label.size() : 1, ' ');
        out += value + "\n";
    };
    line("source", s.source);
    line("format", s.format);
    line("samples", std::to_string(s.trainSamples) + " training, " + std::to_string(s.validationSamples) +
                        " validation, " + std::to_string(s.testSamples) + " test");
    line("sample shape", s.sampleShape.toString() +
                             (s.labelShape.rank() > 0 ? " (labels " + s.labelShape.toString() + ")" : std::string()));
    if (s.regression) {
        const std::int64_t targets = s.labelShape.rank() > 0 ? s.labelShape.numel() : 1;
        line("task", "regression, " + std::to_string(targets) + (targets == 1 ? " target" : " targets") + " a sample");
    } else {
        line("classes", std::to_string(s.classes));
    }
    line("memory", memoryText(s.bytes) + " as float32");
    line("fingerprint", s.fingerprint);
    if (!s.normalization.empty())
        line("normalised", s.normalization);
    for (const std::string& note : s.notes)
        line("note", note);
    // A byte-level text has 256 classes: its histogram says little and takes a page.
    if (!s.trainCounts.empty() && s.classes <= 100) {
        out += "\nclass                 training      test\n";
        for (std::size_t c = 0; c < s.trainCounts.size(); ++c) {
            std::string name = className(s, c);
            if (name.size() > 20)
                name = name.substr(0, 19) + "~";
            std::string row = name;
            row.append(22 - name.size(), ' ');
            const std::string train = std::to_string(s.trainCounts[c]);
            const std::string test = c < s.testCounts.size() ? std::to_string(s.testCounts[c]) : "";
            row.append(train.size() < 8 ? 8 - train.size() : 1, ' ');
            row += train;
            row.append(test.size() < 10 ? 10 - test.size() : 1, ' ');
            row += test;
            out += row + "\n";
        }
    }
    if (!s.ranges.empty()) {
        out += "\nrange as read (training)   min           max          mean\n";
        for (const ValueRange& r : s.ranges) {
            std::string row = r.name;
            row.append(row.size() < 16 ? 16 - row.size() : 1, ' ');
            for (const std::string& v : {formatNumber(r.minimum), formatNumber(r.maximum), formatNumber(r.mean)}) {
                row.append(v.size() < 14 ? 14 - v.size() : 1, ' ');
                row += v;
            }
            out += row + "\n";
        }
        if (static_cast<std::int64_t>(s.ranges.size()) < s.featureCount)
            out += "(the first " + std::to_string(s.ranges.size()) + " of " + std::to_string(s.featureCount) + ")\n";
    }
    out += "\n";
    if (s.problems.empty())
        out += "problems     none found\n";
    for (const std::string& problem : s.problems)
        line("problem", problem);
    return out;
}

} // namespace mantissa
