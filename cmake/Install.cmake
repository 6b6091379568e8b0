# `cmake --install BUILD` (scripts/demo runs it): footprint installs like a tool.
#
#   bin/footprint                      the command line
#   bin/umlaut-cli                     UMLAUT's command line, answered by footprint
#   bin/radt                           radT's command (`radt train.py`), answered by footprint,
#                                      where radT itself is not installed
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
install(TARGETS footprint_archive ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY ${CMAKE_SOURCE_DIR}/include/footprint
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

# The Python package's install rules are in python/CMakeLists.txt, beside its build.

# bin/radt: radT's console script (radT's README runs `radt train.py`), footprint's radT
# command line (footprint.radt's cli) run by the interpreter the Python package is built for
# (Debian's python3 by default). Only with that package (known once python/ is configured,
# hence deferred to the end), and only where radT itself is not installed: neither its radt
# module (on that interpreter's path without PYTHONPATH) nor its radt command (on PATH).
# `cmake --install BUILD --component radt` installs it alone.
function(footprint_install_radt_command)
  if(NOT TARGET footprint_python)
    return()
  endif()
  set(script ${CMAKE_BINARY_DIR}/radt-command/radt)
  file(CONFIGURE OUTPUT ${script} @ONLY CONTENT [[
#!@FOOTPRINT_PYTHON@
"""radT's `radt` command, answered by footprint (footprint.radt)."""
import sys

from footprint.radt import cli

sys.exit(cli())
]])
  # The radt module or command found that is not footprint's, empty when there is none.
  set(find_radt "import importlib.util as u, shutil; s = u.find_spec('radt'); \
found = [p for p in (s and s.origin, shutil.which('radt')) if p and \
'footprint' not in open(p, errors='replace').read()]; print(found[0] if found else '')")
  install(CODE "
    execute_process(COMMAND \${CMAKE_COMMAND} -E env --unset=PYTHONPATH ${FOOTPRINT_PYTHON}
                            -c \"${find_radt}\"
                    OUTPUT_VARIABLE radt_found OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(radt_found STREQUAL \"\")
      file(INSTALL DESTINATION \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}\"
           TYPE PROGRAM FILES \"${script}\")
    else()
      message(STATUS \"Not installing bin/radt: radT is installed (\${radt_found})\")
    endif()" COMPONENT radt)
endfunction()
cmake_language(DEFER CALL footprint_install_radt_command)
