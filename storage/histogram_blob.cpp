#include "storage/histogram_blob.h"

#include <QtEndian>

namespace mantissa::storage {

QByteArray encodeHistogram(const ExponentHistogram& histogram)
{
    QByteArray blob(qsizetype(histogram.size() * sizeof(quint32)), Qt::Uninitialized);
    for (std::size_t i = 0; i < histogram.size(); ++i)
        qToLittleEndian<quint32>(histogram[i], blob.data() + i * sizeof(quint32));
    return blob;
}

ExponentHistogram decodeHistogram(const QByteArray& blob)
{
    ExponentHistogram histogram{};
    const std::size_t bins = std::min(histogram.size(), std::size_t(blob.size()) / sizeof(quint32));
    for (std::size_t i = 0; i < bins; ++i)
        histogram[i] = qFromLittleEndian<quint32>(blob.constData() + i * sizeof(quint32));
    return histogram;
}

} // namespace mantissa::storage
