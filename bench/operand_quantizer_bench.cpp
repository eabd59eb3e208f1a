// The fast operand quantiser (quantizeOperandFast) on the mlp preset's largest operands, the
// cost every FP8 and MX recipe adds to a step (issue 17's throughput target): a 1024 x 1024
// weight and a 128 x 1024 activation, with blocks along the rows (the forward's K) and down
// the columns (the data and weight gradients' K), per format, in ns per value. AVX-512 and
// the portable loops where the CPU has AVX-512; the two are alternated so that a busy shared
// machine slows both alike.
//
// The MX formats run under each of their block-scale rules (floor, ceil, rceil), since the
// rule decides how each block's plan is computed.
//
// A second table times stochastic rounding (the gradients of the MXFP4 and NVFP4 recipes): the
// fast path against the per-value path training took before (widen to fp32,
// quantizeOperandOnHost, narrow to bf16), alternated round by round, with their ratio.
//
//   operand_quantizer_bench [ROUNDS]   (default 200)
#include "engine/numerics/conversions.h"
#include "engine/numerics/fast_operand_quantizer.h"
#include "engine/numerics/operand_quantization.h"
#include "engine/numerics/quant_format.h"
#include "engine/util/enum_table.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <utility>
#include <vector>

using namespace mantissa;

namespace {

struct Operand {
    const char* name;
    std::size_t outer, k, inner; // FastOperand's Along layout
};

std::vector<std::uint16_t> randomBf16(std::size_t count)
{
    std::mt19937 gen(5);
    std::normal_distribution<float> normal(0.0f, 0.02f);
    std::vector<std::uint16_t> bits(count);
    for (std::uint16_t& b : bits) {
        b = static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(normal(gen)) >> 16); // truncated: any bf16 will do
    }
    return bits;
}

double median(std::vector<double> v)
{
    std::ranges::sort(v);
    return v.empty() ? 0.0 : v[v.size() / 2];
}

double seconds(std::chrono::steady_clock::time_point start)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The fast path and the per-value path on one stochastically rounded operand, alternated. MX
// values are bf16 numbers and are written in bf16 as in training; NVFP4's are not, fp32.
void timeStochastic(const char* name, const Operand& op, const std::vector<std::uint16_t>& input, int rounds)
{
    QuantFormat format = *quantFormatNamed(name);
    format.partialBlocks = PartialBlock::Pad;
    format.encoding.rounding = Rounding::Stochastic;
    format.encoding.seed = 7;
    const bool bf16 = format.scheme == ScalingScheme::Mx;
    const DType outType = bf16 ? DType::BF16 : DType::F32;
    const FastOperand in{input.data(), true, FastOperand::Layout::Along, op.outer, op.k, op.inner, 0};
    OperandQuantization q;
    q.format = format;
    q.view = {qa::OperandView::AlongRows, static_cast<std::int64_t>(op.outer), static_cast<std::int64_t>(op.k),
              static_cast<std::int64_t>(op.inner)};
    q.grid = {1, static_cast<std::int64_t>(format.blockSize), false};
    std::vector<float> fastOut(in.count()), slowOut(in.count()); // room for fp32 or bf16
    std::vector<float> wide(in.count()), rounded(in.count());
    std::vector<double> fast, slow;
    for (int i = 0; i < rounds; ++i) {
        auto start = std::chrono::steady_clock::now();
        if (quantizeOperandFast(in, {fastOut.data(), bf16}, format) != FastResult::Done) {
            std::fprintf(stderr, "stochastic %s on %s: the fast path declined\n", name, op.name);
            std::exit(1);
        }
        fast.push_back(seconds(start));
        start = std::chrono::steady_clock::now();
        bfloat16ToFloat(input.data(), wide.data(), wide.size());
        quantizeOperandOnHost(q, wide, rounded);
        narrowFromFloat(rounded.data(), slowOut.data(), rounded.size(), outType);
        slow.push_back(seconds(start));
    }
    if (fastOut != slowOut) {
        std::fprintf(stderr, "stochastic %s on %s: the two paths differ\n", name, op.name);
        std::exit(1);
    }
    const double values = static_cast<double>(in.count()), f = median(fast), sl = median(slow);
    std::printf("| %s | %s | %.3f | %.3f | %.1fx |\n", name, op.name, f / values * 1e9, sl / values * 1e9, sl / f);
}

} // namespace

int main(int argc, char** argv)
{
    const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 200;
    const Operand operands[] = {
        {"W 1024x1024, blocks along rows", 1024, 1024, 1},
        {"W 1024x1024, blocks down columns", 1, 1024, 1024},
        {"x 128x1024, blocks along rows", 128, 1024, 1},
        {"x 128x1024, blocks down columns", 1, 128, 1024},
    };
    std::vector<std::pair<std::string, QuantFormat>> formats;
    for (const char* name : {"fp8-tensor", "fp8-block", "mxfp8", "mxfp6-e2m3", "mxfp4"}) {
        QuantFormat format = *quantFormatNamed(name);
        if (format.scheme != ScalingScheme::Mx) {
            formats.emplace_back(name, format);
            continue;
        }
        for (const MxScaleRule rule : {MxScaleRule::Floor, MxScaleRule::Ceil, MxScaleRule::RCeil}) {
            format.scaleRule = rule;
            formats.emplace_back(std::string(name) + " " + std::string(enumKey(rule)), format);
        }
    }
    const std::vector<std::uint16_t> input = randomBf16(1024 * 1024);
    std::vector<std::uint16_t> output(input.size());
    std::vector<float> blockScales(input.size());
    const bool avx512 = fastQuantizerUsesAvx512();
    std::printf(
        "AVX-512 loops: %s\n\n| format | operand | AVX-512 (ns/value) | portable (ns/value) |\n| --- | --- | --- | "
        "--- |\n",
        avx512 ? "yes" : "no (this CPU lacks AVX-512 F/BW/VL)");
    for (auto [label, format] : formats) {
        const char* name = label.c_str();
        format.partialBlocks = PartialBlock::Pad;
        for (const Operand& op : operands) {
            const FastOperand in{input.data(), true, FastOperand::Layout::Along, op.outer, op.k, op.inner, 0};
            float decodeScale = 1.0f;
            FastOperandOutput out{output.data(), true};
            if (format.scheme == ScalingScheme::PerTensor)
                out.decodeScale = &decodeScale;
            if (format.scheme == ScalingScheme::Fp32Blocks)
                out.blockScales = blockScales.data();
            const auto time = [&](bool useAvx512) {
                allowAvx512FastQuantizer(useAvx512);
                const auto start = std::chrono::steady_clock::now();
                const FastResult r = quantizeOperandFast(in, out, format);
                const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
                if (r != FastResult::Done) {
                    std::fprintf(stderr, "%s on %s: the fast path declined\n", name, op.name);
                    std::exit(1);
                }
                return s;
            };
            std::vector<double> wide, portable;
            for (int i = 0; i < rounds; ++i) {
                if (avx512)
                    wide.push_back(time(true));
                portable.push_back(time(false));
            }
            const double values = static_cast<double>(in.count());
            std::printf("| %s | %s | %s | %.3f |\n", name, op.name,
                        avx512 ? std::to_string(median(wide) / values * 1e9).substr(0, 5).c_str() : "-",
                        median(portable) / values * 1e9);
        }
    }
    allowAvx512FastQuantizer(true);
    std::printf("\nStochastic rounding, medians of %d alternated rounds:\n\n| format | operand | fast path "
                "(ns/value) | per-value path (ns/value) | speed-up |\n| --- | --- | --- | --- | --- |\n",
                rounds);
    for (const char* name : {"mxfp4", "nvfp4"})
        for (const Operand& op : operands)
            timeStochastic(name, op, input, rounds);
    return 0;
}
