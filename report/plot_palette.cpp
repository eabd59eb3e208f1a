#include "report/plot_palette.h"

namespace mantissa::report {

QColor runColor(int index)
{
    // Yellow (#F0E442) is left out: it vanishes on white paper.
    static const QColor colors[] = {QColor(0x00, 0x72, 0xB2), QColor(0xD5, 0x5E, 0x00), QColor(0x00, 0x9E, 0x73),
                                    QColor(0xCC, 0x79, 0xA7), QColor(0xE6, 0x9F, 0x00), QColor(0x56, 0xB4, 0xE9),
                                    QColor(0x00, 0x00, 0x00)};
    constexpr int count = int(sizeof colors / sizeof colors[0]);
    return colors[((index % count) + count) % count];
}

} // namespace mantissa::report
