#include "CSQLiteSetup.h"
#include <sqlite3.h>

int seance_sqlite_without_memory_statistics(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}
