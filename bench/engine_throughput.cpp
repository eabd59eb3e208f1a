// Training throughput of the reference workloads, per precision mode, printed as a table.
// Synthetic 28x28 data keeps the figures independent of disk and decoding; the timed region
// is the Trainer's training steps only (its samples/s excludes evaluation). The device is
// chosen as a run chooses it (training.device through selectBackend); the CPU by default.
//
//   engine_throughput [--device auto|cpu|cuda[:N]] [--steps N] [--warmup N] [--threads N]
//                     [--models mlp,cnn] [--modes fp32,mixed-fp16] [--graphs auto|on|off]
//                     [--cpu-kernels auto|native|emulated] [--repeat R] [--ratio-to MODE]
//                     [--profile-ops 1]
//
// The header states the kernels each 16-bit type takes (Backend::kernelPaths) and this
// machine's practical GEMM peak: the backend's own 2048x2048x2048 product in fp32 and in bf16,
// timed here, against which each row's achieved rate is a percentage.
//
// --repeat R measures every mode of a model R times, interleaved (mode 1, mode 2, ..., mode 1,
// mode 2, ...), and prints the median samples/s; the last column, "time vs MODE", is the median
// over the rounds of each round's step-time ratio to --ratio-to's mode (default mixed-bf16), so
// that a machine whose load changes during the run still gives a fair ratio, with the rounds'
// lowest and highest ratio after it. The train loss
// column gives the timed run's mean loss in hex: two builds that train alike print the same.
//
// --graphs is training.graphs: auto (the default, as in a run) captures the step after its
// first run and replays it as a CUDA graph on a GPU and runs op by op on the CPU; on also
// records an op tape on the CPU. The last column says how the timed steps ran.
//
// --profile-ops 1 times every backend call of the timed steps (bench/op_timing_backend.h) and
// prints, after the table, where each model's and mode's step time went, op by op, summed
// over the rounds: milliseconds per step, calls per step and the share of the step. "outside
// the backend" is the rest of the step (the layers' host code, the allocator, the data).
//
// Achieved TFLOP/s counts a training step as three forward passes (the forward, and a
// backward that computes both the input and the weight gradients, each as costly as the
// forward), from the model's forward FLOPs per sample (Layer::flopsPerSample: a multiply-add
// is two FLOPs). Peak memory is Backend::peakBytes over the timed run.
#include "bench/op_timing_backend.h"
#include "engine/backend/backend.h"
#include "engine/backend/backend_factory.h"
#include "engine/backend/cpu/openmp_wait_policy.h"
#include "engine/config/presets.h"
#include "engine/model/model_validation.h"
#include "engine/train/trainer.h"
#include "engine/util/check.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <vector>

using namespace mantissa;

namespace {

std::vector<std::string> splitList(const std::string& text)
{
    std::vector<std::string> out;
    std::stringstream in(text);
    for (std::string item; std::getline(in, item, ',');)
        if (!item.empty())
            out.push_back(item);
    return out;
}

struct Measured {
    double samplesPerSecond = 0;
    std::size_t peakBytes = 0;
    std::string stepMode;                            // "graph" or "op by op (why)"
    std::int64_t skipped = 0;                        // overflow steps: each is located by running its passes again
    float trainLoss = 0;                             // the timed run's mean loss: equal bits, equal training
    std::map<std::string, OpTimingBackend::Row> ops; // with --profile-ops: the timed steps' backend calls
    double seconds = 0;                              // the timed steps' wall time
};

Measured measure(Backend& backend, const std::string& device, const std::string& preset, PrecisionMode mode,
                 int threads, AutoSwitch graphs, std::int64_t warmup, std::int64_t steps, bool profileOps)
{
    RunConfig config = presetConfig(preset);
    config.precision = mode;
    if (config.data.dataset == DatasetKind::Text) {
        // Token ids must be whole numbers below the vocabulary: a language model reads its own text.
        config.data.limitTrain = config.training.batchSize * (warmup + steps);
        config.data.limitTest = config.training.batchSize;
    } else {
        config.data.dataset = DatasetKind::Synthetic;
        config.data.syntheticShape = config.model.input;
        config.data.syntheticClasses = config.model.classes;
        config.data.syntheticTrain = config.training.batchSize * (warmup + steps);
        config.data.syntheticTest = config.training.batchSize;
    }
    config.training.threads = threads;
    config.training.device = device;
    config.training.epochs = 1;
    config.training.graphs = graphs;
    const DatasetSplits data = loadDatasets(config.data, config.training.seed);
    // Warm-up run: fills the allocator's pool, pages in the weights, creates oneDNN's primitives and the OpenMP team
    // (on a GPU: loads the kernels and lets cuBLAS and cuDNN pick their algorithms).
    config.training.maxSteps = warmup;
    Trainer(config, backend, data).run();
    config.training.maxSteps = steps;
    OpTimingBackend timing(backend);
    Trainer trainer(config, profileOps ? static_cast<Backend&>(timing) : backend, data);
    const RunSummary summary = trainer.run();
    if (summary.status == RunStatus::Failed)
        throw Error(preset + " " + precisionModeName(mode) + ": the run failed: " + summary.message);
    Measured m{summary.samplesPerSecond, summary.peakBytes, "graph", summary.skippedSteps, summary.trainLoss, {}, 0.0};
    m.ops = timing.rows();
    m.seconds = summary.samplesPerSecond > 0
                    ? static_cast<double>(config.training.batchSize * steps) / summary.samplesPerSecond
                    : 0.0;
    if (trainer.graphSteps() == 0)
        m.stepMode = "op by op (" + trainer.graphStatus() + ")";
    return m;
}

// GFLOP/s of the backend's own square GEMM in `type` (inputs and output), best of a few.
// Each timing runs enough products back to back (about 50 ms) that a GPU's launches and the
// wait for it are noise: a 2048^3 bf16 product takes some 25 us on an H100, far less than the
// download of its result, so one product timed to a download read 89 to 5,000 TFLOP/s.
double gemmPeak(Backend& backend, DType type)
{
    const std::int64_t n = 2048;
    Tensor a = backend.empty(Shape{n, n}, type);
    Tensor c = backend.empty(Shape{n, n}, type);
    Tensor done = backend.empty(Shape{1}, DType::F32);
    backend.fill(a, 0.5f);
    backend.fill(done, 0.0f);
    float flag = 0;
    const auto timed = [&](int products) {
        const auto start = std::chrono::steady_clock::now();
        for (int i = 0; i < products; ++i)
            backend.gemm(Transpose::No, Transpose::No, n, n, n, 1.0f, a, a, 0.0f, c);
        backend.download(done, &flag); // queued behind the products: waits for them
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };
    timed(1); // builds the kernel
    const int products = std::clamp(static_cast<int>(0.05 / std::max(timed(1), 1e-6)), 1, 2000);
    double best = 0;
    for (int trial = 0; trial < 3; ++trial)
        best = std::max(best, 2.0 * n * n * n * products / timed(products) * 1e-9);
    return best;
}

// The path a mode's compute type took, from Backend::kernelPaths's "<type>: native: ..." line.
std::string kernelPath(PrecisionMode mode, const std::string& paths)
{
    const DType compute = PrecisionPolicy(mode).layer().compute();
    if (compute == DType::F32)
        return "fp32";
    const std::string prefix = std::string(dtypeName(compute)) + ": ";
    const std::size_t at = paths.find(prefix);
    if (at == std::string::npos)
        return std::string(dtypeName(compute));
    const std::size_t begin = at + prefix.size();
    return paths.substr(begin, paths.find(':', begin) - begin) + " " + std::string(dtypeName(compute));
}

// The op profile of one model and mode: the backend's calls by time, then the rest of the step.
void printOpProfile(const std::string& model, const std::string& mode, const Measured& m, std::int64_t steps)
{
    std::vector<std::pair<std::string, OpTimingBackend::Row>> rows(m.ops.begin(), m.ops.end());
    std::sort(rows.begin(), rows.end(),
              [](const auto& a, const auto& b) { return a.second.seconds > b.second.seconds; });
    const double perStep = 1e3 / static_cast<double>(steps);
    double inOps = 0;
    for (const auto& row : rows)
        inOps += row.second.seconds;
    std::printf("\nop profile: %s %s, %.2f ms per step\n", model.c_str(), mode.c_str(), m.seconds * perStep);
    std::printf("| op | ms per step | calls per step | %% of step |\n| --- | --- | --- | --- |\n");
    const auto line = [&](const std::string& op, double seconds, double calls) {
        std::printf("| %s | %.3f | %.0f | %.1f%% |\n", op.c_str(), seconds * perStep,
                    calls / static_cast<double>(steps), m.seconds > 0 ? 100.0 * seconds / m.seconds : 0.0);
    };
    for (const auto& [op, row] : rows)
        line(op, row.seconds, static_cast<double>(row.calls));
    line("outside the backend", m.seconds - inOps, 0);
}

} // namespace

int main(int argc, char** argv)
{
    // As mantissa-cli does; OMP_WAIT_POLICY=active or passive measures either on purpose.
    mantissa::cpu::adoptOpenMpWaitPolicy(argv, mantissa::cpu::WaitPolicyChoice::WhenLoaded);
    std::int64_t steps = 60, warmup = 10;
    int threads = 0;
    std::string device = "cpu";
    AutoSwitch graphs = AutoSwitch::Auto;
    CpuKernels kernels = CpuKernels::Auto;
    std::vector<std::string> models{"mlp", "cnn"};
    std::vector<std::string> modes{"fp32", "mixed-fp16"};
    int repeat = 1;
    bool profileOps = false;
    std::string ratioTo = "mixed-bf16";
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string flag = argv[i];
        const std::string value = argv[i + 1];
        if (flag == "--device")
            device = value;
        else if (flag == "--steps")
            steps = std::atoll(value.c_str());
        else if (flag == "--warmup")
            warmup = std::atoll(value.c_str());
        else if (flag == "--threads")
            threads = std::atoi(value.c_str());
        else if (flag == "--models")
            models = splitList(value);
        else if (flag == "--modes")
            modes = splitList(value);
        else if (flag == "--graphs" && parseEnum<AutoSwitch>(value))
            graphs = *parseEnum<AutoSwitch>(value);
        else if (flag == "--repeat" && std::atoi(value.c_str()) > 0)
            repeat = std::atoi(value.c_str());
        else if (flag == "--profile-ops")
            profileOps = value == "1" || value == "on";
        else if (flag == "--ratio-to")
            ratioTo = value;
        else if (flag == "--cpu-kernels" && parseEnum<CpuKernels>(value))
            kernels = *parseEnum<CpuKernels>(value);
        else {
            std::fprintf(stderr, "unknown option %s %s\n", flag.c_str(), value.c_str());
            return 2;
        }
    }
    BackendSelection selection;
    try {
        selection = selectBackend(device, CpuOptions{threads, kernels});
    } catch (const Error& e) {
        std::fprintf(stderr, "engine_throughput: %s\n", e.what());
        return 1;
    }
    Backend& backend = *selection.backend;
    std::printf("backend: %s; %lld timed steps after %lld warm-up steps\n", backend.name().c_str(),
                static_cast<long long>(steps), static_cast<long long>(warmup));
    std::printf("device: %s (requested %s)\n", selection.reason.c_str(), device.c_str());
    const double peak32 = gemmPeak(backend, DType::F32);
    const double peak16 = gemmPeak(backend, DType::BF16);
    std::printf("GEMM peak on this machine (the backend's 2048^3 product): fp32 %.0f GFLOP/s, bf16 %.0f GFLOP/s\n",
                peak32, peak16);
    const std::string plan = backend.kernelPaths();
    if (!plan.empty())
        std::printf("kernels: %s\n", plan.substr(0, plan.find("\noneDNN kernels used")).c_str());
    std::printf("\n");
    // New columns go at the end, so that readers of the first six keep working.
    std::printf("| model | batch | precision | samples/s | time vs fp32 | peak memory (MiB) | TFLOP/s | step | skipped "
                "| kernels "
                "| %% of GEMM peak | time vs %s (median of %d, range) | train loss (bits) |\n",
                ratioTo.c_str(), repeat);
    std::printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
    std::vector<PrecisionMode> parsed;
    for (const auto& modeName : modes) {
        const auto mode = parsePrecisionMode(modeName);
        if (!mode) {
            std::fprintf(stderr, "unknown precision %s\n", modeName.c_str());
            return 2;
        }
        parsed.push_back(*mode);
    }
    const auto median = [](std::vector<double> v) {
        std::sort(v.begin(), v.end());
        const std::size_t n = v.size();
        return n == 0 ? 0.0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    };
    const auto reference = std::find(modes.begin(), modes.end(), ratioTo);
    std::vector<std::pair<std::string, std::vector<Measured>>> profiles; // --profile-ops, per model
    for (const auto& model : models) {
        // rates[mode][round]; the rounds interleave the modes.
        std::vector<std::vector<double>> rates(parsed.size());
        std::vector<Measured> last(parsed.size());
        std::vector<Measured> profiled(parsed.size()); // the rounds' op times, summed
        for (int round = 0; round < repeat; ++round)
            for (std::size_t i = 0; i < parsed.size(); ++i) {
                last[i] = measure(backend, device, model, parsed[i], threads, graphs, warmup, steps, profileOps);
                rates[i].push_back(last[i].samplesPerSecond);
                for (const auto& [op, row] : last[i].ops) {
                    profiled[i].ops[op].seconds += row.seconds;
                    profiled[i].ops[op].calls += row.calls;
                }
                profiled[i].seconds += last[i].seconds;
            }
        if (profileOps)
            profiles.push_back({model, std::move(profiled)});
        double fp32Rate = 0;
        for (std::size_t i = 0; i < parsed.size(); ++i)
            if (parsed[i] == PrecisionMode::Fp32)
                fp32Rate = median(rates[i]);
        for (std::size_t i = 0; i < parsed.size(); ++i) {
            const PrecisionMode mode = parsed[i];
            const Measured& m = last[i];
            const double rate = median(rates[i]);
            const double forwardFlops =
                static_cast<double>(validateModel(presetConfig(model).model).totalFlopsPerSample);
            const std::string ratio = fp32Rate > 0 ? std::to_string(fp32Rate / rate).substr(0, 4) + "x" : "-";
            std::string relative = "-";
            if (reference != modes.end()) {
                const auto& ref = rates[static_cast<std::size_t>(reference - modes.begin())];
                std::vector<double> ratios;
                for (int round = 0; round < repeat; ++round)
                    ratios.push_back(ref[static_cast<std::size_t>(round)] / rates[i][static_cast<std::size_t>(round)]);
                relative = std::to_string(median(ratios)).substr(0, 4) + "x";
                if (repeat > 1) { // and the range over the rounds
                    const auto [low, high] = std::minmax_element(ratios.begin(), ratios.end());
                    relative +=
                        " (" + std::to_string(*low).substr(0, 4) + "-" + std::to_string(*high).substr(0, 4) + ")";
                }
            }
            const double tflops = 3.0 * forwardFlops * rate * 1e-12;
            const std::string path = kernelPath(mode, backend.kernelPaths());
            // 16-bit products run on the 16-bit GEMM's units where a CPU runs them native, and
            // always on a GPU (tensor cores); emulated ones are fp32 products.
            const bool sixteenBitUnits =
                path.rfind("native", 0) == 0 || (backend.device().kind != DeviceKind::Cpu && path != "fp32");
            const double peak = sixteenBitUnits ? peak16 : peak32;
            std::printf("| %s | %lld | %s | %.0f | %s | %.1f | %.3f | %s | %lld | %s | %.0f%% | %s | %a |\n",
                        model.c_str(), static_cast<long long>(presetConfig(model).training.batchSize), modes[i].c_str(),
                        rate, ratio.c_str(), static_cast<double>(m.peakBytes) / (1024.0 * 1024.0), tflops,
                        m.stepMode.c_str(), static_cast<long long>(m.skipped), path.c_str(),
                        peak > 0 ? 100.0 * tflops * 1e3 / peak : 0.0, relative.c_str(),
                        static_cast<double>(m.trainLoss));
            std::fflush(stdout);
        }
    }
    for (const auto& [model, perMode] : profiles)
        for (std::size_t i = 0; i < perMode.size(); ++i)
            printOpProfile(model, modes[i], perMode[i], steps * repeat);
    return 0;
}
