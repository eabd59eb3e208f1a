#include "engine/backend/cpu/onednn_matmul.h"

#include "engine/backend/cpu/output_scale.h"
#include "engine/backend/cpu/relu_words.h"
#include "engine/numerics/conversions.h"
#include "engine/util/check.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <functional>
#include <string>

namespace mantissa::cpu {

namespace {

using dt = dnnl::memory::data_type;
using dims = dnnl::memory::dims;

// A row-major [rows, cols] operand, or the transpose of a row-major [cols, rows] buffer: the
// strides say which, so no transposed copy is made. Batched, a leading dimension of `batch`
// matrices `batchStride` elements apart.
dnnl::memory::desc operand(std::int64_t rows, std::int64_t cols, bool transposed, dt type, std::int64_t batch = 1,
                           std::int64_t batchStride = 0)
{
    if (batch > 1)
        return transposed ? dnnl::memory::desc(dims{batch, rows, cols}, type, dims{batchStride, 1, rows})
                          : dnnl::memory::desc(dims{batch, rows, cols}, type, dims{batchStride, cols, 1});
    return transposed ? dnnl::memory::desc(dims{rows, cols}, type, dims{1, rows})
                      : dnnl::memory::desc(dims{rows, cols}, type, dims{cols, 1});
}

struct OperandDescs {
    dnnl::memory::desc a, b, c;
};

// `rowOfB`: where B is read as [k, n] rows (not transposed), the elements from one row to the
// next: n, or more where B was copied into padded rows.
OperandDescs operandDescs(const MatmulShape& s, std::int64_t rowOfB = 0)
{
    const dt in = s.bf16Inputs ? dt::bf16 : dt::f32;
    const dnnl::memory::desc b = rowOfB > s.n ? dnnl::memory::desc(dims{s.k, s.n}, in, dims{rowOfB, 1})
                                              : operand(s.k, s.n, s.tb == Transpose::Yes, in, s.batch, s.strideB);
    return {operand(s.m, s.k, s.ta == Transpose::Yes, in, s.batch, s.strideA), b,
            operand(s.m, s.n, false, s.bf16Output ? dt::bf16 : dt::f32, s.batch, s.strideC)};
}

// oneDNN 2.6's gemm:jit kernels (what matmul runs where brgemm is missing: AVX2-only CPUs)
// read a B of [k, n] rows that are a multiple of 2 KiB apart at half speed: the rows alias
// in the L1 cache (4K aliasing). Measured on 2 threads, 128 x n x 1024 in fp32 with
// ONEDNN_MAX_CPU_ISA=AVX2: n = 1024 101 GFLOP/s, 225 with rows 16 floats longer; n = 512
// 137 against 226; n = 2048 102 against 223; n = 768 (3 KiB rows) 203 against 226, which
// does not pay for the copy. A copy into rows 64 bytes longer costs a tenth of the product.
constexpr std::int64_t kRowPadBytes = 64;
bool aliasingRows(std::int64_t rowBytes) { return rowBytes % 2048 == 0; }

// oneDNN 2.6.3 stops the process with SIGFPE while it builds a matmul with a dimension of 2^32
// or more (measured on Zen 5: 2^32 x 10 by 10 x 10 and 10 x 2^32 by 2^32 x 10 both crash,
// 2^31 x 128 by 128 x 10 builds), so such a shape is refused before oneDNN sees it.
constexpr std::int64_t kLargestDimension = (std::int64_t{1} << 31) - 1;

// "bf16 matmul 64x32 by 32x16, B transposed": the shape as messages name it.
std::string describeShape(const std::string& family, const MatmulShape& s)
{
    return family + " " + std::to_string(s.m) + "x" + std::to_string(s.k) + " by " + std::to_string(s.k) + "x" +
           std::to_string(s.n) + (s.ta == Transpose::Yes ? ", A transposed" : "") +
           (s.tb == Transpose::Yes ? ", B transposed" : "") +
           (s.batch > 1 ? ", " + std::to_string(s.batch) + " products" : std::string()) +
           (s.bf16Output ? ", rounded into bf16" : "");
}

} // namespace

std::size_t OneDnnMatmul::ShapeHash::operator()(const MatmulShape& s) const
{
    std::size_t h = std::hash<std::int64_t>{}(s.m);
    const auto mix = [&h](std::size_t v) { h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); };
    mix(std::hash<std::int64_t>{}(s.n));
    mix(std::hash<std::int64_t>{}(s.k));
    mix((s.ta == Transpose::Yes ? 1u : 0u) | (s.tb == Transpose::Yes ? 2u : 0u) | (s.bf16Inputs ? 4u : 0u) |
        (s.rowBias ? 8u : 0u) | (s.bf16Output ? 16u : 0u) | (s.relu ? 32u : 0u));
    mix(std::bit_cast<std::uint32_t>(s.alpha));
    mix(std::bit_cast<std::uint32_t>(s.beta));
    mix(std::hash<std::int64_t>{}(s.batch));
    mix(std::hash<std::int64_t>{}(s.strideA ^ (s.strideB << 21) ^ (s.strideC << 42)));
    return h;
}

OneDnnMatmul::Prepared* OneDnnMatmul::primitive(const MatmulShape& s)
{
    if (auto found = m_primitives.find(s); found != m_primitives.end())
        return &found->second;
    if (m_refused.contains(s))
        return nullptr;
    MANTISSA_ASSERT(s.batch >= 1 && (s.batch == 1 || (!s.rowBias && !s.relu)));
    const auto attributes = [&s](bool relu) {
        dnnl::primitive_attr attr;
        if (s.alpha != 1.0f)
            attr.set_output_scales(0, {s.alpha});
        dnnl::post_ops ops;
        if (s.beta != 0.0f) // the previous C joins the fp32 sum before the one rounding the caller does
            ops.append_sum(s.beta);
        if (relu)
            appendRelu(ops);
        if (ops.len() > 0)
            attr.set_post_ops(ops);
        return attr;
    };
    const std::string family = s.bf16Inputs ? "bf16 matmul" : "fp32 matmul";
    if (std::max({s.m, s.n, s.k, s.batch}) > kLargestDimension)
        throw UnsupportedError("a " + describeShape(family, s) + " has a dimension above 2^31 - 1, which oneDNN " +
                               oneDnnVersion() + " cannot multiply; use a smaller batch, input or layer");
    try {
        m_runtime.checkRefusal(family);
        bool relu = s.relu;
        const auto describe = [&](std::int64_t rowOfB) {
            const auto [a, b, c] = operandDescs(s, rowOfB);
            const auto desc = s.rowBias
                                  ? dnnl::matmul::desc(a, b, dnnl::memory::desc(dims{1, s.n}, dt::f32, dims{s.n, 1}), c)
                                  : dnnl::matmul::desc(a, b, c);
            return dnnl::matmul::primitive_desc(desc, attributes(relu), m_runtime.engine());
        };
        dnnl::matmul::primitive_desc pd = describe(0);
        if (relu && !appliesReluExactly(pd.impl_info_str())) {
            relu = false;
            pd = describe(0);
        }
        const std::int64_t element = s.bf16Inputs ? 2 : 4;
        std::int64_t rowOfB = s.n;
        std::string note = pd.impl_info_str();
        if (note.starts_with("gemm:jit") && s.tb == Transpose::No && s.batch == 1 && aliasingRows(s.n * element)) {
            rowOfB = s.n + kRowPadBytes / element;
            pd = describe(rowOfB);
            note = std::string(pd.impl_info_str()) + " (B copied into padded rows)";
        }
        m_runtime.noteImplementation(family, note);
        return &m_primitives.emplace(s, Prepared{dnnl::matmul(pd), rowOfB, s.relu && !relu}).first->second;
    } catch (const dnnl::error& e) {
        const std::string what = describeShape(family, s);
        if (s.bf16Inputs && m_runtime.fallsBack()) {
            m_runtime.noteFallback(what, e.what());
            m_refused.insert(s);
            return nullptr;
        }
        throw UnsupportedError("oneDNN " + oneDnnVersion() + " cannot create a " + what + " (" + e.what() + ")" +
                               (s.bf16Inputs ? "; training.cpu_kernels auto runs such a shape emulated, and emulated "
                                               "avoids native bf16 kernels"
                                             : ""));
    }
}

void OneDnnMatmul::runEmulated(const MatmulShape& s, const void* a, const void* b, const float* bias, void* c)
{
    // Each operand's extent in its buffer: the last product's start plus one product's values.
    const auto extent = [&s](std::int64_t stride, std::int64_t values) {
        return static_cast<std::size_t>((s.batch - 1) * stride + values);
    };
    const std::size_t aCount = extent(s.strideA, s.m * s.k), bCount = extent(s.strideB, s.k * s.n),
                      cCount = extent(s.strideC, s.m * s.n);
    std::vector<float> wideA(aCount), wideB(bCount);
    widenToFloat(a, DType::BF16, wideA.data(), aCount);
    widenToFloat(b, DType::BF16, wideB.data(), bCount);
    MatmulShape wide = s;
    wide.bf16Inputs = false;
    wide.bf16Output = false;
    if (!s.bf16Output) {
        run(wide, wideA.data(), wideB.data(), bias, c);
        return;
    }
    std::vector<float> wideC(cCount);
    if (s.beta != 0.0f)
        widenToFloat(c, DType::BF16, wideC.data(), cCount);
    run(wide, wideA.data(), wideB.data(), bias, wideC.data());
    // Only the products' values are rounded back: the gaps between them are not c's to write.
    const auto product = static_cast<std::size_t>(s.m * s.n);
    for (std::int64_t i = 0; i < s.batch; ++i) {
        const auto start = static_cast<std::size_t>(i * s.strideC);
        narrowFromFloat(wideC.data() + start, static_cast<std::uint16_t*>(c) + start, product, DType::BF16);
    }
}

void OneDnnMatmul::run(const MatmulShape& s, const void* a, const void* b, const float* bias, void* c)
{
    MANTISSA_ASSERT(s.rowBias == (bias != nullptr));
    if (s.m == 0 || s.n == 0)
        return;
    Prepared* found = primitive(s);
    if (!found) {
        runEmulated(s, a, b, bias, c);
        return;
    }
    Prepared& prepared = *found;
    dnnl::engine& eng = m_runtime.engine();
    const OperandDescs descs = operandDescs(s, prepared.rowOfB);
    if (prepared.rowOfB > s.n) {
        const std::size_t element = s.bf16Inputs ? 2 : 4, row = static_cast<std::size_t>(s.n) * element,
                          padded = static_cast<std::size_t>(prepared.rowOfB) * element;
        if (m_paddedB.size() < static_cast<std::size_t>(s.k) * padded)
            m_paddedB.resize(static_cast<std::size_t>(s.k) * padded);
        const auto* from = static_cast<const unsigned char*>(b);
        unsigned char* to = m_paddedB.data();
#pragma omp parallel for schedule(static) if (s.k * s.n >= (std::int64_t{1} << 15))
        for (std::int64_t r = 0; r < s.k; ++r)
            std::memcpy(to + static_cast<std::size_t>(r) * padded, from + static_cast<std::size_t>(r) * row, row);
        b = to;
    }
    // oneDNN reads through these handles and never writes the inputs.
    dnnl::memory ma(descs.a, eng, const_cast<void*>(a));
    dnnl::memory mb(descs.b, eng, const_cast<void*>(b));
    dnnl::memory mc(descs.c, eng, c);
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}};
    if (bias)
        args.emplace(DNNL_ARG_BIAS, dnnl::memory(dnnl::memory::desc(dims{1, s.n}, dt::f32, dims{s.n, 1}), eng,
                                                 const_cast<float*>(bias)));
    prepared.matmul.execute(m_runtime.stream(), args);
    m_runtime.stream().wait();
    if (prepared.reluAfter) {
        const auto count = static_cast<std::size_t>(s.m * s.n);
        if (s.bf16Output)
            reluForwardWords(static_cast<const std::uint16_t*>(c), static_cast<std::uint16_t*>(c), count, DType::BF16);
        else
            reluInPlace(static_cast<float*>(c), count);
    }
}

} // namespace mantissa::cpu
