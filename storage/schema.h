#pragma once
// Internal: the schema version this build writes, and the checks and forward migrations
// run on every open. docs/storage.md documents the tables.
namespace mantissa::storage {

class Connection;

// PRAGMA user_version of a database this build created or migrated.
constexpr int kSchemaVersion = 13;
// PRAGMA application_id: "MNTS". Marks the file as a Mantissa run database, so that
// `file` and other tools can tell, and so that we refuse another application's database.
constexpr int kApplicationId = 0x4D4E5453;

enum class IntegrityCheck { Quick, Skip };

// Refuses (throws StorageError, changing nothing) a database that is newer than this
// build, belongs to another application, or fails PRAGMA quick_check; then switches to
// WAL and migrates it forward in one transaction.
void prepareDatabase(const Connection& connection, IntegrityCheck check);

} // namespace mantissa::storage
