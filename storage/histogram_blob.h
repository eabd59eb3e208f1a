#pragma once
// Internal: the histogram column of numerics_tensors, a BLOB of little-endian uint32
// counts, one per bin in ExponentHistogram order (zero, 2^-40 ... 2^20, non-finite):
// 252 bytes, readable from any language (numpy.frombuffer(blob, "<u4")).
#include "engine/numerics/tensor_stats.h"

#include <QByteArray>

namespace mantissa::storage {

QByteArray encodeHistogram(const ExponentHistogram& histogram);
// A shorter blob leaves the remaining bins at zero; extra bytes are ignored.
ExponentHistogram decodeHistogram(const QByteArray& blob);

} // namespace mantissa::storage
