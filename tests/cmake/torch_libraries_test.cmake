# ctest torch_libraries_one_libtorch (cmake -P): ftbench_torch_libraries_of(prefix ...) on made-up
# TORCH_LIBRARIES lists: the libraries of another LibTorch than the one at the prefix are named,
# as a PyPI wheel's TorchConfig.cmake picks Debian's /usr/lib/.../libc10.so where libtorch-dev is
# installed (its find_library(c10 PATHS <wheel>/lib) searches the system's folders first).
include(${CMAKE_CURRENT_LIST_DIR}/../../cmake/FtbenchTorchLibraries.cmake)
set(failures 0)
function(expect prefix expected)
  ftbench_torch_libraries_of("${prefix}" foreign ${ARGN})
  if(NOT "${foreign}" STREQUAL "${expected}")
    message(SEND_ERROR "libraries ${ARGN} at ${prefix}: '${foreign}', expected '${expected}'")
    set(failures 1 PARENT_SCOPE)
  endif()
endfunction()
set(wheel /venv/lib/python3.11/site-packages/torch)
expect(${wheel} "" torch torch_library ${wheel}/lib/libc10.so ${wheel}/lib/libc10_cuda.so
       /usr/local/cuda/lib64/libnvrtc.so "-Wl,--no-as-needed")
expect(${wheel} "/usr/lib/x86_64-linux-gnu/libc10.so" torch
       /usr/lib/x86_64-linux-gnu/libc10.so ${wheel}/lib/libc10_cuda.so)
expect(${wheel} "/usr/lib/x86_64-linux-gnu/libtorch.so;/opt/other/lib/libtorch_cuda.so"
       /usr/lib/x86_64-linux-gnu/libtorch.so /opt/other/lib/libtorch_cuda.so)
expect(${wheel} "/usr/lib/libc10.so.1.13" /usr/lib/libc10.so.1.13)
# Debian's own LibTorch, prefix /usr: its libraries are its own.
expect(/usr "" torch /usr/lib/x86_64-linux-gnu/libc10.so)
# A prefix given with a trailing slash or through ..: the same folder.
expect(${wheel}/share/cmake/../.. "" ${wheel}/lib/libc10.so)
if(failures)
  message(FATAL_ERROR "ftbench_torch_libraries_of: wrong answers above")
endif()
message(STATUS "ftbench_torch_libraries_of: every case right")
