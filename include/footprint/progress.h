// Progress of a long library operation (an export, an import), for a caller that shows it.
#ifndef FOOTPRINT_PROGRESS_H_
#define FOOTPRINT_PROGRESS_H_

#include <cstddef>
#include <functional>

namespace footprint {

// Called with (0, total) before the first item, then with (k, total) after item k, on the
// caller's thread. An empty function reports nothing. It must not throw.
using ProgressFn = std::function<void(size_t done, size_t total)>;

}  // namespace footprint

#endif  // FOOTPRINT_PROGRESS_H_
