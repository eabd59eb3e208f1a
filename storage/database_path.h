#pragma once
// Where the run database lives. The CLI and the GUI resolve the path the same way:
// --db (or an equivalent option), then the MANTISSA_DB environment variable, then the
// per-user default.
#include <QString>

namespace mantissa::storage {

// The per-user default: <AppDataLocation for org "Mantissa", app "mantissa">/runs.sqlite,
// e.g. ~/.local/share/Mantissa/mantissa/runs.sqlite on Linux.
QString defaultDatabasePath();

// cliOption if non-empty, else $MANTISSA_DB if non-empty, else defaultDatabasePath();
// made absolute. Creates the containing directory; throws StorageError (ReadOnly) naming
// it when it cannot be created.
QString resolveDatabasePath(const QString& cliOption);

} // namespace mantissa::storage
