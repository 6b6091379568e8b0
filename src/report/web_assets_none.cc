// FOOTPRINT_BUILD_PLOT=OFF: no front end is embedded, and footprint plot says so; footprint
// serve has no page to send, only its API.
#include "report/plot_assets.h"
#include "report/served_assets.h"

namespace footprint {

const PlotAssets* EmbeddedPlotAssets() { return nullptr; }

std::span<const serve::ServedAsset> serve::ServedAssets() { return {}; }

}  // namespace footprint
