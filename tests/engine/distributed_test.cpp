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
#include <random>
#include <vector>

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

namespace {

// Random words of every class: normals, subnormals, zeros of both signs, infinities, NaNs and
// pairs near the top of the range whose sum overflows; 1000 + 7 words, so the vector loop's
// tail and a second chunk are both exercised.
std::vector<std::uint16_t> randomWords(DType type, std::mt19937& rng)
{
    const std::uint16_t inf = type == DType::F16 ? 0x7c00 : 0x7f80;
    const std::uint16_t largest = type == DType::F16 ? 0x7bff : 0x7f7f;
    const int mantissaBits = type == DType::F16 ? 10 : 7;
    std::vector<std::uint16_t> words(2 * 1024 + 1000 + 7);
    std::uniform_int_distribution<int> pick(0, 9);
    std::uniform_int_distribution<std::uint32_t> any(0, 0xffff);
    for (std::uint16_t& w : words) {
        const std::uint16_t sign = (any(rng) & 1) ? 0x8000 : 0;
        const std::uint16_t mantissa = static_cast<std::uint16_t>(any(rng) & ((1u << mantissaBits) - 1));
        switch (pick(rng)) {
        case 0: w = sign | mantissa; break;                                         // subnormal or zero
        case 1: w = sign; break;                                                    // signed zero
        case 2: w = sign | inf; break;                                              // infinity
        case 3: w = static_cast<std::uint16_t>(largest - (any(rng) & 0xff)); break; // near the top: overflows
        case 4: w = sign | inf | static_cast<std::uint16_t>(mantissa | 1); break;   // NaN
        default: w = static_cast<std::uint16_t>(any(rng)); break;                   // any bits
        }
    }
    return words;
}

} // namespace

class RoundedSumTypes : public ::testing::TestWithParam<DType> {};

TEST_P(RoundedSumTypes, VectorisedSumIsBitIdenticalToTheReference)
{
    const DType type = GetParam();
    std::mt19937 rng(20);
    for (int round = 0; round < 20; ++round) {
        const std::vector<std::uint16_t> in = randomWords(type, rng);
        std::vector<std::uint16_t> fast = randomWords(type, rng);
        std::vector<std::uint16_t> reference = fast;
        addRoundedWords(in.data(), fast.data(), fast.size(), type);
        addRoundedWordsReference(in.data(), reference.data(), reference.size(), type);
        for (std::size_t i = 0; i < fast.size(); ++i)
            ASSERT_EQ(fast[i], reference[i])
                << "word " << i << " of round " << round << ": " << std::hex << in[i] << " + the other operand";
    }
}

INSTANTIATE_TEST_SUITE_P(Fp16AndBf16, RoundedSumTypes, ::testing::Values(DType::F16, DType::BF16),
                         [](const ::testing::TestParamInfo<DType>& info) {
                             return info.param == DType::F16 ? std::string("fp16") : std::string("bf16");
                         });

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

// The refusal a build without MPI gives, checked in every build (an MPI build would start MPI
// through connectRanks, which this test process must not do): the launchers' variables read
// back as a launch of several ranks, and the message names the launcher and the fix.
TEST(LaunchEnvironment, TheRefusalWithoutMpiNamesTheLauncher)
{
    const struct {
        const char* sizeVariable;
        const char* rankVariable;
        const char* launcher;
    } launches[] = {{"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "mpirun"},
                    {"SLURM_STEP_NUM_TASKS", "SLURM_PROCID", "srun"},
                    {"PMI_SIZE", "PMI_RANK", "a PMI launcher"}};
    for (const auto& launch : launches) {
        setenv(launch.sizeVariable, "3", 1);
        setenv(launch.rankVariable, "2", 1);
        const LaunchEnvironment env = launchEnvironment();
        unsetenv(launch.sizeVariable);
        unsetenv(launch.rankVariable);
        ASSERT_TRUE(env.launched()) << launch.sizeVariable;
        try {
            refuseLaunchWithoutMpi(env);
            ADD_FAILURE() << "a launch by " << launch.sizeVariable << " was accepted without MPI";
        } catch (const DistributedError& e) {
            const std::string message = e.what();
            EXPECT_NE(message.find("rank 2 of 3 by " + std::string(launch.launcher)), std::string::npos) << message;
            EXPECT_NE(message.find("no MPI support"), std::string::npos) << message;
            EXPECT_NE(message.find("libopenmpi-dev"), std::string::npos) << message;
        }
    }
    // A launch of one rank, and a plain process, are a single process: nothing to refuse.
    setenv("OMPI_COMM_WORLD_SIZE", "1", 1);
    EXPECT_NO_THROW(refuseLaunchWithoutMpi(launchEnvironment()));
    unsetenv("OMPI_COMM_WORLD_SIZE");
    EXPECT_NO_THROW(refuseLaunchWithoutMpi(launchEnvironment()));
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
        withDistributed(
            R"({"world_size": 2, "allreduce_dtype": "compute", "reduction": "sqrt-split", "batch_norm": "synchronised"})"),
        "test.json");
    EXPECT_EQ(set.distributed.worldSize, 2);
    EXPECT_EQ(set.distributed.batchNorm, BatchNormSync::Synchronised);
    EXPECT_EQ(plain.distributed.batchNorm, BatchNormSync::PerRank); // the default
    EXPECT_EQ(set.distributed.allReduceType, AllReduceType::Compute);
    EXPECT_EQ(set.distributed.reduction, ReductionOrder::SqrtSplit);
    EXPECT_EQ(parseRunConfig(runConfigToJson(set), "again").distributed, set.distributed);
    EXPECT_NE(errorOf(withDistributed(R"({"reduction": "mean"})")).find("distributed.reduction"), std::string::npos);
    EXPECT_NE(errorOf(withDistributed(R"({"allreduce_dtype": "fp8"})")).find("distributed.allreduce_dtype"),
              std::string::npos);
    EXPECT_NE(errorOf(withDistributed(R"({"batch_norm": "sync"})"))
                  .find("distributed.batch_norm is \"sync\"; expected per-rank or synchronised"),
              std::string::npos)
        << errorOf(withDistributed(R"({"batch_norm": "sync"})"));
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
