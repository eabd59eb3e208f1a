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

QByteArray encodeScaleExponents(const std::map<int, std::size_t>& counts)
{
    QByteArray blob(qsizetype(counts.size() * 2 * sizeof(quint32)), Qt::Uninitialized);
    char* at = blob.data();
    for (const auto& [exponent, count] : counts) {
        qToLittleEndian<qint32>(exponent, at);
        qToLittleEndian<quint32>(static_cast<quint32>(count), at + sizeof(quint32));
        at += 2 * sizeof(quint32);
    }
    return blob;
}

std::map<int, std::size_t> decodeScaleExponents(const QByteArray& blob)
{
    std::map<int, std::size_t> counts;
    const std::size_t pairs = std::size_t(blob.size()) / (2 * sizeof(quint32));
    for (std::size_t i = 0; i < pairs; ++i) {
        const char* at = blob.constData() + i * 2 * sizeof(quint32);
        counts[qFromLittleEndian<qint32>(at)] += qFromLittleEndian<quint32>(at + sizeof(quint32));
    }
    return counts;
}

} // namespace mantissa::storage
