// The CUDA backend's GEMM-operand quantiser (Backend::quantizeOperand, backend/cuda/
// quantize_operand.cu) against the CPU's measuring quantiser, bit for bit (a NaN need only be a
// NaN): every case of operand_quantization_cases.h (each scheme a recipe uses, each layout a
// layer hands over, to nearest even and stochastically), on values with and without the edges
// (zero blocks, subnormals, overflow, NaN, Inf), from fp32 and from bf16 buffers, written in the
// type the backend chooses (bf16 only where the request allows it). quant_arithmetic_test
// proves the shared arithmetic on the host; this test proves the kernels that run it. Skips with
// the reason where there is no GPU; with MANTISSA_TEST_DEVICE=cpu it holds the CPU backend's
// quantiser (the fast one and its fallback) to the measuring one the same way.
#include "../operand_quantization_cases.h"
#include "device_under_test.h"

#include "engine/numerics/operand_quantization.h"

#include <gtest/gtest.h>

using namespace mantissa;
using namespace mantissa::test;

namespace {

class CudaOperandQuantizer : public DeviceTest {
protected:
    // `values` uploaded as `type`, quantised on the device, downloaded.
    std::vector<float> onDevice(const OperandCase& c, const std::vector<float>& values, DType type,
                                QuantizedOperand* result)
    {
        Tensor in = device().empty(c.shape, type);
        device().upload(values.data(), in);
        const OperandQuantization q = operandQuantization(c.layout, c.format, c.shape, c.delayedScale, c.counter);
        *result = device().quantizeOperand(in, q);
        EXPECT_TRUE(result->values.dtype() == DType::F32 || (q.mayBeBf16 && result->values.dtype() == DType::BF16))
            << c.name << ": written in " << dtypeName(result->values.dtype());
        std::vector<float> got(values.size());
        device().download(result->values, got.data());
        return got;
    }
};

TEST_F(CudaOperandQuantizer, EveryCaseMatchesTheCpuBitForBit)
{
    std::uint32_t seed = 1;
    int checked = 0;
    for (const OperandCase& c : operandCases())
        for (const bool edges : {false, true})
            for (const DType type : {DType::F32, DType::BF16}) {
                const std::string what = c.name + (edges ? ", edges, " : ", plain, ") + std::string(dtypeName(type));
                const std::vector<float> values =
                    operandValues(static_cast<std::size_t>(c.layout.count()), seed++, edges, type == DType::BF16);
                const CpuOperand want = cpuQuantized(c, values);
                QuantizedOperand r;
                const std::vector<float> got = onDevice(c, values, type, &r);
                EXPECT_EQ(r.decodeScale, want.decodeScale) << what;
                const std::string into(dtypeName(r.values.dtype()));
                std::size_t mismatches = 0;
                for (std::size_t i = 0; i < values.size(); ++i)
                    if (!sameValue(got[i], want.values[i]) && ++mismatches <= 5)
                        ADD_FAILURE() << what << " into " << into << ": index " << i << ", value " << values[i]
                                      << " gave " << got[i] << ", the CPU " << want.values[i];
                EXPECT_EQ(mismatches, 0u) << what << " into " << into;
                ++checked;
            }
    EXPECT_GT(checked, 200);
}

// Delayed scaling's history needs the operand's amax back on the host: the finite one.
TEST_F(CudaOperandQuantizer, PerTensorReturnsTheFiniteAmax)
{
    OperandCase c;
    for (const OperandCase& k : operandCases())
        if (k.name == "delayed e4m3")
            c = k;
    c.layout = KLayout::rows(1, 6);
    c.shape = Shape{6};
    const std::vector<float> values = {
        1.0f, -7.5f, std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::infinity(), 2.0f, 0.0f};
    QuantizedOperand r;
    onDevice(c, values, DType::F32, &r);
    EXPECT_EQ(r.amax, 7.5f);
    EXPECT_EQ(r.decodeScale, 1.0f / c.delayedScale);
}

// The same refusal as the CPU's, a ConfigError naming the sizes, before any launch.
TEST_F(CudaOperandQuantizer, RefusesAPartialNvfp4Block)
{
    OperandCase c;
    c.format = scaledFormat(ScalingScheme::Nvfp4, MiniFloat::E2M1, 16);
    c.format.format.partialBlocks = PartialBlock::Refuse;
    c.layout = KLayout::rows(2, 40);
    c.shape = Shape{80};
    QuantizedOperand r;
    EXPECT_THROW(onDevice(c, std::vector<float>(80, 1.0f), DType::F32, &r), ConfigError);
}

} // namespace
