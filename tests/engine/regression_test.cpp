// Regression (data.task regression): real-valued targets from tables and NumPy arrays, the
// mean squared error op (in fp32 whatever the predictions' dtype), a model that learns a
// linear map to a small RMSE, and class labels that are not class indices named with their place.
#include "engine/backend/backend.h"
#include "engine/data/dataset.h"
#include "engine/numerics/conversions.h"
#include "engine/observe/task_metric.h"
#include "engine/train/trainer.h"
#include "small_run_config.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

using namespace mantissa;
using mantissa::test_support::layerSpec;
namespace fs = std::filesystem;

namespace {

class Regression : public ::testing::Test {
protected:
    void SetUp() override
    {
        m_dir = fs::temp_directory_path() / ("mantissa-regression-" + std::to_string(::getpid()));
        fs::remove_all(m_dir);
        fs::create_directories(m_dir);
    }
    void TearDown() override { fs::remove_all(m_dir); }

    fs::path write(const std::string& name, const std::string& text)
    {
        std::ofstream(m_dir / name, std::ios::binary) << text;
        return m_dir / name;
    }

    static DataSpec filesSpec(const fs::path& path)
    {
        DataSpec spec;
        spec.dataset = DatasetKind::Files;
        spec.path = path.string();
        spec.normalize = false;
        return spec;
    }

    fs::path m_dir;
};

std::string dataErrorOf(const DataSpec& spec)
{
    try {
        loadDatasets(spec, 1);
    } catch (const DataError& e) {
        return e.what();
    }
    return "(no DataError)";
}

// The step's loss op on the CPU, as the trainer runs it.
struct StepLoss {
    float loss = 0, correct = -1;
    std::vector<float> gradient;
};

StepLoss stepLoss(const std::vector<float>& predictions, DType dtype, const std::vector<float>& targets,
                  std::int64_t batch, float lossScale)
{
    auto backend = makeCpuBackend(1);
    StepScalars scalars;
    scalars.inputs = backend->empty({kStepInputCount}, DType::F32);
    scalars.state = backend->empty({kStepStateCount}, DType::F32);
    backend->fill(scalars.inputs, 0.0f);
    backend->fill(scalars.state, 7.0f);
    scalars.state.f32()[slot(StepState::LossScale)] = lossScale;
    const Shape shape{batch, static_cast<std::int64_t>(predictions.size()) / batch};
    const Tensor p = Tensor::fromFloats(shape, predictions, dtype);
    const Tensor t = Tensor::fromFloats({static_cast<std::int64_t>(targets.size())}, targets);
    Tensor dp = backend->empty(shape, dtype);
    backend->meanSquaredError(p, t, scalars, dp);
    return {scalars.state.f32()[slot(StepState::Loss)], scalars.state.f32()[slot(StepState::Correct)], dp.toFloats()};
}

TEST(MeanSquaredError, LossAndGradientOverEveryValue)
{
    // Two samples of two targets: differences 1, -2, 0.5, 3; squares 1, 4, 0.25, 9.
    const StepLoss r = stepLoss({1, 0, 2.5f, 3}, DType::F32, {0, 2, 2, 0}, 2, 4.0f);
    EXPECT_EQ(r.loss, 14.25f / 4);
    EXPECT_EQ(r.correct, 0.0f);
    // lossScale * 2 (p - t) / (N K) = 4 * 2 / 4 * difference.
    EXPECT_EQ(r.gradient, (std::vector<float>{2, -4, 1, 6}));
}

TEST(MeanSquaredError, Fp16PredictionsSquareInFp32)
{
    // A difference of 300 squares to 90000, beyond fp16's 65504: an fp16 loss would be inf.
    ASSERT_TRUE(std::isinf(roundToDType(300.0f * 300.0f, DType::F16)));
    const StepLoss r = stepLoss({300, 0}, DType::F16, {0, 0}, 2, 1.0f);
    EXPECT_EQ(r.loss, 45000.0f);
    // The gradient 2 * 300 / 2 = 300, exact in fp16.
    EXPECT_EQ(r.gradient, (std::vector<float>{300, 0}));
}

TEST_F(Regression, TableTargetsAreReadAsRegressionWhenDeclared)
{
    std::string csv = "a,b,y\n";
    for (int i = 0; i < 10; ++i)
        csv += std::to_string(i) + "," + std::to_string(i * 2) + "," + std::to_string(0.25 * i) + "\n";
    DataSpec spec = filesSpec(write("t.csv", csv));
    spec.task = DataTask::Regression;
    const DatasetSplits s = loadDatasets(spec, 1);
    EXPECT_EQ(s.task, DataTask::Regression);
    EXPECT_EQ(s.train.labelShape, (Shape{1}));
    EXPECT_EQ(s.train.classes, 0);
    EXPECT_EQ(s.train.size() + s.test.size(), 10);
    for (std::int64_t i = 0; i < s.train.size(); ++i) // each row whole: y = a / 4
        EXPECT_EQ(s.train.sampleLabels(i)[0], s.train.sample(i)[0] / 4);

    // Two target columns, the last two; auto takes several targets for regression.
    spec = filesSpec(write("two.csv", "1,2,3,4\n5,6,7,8\n9,10,11,12\n13,14,15,16\n17,18,19,20\n"));
    spec.targets = 2;
    const DatasetSplits two = loadDatasets(spec, 1);
    EXPECT_EQ(two.task, DataTask::Regression);
    EXPECT_EQ(two.train.sampleShape, (Shape{2}));
    EXPECT_EQ(two.train.labelShape, (Shape{2}));
    for (std::int64_t i = 0; i < two.train.size(); ++i) {
        EXPECT_EQ(two.train.sampleLabels(i)[0], two.train.sample(i)[0] + 2);
        EXPECT_EQ(two.train.sampleLabels(i)[1], two.train.sample(i)[0] + 3);
    }
    // From data.label_column on: columns 2 and 3 here.
    spec.labelColumn = 2;
    const DatasetSplits middle = loadDatasets(spec, 1);
    for (std::int64_t i = 0; i < middle.train.size(); ++i) {
        EXPECT_EQ(middle.train.sample(i)[1], middle.train.sample(i)[0] + 3); // features: columns 1 and 4
        EXPECT_EQ(middle.train.sampleLabels(i)[0], middle.train.sample(i)[0] + 1);
    }
}

TEST_F(Regression, NonIntegerLabelsOfAClassifierAreNamedWithTheirRow)
{
    const fs::path path = write("c.csv", "1,2,0\n3,4,1\n5,6,2.5\n");
    const std::string message = dataErrorOf(filesSpec(path));
    for (const std::string& part :
         std::vector<std::string>{path.string() + ":3:", "column 3", "2.5", "not a class index", "data.task"})
        EXPECT_NE(message.find(part), std::string::npos) << part << " missing from: " << message;
    DataSpec spec = filesSpec(write("r.csv", "1,2,0\n3,4,1\n5,6,nan\n"));
    spec.task = DataTask::Regression;
    const std::string bad = dataErrorOf(spec);
    EXPECT_NE(bad.find(":3: column 3: the target nan is not a finite number"), std::string::npos) << bad;
    spec = filesSpec(write("wide.csv", "1,2,0\n3,4,1\n"));
    spec.targets = 3;
    EXPECT_NE(dataErrorOf(spec).find("3 target columns"), std::string::npos) << dataErrorOf(spec);
}

// A .npy of `values` (float32 or int64) with `shape`.
std::string npy(const std::string& descr, const std::string& shape, const void* data, std::size_t bytes)
{
    std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
    while ((10 + header.size() + 1) % 64 != 0)
        header += ' ';
    header += '\n';
    std::string out = "\x93NUMPY";
    out += '\x01';
    out += '\x00';
    out += static_cast<char>(header.size() & 0xff);
    out += static_cast<char>(header.size() >> 8);
    return out + header + std::string(static_cast<const char*>(data), bytes);
}

TEST_F(Regression, NumpyFloatTargetsAreRegressionAndIntegersClasses)
{
    std::vector<float> x(12), y(6);
    for (int i = 0; i < 6; ++i) {
        x[2 * i] = static_cast<float>(i);
        x[2 * i + 1] = 1;
        y[i] = 0.5f * static_cast<float>(i);
    }
    write("x.npy", npy("<f4", "(6, 2)", x.data(), x.size() * 4));
    write("y.npy", npy("<f4", "(6,)", y.data(), y.size() * 4));
    const DatasetSplits s = loadDatasets(filesSpec(m_dir / "x.npy"), 1);
    EXPECT_EQ(s.task, DataTask::Regression);
    EXPECT_EQ(s.train.labelShape, (Shape{1}));
    for (std::int64_t i = 0; i < s.train.size(); ++i)
        EXPECT_EQ(s.train.sampleLabels(i)[0], s.train.sample(i)[0] / 2);
    // Declared classification: float labels that are class indices.
    DataSpec spec = filesSpec(m_dir / "x.npy");
    spec.task = DataTask::Classification;
    const std::vector<float> classes{0, 1, 0, 1, 0, 1};
    write("y.npy", npy("<f4", "(6,)", classes.data(), classes.size() * 4));
    EXPECT_EQ(loadDatasets(spec, 1).task, DataTask::Classification);
    // [N, 2] targets.
    std::vector<float> y2(12, 1.5f);
    write("y.npy", npy("<f4", "(6, 2)", y2.data(), y2.size() * 4));
    EXPECT_EQ(loadDatasets(filesSpec(m_dir / "x.npy"), 1).train.labelShape, (Shape{2}));
    // Integer labels stay class indices.
    std::vector<std::int64_t> ints{0, 1, 2, 0, 1, 2};
    write("y.npy", npy("<i8", "(6,)", ints.data(), ints.size() * 8));
    const DatasetSplits c = loadDatasets(filesSpec(m_dir / "x.npy"), 1);
    EXPECT_EQ(c.task, DataTask::Classification);
    EXPECT_EQ(c.train.classes, 3);
}

TEST_F(Regression, ImageFoldersRefuseRegression)
{
    fs::create_directories(m_dir / "images" / "a");
    DataSpec spec = filesSpec(m_dir / "images");
    spec.task = DataTask::Regression;
    spec.format = DataFormat::ImageFolder;
    try {
        loadDatasets(spec, 1);
        FAIL() << "no error";
    } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("data.task is regression"), std::string::npos) << e.what();
    }
}

// y = 2 a - b + 0.5 on 400 rows, a and b in [-1, 1]: a linear model learns it.
RunConfig linearRegressionConfig(const fs::path& table)
{
    RunConfig c;
    c.name = "regression";
    c.model.input = {2};
    c.model.classes = 1;
    c.model.layers = {layerSpec(LayerKind::Linear, 1)};
    c.data.dataset = DatasetKind::Files;
    c.data.path = table.string();
    c.data.task = DataTask::Regression;
    c.optimizer.lr = 0.1f;
    c.training.batchSize = 16;
    c.training.epochs = 5;
    c.training.threads = 1;
    return c;
}

TEST_F(Regression, ALinearModelLearnsALinearMapToASmallRmse)
{
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> u(-1, 1);
    std::string csv = "a,b,y\n";
    for (int i = 0; i < 400; ++i) {
        const float a = u(rng), b = u(rng);
        char line[96];
        std::snprintf(line, sizeof line, "%.6f,%.6f,%.6f\n", a, b, 2 * a - b + 0.5f);
        csv += line;
    }
    const RunConfig config = linearRegressionConfig(write("linear.csv", csv));
    const DatasetSplits data = loadDatasets(config.data, config.training.seed);
    ASSERT_EQ(data.task, DataTask::Regression);
    auto backend = makeCpuBackend(1);
    Trainer trainer(config, *backend, data);
    const double before = std::sqrt(trainer.evaluate(data.test).loss);
    const RunSummary summary = trainer.run();
    ASSERT_EQ(summary.status, RunStatus::Finished) << summary.message;
    const double after = taskMetricValue(TaskMetric::Rmse, summary.testLoss, summary.testAccuracy);
    EXPECT_TRUE(std::isnan(summary.testAccuracy)); // regression has no accuracy
    EXPECT_GT(before, 0.5);
    // Measured 0.0256 after five epochs of 20 steps, from 2.06 (the targets' std is 1.29): the
    // map is learnt, the rest is the last steps' noise.
    EXPECT_LT(after, 0.03) << "RMSE from " << before;
    EXPECT_EQ(taskMetricOf(withResolvedTask(config, data)), TaskMetric::Rmse);
}

TEST_F(Regression, TheModelMustHaveOneOutputPerTarget)
{
    const RunConfig base = linearRegressionConfig(write("l.csv", "1,2,3\n4,5,6\n7,8,9\n1,1,1\n2,2,2\n"));
    RunConfig config = base;
    config.model.classes = 2;
    config.model.layers = {layerSpec(LayerKind::Linear, 2)};
    config.training.batchSize = 2;
    const DatasetSplits data = loadDatasets(config.data, 1);
    auto backend = makeCpuBackend(1);
    try {
        Trainer trainer(config, *backend, data);
        FAIL() << "no error";
    } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("1 regression targets a sample; set model.classes"), std::string::npos)
            << e.what();
    }
}

TEST(TaskMetric, FollowsTheResolvedTask)
{
    RunConfig c;
    EXPECT_EQ(taskMetricOf(c), TaskMetric::Accuracy);
    c.data.dataset = DatasetKind::Files;
    c.data.task = DataTask::Regression;
    EXPECT_EQ(taskMetricOf(c), TaskMetric::Rmse);
    EXPECT_EQ(taskMetricOfStored(runConfigToJson(c)), TaskMetric::Rmse);
    c.data.dataset = DatasetKind::Text;
    EXPECT_EQ(taskMetricOf(c), TaskMetric::BitsPerCharacter);
    std::vector<EpochRecord> epochs;
    for (const float testLoss : {0.25f, 0.04f, 0.09f}) {
        EpochRecord e;
        e.epoch = static_cast<int>(epochs.size()) + 1;
        e.testLoss = testLoss;
        e.testAccuracy = NAN;
        epochs.push_back(e);
    }
    const MetricFigures figures = metricFigures(TaskMetric::Rmse, epochs);
    EXPECT_FLOAT_EQ(figures.final, 0.3f);
    EXPECT_FLOAT_EQ(figures.best, 0.2f);
    EXPECT_EQ(formatTaskMetric(TaskMetric::Rmse, 0.123456), "0.1235");
    EXPECT_EQ(formatTaskMetric(TaskMetric::Accuracy, 0.8412), "84.12%");
}

} // namespace
