// fp8-block's GEMM (CpuBackend::gemmBlockScaled) against the plain bf16 GEMM mixed-bf16 runs,
// at the mlp preset's shapes: the cost of multiplying 128-wide K-chunks into fp32 partial sums
// and adding them up scaled, apart from the quantisation (issue 17's throughput target). The
// two are alternated in one process so that a busy shared machine slows both alike.
//
//   block_scaled_gemm_bench [ROUNDS [PRODUCT]]   (default 200 rounds; PRODUCT: only the products whose
//                                                name contains it, e.g. "weight grad")
#include "engine/backend/backend.h"
#include "engine/backend/cpu_options.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

using namespace mantissa;

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::int64_t kChunk = 128;

struct ProductShape {
    const char* name;
    Transpose ta, tb;
    std::int64_t m, n, k;
    std::int64_t groupA, groupB; // 1: a scale per row (1x128 tile); 128: per 128x128 block
};

Tensor randomTensor(std::int64_t count, std::mt19937& rng)
{
    std::uniform_int_distribution<int> small(-8, 8);
    std::vector<float> values(static_cast<std::size_t>(count));
    for (float& v : values)
        v = static_cast<float>(small(rng)) * 0.25f;
    return Tensor::fromFloats({count}, values, DType::BF16);
}

BlockScales scalesFor(std::int64_t rows, std::int64_t k, std::int64_t group, std::mt19937& rng)
{
    const std::int64_t chunks = (k + kChunk - 1) / kChunk, groups = (rows + group - 1) / group;
    std::uniform_real_distribution<float> scale(1e-3f, 4e-3f);
    std::vector<float> values(static_cast<std::size_t>(chunks * groups));
    for (float& v : values)
        v = scale(rng);
    return {Tensor::fromFloats({chunks * groups}, values, DType::F32), kChunk, group, groups, 1};
}

double seconds(const auto& run)
{
    const auto start = Clock::now();
    run();
    return std::chrono::duration<double>(Clock::now() - start).count();
}

} // namespace

int main(int argc, char** argv)
{
    const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 200;
    const char* only = argc > 2 ? argv[2] : "";
    auto backend = makeCpuBackend(CpuOptions{});
    std::printf("backend: %s\n", backend->name().c_str());
    // The mlp preset's block-scaled products (784-1024-1024-10, batch 128): forward x W^T,
    // data gradient dy W, weight gradient dy^T x of the two wide layers.
    const ProductShape shapes[] = {
        {"fc1 forward", Transpose::No, Transpose::Yes, 128, 1024, 784, 1, 128},
        {"fc2 forward", Transpose::No, Transpose::Yes, 128, 1024, 1024, 1, 128},
        {"fc2 data grad", Transpose::No, Transpose::No, 128, 1024, 1024, 1, 128},
        {"fc2 weight grad", Transpose::Yes, Transpose::No, 1024, 1024, 128, 1, 1},
        {"fc1 weight grad", Transpose::Yes, Transpose::No, 1024, 784, 128, 1, 1},
    };
    std::mt19937 rng(7);
    std::printf(
        "| product | m x n x k | bf16 GEMM (us) | block-scaled (us) | ratio |\n| --- | --- | --- | --- | --- |\n");
    double plainTotal = 0, scaledTotal = 0;
    for (const ProductShape& s : shapes) {
        if (std::strstr(s.name, only) == nullptr)
            continue;
        const Tensor a = randomTensor(s.m * s.k, rng), b = randomTensor(s.k * s.n, rng);
        Tensor plainOut = backend->empty({s.m, s.n}, DType::BF16), scaledOut = backend->empty({s.m, s.n}, DType::BF16);
        const OperandBlockScales scales{scalesFor(s.m, s.k, s.groupA, rng), scalesFor(s.n, s.k, s.groupB, rng)};
        const auto plain = [&] { backend->gemm(s.ta, s.tb, s.m, s.n, s.k, 1.0f, a, b, 0.0f, plainOut); };
        const auto scaled = [&] {
            backend->gemmBlockScaled(s.ta, s.tb, s.m, s.n, s.k, a, b, nullptr, scaledOut, scales);
        };
        plain();
        scaled(); // primitives created, buffers grown
        std::vector<double> plainTimes, scaledTimes;
        for (int r = 0; r < rounds; ++r) {
            plainTimes.push_back(seconds(plain));
            scaledTimes.push_back(seconds(scaled));
        }
        std::ranges::sort(plainTimes);
        std::ranges::sort(scaledTimes);
        const double p = plainTimes[plainTimes.size() / 2], q = scaledTimes[scaledTimes.size() / 2];
        plainTotal += p;
        scaledTotal += q;
        std::printf("| %s | %lld x %lld x %lld | %.1f | %.1f | %.2fx |\n", s.name, static_cast<long long>(s.m),
                    static_cast<long long>(s.n), static_cast<long long>(s.k), p * 1e6, q * 1e6, q / p);
    }
    std::printf("| all (medians) | | %.1f | %.1f | %.2fx |\n", plainTotal * 1e6, scaledTotal * 1e6,
                scaledTotal / plainTotal);
    return 0;
}
