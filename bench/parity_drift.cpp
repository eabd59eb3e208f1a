// How far two trainings of the same run drift apart when one of them is nudged after every
// step the way another backend's rounding would nudge it: the evidence behind the per-step
// loss tolerances of tests/engine/gpu/cuda_training_parity_test.cpp. Both runs train on the
// CPU from the same weights and batches (the test's setup: synthetic data of the preset's
// input shape, 50 batches, 4 epochs); after each of the second run's steps its weights are
// perturbed, and the worst per-step loss deviation (relative to the larger loss, or to 0.05
// below it, as the test measures) is printed.
//
//   parity_drift --preset cnn --mode fp32 --perturb relative:1e-6 [--steps 200] [--seed 1]
//
// Perturbations:
//   ulp          a quarter of the fp32 master weights move by one fp32 ulp (a GPU's fp32 GEMM
//                summing in another order differs by about that)
//   relative:R   every master weight is multiplied by 1 + R u, u uniform in [-1, 1] (an op
//                whose results differ by up to R of their magnitude, as cuDNN's Winograd and
//                FFT convolutions do in fp32)
//   16bit:N      one weight in N moves by one ulp of its 16-bit type (pure fp16/bf16 modes,
//                where master weights are 16-bit and an update rounds differently only
//                near a rounding boundary)
#include "engine/config/presets.h"
#include "engine/numerics/conversions.h"
#include "engine/train/trainer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

using namespace mantissa;

namespace {

constexpr double kLossFloor = 0.05; // as the test: below it the tolerance is absolute

struct Options {
    std::string preset = "cnn";
    PrecisionMode mode = PrecisionMode::Fp32;
    std::string perturb = "ulp";
    std::int64_t steps = 200;
    std::uint32_t seed = 1;
};

[[noreturn]] void usage(const char* why)
{
    std::fprintf(stderr,
                 "parity_drift: %s\nusage: parity_drift [--preset P] [--mode M] [--perturb ulp|relative:R|16bit:N] "
                 "[--steps N] [--seed S]\n",
                 why);
    std::exit(2);
}

std::int64_t number(const std::string& option, const std::string& text)
{
    char* end = nullptr;
    const long long value = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || value < 1)
        usage((option + " takes a positive whole number, not \"" + text + "\"").c_str());
    return value;
}

double amount(const std::string& perturbation, const std::string& text)
{
    char* end = nullptr;
    const double value = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || !(value > 0))
        usage(("perturbation " + perturbation + " needs a positive number").c_str());
    return value;
}

Options parse(int argc, char** argv)
{
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (i + 1 >= argc)
            usage(("missing value after " + arg).c_str());
        const std::string value = argv[++i];
        if (arg == "--preset")
            o.preset = value;
        else if (arg == "--mode") {
            const auto mode = parsePrecisionMode(value);
            if (!mode)
                usage(("unknown precision mode " + value).c_str());
            o.mode = *mode;
        } else if (arg == "--perturb")
            o.perturb = value;
        else if (arg == "--steps")
            o.steps = number(arg, value);
        else if (arg == "--seed")
            o.seed = static_cast<std::uint32_t>(number(arg, value));
        else
            usage(("unknown option " + arg).c_str());
    }
    return o;
}

RunConfig driftConfig(const Options& o)
{
    RunConfig c = presetConfig(o.preset);
    c.precision = o.mode;
    c.data.dataset = DatasetKind::Synthetic;
    c.data.syntheticShape = c.model.input;
    c.data.syntheticClasses = c.model.classes;
    c.data.syntheticTrain = c.training.batchSize * 50;
    c.data.syntheticTest = 256;
    c.training.epochs = 4;
    c.training.maxSteps = o.steps;
    c.training.device = "cpu";
    return c;
}

struct Losses final : TrainingObserver {
    std::vector<float> loss;
    void onStep(const StepRecord& r) override { loss.push_back(r.loss); }
};

// Perturbs the trainer's master weights after every step and refreshes the working copies
// from them, as an optimizer step would.
class Nudger final : public TrainingObserver {
public:
    Nudger(Trainer& trainer, Backend& backend, const Options& o) : m_trainer(trainer), m_backend(backend), m_rng(o.seed)
    {
        const std::string& p = o.perturb;
        if (p == "ulp") {
            m_kind = Kind::Ulp;
        } else if (p.rfind("relative:", 0) == 0) {
            m_kind = Kind::Relative;
            m_amount = amount(p, p.substr(9));
        } else if (p.rfind("16bit:", 0) == 0) {
            m_kind = Kind::SixteenBit;
            m_amount = amount(p, p.substr(6));
        } else {
            usage(("unknown perturbation " + p).c_str());
        }
    }

    void onStep(const StepRecord&) override
    {
        std::uniform_real_distribution<double> unit(0.0, 1.0);
        for (Parameter* p : m_trainer.model().parametersInBackwardOrder()) {
            std::vector<float> w(static_cast<std::size_t>(p->master.numel()));
            m_backend.download(p->master, w.data());
            const DType type = p->master.dtype();
            for (float& v : w) {
                const double u = unit(m_rng);
                switch (m_kind) {
                case Kind::Ulp:
                    if (u < 0.25)
                        v = std::nextafter(v, unit(m_rng) < 0.5 ? -INFINITY : INFINITY);
                    break;
                case Kind::Relative: v = static_cast<float>(v * (1.0 + m_amount * (2 * u - 1))); break;
                case Kind::SixteenBit:
                    if (u * m_amount < 1.0 && v != 0 && std::isfinite(v)) {
                        const int mantissaBits = type == DType::BF16 ? 7 : 10;
                        const float ulp = std::ldexp(1.0f, std::ilogb(v) - mantissaBits);
                        v = roundToDType(v + (unit(m_rng) < 0.5 ? -ulp : ulp), type);
                    }
                    break;
                }
            }
            m_backend.upload(w.data(), p->master);
            if (!p->working.sharesStorageWith(p->master))
                m_backend.cast(p->master, p->working);
        }
    }

private:
    enum class Kind { Ulp, Relative, SixteenBit };
    Trainer& m_trainer;
    Backend& m_backend;
    std::mt19937_64 m_rng;
    Kind m_kind = Kind::Ulp;
    double m_amount = 0;
};

// A run that did not finish has no curve to compare: say why and stop.
void finished(const char* which, const RunSummary& summary)
{
    if (summary.status == RunStatus::Finished)
        return;
    std::fprintf(stderr, "parity_drift: %s ended %s: %s\n", which, runStatusName(summary.status),
                 summary.message.c_str());
    std::exit(1);
}

} // namespace

int main(int argc, char** argv)
try {
    const Options o = parse(argc, argv);
    const RunConfig config = driftConfig(o);
    const DatasetSplits data = loadDatasets(config.data, config.training.seed);

    auto reference = makeCpuBackend(config.training.threads);
    Trainer plain(config, *reference, data);
    Losses a;
    plain.addObserver(&a);
    finished("the plain run", plain.run());

    auto nudgedBackend = makeCpuBackend(config.training.threads);
    Trainer nudged(config, *nudgedBackend, data);
    Losses b;
    Nudger nudger(nudged, *nudgedBackend, o);
    nudged.addObserver(&b);
    nudged.addObserver(&nudger);
    finished("the nudged run", nudged.run());

    const std::size_t n = std::min(a.loss.size(), b.loss.size());
    double worst = 0;
    std::size_t worstAt = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const double x = a.loss[i], y = b.loss[i];
        const double d = std::abs(x - y) / std::max({std::abs(x), std::abs(y), kLossFloor});
        if (!(d <= worst)) {
            worst = d;
            worstAt = i;
        }
    }
    std::printf("%s %s, perturbation %s, %zu steps: worst relative loss deviation %.3g at step %zu (%.6g vs %.6g)\n",
                o.preset.c_str(), std::string(precisionModeName(o.mode)).c_str(), o.perturb.c_str(), n, worst,
                worstAt + 1, n ? a.loss[worstAt] : 0.0, n ? b.loss[worstAt] : 0.0);
    return 0;
} catch (const std::exception& e) {
    std::fprintf(stderr, "parity_drift: %s\n", e.what());
    return 1;
}
