// What every floor may say about footprint itself: its version, and new run ids (also the
// ids of groups and local buffers).
#ifndef FOOTPRINT_CORE_IDENTITY_H_
#define FOOTPRINT_CORE_IDENTITY_H_

#include <string>
#include <string_view>

namespace footprint {

// The footprint version string.
std::string_view FootprintVersion();
// A random (version 4) UUID.
std::string NewRunId();

}  // namespace footprint

#endif  // FOOTPRINT_CORE_IDENTITY_H_
