// How many threads a CPU backend asked for "threads 0" takes: OMP_NUM_THREADS where the user
// set it (processes sharing a machine say their share there), else every core; an explicit
// count wins over both. The backend's name reports the count it took.
#include "engine/backend/backend.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <thread>

namespace {

using namespace mantissa;

// Sets OMP_NUM_THREADS for one test and restores what was there.
class OmpNumThreads {
public:
    explicit OmpNumThreads(const char* value)
    {
        if (const char* before = std::getenv("OMP_NUM_THREADS"))
            m_before = before;
        if (value)
            ::setenv("OMP_NUM_THREADS", value, 1);
        else
            ::unsetenv("OMP_NUM_THREADS");
    }
    ~OmpNumThreads()
    {
        if (m_before)
            ::setenv("OMP_NUM_THREADS", m_before->c_str(), 1);
        else
            ::unsetenv("OMP_NUM_THREADS");
    }
    OmpNumThreads(const OmpNumThreads&) = delete;
    OmpNumThreads& operator=(const OmpNumThreads&) = delete;

private:
    std::optional<std::string> m_before;
};

std::string threadsIn(const std::string& name)
{
    const std::size_t end = name.find(" thread");
    const std::size_t start = name.rfind(", ", end);
    return end == std::string::npos || start == std::string::npos ? name : name.substr(start + 2, end - start - 2);
}

const std::string everyCore = std::to_string(std::max(1u, std::thread::hardware_concurrency()));

TEST(CpuThreadCount, AutoTakesOmpNumThreadsWhereSet)
{
    OmpNumThreads set("3");
    EXPECT_EQ(threadsIn(makeCpuBackend(0)->name()), "3");
}

TEST(CpuThreadCount, AutoReadsTheFirstLevelOfANestedSetting)
{
    OmpNumThreads set("5,2");
    EXPECT_EQ(threadsIn(makeCpuBackend(0)->name()), "5");
}

TEST(CpuThreadCount, AutoTakesEveryCoreWithoutASetting)
{
    OmpNumThreads unset(nullptr);
    EXPECT_EQ(threadsIn(makeCpuBackend(0)->name()), everyCore);
}

TEST(CpuThreadCount, AnUnreadableSettingFallsBackToEveryCore)
{
    for (const char* value : {"0", "-2", "many", ""}) {
        OmpNumThreads set(value);
        EXPECT_EQ(threadsIn(makeCpuBackend(0)->name()), everyCore) << "OMP_NUM_THREADS=\"" << value << "\"";
    }
}

TEST(CpuThreadCount, AnExplicitCountWinsOverTheSetting)
{
    OmpNumThreads set("3");
    EXPECT_EQ(threadsIn(makeCpuBackend(1)->name()), "1");
    EXPECT_EQ(threadsIn(makeCpuBackend(2)->name()), "2");
}

} // namespace

// A backend sets the OpenMP team size for the thread that made it, and puts back what it found
// when it goes: planning an imported model on a scratch backend of 1 thread (onnx_model.cpp)
// once left the training backend's GEMMs on one thread, at half the speed on 2 cores.
TEST(CpuThreadCount, AShortLivedBackendLeavesTheTeamSizeAsItFoundIt)
{
    const auto training = makeCpuBackend(2);
    ASSERT_EQ(omp_get_max_threads(), 2);
    {
        const auto scratch = makeCpuBackend(1);
        EXPECT_EQ(omp_get_max_threads(), 1);
    }
    EXPECT_EQ(omp_get_max_threads(), 2);
}
