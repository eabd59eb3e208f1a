// How much of a model's gradient fp16 cannot hold: trains a preset in fp32 (exact
// gradients) and, at chosen steps, classifies every weight-gradient value by what fp16
// would make of it: flushed to zero (|g| < 2^-25), subnormal (2^-25 <= |g| < 2^-14,
// fewer than 10 significant bits), normal. It also counts the increments of Adam's second
// moment, (1 - 0.999) g^2, that fp16 flushes, and the values a loss scale of 2^16 would
// still leave flushed. These are the figures quoted in docs/underflow.md.
//
//   underflow_census [--preset deep-mlp] [--steps 1,10,100,400] [--limit-train N]
#include "engine/backend/backend.h"
#include "engine/config/presets.h"
#include "engine/train/trainer.h"
#include "engine/util/check.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <sstream>
#include <string>

using namespace mantissa;

namespace {

constexpr double kFlush = 2.9802322387695312e-08; // 2^-25: below this fp16 rounds to zero
constexpr double kMinNormal = 6.103515625e-05;    // 2^-14
constexpr double kScale = 65536.0;                // the default initial dynamic loss scale

struct Census {
    std::int64_t total = 0, zero = 0, flushed = 0, subnormal = 0, squareFlushed = 0, flushedScaled = 0;
    void add(double g)
    {
        const double a = std::fabs(g);
        ++total;
        if (a == 0) {
            ++zero;
            return;
        }
        if (a < kFlush)
            ++flushed;
        else if (a < kMinNormal)
            ++subnormal;
        // Adam adds (1 - beta2) g^2 to its second moment each step; in a pure fp16 run
        // that increment is what gets flushed, leaving v at zero and m / (sqrt(v) + eps) huge.
        if (0.001 * a * a < kFlush)
            ++squareFlushed;
        if (a * kScale < kFlush)
            ++flushedScaled;
    }
};

double percent(std::int64_t part, std::int64_t whole)
{
    return whole ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

class CensusObserver final : public TrainingObserver {
public:
    CensusObserver(Trainer& trainer, std::set<std::int64_t> steps) : m_trainer(trainer), m_steps(std::move(steps)) {}
    void onStep(const StepRecord& record) override
    {
        if (!m_steps.contains(record.step))
            return;
        std::printf("\nstep %lld (loss %.4f)\n", static_cast<long long>(record.step), record.loss);
        std::printf("| parameter | values | exact zero | flushed to 0 in fp16 | subnormal in fp16 | (1-b2) g^2 flushed "
                    "(Adam v) | flushed even x2^16 |\n");
        std::printf("| --- | --- | --- | --- | --- | --- | --- |\n");
        Census all;
        const auto& params = m_trainer.model().parametersInBackwardOrder();
        for (auto it = params.rbegin(); it != params.rend(); ++it) {
            const Parameter* p = *it;
            if (p->name.find("weight") == std::string::npos)
                continue;
            Census c;
            const std::vector<float> g = p->fp32Grad.toFloats();
            for (float v : g) {
                c.add(v);
                all.add(v);
            }
            print(p->name, c);
        }
        print("all weights", all);
        std::fflush(stdout);
    }

private:
    static void print(const std::string& name, const Census& c)
    {
        std::printf("| %s | %lld | %.1f%% | %.1f%% | %.1f%% | %.1f%% | %.1f%% |\n", name.c_str(),
                    static_cast<long long>(c.total), percent(c.zero, c.total), percent(c.flushed, c.total),
                    percent(c.subnormal, c.total), percent(c.squareFlushed, c.total),
                    percent(c.flushedScaled, c.total));
    }

    Trainer& m_trainer;
    std::set<std::int64_t> m_steps;
};

} // namespace

int main(int argc, char** argv)
{
    std::string preset = "deep-mlp";
    std::set<std::int64_t> steps{1, 10, 100, 400};
    std::int64_t limitTrain = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string flag = argv[i];
        const std::string value = argv[i + 1];
        if (flag == "--preset") {
            preset = value;
        } else if (flag == "--limit-train") {
            limitTrain = std::atoll(value.c_str());
        } else if (flag == "--steps") {
            steps.clear();
            std::stringstream in(value);
            for (std::string item; std::getline(in, item, ',');)
                steps.insert(std::atoll(item.c_str()));
        } else {
            std::fprintf(stderr, "unknown option %s\n", flag.c_str());
            return 2;
        }
    }
    try {
        RunConfig config = presetConfig(preset);
        config.precision = PrecisionMode::Fp32;
        config.data.limitTrain = limitTrain;
        config.data.limitTest = 1000;
        config.training.maxSteps = *steps.rbegin();
        auto backend = makeCpuBackend(0);
        const DatasetSplits data = loadDatasets(config.data, config.training.seed);
        Trainer trainer(config, *backend, data);
        CensusObserver census(trainer, steps);
        trainer.addObserver(&census);
        std::printf("%s trained in fp32; gradients classified by what fp16 would store\n", preset.c_str());
        trainer.run();
    } catch (const Error& e) {
        std::fprintf(stderr, "underflow_census: %s\n", e.what());
        return 2;
    }
    return 0;
}
