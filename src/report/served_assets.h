// The files of footprint serve's web UI as the server sends them: each with its gzip and Brotli
// encodings, made once at build time (cmake/EmbedPlotAssets.cmake, with the same bytes as
// report/plot_assets.h), and a strong ETag. The page names each file it loads with ?v=ETAG, so
// that a browser may keep the file for good (server.cc: immutable) and still never runs an old
// one after footprint changed.
#ifndef FOOTPRINT_REPORT_SERVED_ASSETS_H_
#define FOOTPRINT_REPORT_SERVED_ASSETS_H_

#include <span>
#include <string_view>

namespace footprint::serve {

struct ServedAsset {
  std::string_view path;      // "/" for the page, "/assets/NAME" for the files it loads
  std::string_view identity;  // the file itself
  std::string_view gzip;      // gzip -9
  std::string_view brotli;    // Brotli at quality 11; empty where the build had no Brotli
  std::string_view version;   // 16 hex digits of the file's SHA-256: its ETag and its ?v=
};

// The page and the files it loads; empty when footprint was built with FOOTPRINT_BUILD_PLOT=OFF.
std::span<const ServedAsset> ServedAssets();

}  // namespace footprint::serve

#endif  // FOOTPRINT_REPORT_SERVED_ASSETS_H_
