// The parts of data-parallel training that need no MPI launch: the 16-bit all-reduce's
// arithmetic, reading the launcher's environment, the distributed config and its world size.
// The collectives themselves run under mpirun in tests/cli/cli_mpi_test.cpp (label mpi).
#include "engine/config/run_config.h"
#include "engine/distributed/connect_ranks.h"
#include "engine/distributed/data_parallel.h"
#include "engine/distributed/launch_environment.h"
#include "engine/distributed/rounded_sum.h"
#include "engine/numerics/reference_conversions.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

using namespace mantissa;
using namespace mantissa::reference;

namespace {

float sumInHalf(float a, float b)
{
    const std::uint16_t in = floatToHalfBits(a);
    std::uint16_t inout = floatToHalfBits(b);
    addRoundedWords(&in, &inout, 1, DType::F16);
    return halfBitsToFloat(inout);
}

std::string errorOf(const std::string& json)
{
    try {
        parseRunConfig(json, "test.json");
    } catch (const ConfigError& e) {
        return e.what();
    }
    return {};
}

const char* kMinimal = R"({"model": {"input": [4], "classes": 2, "layers": [{"type": "linear", "units": 2}]}})";

std::string withDistributed(const std::string& section)
{
    std::string json = kMinimal;
    json.insert(json.size() - 1, R"(, "distributed": )" + section);
    return json;
}

} // namespace

TEST(RoundedSum, Fp16SumsRoundToNearestEvenAndOverflow)
{
    EXPECT_EQ(sumInHalf(1.0f, 2.0f), 3.0f);
    // 2048 + 1 is a tie between 2048 and 2050 in fp16: even wins.
    EXPECT_EQ(sumInHalf(2048.0f, 1.0f), 2048.0f);
    EXPECT_EQ(sumInHalf(2048.0f, 3.0f), 2052.0f);
    // Two gradients near the top of fp16's range: the sum overflows, as on a real 16-bit wire.
    EXPECT_TRUE(std::isinf(sumInHalf(40000.0f, 40000.0f)));
    // Subnormals add exactly.
    EXPECT_EQ(sumInHalf(0x1p-24f, 0x1p-24f), 0x1p-23f);
}

TEST(RoundedSum, Bf16SumsKeepEightBits)
{
    const std::uint16_t in = floatToBFloat16Bits(256.0f);
    std::uint16_t inout = floatToBFloat16Bits(1.0f);
    addRoundedWords(&in, &inout, 1, DType::BF16);
    EXPECT_EQ(bfloat16BitsToFloat(inout), 256.0f); // 257 needs 9 bits
}

TEST(LaunchEnvironment, ReadsTheLaunchersVariables)
{
    unsetenv("OMPI_COMM_WORLD_SIZE");
    unsetenv("PMI_SIZE");
    unsetenv("PMIX_SIZE");
    unsetenv("SLURM_STEP_NUM_TASKS");
    EXPECT_FALSE(launchEnvironment().launched());
    setenv("SLURM_STEP_NUM_TASKS", "4", 1);
    setenv("SLURM_PROCID", "3", 1);
    LaunchEnvironment env = launchEnvironment();
    EXPECT_EQ(env.worldSize, 4);
    EXPECT_EQ(env.rank, 3);
    EXPECT_NE(env.launcher.find("srun"), std::string::npos);
    setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
    setenv("OMPI_COMM_WORLD_RANK", "1", 1);
    env = launchEnvironment();
    EXPECT_EQ(env.worldSize, 2);
    EXPECT_EQ(env.rank, 1);
    setenv("OMPI_COMM_WORLD_SIZE", "two", 1); // not a launcher's value: the next one is used
    EXPECT_EQ(launchEnvironment().worldSize, 4);
    unsetenv("OMPI_COMM_WORLD_SIZE");
    unsetenv("OMPI_COMM_WORLD_RANK");
    unsetenv("SLURM_STEP_NUM_TASKS");
    unsetenv("SLURM_PROCID");
}

// Without MPI, a launch of several ranks is refused, naming the launcher; with MPI the same
// environment would start MPI, which this test process must not do.
TEST(LaunchEnvironment, ABuildWithoutMpiRefusesAnMpiLaunch)
{
    if (distributedSupportBuiltIn())
        GTEST_SKIP() << "this build has MPI; tests/cli/cli_mpi_test.cpp launches it for real";
    setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
    setenv("OMPI_COMM_WORLD_RANK", "1", 1);
    try {
        connectRanks();
        ADD_FAILURE() << "an mpirun launch was accepted without MPI";
    } catch (const DistributedError& e) {
        EXPECT_NE(std::string(e.what()).find("rank 1 of 2 by mpirun"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("no MPI support"), std::string::npos) << e.what();
    }
    unsetenv("OMPI_COMM_WORLD_SIZE");
    unsetenv("OMPI_COMM_WORLD_RANK");
    EXPECT_EQ(connectRanks(), nullptr); // a plain process starts nothing
}

TEST(DistributedConfig, ParsesWritesAndRefuses)
{
    const RunConfig plain = parseRunConfig(kMinimal, "test.json");
    EXPECT_EQ(plain.distributed, DistributedSpec{});
    // Not written when unset, so single-process configs stored before it stay byte for byte.
    EXPECT_EQ(runConfigToJson(plain).find("distributed"), std::string::npos);
    const RunConfig set = parseRunConfig(
        withDistributed(R"({"world_size": 2, "allreduce_dtype": "compute", "reduction": "sqrt-split"})"), "test.json");
    EXPECT_EQ(set.distributed.worldSize, 2);
    EXPECT_EQ(set.distributed.allReduceType, AllReduceType::Compute);
    EXPECT_EQ(set.distributed.reduction, ReductionOrder::SqrtSplit);
    EXPECT_EQ(parseRunConfig(runConfigToJson(set), "again").distributed, set.distributed);
    EXPECT_NE(errorOf(withDistributed(R"({"reduction": "mean"})")).find("distributed.reduction"), std::string::npos);
    EXPECT_NE(errorOf(withDistributed(R"({"allreduce_dtype": "fp8"})")).find("distributed.allreduce_dtype"),
              std::string::npos);
    EXPECT_NE(errorOf(withDistributed(R"({"world_size": -1})")).find("distributed.world_size must be"),
              std::string::npos);
    EXPECT_NE(errorOf(withDistributed(R"({"ranks": 2})")).find("ranks"), std::string::npos);
}

TEST(DistributedConfig, WorldSizeMustMatchTheLaunch)
{
    RunConfig config = parseRunConfig(kMinimal, "test.json");
    resolveWorldSize(config, 1);
    EXPECT_EQ(config.distributed.worldSize, 0); // a single process records nothing
    resolveWorldSize(config, 4);
    EXPECT_EQ(config.distributed.worldSize, 4); // recorded with the run
    resolveWorldSize(config, 4);
    try {
        resolveWorldSize(config, 1);
        ADD_FAILURE() << "a 4-rank config ran as one process";
    } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("distributed.world_size is 4 but this is a single process"),
                  std::string::npos)
            << e.what();
        EXPECT_NE(std::string(e.what()).find("mpirun -np 4"), std::string::npos) << e.what();
    }
    EXPECT_THROW(resolveWorldSize(config, 2), ConfigError);
}
