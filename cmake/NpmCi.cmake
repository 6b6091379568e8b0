# cmake -DNPM=... -DDIR=... -P NpmCi.cmake: `npm ci` in DIR, failing the build with a message
# that says what to do. Browsers are never downloaded (the browser test uses Debian's chromium).
set(ENV{PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD} 1)
execute_process(
  COMMAND ${NPM} ci --no-audit --no-fund --loglevel=error
  WORKING_DIRECTORY ${DIR}
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR
    "footprint: 'npm ci' failed in ${DIR} (${rc}; npm's message, if any, is above). footprint plot "
    "embeds the charting library that web/package-lock.json pins, so the npm registry (or a "
    "filled npm cache) must be reachable at build time; or configure with "
    "-DFOOTPRINT_BUILD_PLOT=OFF to build without plots.")
endif()
