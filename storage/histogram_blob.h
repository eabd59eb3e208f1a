#pragma once
// Internal: the histogram columns of the numerics tables.
//  numerics_tensors.histogram: a BLOB of little-endian uint32 counts, one per bin in
//  ExponentHistogram order (zero, 2^-40 ... 2^20, non-finite): 252 bytes, readable from any
//  language (numpy.frombuffer(blob, "<u4")).
//  numerics_gemm_inputs.scale_exponents: a BLOB of (int32 exponent, uint32 block count) pairs,
//  little-endian, in ascending exponent order (numpy.frombuffer(blob, "<i4").reshape(-1, 2)).
#include "engine/numerics/tensor_stats.h"

#include <QByteArray>

#include <cstddef>
#include <map>

namespace mantissa::storage {

QByteArray encodeHistogram(const ExponentHistogram& histogram);
// A shorter blob leaves the remaining bins at zero; extra bytes are ignored.
ExponentHistogram decodeHistogram(const QByteArray& blob);

QByteArray encodeScaleExponents(const std::map<int, std::size_t>& counts);
// A trailing partial pair is ignored.
std::map<int, std::size_t> decodeScaleExponents(const QByteArray& blob);

} // namespace mantissa::storage
