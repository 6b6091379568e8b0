# `cmake --install BUILD` (scripts/demo runs it): footprint installs like a tool.
#
#   bin/footprint                      the command line
#   bin/umlaut-cli                     UMLAUT's command line, answered by footprint
#   lib/footprint/libfootprint-serve.so  the web server module `footprint serve` loads
#   lib/footprint/libfootprint-predict.so  the predict module, and
#   share/footprint/predict/*-predictor.json  the predictors it ships (data/predict/)
#   include/footprint/, lib/libfootprint_core.a   the C and C++ API (docs/cpp.md)
#   FOOTPRINT_PYTHON_DIR/footprint/    the Python package (python/CMakeLists.txt)
include(GNUInstallDirs)

install(TARGETS footprint RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(CODE "execute_process(COMMAND \${CMAKE_COMMAND} -E create_symlink footprint
                \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}/umlaut-cli\")
              message(STATUS \"Installing: \$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}/umlaut-cli -> footprint\")")
install(TARGETS footprint_serve LIBRARY DESTINATION lib/footprint)
if(TARGET footprint_predict)
  install(TARGETS footprint_predict LIBRARY DESTINATION lib/footprint)
  file(GLOB predictors ${CMAKE_SOURCE_DIR}/data/predict/*-predictor.json)
  install(FILES ${predictors}
          DESTINATION share/footprint/predict)
endif()
install(TARGETS footprint_core ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY ${CMAKE_SOURCE_DIR}/include/footprint
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

# The Python package's install rules are in python/CMakeLists.txt, beside its build.
