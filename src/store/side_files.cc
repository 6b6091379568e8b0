#include "store/side_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <array>
#include <string_view>

namespace footprint {
namespace {

constexpr const char* kIdentityAttribute = "user.footprint.database";
constexpr std::array<std::string_view, 2> kSideSuffixes = {"-wal", "-shm"};

// The identity stamped on `side`, or "" where there is none (or no such file).
std::string StampOf(const std::string& side) {
  char value[128];
  const ssize_t n = ::getxattr(side.c_str(), kIdentityAttribute, value, sizeof value);
  return n > 0 ? std::string(value, static_cast<size_t>(n)) : std::string();
}

}  // namespace

std::string DatabaseFileIdentity(const std::string& path) {
  struct statx sx;
  if (::statx(AT_FDCWD, path.c_str(), 0, STATX_INO | STATX_BTIME, &sx) != 0) return "";
  std::string identity = "inode " + std::to_string(sx.stx_ino);
  // The birth time tells a new file from an old one that had the same inode number.
  if (sx.stx_mask & STATX_BTIME) {
    identity +=
        " born " + std::to_string(sx.stx_btime.tv_sec) + "." + std::to_string(sx.stx_btime.tv_nsec);
  }
  return identity;
}

bool HasHotWal(const std::string& path) {
  struct stat st;
  return ::stat((path + "-wal").c_str(), &st) == 0 && st.st_size > 0;
}

void StampSideFiles(const std::string& path, const std::string& identity) {
  if (identity.empty()) return;
  for (std::string_view suffix : kSideSuffixes) {
    const std::string side = path + std::string(suffix);
    if (StampOf(side) == identity) continue;
    (void)::setxattr(side.c_str(), kIdentityAttribute, identity.data(), identity.size(), 0);
  }
}

Status CheckSideFilesBelong(const std::string& path, const std::string& identity) {
  for (std::string_view suffix : kSideSuffixes) {
    const std::string side = path + std::string(suffix);
    const std::string stamp = StampOf(side);
    if (stamp.empty() || stamp == identity) continue;
    return DatabaseError(side + " was left by another database file that stood at " + path +
                         " before it was replaced; footprint will not apply its pages to this "
                         "file: move " +
                         path + "-wal and " + path + "-shm aside (or delete them), then try again");
  }
  return Status::Ok();
}

void RemoveSideFilesOf(const std::string& path, const std::string& identity) {
  if (identity.empty()) return;
  for (std::string_view suffix : kSideSuffixes) {
    const std::string side = path + std::string(suffix);
    if (StampOf(side) == identity) ::unlink(side.c_str());
  }
}

}  // namespace footprint
