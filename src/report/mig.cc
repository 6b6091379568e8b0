#include "footprint/mig.h"

#include <array>
#include <string>

#include "util/strings.h"

namespace footprint {

namespace {

// The MIG user guide ("Supported MIG Profiles"): on the A100, H100 and H200 the profiles have
// the same shape (compute slices of 7, memory in eighths of the GPU's, instances per GPU) and
// differ only in their names, which carry the memory: 1g.5gb on an A100-40GB is 1g.10gb on the
// 80 GB parts and 1g.18gb on an H200. Media-extension variants (+me) have the same memory and
// are left out.
struct Shape {
  int compute_slices, memory_eighths, instances;
};
constexpr Shape kShapes[] = {{1, 1, 7}, {1, 2, 4}, {2, 2, 3}, {3, 4, 2}, {4, 4, 1}, {7, 8, 1}};

MigGpu Table(std::string_view gpu, double memory_gib,
             const std::array<std::string_view, 6>& names) {
  MigGpu out{gpu, memory_gib, {}};
  for (size_t i = 0; i < names.size(); ++i) {
    out.profiles.push_back(
        {names[i], kShapes[i].compute_slices, kShapes[i].memory_eighths, kShapes[i].instances});
  }
  return out;
}

}  // namespace

const std::vector<MigGpu>& MigGpus() {
  static const std::vector<MigGpu> kGpus = {
      Table("A100-40GB", 40, {"1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"}),
      Table("A100-80GB", 80, {"1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"}),
      Table("H100-80GB", 80, {"1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"}),
      Table("H200-141GB", 141, {"1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"}),
  };
  return kGpus;
}

const MigGpu* FindMigGpu(std::string_view name) {
  const std::string n = Lower(name);
  auto has = [&](std::string_view part) { return n.find(part) != std::string::npos; };
  std::string_view table;
  if (has("a100")) {
    table = has("80gb") ? "A100-80GB" : "A100-40GB";
  } else if (has("h100")) {
    table = "H100-80GB";  // H100 SXM5 and PCIe 80 GB (the 94 GB NVL has tables of its own)
    if (has("94gb") || has("nvl")) return nullptr;
  } else if (has("h200")) {
    table = "H200-141GB";
  } else {
    return nullptr;
  }
  for (const MigGpu& gpu : MigGpus()) {
    if (gpu.name == table) return &gpu;
  }
  return nullptr;
}

std::optional<MigProfile> SmallestFittingProfile(const MigGpu& gpu, double peak_bytes,
                                                 double margin) {
  const double needed_gib = peak_bytes * (1 + margin) / (1024.0 * 1024 * 1024);
  for (const MigProfile& p : gpu.profiles) {
    if (gpu.profile_gib(p) >= needed_gib) return p;
  }
  return std::nullopt;
}

}  // namespace footprint
