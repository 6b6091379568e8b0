# The front end of `footprint plot`, embedded into the binary (docs/architecture.md):
# `npm ci` installs web/package-lock.json into ${CMAKE_BINARY_DIR}/web (never the source tree),
# then EmbedPlotAssets.cmake writes the charting library, web/charts.js (the chart building both
# pages share), web/plot.{js,css} and the web UI of footprint serve (web/serve.{html,js,css})
# into a generated plot_assets.cc, with serve's files compressed (gzip and Brotli, by node's
# zlib) for src/report/served_assets.h. Sets FOOTPRINT_PLOT_ASSETS_SOURCE and FOOTPRINT_WEB_DIR
# (its node_modules also hold playwright-core for the browser test).
find_program(FOOTPRINT_NPM npm)
find_program(FOOTPRINT_NODE node)
if(NOT FOOTPRINT_NPM OR NOT FOOTPRINT_NODE)
  message(FATAL_ERROR
    "footprint: node and npm not found. footprint plot embeds a charting library that the "
    "build installs from npm. Install them (scripts/setup installs Debian's nodejs and npm), "
    "or configure with -DFOOTPRINT_BUILD_PLOT=OFF to build footprint without plots.")
endif()

set(FOOTPRINT_WEB_DIR ${CMAKE_BINARY_DIR}/web)
set(web_src ${CMAKE_SOURCE_DIR}/web)
set(library_js ${FOOTPRINT_WEB_DIR}/node_modules/echarts/dist/echarts.min.js)
file(READ ${web_src}/package-lock.json lock)
string(JSON library_version GET "${lock}" packages node_modules/echarts version)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${web_src}/package-lock.json)

add_custom_command(
  OUTPUT ${FOOTPRINT_WEB_DIR}/npm-ci.stamp
  BYPRODUCTS ${library_js}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${FOOTPRINT_WEB_DIR}
  COMMAND ${CMAKE_COMMAND} -E copy ${web_src}/package.json ${web_src}/package-lock.json
          ${FOOTPRINT_WEB_DIR}
  COMMAND ${CMAKE_COMMAND} -DNPM=${FOOTPRINT_NPM} -DDIR=${FOOTPRINT_WEB_DIR}
          -P ${CMAKE_SOURCE_DIR}/cmake/NpmCi.cmake
  COMMAND ${CMAKE_COMMAND} -E touch ${FOOTPRINT_WEB_DIR}/npm-ci.stamp
  DEPENDS ${web_src}/package.json ${web_src}/package-lock.json ${CMAKE_SOURCE_DIR}/cmake/NpmCi.cmake
  COMMENT "npm ci: the charting library of footprint plot (web/package-lock.json)"
  VERBATIM)

set(FOOTPRINT_PLOT_ASSETS_SOURCE ${CMAKE_BINARY_DIR}/generated/plot_assets.cc)
add_custom_command(
  OUTPUT ${FOOTPRINT_PLOT_ASSETS_SOURCE}
  COMMAND ${CMAKE_COMMAND} -DLIBRARY_JS=${library_js} -DLIBRARY_VERSION=echarts-${library_version}
          -DCHARTS_JS=${web_src}/charts.js -DPLOT_JS=${web_src}/plot.js
          -DPLOT_CSS=${web_src}/plot.css -DSERVE_HTML=${web_src}/serve.html
          -DSERVE_JS=${web_src}/serve.js -DSERVE_CSS=${web_src}/serve.css
          -DQUEUE_JS=${web_src}/queue.js -DNODE=${FOOTPRINT_NODE} -DOUTPUT=${FOOTPRINT_PLOT_ASSETS_SOURCE}
          -P ${CMAKE_SOURCE_DIR}/cmake/EmbedPlotAssets.cmake
  DEPENDS ${FOOTPRINT_WEB_DIR}/npm-ci.stamp ${web_src}/charts.js ${web_src}/plot.js
          ${web_src}/plot.css ${web_src}/serve.html ${web_src}/serve.js ${web_src}/serve.css
          ${web_src}/queue.js
          ${CMAKE_SOURCE_DIR}/cmake/EmbedPlotAssets.cmake
  COMMENT "Embedding the front end of plot and serve (echarts ${library_version}, web/)"
  VERBATIM)
