#include "device_under_test.h"

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

} // namespace mantissa::test
