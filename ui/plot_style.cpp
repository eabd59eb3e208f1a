#include "ui/plot_style.h"

namespace mantissa::ui {

QColor seriesColor(int index)
{
    static const QColor palette[] = {QColor(0, 114, 178),   QColor(213, 94, 0),  QColor(0, 158, 115),
                                     QColor(204, 121, 167), QColor(230, 159, 0), QColor(86, 180, 233),
                                     QColor(0, 0, 0),       QColor(240, 228, 66)};
    constexpr int count = sizeof(palette) / sizeof(palette[0]);
    return palette[((index % count) + count) % count];
}

QColor faint(const QColor& color, int alpha)
{
    QColor c = color;
    c.setAlpha(alpha);
    return c;
}

QPen seriesPen(int index, double width)
{
    QPen pen(seriesColor(index));
    pen.setWidthF(width);
    return pen;
}

} // namespace mantissa::ui
