#include "footprint/status.h"

#include <algorithm>

#include "util/strings.h"

namespace footprint {

Status::Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {
  const bool control = std::any_of(message_.begin(), message_.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u < 0x20 || u == 0x7f;
  });
  if (control) message_ = Inert(message_);
}

}  // namespace footprint
