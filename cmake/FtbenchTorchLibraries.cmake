# The libraries of one LibTorch only.
#
# A PyPI wheel's TorchConfig.cmake finds libtorch and libc10 with find_library(... PATHS
# <wheel>/lib), which searches the system's folders before that one: on a machine that also has
# a LibTorch there (Debian's libtorch-dev: /usr/lib/x86_64-linux-gnu/libc10.so), TORCH_LIBRARIES
# names that one's libc10 beside the wheel's own libraries, and the programs would load two
# LibTorches. scripts/device-build.sh names the wheel's (TORCH_LIBRARY, c10_LIBRARY);
# FtbenchDependencies.cmake stops the configuration when a list still holds another's.
#
# ftbench_torch_libraries_of(<prefix> <out-var> <items of TORCH_LIBRARIES>...): the items that are
# files of a LibTorch library (libtorch*, libc10*) outside <prefix> (TORCH_INSTALL_PREFIX), as a
# list; targets, flags and other libraries are not looked at.
function(ftbench_torch_libraries_of prefix out)
  get_filename_component(root "${prefix}" ABSOLUTE)
  set(foreign "")
  foreach(item IN LISTS ARGN)
    if(NOT IS_ABSOLUTE "${item}")
      continue()
    endif()
    get_filename_component(name "${item}" NAME)
    if(NOT name MATCHES "^lib(torch|c10)(_[a-z_]+)?\\.(so|a|dylib)(\\.[0-9.]+)?$")
      continue()
    endif()
    get_filename_component(path "${item}" ABSOLUTE)
    string(FIND "${path}" "${root}/" at)
    if(NOT at EQUAL 0)
      list(APPEND foreign "${item}")
    endif()
  endforeach()
  set(${out} "${foreign}" PARENT_SCOPE)
endfunction()
