#pragma once
// Running one op on two backends from the same inputs and comparing what they wrote.
//
// An OpRun draws its inputs from a generator seeded the same way for the oracle and for the
// device under test, so both see identical values, and keeps the outputs a case names
// (downloaded to the host) with the tolerance each is held to. compare() then finds the worst
// deviation of one output against the oracle's.
//
// Tolerances, with u = 2^-24 (fp32's unit roundoff) and "max" the largest |value| of the
// oracle's output tensor:
//  - exact: equal as floats (NaN matches NaN). For data movement, casts, fills, selects
//    (ReLU, max pooling, its argmax), dropout masks, and every op that is one fp32 operation
//    and one rounding per element (add, x * mask, x * factor, unscaling): both backends round
//    to nearest even, so one correctly rounded operation has one right answer.
//  - elementwise(n): n u of the element itself; a few fp32 operations per element, where the
//    GPU compiler contracts a * b + c into an FMA and the CPU may not.
//  - normwise(n): n u of max; for libm functions (CUDA's expf, tanhf and erff are within
//    2 ulp, glibc's within 1 or 2, so two correct results can differ by ~4 ulp), and for
//    formulas that cancel (1 + erf(x) for x < 0, 1 - y * y near |y| = 1, optimizer
//    updates near w = 0), where an ulp of an intermediate is many ulps of a small result.
//  - reduction(k): sums of k terms in another order (GEMM, convolution, bias gradients, batch
//    statistics, softmax). A random-order fp32 sum of k terms differs by about u sqrt(k) of
//    its magnitude, so 8 u (sqrt(k) + 2) of max (the 2 for the epilogue: alpha, beta, bias,
//    a final division), a wide margin that still misses by orders of magnitude a dropped
//    term, TF32 (2^-11 per product) or Winograd/FFT transforms. With 16-bit inputs tensor
//    cores accumulate in fp32 but align addends by truncation (Fasi et al., "Numerical
//    behavior of NVIDIA tensor cores", 2021): up to 1 ulp per addition, and biased, so the
//    error grows like k rather than sqrt(k): 4 u (k + 2) of max.
//  - relative(r): r of max; sumOfSquares, accumulated in double (2^-53 per term).
// Whenever the tolerance is not exact and the output is fp16 or bf16, one ulp of that type
// at the element is added: an fp32 difference of one ulp can move a value across a rounding
// boundary of the 16-bit type, which then differs by one of its ulps (2^-10 relative for
// fp16, 2^-7 for bf16) and no more.
#include "engine/backend/backend.h"

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace mantissa::test {

struct Tolerance {
    enum class Kind : std::uint8_t { Exact, Elementwise, Normwise, Reduction, Relative } kind = Kind::Exact;
    double amount = 0;             // ulps (Elementwise, Normwise), terms k (Reduction), r (Relative)
    bool tensorCoreInputs = false; // Reduction over 16-bit products
};

Tolerance exact();
Tolerance elementwise(double ulps);
Tolerance normwise(double ulps);
// k terms per output value, summed from products (or values) of `inputType`.
Tolerance reduction(std::int64_t terms, DType inputType);
Tolerance relative(double r);
std::string describe(const Tolerance& t);

// One output as an OpRun kept it.
struct KeptOutput {
    std::string name;
    DType dtype = DType::F32; // the type the op stored it in
    std::vector<double> values;
    Tolerance tolerance;
};

struct Deviation {
    std::size_t count = 0; // values beyond their allowance
    std::size_t index = 0; // of the worst one (largest |difference| / allowance)
    double expected = 0, actual = 0, allowed = 0;
    double ratio = 0; // worst |difference| / allowance; inf when a mismatch is not a number
};

// The actual output against the expected (oracle) one, under expected's tolerance.
Deviation compare(const KeptOutput& expected, const KeptOutput& actual);
// "3 of 6400 values off; worst [17]: device 0.1234, oracle 0.1235, |difference| 1e-4 > allowed 2e-7 (reduction of 33 terms)"
std::string describe(const Deviation& d, const KeptOutput& expected);

// How input values are drawn; `index` is the element's position.
using Draw = std::function<float(std::mt19937& generator, std::size_t index)>;
Draw uniform(float lo, float hi);
// Multiples of 0.5 in [-1.5, 1.5]: max-pooling windows tie, and ties must break alike.
Draw levels();
// Mostly uniform in [-2, 2], with zeros of both signs, infinities, NaN, fp32 subnormals,
// fp16's largest finite value and values that overflow it, values below its smallest
// subnormal, and halfway cases of fp16 and bf16 rounding.
Draw specials();
// `base`, with `value` at every `period`-th element starting at `first`.
Draw with(Draw base, float value, std::size_t period, std::size_t first = 0);

// One op on one backend: its inputs and the outputs it is judged by.
class OpRun {
public:
    OpRun(Backend& backend, std::uint32_t seed) : m_backend(backend), m_generator(seed) {}

    Backend& backend() { return m_backend; }
    // Host values as drawn, unrounded (for the cases that test upload and cast themselves).
    std::vector<float> draw(std::int64_t n, const Draw& how);
    // A tensor holding drawn values. They are rounded to `dtype` on the host first, so that
    // the upload is exact and both backends compute from the same numbers.
    Tensor input(const Shape& shape, DType dtype, const Draw& how);
    // An uninitialised output, filled with NaN so that a value the op fails to write fails.
    Tensor output(const Shape& shape, DType dtype);

    void keep(const std::string& name, const Tensor& t, Tolerance tolerance);
    void keepScalar(const std::string& name, double value, Tolerance tolerance);
    const std::vector<KeptOutput>& kept() const { return m_kept; }

private:
    Backend& m_backend;
    std::mt19937 m_generator;
    std::vector<KeptOutput> m_kept;
};

} // namespace mantissa::test
