# Generates version.cpp at build time so the git commit stays current without re-configuring.
set(FTBENCH_VERSION_CPP "${CMAKE_BINARY_DIR}/generated/version.cpp")
add_custom_target(ftbench_version_gen
  COMMAND ${CMAKE_COMMAND}
          -DSOURCE_DIR=${CMAKE_SOURCE_DIR}
          -DOUTPUT=${FTBENCH_VERSION_CPP}
          -DVERSION=${PROJECT_VERSION}
          -P ${CMAKE_SOURCE_DIR}/cmake/WriteVersion.cmake
  BYPRODUCTS ${FTBENCH_VERSION_CPP}
  COMMENT "ftbench version stamp")
# Also once now, so the file exists when targets in other directories are generated.
execute_process(COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${CMAKE_SOURCE_DIR}
                -DOUTPUT=${FTBENCH_VERSION_CPP} -DVERSION=${PROJECT_VERSION}
                -P ${CMAKE_SOURCE_DIR}/cmake/WriteVersion.cmake)
