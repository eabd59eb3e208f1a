#pragma once
// 2-D convolutions (NCHW tensors) through oneDNN's convolution primitives, with the engine's
// semantics: inputs in the compute type (fp32, or bf16 run natively), products accumulated in
// fp32, every result (y, dx, dw, dbias) written in fp32 for the caller to round once into its
// tensor's dtype. The bias joins the fp32 sum inside the kernel, before that rounding.
// Primitives, and the reorders between our NCHW tensors and the blocked layouts oneDNN's
// kernels run on, are built once per geometry and input type and reused. A native bf16 shape
// oneDNN refuses to build runs emulated where the runtime falls back (onednn_runtime.h): its
// inputs widened to fp32, the fp32 primitive, the result rounded once into its type.
#include "engine/backend/cpu/onednn_runtime.h"
#include "engine/backend/geometry.h"

#include "engine/tensor/tensor.h"

#include <array>
#include <cstdint>
#include <memory>
#include <unordered_map>

namespace mantissa::cpu {

struct ConvShape {
    ConvGeometry geometry;
    bool bf16Inputs = false; // x, w and dy hold bf16 bits; otherwise fp32
    bool bias = false;       // forward: an fp32 bias[OC] is added; backward weights: dbias is computed
    // Native bf16 only: y (forward) or dx (backward data) is written in bf16, rounded by the
    // kernel (to nearest even, as our rounding, but flushing results below 2^-126 to zero as
    // the bf16 dot-product instructions flush their inputs and outputs), so that the fp32 result
    // never crosses memory.
    bool bf16Output = false;
    bool relu = false; // forward: max(0, y) in the kernel (a post-op), before y is written
};

// A forward's input as its kernel read it (moved into the kernel's blocked layout), kept for the
// filter gradient of the same convolution (Backend's ConvKeep): reordering a 128x32x28x28 input
// costs about as much as a third of a bf16 kernel's time, and the backward would repeat it.
struct KeptConvInput {
    const void* source = nullptr; // the caller's x it was moved from
    dnnl::memory::desc layout;
    std::shared_ptr<Storage> storage;
};

class OneDnnConv {
public:
    explicit OneDnnConv(OneDnnRuntime& runtime);
    ~OneDnnConv();

    // y[N, OC, outH, outW] = x[N, IC, inH, inW] conv w[OC, IC, kH, kW] (+ bias[OC]), y in fp32
    // (or bf16, shape.bf16Output). With `keep`, x as the kernel read it, where it was moved into
    // another layout (else `keep` is left empty).
    void forward(const ConvShape& shape, const void* x, const void* w, const float* bias, void* y,
                 std::shared_ptr<const KeptConvInput>* keep = nullptr);
    // dx[N, IC, inH, inW] from dy[N, OC, outH, outW] and w, dx in fp32 (or bf16, shape.bf16Output).
    void backwardData(const ConvShape& shape, const void* dy, const void* w, void* dx);
    // dw[OC, IC / groups, kH, kW] (and dbias[OC] when shape.bias) from x and dy, in fp32. `kept` (from
    // forward() of this x) stands in for moving x into the kernel's layout where it holds x in
    // the layout this kernel reads.
    void backwardWeights(const ConvShape& shape, const void* x, const void* dy, float* dw, float* dbias,
                         const KeptConvInput* kept = nullptr);
    // backwardWeights(filter, x, dy, dw, dbias, kept), then backwardData(data, dy, w, dx), with dy
    // moved into the kernels' layout once where both kernels use the same one.
    void backward(const ConvShape& filter, const ConvShape& data, const void* x, const void* dy, const void* w,
                  float* dw, float* dbias, void* dx, const KeptConvInput* kept = nullptr);

private:
    // The geometry's sixteen extents, the input type, the bias flag, the output type and the ReLU.
    using Key = std::array<std::int64_t, 20>;
    struct KeyHash {
        std::size_t operator()(const Key& key) const;
    };
    struct Forward;
    struct BackwardData;
    struct BackwardWeights;

    // The shape's primitive, or nullptr where oneDNN refused a native bf16 one and the runtime
    // falls back (the map then keeps nullptr for the shape); throws UnsupportedError otherwise.
    Forward* forwardFor(const ConvShape& shape);
    BackwardData* backwardDataFor(const ConvShape& shape);
    BackwardWeights* backwardWeightsFor(const ConvShape& shape);
    // Records a refusal and returns, where the runtime falls back from this native shape;
    // throws UnsupportedError naming the op, the shape and oneDNN's reason otherwise.
    void refused(const ConvShape& shape, const char* op, const dnnl::error& e);

    OneDnnRuntime& m_runtime;
    std::unordered_map<Key, std::unique_ptr<Forward>, KeyHash> m_forward;
    std::unordered_map<Key, std::unique_ptr<BackwardData>, KeyHash> m_backwardData;
    std::unordered_map<Key, std::unique_ptr<BackwardWeights>, KeyHash> m_backwardWeights;
};

} // namespace mantissa::cpu
