// The side files of an SQLite database in WAL mode (PATH-wal, PATH-shm) hold pages of the one
// database file they were made for, yet SQLite finds them by name alone: a file put in the
// database's place (mv, cp over it, a restored backup) would take in the old file's pages at its
// next open. footprint therefore stamps the side files it writes through with the identity of
// their database file (an extended attribute), refuses to open a database whose side files name
// another file, and removes its own side files when its database was replaced under it.
//
// Everything here works on paths (stat, getxattr, setxattr, unlink): nothing opens the database
// or its side files, whose close would drop the POSIX locks SQLite holds on them.
#ifndef FOOTPRINT_STORE_SIDE_FILES_H_
#define FOOTPRINT_STORE_SIDE_FILES_H_

#include <string>

#include "footprint/status.h"

namespace footprint {

// The identity of the file at `path` now (inode and birth time), or "" if it cannot be read.
std::string DatabaseFileIdentity(const std::string& path);

// True when PATH-wal exists and holds frames (a writer is live, or died before its last close).
bool HasHotWal(const std::string& path);

// Stamps PATH-wal and PATH-shm, where they exist, with `identity`. Best effort: a file system
// without extended attributes leaves them unstamped, and unstamped files are taken as they are.
void StampSideFiles(const std::string& path, const std::string& identity);

// An error when a side file of `path` is stamped with another identity than `identity` (the
// file at `path` replaced a database whose side files were left beside it); OK otherwise.
Status CheckSideFilesBelong(const std::string& path, const std::string& identity);

// Removes PATH-wal and PATH-shm where they are stamped with `identity`: the side files of a
// database file that no longer stands at `path`, which nothing can use any more.
void RemoveSideFilesOf(const std::string& path, const std::string& identity);

}  // namespace footprint

#endif  // FOOTPRINT_STORE_SIDE_FILES_H_
