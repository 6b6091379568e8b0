// SHA-256 (FIPS 180-4), for artifact checksums without a crypto library dependency.
#ifndef FOOTPRINT_UTIL_SHA256_H_
#define FOOTPRINT_UTIL_SHA256_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace footprint {

class Sha256 {
 public:
  Sha256();
  void Update(const void* data, size_t size);
  // The digest as 64 lower-case hex digits. Call once, after the last Update.
  std::string Hex();

 private:
  void Block(const uint8_t* block);
  std::array<uint32_t, 8> h_;
  std::array<uint8_t, 64> buf_;
  size_t buffered_ = 0;
  uint64_t length_ = 0;  // bytes
};

// A file's SHA-256 (hex) and size, read in 64 KiB blocks; nullopt when it cannot be read.
struct FileDigest {
  std::string sha256;
  int64_t size = 0;
};
// The digest of a regular file's bytes; none when it cannot be read or is not a regular file
// (a FIFO or device is never opened for long: it could block or never end).
std::optional<FileDigest> DigestFile(const std::string& path);

}  // namespace footprint

#endif  // FOOTPRINT_UTIL_SHA256_H_
