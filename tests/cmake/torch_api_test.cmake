# ctest torch_cxx_standard (cmake -P): ftbench_torch_cxx_standard on made-up torch/version.h
# files, among them a pre-release (2.14.0a0) that a vendor image would ship.
include(${CMAKE_CURRENT_LIST_DIR}/../../cmake/FtbenchTorchApi.cmake)
set(dir "${CMAKE_CURRENT_BINARY_DIR}/torch_api_test")
set(failures 0)
foreach(case "1;13;17" "2;6;17" "2;13;17" "2;14;20" "2;15;20" "3;0;20")
  list(GET case 0 major)
  list(GET case 1 minor)
  list(GET case 2 expected)
  set(header "${dir}/${major}.${minor}/torch/version.h")
  file(WRITE "${header}" "#pragma once\n#define TORCH_VERSION_MAJOR ${major}\n"
                         "#define TORCH_VERSION_MINOR ${minor}\n#define TORCH_VERSION_PATCH 0\n"
                         "#define TORCH_VERSION \"${major}.${minor}.0a0+git1234567\"\n")
  ftbench_torch_cxx_standard("${header}" standard)
  if(NOT standard STREQUAL expected)
    message(SEND_ERROR "LibTorch ${major}.${minor}: C++${standard}, expected C++${expected}")
    math(EXPR failures "${failures} + 1")
  else()
    message(STATUS "LibTorch ${major}.${minor}: C++${standard}")
  endif()
endforeach()
# LibTorch 2.9 on: torch/version.h (under torch/csrc/api/include) only includes the generated
# torch/headeronly/version.h, found through the include directories.
set(root "${dir}/redirect/include")
file(WRITE "${root}/torch/csrc/api/include/torch/version.h"
     "#pragma once\n\n#include <torch/headeronly/version.h>\n")
file(WRITE "${root}/torch/headeronly/version.h"
     "#pragma once\n/// Indicates the major version of LibTorch.\n#define TORCH_VERSION_MAJOR 2\n"
     "#define TORCH_VERSION_MINOR 11\n#define TORCH_VERSION_PATCH 0\n")
ftbench_torch_cxx_standard("${root}/torch/csrc/api/include/torch/version.h" standard "${root}"
                           "${root}/torch/csrc/api/include")
if(NOT standard STREQUAL "17")
  message(SEND_ERROR "LibTorch 2.11 (headeronly/version.h): C++${standard}, expected C++17")
  math(EXPR failures "${failures} + 1")
else()
  message(STATUS "LibTorch 2.11 (headeronly/version.h): C++${standard}")
endif()
# A version.h that names no version and includes none: a clear error, checked in a child cmake.
file(WRITE "${root}/bare/torch/version.h" "#pragma once\n#include <cstdint>\n")
file(WRITE "${dir}/bare.cmake"
     "include(${CMAKE_CURRENT_LIST_DIR}/../../cmake/FtbenchTorchApi.cmake)\n"
     "ftbench_torch_cxx_standard(\"${root}/bare/torch/version.h\" s \"${root}/bare\")\n")
execute_process(COMMAND ${CMAKE_COMMAND} -P "${dir}/bare.cmake" RESULT_VARIABLE rc
                ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT err MATCHES "no TORCH_VERSION_MAJOR/MINOR in")
  message(SEND_ERROR "a version.h without a version: rc ${rc}, ${err}")
  math(EXPR failures "${failures} + 1")
endif()
file(REMOVE_RECURSE "${dir}")
if(failures)
  message(FATAL_ERROR "${failures} case(s) failed")
endif()
