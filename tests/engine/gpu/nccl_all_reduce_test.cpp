// NCCL's all-reduce on the CUDA backend (backend/cuda/nccl_all_reduce) held to the host path
// (distributed/host_average: the arithmetic the MPI all-reduce does) bit for bit, in fp32, fp16
// and bf16 with every reduction order: the same divisions, the same rounding to the type, the
// same flush, overflow and non-finite counts.
//
// Registered twice (CMakeLists.txt): as a plain process (one rank; the divisions of a world of
// 3 are applied, so that they round as they would there) and, where MPI is built, under
// `mpirun -np 2` (two ranks, one GPU each, the divisions of their own world). Every rank takes
// the same decision to skip (no CUDA backend, fewer GPUs than ranks, no NCCL), with the reason:
// a rank that skipped while the other waited in a collective would hang both.
#include "engine/backend/backend_factory.h"
#include "engine/backend/cuda_plugin_loader.h"
#include "engine/config/run_config.h"
#include "engine/distributed/all_reduce_path.h"
#include "engine/distributed/connect_ranks.h"
#include "engine/distributed/data_parallel.h"
#include "engine/distributed/gpu_assignment.h"
#include "engine/distributed/host_average.h"
#include "engine/distributed/one_rank_communicator.h"
#include "engine/distributed/rank_agreement.h"
#include "engine/numerics/conversions.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <ostream>
#include <random>
#include <vector>

using namespace mantissa;

namespace {

// MPI's communicator under mpirun, else a world of one.
Communicator& communicator()
{
    static const std::unique_ptr<Communicator> launched = connectRanks();
    static OneRankCommunicator one;
    return launched ? *launched : one;
}

struct NcclSetup {
    std::unique_ptr<Backend> backend;
    std::unique_ptr<DeviceAllReduce> nccl;
    std::string skip;    // why every rank skips
    std::string failure; // NCCL refused on a machine where it should work
};

NcclSetup makeSetup()
{
    NcclSetup setup;
    Communicator& comm = communicator();
    const GpuAssignment gpu = assignGpuToThisRank("cuda");
    std::string why = gpu.error;
    if (why.empty()) {
        try {
            setup.backend = selectBackend(gpu.device, 1).backend;
        } catch (const ResourceError& e) {
            why = e.what();
        }
    }
    if (why.empty()) {
        const NcclSupport nccl = ncclSupport();
        if (!nccl.available())
            why = nccl.whyNot;
    }
    try {
        failTogether(comm, why.empty() ? why : "rank " + std::to_string(comm.rank()) + ": " + why);
    } catch (const DistributedError& e) {
        setup.skip = e.what();
        // Under mpirun CTest runs every test in one job: this line is what it reads as a skip
        // (SKIP_REGULAR_EXPRESSION), and it can only appear when every test skips.
        if (comm.size() > 1 && comm.rank() == 0)
            std::printf("nccl_all_reduce_test: every rank skips: %s\n", setup.skip.c_str());
        return setup;
    }
    const CudaPluginApi& api = *cudaPlugin().api;
    std::string id, whyNot;
    if (comm.rank() == 0)
        id = api.ncclUniqueId(whyNot);
    comm.broadcast(id, 0);
    if (id.empty()) {
        setup.failure = "rank 0 could not make an NCCL id: " + whyNot;
        return setup;
    }
    setup.nccl = api.makeNcclAllReduce(*setup.backend, id, comm.rank(), comm.size(), {}, whyNot);
    if (!setup.nccl)
        setup.failure = whyNot;
    return setup;
}

// Made once per process (NCCL's set-up takes seconds) and never destroyed: at exit, a
// communicator's teardown would race the CUDA driver's and MPI's own.
NcclSetup& setup()
{
    static NcclSetup& made = *new NcclSetup(makeSetup());
    return made;
}

// The divisions: those of this world, or in a world of one those of a world of 3, whose 1/3
// and sqrt(3) are inexact and so round.
AllReduceDivisors divisorsFor(ReductionOrder order)
{
    const int n = communicator().size();
    return reductionDivisors(order, n > 1 ? n : 3);
}

const char* typeName(DType type) { return type == DType::F32 ? "fp32" : type == DType::F16 ? "fp16" : "bf16"; }

// Gradients of every kind a 16-bit all-reduce meets, different on every rank: ordinary values,
// values so small that a division flushes them, values so large that two ranks' sum overflows
// fp16; each representable in `type`.
std::vector<float> gradients(DType type, std::size_t n, unsigned seed)
{
    std::mt19937 rng(seed);
    std::normal_distribution<float> ordinary(0.0f, 1e-2f);
    std::uniform_int_distribution<int> kind(0, 99), steps(1, 7);
    const float tiny = type == DType::F16 ? 0x1p-24f : type == DType::BF16 ? 0x1p-133f : 0x1p-149f;
    const float large = type == DType::F16 ? 40000.0f : 2e38f;
    std::vector<float> values(n);
    for (float& v : values) {
        const int k = kind(rng);
        v = k < 6 ? tiny * static_cast<float>(steps(rng)) : k < 8 ? large : k < 9 ? -large : ordinary(rng);
    }
    roundThrough(values.data(), n, type);
    return values;
}

bool sameValue(float a, float b)
{
    if (std::isnan(a) || std::isnan(b)) // which NaN a sum returns is left open by IEEE 754
        return std::isnan(a) && std::isnan(b);
    return std::memcmp(&a, &b, sizeof a) == 0;
}

struct Case {
    DType type;
    ReductionOrder order;
};

const char* orderName(ReductionOrder order)
{
    return order == ReductionOrder::SumThenDivide   ? "sumThenDivide"
           : order == ReductionOrder::DivideThenSum ? "divideThenSum"
                                                    : "sqrtSplit";
}

// gtest names each case by it (and gtest_discover_tests the CTest entry) instead of its bytes.
[[maybe_unused]] void PrintTo(const Case& c, std::ostream* out)
{
    *out << typeName(c.type) << " " << orderName(c.order);
}

class NcclAllReduce : public ::testing::TestWithParam<Case> {
protected:
    void SetUp() override
    {
        if (!setup().skip.empty())
            GTEST_SKIP() << setup().skip;
        ASSERT_EQ(setup().failure, "");
        if (communicator().size() > 2)
            GTEST_SKIP() << "from 3 ranks on NCCL adds in its ring's order, not rank order, so the sum may differ "
                            "from the host path's in the last bit";
    }

    // Uploads `values` as three tensors of `type` (uneven sizes, so packing is exercised).
    std::vector<Tensor> upload(const std::vector<float>& values, DType type)
    {
        Backend& backend = *setup().backend;
        std::vector<Tensor> tensors;
        std::size_t at = 0;
        for (const std::int64_t n : {std::int64_t{4097}, std::int64_t{77}, std::int64_t{1000}}) {
            tensors.push_back(backend.empty(Shape({n}), type));
            backend.upload(values.data() + at, tensors.back());
            at += static_cast<std::size_t>(n);
        }
        return tensors;
    }

    std::vector<float> download(const std::vector<Tensor>& tensors)
    {
        std::vector<float> values;
        for (const Tensor& t : tensors) {
            std::vector<float> part(static_cast<std::size_t>(t.numel()));
            setup().backend->download(t, part.data());
            values.insert(values.end(), part.begin(), part.end());
        }
        return values;
    }
};

constexpr std::size_t kValues = 4097 + 77 + 1000;

} // namespace

TEST_P(NcclAllReduce, GivesTheHostPathsBitsAndCounts)
{
    const Case c = GetParam();
    const AllReduceDivisors divisors = divisorsFor(c.order);
    std::vector<float> host = gradients(c.type, kValues, 20 + static_cast<unsigned>(communicator().rank()));
    std::vector<Tensor> tensors = upload(host, c.type);
    std::vector<Tensor*> pointers;
    for (Tensor& t : tensors)
        pointers.push_back(&t);

    const AllReduceOutcome expected = averageOnHost(communicator(), host, c.type, divisors);
    const AllReduceOutcome got = setup().nccl->average(pointers, c.type, divisors);
    const std::vector<float> device = download(tensors);

    int mismatches = 0;
    for (std::size_t i = 0; i < kValues && mismatches < 8; ++i) {
        if (!sameValue(device[i], host[i])) {
            ++mismatches;
            ADD_FAILURE() << typeName(c.type) << " value " << i << ": NCCL " << device[i] << ", host path " << host[i];
        }
    }
    EXPECT_EQ(got.localNonFinite, expected.localNonFinite);
    EXPECT_EQ(got.flushedByDivision, expected.flushedByDivision);
    EXPECT_EQ(got.overflowedInSum, expected.overflowedInSum);
    EXPECT_EQ(got.amax, expected.amax);
    // Only a division by 2 or more can take a nonzero 16-bit value to zero: the smallest
    // subnormal over less than 2 is still more than half of itself and rounds back up (the
    // square-root split divides by sqrt(2) or sqrt(3) below 4 ranks).
    if (c.type != DType::F32 && divisors.before >= 2.0f) {
        EXPECT_GT(expected.flushedByDivision, 0) << "the case should flush some values";
    }
}

TEST_P(NcclAllReduce, ARanksOwnInfinityIsItsOwnNotTheSumsOverflow)
{
    const Case c = GetParam();
    std::vector<float> host = gradients(c.type, kValues, 7);
    host[5] = INFINITY;
    std::vector<Tensor> tensors = upload(host, c.type);
    std::vector<Tensor*> pointers;
    for (Tensor& t : tensors)
        pointers.push_back(&t);
    const AllReduceOutcome expected = averageOnHost(communicator(), host, c.type, divisorsFor(c.order));
    const AllReduceOutcome got = setup().nccl->average(pointers, c.type, divisorsFor(c.order));
    EXPECT_TRUE(got.localNonFinite);
    EXPECT_EQ(got.overflowedInSum, 0);
    EXPECT_EQ(got.overflowedInSum, expected.overflowedInSum);
    EXPECT_TRUE(std::isinf(download(tensors)[5]));
}

INSTANTIATE_TEST_SUITE_P(
    TypesAndOrders, NcclAllReduce,
    ::testing::Values(Case{DType::F32, ReductionOrder::SumThenDivide}, Case{DType::F32, ReductionOrder::DivideThenSum},
                      Case{DType::F32, ReductionOrder::SqrtSplit}, Case{DType::F16, ReductionOrder::SumThenDivide},
                      Case{DType::F16, ReductionOrder::DivideThenSum}, Case{DType::F16, ReductionOrder::SqrtSplit},
                      Case{DType::BF16, ReductionOrder::SumThenDivide},
                      Case{DType::BF16, ReductionOrder::DivideThenSum}, Case{DType::BF16, ReductionOrder::SqrtSplit}),
    [](const ::testing::TestParamInfo<Case>& info) {
        return std::string(typeName(info.param.type)) + "_" + orderName(info.param.order);
    });

// The run's path: DataParallel connected to NCCL on every rank says so, and its gradient
// average (the trainer's call) gives the bits and counts of a DataParallel on the host path.
TEST(NcclDataParallel, ARunOnGpusAveragesOnTheDeviceAndSaysSo)
{
    if (!setup().skip.empty())
        GTEST_SKIP() << setup().skip;
    ASSERT_EQ(setup().failure, "");
    RunConfig config = parseRunConfig(
        R"({"model": {"input": [4], "classes": 2, "layers": [{"type": "linear", "units": 2}]},
            "training": {"batch_size": 8}, "distributed": {"allreduce_dtype": "compute"}})",
        "test.json");
    Backend& backend = *setup().backend;
    DataParallel onDevice(communicator(), config);
    const AllReducePath path = connectAllReduce(onDevice, backend);
    ASSERT_TRUE(path.onDevice) << path.description;
    EXPECT_EQ(onDevice.allReducePath().rfind("NCCL 2.", 0), 0u) << onDevice.allReducePath();
    EXPECT_NE(onDevice.allReducePath().find(" on device"), std::string::npos);
    DataParallel onHost(communicator(), config);
    for (const DType type : {DType::F32, DType::F16}) {
        const std::vector<float> values = gradients(type, 3000, 40 + static_cast<unsigned>(communicator().rank()));
        Tensor a = backend.empty(Shape({3000}), type), b = backend.empty(Shape({3000}), type);
        backend.upload(values.data(), a);
        backend.upload(values.data(), b);
        Tensor* pa[] = {&a};
        Tensor* pb[] = {&b};
        onDevice.averageGradients(backend, pa, type);
        onHost.averageGradients(backend, pb, type);
        std::vector<float> fromDevice(3000), fromHost(3000);
        backend.download(a, fromDevice.data());
        backend.download(b, fromHost.data());
        for (std::size_t i = 0; i < fromDevice.size(); ++i) {
            ASSERT_TRUE(sameValue(fromDevice[i], fromHost[i]))
                << typeName(type) << " value " << i << ": " << fromDevice[i] << " against " << fromHost[i];
        }
    }
    EXPECT_EQ(onDevice.counts().flushedByDivision, onHost.counts().flushedByDivision);
    EXPECT_EQ(onDevice.counts().overflowedInSum, onHost.counts().overflowedInSum);
}
