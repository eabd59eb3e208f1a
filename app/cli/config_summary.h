#pragma once
// A few lines that say what a stored run config trained: model, data, optimizer,
// precision and training settings. `show` prints them; `show --config` the whole JSON.
#include <QList>
#include <QPair>
#include <QString>

namespace mantissa::cli {

// "label: text" pairs; a config this build cannot read (a newer one) yields one line
// saying so, never an exception.
QList<QPair<QString, QString>> summarizeConfig(const QString& configJson);

} // namespace mantissa::cli
