// One rank's gradient all-reduce on the GPU: NCCL on the device (backend/cuda/nccl_all_reduce)
// against the host path a run without NCCL takes (download, the MPI sum's arithmetic, upload),
// alternated in one process, for the mlp preset's gradients in fp32, fp16 and bf16. One rank's
// NCCL sum moves nothing between GPUs: this times the path's fixed cost (packing, the division
// and count kernels, NCCL's launch, the counts read back) against the host round trip.
// bench/gpu/run_on_device.sh --stage nccl runs it; it prints why and exits 0 where there is no
// GPU or no NCCL.
//
//   nccl_all_reduce_bench [ROUNDS]   (default 20)
#include "engine/backend/backend_factory.h"
#include "engine/backend/cuda_plugin_loader.h"
#include "engine/config/presets.h"
#include "engine/distributed/all_reduce_path.h"
#include "engine/distributed/host_average.h"
#include "engine/distributed/one_rank_communicator.h"
#include "engine/model/model_validation.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

using namespace mantissa;

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

} // namespace

int main(int argc, char** argv)
{
    const int rounds = argc > 1 ? std::atoi(argv[1]) : 20;
    const std::int64_t values = validateModel(presetConfig("mlp").model).totalParameters;
    // NCCL first: loading it needs no GPU, so even a machine without one says which it found.
    const NcclSupport nccl = ncclSupport();
    if (!nccl.available()) {
        std::printf("nccl_all_reduce_bench skipped: %s\n", nccl.whyNot.c_str());
        return 0;
    }
    std::printf("%s loaded\n", nccl.version.c_str());
    std::unique_ptr<Backend> backend;
    try {
        backend = selectBackend("cuda", 1).backend;
    } catch (const Error& e) {
        std::printf("nccl_all_reduce_bench skipped: %s\n", e.what());
        return 0;
    }
    const CudaPluginApi& api = *cudaPlugin().api;
    std::string whyNot;
    const std::string id = api.ncclUniqueId(whyNot);
    auto device = id.empty() ? nullptr : api.makeNcclAllReduce(*backend, id, 0, 1, {}, whyNot);
    if (!device) {
        std::fprintf(stderr, "NCCL could not start on %s: %s\n", backend->name().c_str(), whyNot.c_str());
        return 1;
    }
    OneRankCommunicator comm;
    std::printf("%s, %s; the mlp preset's %lld gradients, %d rounds each, divided as sum-then-divide over 2 ranks\n",
                backend->name().c_str(), device->description().c_str(), static_cast<long long>(values), rounds);
    std::printf("| type | NCCL on device (ms) | host path (ms) | host / device |\n| --- | --- | --- | --- |\n");
    const AllReduceDivisors divisors = reductionDivisors(ReductionOrder::SumThenDivide, 2);
    std::mt19937 rng(1);
    std::normal_distribution<float> gradient(0.0f, 1e-3f);
    std::vector<float> host(static_cast<std::size_t>(values));
    for (const DType type : {DType::F32, DType::F16, DType::BF16}) {
        for (float& v : host)
            v = gradient(rng);
        Tensor t = backend->empty(Shape({values}), type);
        backend->upload(host.data(), t);
        Tensor* tensors[] = {&t};
        device->average(tensors, type, divisors); // warm-up: NCCL's first call sets up its channels
        double onDevice = 0, onHost = 0;
        for (int r = 0; r < rounds; ++r) {
            auto start = Clock::now();
            device->average(tensors, type, divisors);
            onDevice += secondsSince(start);
            start = Clock::now();
            backend->download(t, host.data());
            averageOnHost(comm, host, type, divisors);
            backend->upload(host.data(), t); // a queued upload is waited for by the next round's download
            onHost += secondsSince(start);
        }
        const char* name = type == DType::F32 ? "fp32" : type == DType::F16 ? "fp16" : "bf16";
        std::printf("| %s | %.3f | %.3f | %.1fx |\n", name, 1e3 * onDevice / rounds, 1e3 * onHost / rounds,
                    onHost / onDevice);
    }
    return 0;
}
