#pragma once
// Where the shipped study specs are found: the folder MANTISSA_STUDIES_DIR names, else
// studies/ in the current directory, else the source tree's studies/ this build came from.
// The CLI runs a study by its name or file; the workbench lists them.
#include <QString>
#include <QStringList>

namespace mantissa::sweep {

// The first of the folders above that exists; empty when none does.
QString studiesDirectory();
// The *.json files of studiesDirectory(), sorted by name.
QStringList studyFiles();
// `nameOrFile` as a path when such a file exists, else NAME.json in studiesDirectory(). Throws
// ConfigError listing the studies there when neither exists.
QString resolveStudyFile(const QString& nameOrFile);

} // namespace mantissa::sweep
