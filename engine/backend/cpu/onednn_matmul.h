#pragma once
// Matrix products through oneDNN's matmul, with the engine's GEMM semantics: inputs in the
// compute type (fp32, or bf16 run natively), products accumulated in fp32, an fp32 result
// that the caller rounds once into C's storage type. oneDNN picks the kernel for the CPU it
// finds (brgemm on AVX-512, VDPBF16PS or AMX for bf16). Primitives are built once per shape
// and reused: building one costs far more than running a small GEMM.
#include "engine/backend/backend.h"
#include "engine/backend/cpu/onednn_runtime.h"

#include <cstdint>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace mantissa::cpu {

struct MatmulShape {
    Transpose ta = Transpose::No, tb = Transpose::No;
    std::int64_t m = 0, n = 0, k = 0;
    bool bf16Inputs = false; // a and b hold bf16 bits; otherwise fp32
    bool rowBias = false;    // an fp32 bias[n] joins every row before the result is written
    float alpha = 1, beta = 0;
    // batch > 1: that many products in one primitive, the i-th operands starting strideA,
    // strideB and strideC elements after the previous ones (attention's heads and samples).
    std::int64_t batch = 1, strideA = 0, strideB = 0, strideC = 0;
    // c holds bf16 bits that oneDNN's kernel rounds the fp32 result into (to nearest even, as
    // ours; results below 2^-126 flush, as the bf16 dot products flush their inputs), so the
    // fp32 result never crosses memory; beta's c is read back from those bits.
    bool bf16Output = false;
    // max(0, x) of every result in the kernel (oneDNN's eltwise post-op), before it is written.
    bool relu = false;

    bool operator==(const MatmulShape&) const = default;
};

class OneDnnMatmul {
public:
    explicit OneDnnMatmul(OneDnnRuntime& runtime) : m_runtime(runtime) {}

    // c = alpha * op(a) op(b) [+ bias] [+ beta * c]: c is fp32 (or bf16, shape.bf16Output) [m, n] row-major; a is [m, k]
    // (or [k, m] when ta) and b is [k, n] (or [n, k] when tb), row-major; for each of
    // shape.batch products at the shape's strides. A bias needs batch 1.
    // A native bf16 shape oneDNN refuses to build runs as runEmulated does where the runtime
    // falls back (onednn_runtime.h), and is an UnsupportedError otherwise.
    void run(const MatmulShape& shape, const void* a, const void* b, const float* bias, void* c);

private:
    struct ShapeHash {
        std::size_t operator()(const MatmulShape& s) const;
    };
    // A primitive, and the row length it reads B's rows at: n, or more where B is copied into
    // padded rows first (onednn_matmul.cpp, aliasingRows).
    struct Prepared {
        dnnl::matmul matmul;
        std::int64_t rowOfB = 0;
        // The shape's ReLU runs after the kernel, whose post-op would not give its bits
        // (appliesReluExactly).
        bool reluAfter = false;
    };
    // The shape's primitive, or nullptr where oneDNN refused a native bf16 one and the runtime
    // falls back; throws UnsupportedError for any other refusal.
    Prepared* primitive(const MatmulShape& shape);
    // The emulated path for a native bf16 shape: a and b (and a read c) widened to fp32, the
    // fp32 primitive of the same shape, its result rounded once into c's type.
    void runEmulated(const MatmulShape& shape, const void* a, const void* b, const float* bias, void* c);

    OneDnnRuntime& m_runtime;
    std::unordered_map<MatmulShape, Prepared, ShapeHash> m_primitives;
    std::unordered_set<MatmulShape, ShapeHash> m_refused; // native shapes that fell back
    std::vector<unsigned char> m_paddedB;                 // B in padded rows; only grows
};

} // namespace mantissa::cpu
