// The host-side half of the GPU all-reduce, which needs no GPU: which GPU each rank takes and
// the refusal of a node with fewer GPUs than ranks, the launchers' node-local variables, the
// choice between NCCL on the device and MPI on the host (and what the run's record says about
// it), the ranks' agreement on a failure, and the host average whose rounding points NCCL must
// reproduce (tests/engine/gpu/nccl_all_reduce_test.cpp holds the device to it).
#include "engine/backend/backend_factory.h"
#include "engine/config/run_config.h"
#include "engine/distributed/all_reduce_path.h"
#include "engine/distributed/data_parallel.h"
#include "engine/distributed/gpu_assignment.h"
#include "engine/distributed/host_average.h"
#include "engine/distributed/launch_environment.h"
#include "engine/distributed/one_rank_communicator.h"
#include "engine/distributed/rank_agreement.h"
#include "engine/numerics/reference_conversions.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

using namespace mantissa;

namespace {

LaunchEnvironment launch(int worldSize, int rank, int localRank, int localSize)
{
    LaunchEnvironment env;
    env.worldSize = worldSize;
    env.rank = rank;
    env.launcher = "mpirun (OMPI_COMM_WORLD_SIZE=" + std::to_string(worldSize) + ")";
    env.localRank = localRank;
    env.localSize = localSize;
    env.localSource = localRank >= 0 ? "OMPI_COMM_WORLD_LOCAL_RANK" : "";
    return env;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

const char* kMinimal = R"({"model": {"input": [4], "classes": 2, "layers": [{"type": "linear", "units": 2}]}})";

} // namespace

TEST(GpuAssignment, EachRankTakesTheGpuOfItsPlaceOnTheNode)
{
    // Rank 3 of 4 over two nodes of 2 GPUs: the second rank of its node takes cuda:1.
    GpuAssignment gpu = assignGpu("cuda", launch(4, 3, 1, 2), 2, "", "node2");
    EXPECT_EQ(gpu.device, "cuda:1");
    EXPECT_EQ(gpu.error, "");
    // auto on a machine with GPUs is a GPU run too.
    EXPECT_EQ(assignGpu("auto", launch(2, 0, 0, 2), 2, "", "node1").device, "cuda:0");
    // One rank per node may name its GPU.
    EXPECT_EQ(assignGpu("cuda:1", launch(2, 1, 0, 1), 2, "", "node2").device, "cuda:1");
}

TEST(GpuAssignment, WhatNeedsNoGpuIsLeftAlone)
{
    EXPECT_EQ(assignGpu("cuda:1", launch(1, 0, 0, 1), 1, "", "node1").device, "cuda:1"); // one process
    EXPECT_EQ(assignGpu("cpu", launch(4, 2, 2, 4), 0, "no CUDA GPU found", "node1").device, "cpu");
    const GpuAssignment autoWithoutGpu = assignGpu("auto", launch(4, 2, 2, 4), 0, "no CUDA GPU found", "node1");
    EXPECT_EQ(autoWithoutGpu.device, "auto"); // every rank falls back to the CPU alike
    EXPECT_EQ(autoWithoutGpu.error, "");
}

TEST(GpuAssignment, MoreRanksOnANodeThanGpusIsRefusedWithTheCounts)
{
    const GpuAssignment gpu = assignGpu("cuda", launch(4, 0, 0, 4), 2, "", "node1");
    EXPECT_TRUE(contains(gpu.error, "4 ranks on node1 ask for a GPU each (training.device cuda, one rank per GPU), "
                                    "but node1 has 2 GPUs (cuda:0 to cuda:1)"))
        << gpu.error;
    EXPECT_TRUE(contains(gpu.error, "launch at most 2 ranks per node")) << gpu.error;
    EXPECT_TRUE(contains(gpu.error, "--device cpu")) << gpu.error;
    // Every rank of the node refuses, not only those beyond the last GPU, so no rank of it starts.
    EXPECT_EQ(assignGpu("cuda", launch(4, 0, 0, 4), 2, "", "node1").error,
              assignGpu("cuda", launch(4, 3, 3, 4), 2, "", "node1").error);
    // A launcher that gives the local rank but not the node's size: the rank beyond the GPUs knows.
    const GpuAssignment unknownSize = assignGpu("cuda", launch(3, 2, 2, 0), 2, "", "node1");
    EXPECT_TRUE(contains(unknownSize.error, "at least 3 ranks on node1")) << unknownSize.error;
    EXPECT_EQ(assignGpu("cuda", launch(3, 1, 1, 0), 2, "", "node1").device, "cuda:1");
    const GpuAssignment one = assignGpu("cuda", launch(2, 1, 1, 2), 1, "", "node1");
    EXPECT_TRUE(contains(one.error, "2 ranks on node1") && contains(one.error, "has 1 GPU (cuda:0)")) << one.error;
}

TEST(GpuAssignment, OtherRefusalsSayWhatToChange)
{
    const GpuAssignment none = assignGpu("cuda", launch(2, 0, 0, 2), 0, "no CUDA GPU found", "node1");
    EXPECT_EQ(none.error, "cannot train on cuda on node1: no CUDA GPU found");
    const GpuAssignment shared = assignGpu("cuda:1", launch(2, 0, 0, 2), 2, "", "node1");
    EXPECT_TRUE(contains(shared.error, "training.device cuda:1 names one GPU, but 2 ranks run on node1"))
        << shared.error;
    const GpuAssignment unplaced = assignGpu("cuda", launch(2, 1, -1, 0), 2, "", "node1");
    EXPECT_TRUE(contains(unplaced.error, "rank 1 of 2 cannot tell which GPU of node1 is its own")) << unplaced.error;
    EXPECT_TRUE(contains(unplaced.error, "OMPI_COMM_WORLD_LOCAL_RANK")) << unplaced.error;
}

TEST(LaunchEnvironment, ReadsEachLaunchersNodeLocalRank)
{
    setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
    setenv("OMPI_COMM_WORLD_RANK", "3", 1);
    setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1", 1);
    setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "2", 1);
    LaunchEnvironment env = launchEnvironment();
    EXPECT_EQ(env.localRank, 1);
    EXPECT_EQ(env.localSize, 2);
    EXPECT_EQ(env.localSource, "OMPI_COMM_WORLD_LOCAL_RANK");
    unsetenv("OMPI_COMM_WORLD_LOCAL_RANK");
    unsetenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    setenv("MPI_LOCALRANKID", "0", 1); // MPICH's and Intel MPI's Hydra
    setenv("MPI_LOCALNRANKS", "3", 1);
    env = launchEnvironment();
    EXPECT_EQ(env.localRank, 0);
    EXPECT_EQ(env.localSize, 3);
    unsetenv("MPI_LOCALRANKID");
    unsetenv("MPI_LOCALNRANKS");
    unsetenv("OMPI_COMM_WORLD_SIZE");
    unsetenv("OMPI_COMM_WORLD_RANK");
    setenv("SLURM_STEP_NUM_TASKS", "5", 1);
    setenv("SLURM_PROCID", "4", 1);
    setenv("SLURM_LOCALID", "0", 1);
    setenv("SLURM_NODEID", "2", 1);
    setenv("SLURM_STEP_TASKS_PER_NODE", "2(x2),1", 1);
    env = launchEnvironment();
    EXPECT_EQ(env.localRank, 0);
    EXPECT_EQ(env.localSize, 1);
    EXPECT_EQ(env.localSource, "SLURM_LOCALID");
    unsetenv("SLURM_LOCALID");
    env = launchEnvironment();
    EXPECT_EQ(env.localRank, -1); // the launcher did not say
    EXPECT_EQ(env.localSize, 0);
    for (const char* name : {"SLURM_STEP_NUM_TASKS", "SLURM_PROCID", "SLURM_NODEID", "SLURM_STEP_TASKS_PER_NODE"})
        unsetenv(name);
}

TEST(LaunchEnvironment, ParsesSlurmsTasksPerNode)
{
    EXPECT_EQ(slurmTasksOnNode("4", 0), 4);
    EXPECT_EQ(slurmTasksOnNode("4", 1), 0);
    EXPECT_EQ(slurmTasksOnNode("2(x3),1", 0), 2);
    EXPECT_EQ(slurmTasksOnNode("2(x3),1", 2), 2);
    EXPECT_EQ(slurmTasksOnNode("2(x3),1", 3), 1);
    EXPECT_EQ(slurmTasksOnNode("3,2(x2)", 2), 2);
    EXPECT_EQ(slurmTasksOnNode("2(x3", 0), 0);
    EXPECT_EQ(slurmTasksOnNode("two", 0), 0);
    EXPECT_EQ(slurmTasksOnNode("", 0), 0);
}

TEST(AllReducePath, NcclOnlyWhereTheBackendIsAGpuAndNcclLoads)
{
    const NcclSupport nccl{"NCCL 2.28.9", ""};
    const NcclSupport missing{"", "NCCL cannot load: libnccl.so.2: cannot open shared object file"};
    const std::string host = "MPI on host (Open MPI v4.1.4)";
    const AllReducePath gpu = chooseAllReducePath(DeviceKind::Cuda, nccl, host);
    EXPECT_TRUE(gpu.onDevice);
    EXPECT_EQ(gpu.description, "NCCL 2.28.9 on device");
    const AllReducePath cpu = chooseAllReducePath(DeviceKind::Cpu, nccl, host);
    EXPECT_FALSE(cpu.onDevice);
    EXPECT_EQ(cpu.description, host + ": the CPU backend's gradients are already in host memory");
    const AllReducePath noNccl = chooseAllReducePath(DeviceKind::Cuda, missing, host);
    EXPECT_FALSE(noNccl.onDevice);
    EXPECT_TRUE(contains(noNccl.description, host + ": no NCCL")) << noNccl.description;
    EXPECT_TRUE(contains(noNccl.description, "libnccl.so.2: cannot open")) << noNccl.description;
}

TEST(AllReducePath, ACpuRunAgreesOnTheHostPathAndSaysSo)
{
    OneRankCommunicator comm;
    const RunConfig config = parseRunConfig(kMinimal, "test.json");
    DataParallel ranks(comm, config);
    EXPECT_EQ(ranks.allReducePath(), "MPI on host (one rank, no MPI)");
    const auto backend = makeCpuBackend(CpuOptions{1});
    const AllReducePath path = connectAllReduce(ranks, *backend);
    EXPECT_FALSE(path.onDevice);
    EXPECT_FALSE(ranks.allReducesOnDevice());
    const std::string expected =
        "MPI on host (one rank, no MPI): the CPU backend's gradients are already in host memory";
    EXPECT_EQ(path.description, expected);
    EXPECT_EQ(ranks.allReducePath(), expected);
    std::vector<RankThroughput> throughput(1);
    EXPECT_TRUE(contains(ranks.describeRankThroughput(throughput), "; all-reduce: " + expected + "; rank 0"))
        << ranks.describeRankThroughput(throughput);
}

TEST(RankAgreement, AFailureOnAnyRankEndsEveryRankWithItsMessage)
{
    OneRankCommunicator comm;
    EXPECT_NO_THROW(failTogether(comm, ""));
    try {
        failTogether(comm, "2 ranks on node1 ask for a GPU each");
        ADD_FAILURE() << "a failure was not shared";
    } catch (const DistributedError& e) {
        EXPECT_EQ(std::string(e.what()), "2 ranks on node1 ask for a GPU each");
    }
}

TEST(HostAverage, DivisorsOfEachReductionOrder)
{
    const AllReduceDivisors sumFirst = reductionDivisors(ReductionOrder::SumThenDivide, 4);
    EXPECT_EQ(sumFirst.before, 1.0f);
    EXPECT_EQ(sumFirst.after, 4.0f);
    const AllReduceDivisors divideFirst = reductionDivisors(ReductionOrder::DivideThenSum, 4);
    EXPECT_EQ(divideFirst.before, 4.0f);
    EXPECT_EQ(divideFirst.after, 1.0f);
    const AllReduceDivisors split = reductionDivisors(ReductionOrder::SqrtSplit, 3);
    EXPECT_EQ(split.before, std::sqrt(3.0f));
    EXPECT_EQ(split.after, std::sqrt(3.0f));
}

// The rounding points a device all-reduce must reproduce: each division rounded to the 16-bit
// type (so the smallest values flush, and are counted), the fp32 path rounded only by fp32.
TEST(HostAverage, SixteenBitDivisionsRoundAndCountWhatTheyFlush)
{
    OneRankCommunicator comm;
    const float tiny = 0x1p-24f; // fp16's smallest subnormal: / 3 rounds to zero
    std::vector<float> values{tiny, 3.0f, 0.0f, 1.0f};
    AllReduceOutcome outcome = averageOnHost(comm, values, DType::F16, {3.0f, 1.0f});
    EXPECT_EQ(outcome.flushedByDivision, 1);
    EXPECT_EQ(values[0], 0.0f);
    EXPECT_EQ(values[1], 1.0f);
    EXPECT_EQ(values[3], reference::halfBitsToFloat(reference::floatToHalfBits(1.0f / 3.0f)));
    EXPECT_FALSE(outcome.localNonFinite);
    EXPECT_EQ(outcome.amax, 1.0f);
    std::vector<float> fp32{tiny, 1.0f};
    outcome = averageOnHost(comm, fp32, DType::F32, {3.0f, 1.0f});
    EXPECT_EQ(outcome.flushedByDivision, 0);
    EXPECT_EQ(fp32[0], tiny / 3.0f);
    std::vector<float> withInf{INFINITY, 1.0f};
    outcome = averageOnHost(comm, withInf, DType::F16, {1.0f, 2.0f});
    EXPECT_TRUE(outcome.localNonFinite);
    EXPECT_EQ(outcome.overflowedInSum, 0); // this rank's own inf is not the sum's overflow
}
