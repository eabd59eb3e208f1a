// oneDNN 2.6.3 stops the process with SIGFPE while it builds a matmul with a dimension of 2^32
// or more, so OneDnnMatmul refuses every dimension above 2^31 - 1 before oneDNN sees it: the
// caller gets an UnsupportedError naming the shape instead of a dead process. The refusal
// comes before any operand is read, so no 2^32-row buffer is needed to drive it.
#include "engine/backend/cpu/onednn_matmul.h"
#include "engine/util/check.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

using namespace mantissa;

namespace {

std::string refusal(const cpu::MatmulShape& shape)
{
    cpu::OneDnnRuntime runtime;
    cpu::OneDnnMatmul matmul(runtime);
    try {
        matmul.run(shape, nullptr, nullptr, nullptr, nullptr);
    } catch (const UnsupportedError& e) {
        return e.what();
    }
    return "";
}

} // namespace

TEST(MatmulLimits, EveryDimensionAbove2To31IsRefusedWithTheShapeNamed)
{
    constexpr std::int64_t big = std::int64_t{1} << 32;
    for (bool bf16 : {false, true}) {
        cpu::MatmulShape rows{Transpose::No, Transpose::No, big, 10, 10, bf16};
        cpu::MatmulShape inner{Transpose::No, Transpose::No, 10, 10, big, bf16};
        cpu::MatmulShape columns{Transpose::No, Transpose::Yes, 10, big, 10, bf16};
        const std::string family = bf16 ? "bf16 matmul " : "fp32 matmul ";
        EXPECT_EQ(refusal(rows), "a " + family +
                                     "4294967296x10 by 10x10 has a dimension above 2^31 - 1, which "
                                     "oneDNN " +
                                     cpu::oneDnnVersion() + " cannot multiply; use a smaller batch, input or layer");
        EXPECT_NE(refusal(inner).find(family + "10x4294967296 by 4294967296x10"), std::string::npos);
        EXPECT_NE(refusal(columns).find(family + "10x10 by 10x4294967296, B transposed"), std::string::npos);
    }
}
