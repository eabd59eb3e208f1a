// The 16-bit all-reduce's arithmetic (engine/distributed/rounded_sum): the vectorised sum
// against the scalar reference it replaced, alternated in one process so that a busy shared
// machine slows both alike; prints the ratio (docs/distributed.md).
//
//   rounded_sum_bench [VALUES] [ROUNDS]   (default: the mlp preset's 1,863,690 gradients, 20 rounds)
#include "engine/distributed/rounded_sum.h"
#include "engine/numerics/reference_conversions.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

using namespace mantissa;

namespace {

using Clock = std::chrono::steady_clock;
using SumFunction = void (*)(const std::uint16_t*, std::uint16_t*, std::size_t, DType);

double secondsFor(SumFunction sum, const std::vector<std::uint16_t>& in, std::vector<std::uint16_t>& inout, DType type)
{
    const auto start = Clock::now();
    sum(in.data(), inout.data(), inout.size(), type);
    return std::chrono::duration<double>(Clock::now() - start).count();
}

} // namespace

int main(int argc, char** argv)
{
    const std::size_t values = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1863690;
    const int rounds = argc > 2 ? std::atoi(argv[2]) : 20;
    std::mt19937 rng(1);
    std::normal_distribution<float> gradient(0.0f, 1e-3f);
    for (const DType type : {DType::F16, DType::BF16}) {
        std::vector<std::uint16_t> in(values), a(values), b(values);
        for (std::size_t i = 0; i < values; ++i) {
            in[i] = type == DType::F16 ? reference::floatToHalfBits(gradient(rng))
                                       : reference::floatToBFloat16Bits(gradient(rng));
            a[i] = b[i] = in[(i * 7) % values];
        }
        double reference = 0, vectorised = 0;
        for (int r = 0; r < rounds; ++r) {
            reference += secondsFor(addRoundedWordsReference, in, a, type);
            vectorised += secondsFor(addRoundedWords, in, b, type);
        }
        if (!std::equal(a.begin(), a.end(), b.begin())) {
            std::fprintf(stderr, "the vectorised sum differs from the reference\n");
            return 1;
        }
        const double perValue = 1e9 / (static_cast<double>(values) * rounds);
        std::printf("%s: %zu values x %d rounds: reference %.2f ns/value, vectorised %.2f ns/value, %.1fx faster\n",
                    type == DType::F16 ? "fp16" : "bf16", values, rounds, reference * perValue, vectorised * perValue,
                    reference / vectorised);
    }
    return 0;
}
