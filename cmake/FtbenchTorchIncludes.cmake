# The system's fmt ahead of the one LibTorch bundles.
#
# PyTorch wheels ship fmt's headers in torch/include (fmt 11 up to PyTorch 2.9, fmt 12 from
# 2.10), the same directory as c10/ and ATen/. An imported target's directories become -isystem
# flags, which the compiler searches before /usr/include: every file that includes <fmt/core.h>
# or spdlog would see the wheel's fmt and link the distribution's older libfmt and libspdlog
# (Ubuntu 22.04: fmt 8, Debian 12: fmt 9), failing with undefined fmt::v11 symbols, or worse,
# linking code compiled against two versions of one header.
#
# LibTorch's directory cannot simply go behind the system's: a machine may hold another LibTorch
# there (Debian's libtorch-dev puts 1.13's c10/, ATen/ and torch/ in /usr/include), whose headers
# would then win over the wheel's. So the directory stays where it is, and a directory of
# ftbench's own, holding only `fmt` (a link to the fmt headers find_package(fmt) found), is put
# in front of it on the same targets: <fmt/...> resolves to the system's fmt, everything else to
# LibTorch's. Directories without fmt (Debian's LibTorch in /usr/include) are left as they are.
# fmt_version_check.cpp, compiled into ftbench_torch, fails the build if a file still sees other
# fmt headers than the libfmt linked.
#
# ftbench_system_fmt_before_torch(<items of TORCH_LIBRARIES>...): walks the imported targets
# among them, their INTERFACE_LINK_LIBRARIES and the targets their generator expressions name.
# Needs find_package(fmt) first.
function(ftbench_system_fmt_before_torch)
  set(fmt_hints "")
  if(TARGET fmt::fmt)
    get_target_property(fmt_hints fmt::fmt INTERFACE_INCLUDE_DIRECTORIES)
  endif()
  find_path(FTBENCH_SYSTEM_FMT_INCLUDE_DIR fmt/core.h HINTS ${fmt_hints})
  if(NOT FTBENCH_SYSTEM_FMT_INCLUDE_DIR)
    message(FATAL_ERROR "ftbench: fmt/core.h of the fmt find_package(fmt) found is not found")
  endif()
  set(shadow "${CMAKE_BINARY_DIR}/ftbench-system-fmt")
  set(pending ${ARGN})
  set(seen "")
  set(moved "")
  while(pending)
    list(POP_FRONT pending item)
    if(item MATCHES "^\\$<LINK_ONLY:(.+)>$")
      set(item "${CMAKE_MATCH_1}")
    endif()
    if(NOT TARGET "${item}" OR item IN_LIST seen)
      continue()
    endif()
    list(APPEND seen "${item}")
    get_target_property(imported "${item}" IMPORTED)
    get_target_property(aliased "${item}" ALIASED_TARGET)
    if(NOT imported OR aliased)
      continue()
    endif()
    get_target_property(links "${item}" INTERFACE_LINK_LIBRARIES)
    if(links)
      list(APPEND pending ${links})
    endif()
    get_target_property(dirs "${item}" INTERFACE_INCLUDE_DIRECTORIES)
    # Targets named only inside generator expressions: PyTorch's torch_cpu_library and
    # torch_cuda_library take their directories and libraries from torch_cpu and torch_cuda as
    # $<TARGET_PROPERTY:torch_cpu,...> and $<TARGET_FILE:torch_cpu>, so those are walked too.
    string(REGEX MATCHALL "\\$<TARGET_(PROPERTY|FILE):[A-Za-z0-9_:.+-]+" referenced
           "${links};${dirs}")
    foreach(reference IN LISTS referenced)
      string(REGEX REPLACE "^\\$<TARGET_(PROPERTY|FILE):" "" name "${reference}")
      list(APPEND pending "${name}")
    endforeach()
    if(NOT dirs)
      continue()
    endif()
    set(bundles_fmt FALSE)
    foreach(dir IN LISTS dirs)
      get_filename_component(real "${dir}" ABSOLUTE)
      # Generator expressions (one target's directories by reference to another's) stay.
      if(NOT dir MATCHES "\\$<" AND EXISTS "${real}/fmt/core.h"
         AND NOT real IN_LIST CMAKE_CXX_IMPLICIT_INCLUDE_DIRECTORIES
         AND NOT real STREQUAL FTBENCH_SYSTEM_FMT_INCLUDE_DIR)
        set(bundles_fmt TRUE)
        list(APPEND moved "${real}")
      endif()
    endforeach()
    if(bundles_fmt AND NOT "${shadow}" IN_LIST dirs)
      set_property(TARGET "${item}" PROPERTY INTERFACE_INCLUDE_DIRECTORIES "${shadow};${dirs}")
    endif()
  endwhile()
  if(moved)
    file(MAKE_DIRECTORY "${shadow}")
    file(REMOVE "${shadow}/fmt")
    file(CREATE_LINK "${FTBENCH_SYSTEM_FMT_INCLUDE_DIR}/fmt" "${shadow}/fmt" SYMBOLIC)
    list(REMOVE_DUPLICATES moved)
    message(STATUS "ftbench: LibTorch include directories with a bundled fmt: ${moved}; the fmt "
                   "of ${FTBENCH_SYSTEM_FMT_INCLUDE_DIR} comes first (${shadow})")
  endif()
endfunction()

# The FMT_VERSION number of the fmt that find_package(fmt) found (9.1.0 -> 90100), for
# fmt_version_check.cpp: ftbench_fmt_version_number(<out-var>).
function(ftbench_fmt_version_number out)
  if(NOT fmt_VERSION MATCHES "^([0-9]+)\\.([0-9]+)\\.([0-9]+)")
    message(FATAL_ERROR "ftbench: cannot read fmt's version from fmt_VERSION '${fmt_VERSION}'")
  endif()
  math(EXPR number "${CMAKE_MATCH_1} * 10000 + ${CMAKE_MATCH_2} * 100 + ${CMAKE_MATCH_3}")
  set(${out} ${number} PARENT_SCOPE)
endfunction()
