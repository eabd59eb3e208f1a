#include "device_under_test.h"
#include "parity_check.h"

#include "engine/backend/backend_factory.h"
#include "engine/util/check.h"

#include <cstdlib>

namespace mantissa::test {

std::string deviceUnderTestName()
{
    const char* name = std::getenv("MANTISSA_TEST_DEVICE");
    return name && *name ? name : "cuda";
}

// The emulated CPU path is the oracle: native bf16 kernels are themselves held to it.
std::unique_ptr<Backend> makeOracle() { return makeCpuBackend(CpuOptions{2, CpuKernels::Emulated}); }

void DeviceTest::SetUp()
{
    m_oracle = makeOracle();
    try {
        // One CPU thread when the device is the CPU: the oracle runs two, so the comparison
        // is between different reduction splits rather than a backend and itself.
        m_device = selectBackend(deviceUnderTestName(), 1).backend;
    } catch (const ResourceError& e) {
        GTEST_SKIP() << e.what();
    }
}

void DeviceTest::expectMatchesOracle(Op op, DType type, std::uint32_t seed,
                                     const std::function<void(OpRun&, DType)>& run, const std::string& name)
{
    if (!device().supports(op, type)) {
        if (type == DType::BF16)
            GTEST_SKIP() << device().name() << " does not support this op family in bf16";
        FAIL() << device().name() << " reports no support for this op family in " << dtypeName(type);
    }
    OpRun expected(oracle(), seed), actual(device(), seed);
    run(expected, type);
    run(actual, type);
    ASSERT_EQ(expected.kept().size(), actual.kept().size());
    for (std::size_t i = 0; i < expected.kept().size(); ++i) {
        const KeptOutput& e = expected.kept()[i];
        const Deviation d = compare(e, actual.kept()[i]);
        // The worst deviation as a fraction of its allowance, for tuning tolerances on real GPUs
        // (--gtest_output=xml shows it for passing cases too).
        RecordProperty("worst:" + e.name, std::to_string(d.ratio));
        EXPECT_EQ(d.count, 0u) << name << ", " << e.name << ": " << describe(d, e);
    }
}

} // namespace mantissa::test
