#pragma once
// Colours of runs in report plots: run i has colour i in every plot, so a reader matches
// curves across pages by colour as well as by legend.
#include <QColor>

namespace mantissa::report {

// Okabe-Ito: distinguishable with the common colour-vision deficiencies, and in grey print.
QColor runColor(int index);

} // namespace mantissa::report
