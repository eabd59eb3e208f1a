#pragma once
// Which of the backend's buffers hold per-tensor FP8 elements that quantizeOperand wrote, and in
// which format: how the GEMM learns that its bf16 operands are FP8 codes it may hand to
// cuBLASLt's FP8 matmul (fp8_gemm.cpp) without the backend contract carrying formats. An entry
// lives exactly as long as its buffer: DeviceMemory's release listener forgets it before the
// memory can be handed out again, so a reused address is never mistaken for FP8 elements. The
// engine never writes a prepared operand after quantising it (gemm_inputs.h hands it to the
// GEMM as it is); an operand the host quantised and uploaded (the lens's sampled steps) has no
// entry and is multiplied emulated. Tensors die on any thread, hence the mutex.
#include "engine/numerics/minifloat_format.h"

#include <cstdint>
#include <mutex>
#include <optional>
#include <unordered_map>

namespace mantissa::cuda {

class Fp8Operands {
public:
    // The `count` values at `data` are now elements of `element`.
    void note(const void* data, std::int64_t count, MiniFloat element);
    // The format of the buffer at `data` when it holds `count` noted elements.
    std::optional<MiniFloat> find(const void* data, std::int64_t count) const;
    void forget(const void* data);

private:
    struct Entry {
        std::int64_t count = 0;
        MiniFloat element = MiniFloat::E4M3;
    };
    mutable std::mutex m_mutex;
    std::unordered_map<const void*, Entry> m_entries;
};

} // namespace mantissa::cuda
