#ifndef SEANCE_CSQLITESETUP_H
#define SEANCE_CSQLITESETUP_H
// SQLite's process-wide settings, which only C can make: sqlite3_config is variadic.

/// Turns off SQLite's memory statistics (SQLITE_CONFIG_MEMSTATUS), which take a mutex at every
/// allocation and free. Only before SQLite's first use in the process; returns its result code
/// (SQLITE_MISUSE once SQLite is in use, which leaves the statistics on and changes nothing else).
int seance_sqlite_without_memory_statistics(void);
#endif
