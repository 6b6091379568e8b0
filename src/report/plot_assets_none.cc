// FOOTPRINT_BUILD_PLOT=OFF: no front end is embedded, and footprint plot says so.
#include "report/plot_assets.h"

namespace footprint {

const PlotAssets* EmbeddedPlotAssets() { return nullptr; }

}  // namespace footprint
