#pragma once
// Deterministic warp and block reductions: a fixed butterfly inside each warp, then one
// thread folds the warp results in warp order. The same inputs therefore give the same bits
// on every run, which float atomics would not.
namespace mantissa::cuda {

constexpr int kWarpSize = 32;
// Slots a block reduction needs: one per warp of a 1024-thread block, plus the result.
constexpr int kReduceSlots = 1024 / kWarpSize + 1;

// The value of lane (this lane ^ offset). A type __shfl_xor_sync does not take (a struct)
// provides its own overload beside its definition; argument-dependent lookup finds it.
template <typename T>
__device__ __forceinline__ T shuffleXor(T value, int offset)
{
    return __shfl_xor_sync(0xffffffffu, value, offset);
}

// Lane 0 ends with the combination of all 32 lanes' values, in a fixed tree. With a
// commutative `combine` every other lane ends with the same value.
template <typename T, typename Combine>
__device__ __forceinline__ T warpReduce(T value, Combine combine)
{
    for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
        value = combine(value, shuffleXor(value, offset));
    return value;
}

// Every thread of the block gets the combination of all threads' values. blockDim.x must be
// a multiple of 32 and every thread must call it (it synchronises the block). `slots` is
// __shared__ storage of kReduceSlots values; consecutive calls may reuse the same slots.
template <typename T, typename Combine>
__device__ T blockReduce(T value, Combine combine, T* slots)
{
    value = warpReduce(value, combine);
    const int warps = static_cast<int>(blockDim.x) / kWarpSize;
    if (threadIdx.x % kWarpSize == 0)
        slots[threadIdx.x / kWarpSize] = value;
    __syncthreads();
    if (threadIdx.x == 0) {
        T total = slots[0];
        for (int w = 1; w < warps; ++w)
            total = combine(total, slots[w]);
        slots[kReduceSlots - 1] = total;
    }
    __syncthreads();
    // Safe to reuse `slots` in the next call: its first writes (warp slots) cannot clobber
    // the result slot, and thread 0 rewrites that only after every thread has passed the
    // next call's first barrier, that is after reading this result.
    return slots[kReduceSlots - 1];
}

} // namespace mantissa::cuda
