#include "footprint/status.h"

#include <algorithm>

#include "util/strings.h"

namespace footprint {

// Every message is made inert here, once: it may quote names, paths and values from anywhere.
Status::Status(StatusCode code, std::string message)
    : code_(code), message_(Inert(std::move(message))) {}

}  // namespace footprint
