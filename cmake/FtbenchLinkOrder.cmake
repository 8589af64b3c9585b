# libstdc++ ahead of LibTorch in a program's libraries.
#
# PyTorch's wheels are built with a newer GCC than their manylinux system has, and link the part
# of libstdc++ that system lacks (std::filesystem among it) statically into libtorch_cpu.so,
# which exports those symbols (pytorch/pytorch#133437; weak from 2.9, still exported). The
# dynamic linker binds every call to the first definition in the program's library order, and
# a program linked as `... -ltorch_cpu ... -lstdc++` lists libtorch_cpu first: its
# std::filesystem::remove_all then ran in place of the system libstdc++'s and crashed the
# checkpoint pruning of ftbench on the H200 machine (PyTorch 2.11). Naming libstdc++ before
# everything else puts it first in the lookup order, so the program, its libraries and
# LibTorch itself all use the one libstdc++ of the system. tests/cmake/stdfs_shadow checks it.
include_guard(GLOBAL)

# ftbench_libstdcxx_first(<target> <PRIVATE|INTERFACE|PUBLIC>): programs linking <target> (or
# <target> itself, for an executable) list libstdc++ first. GNU-style linkers with libstdc++
# only; elsewhere nothing.
function(ftbench_libstdcxx_first target scope)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang" OR CMAKE_CXX_FLAGS MATCHES "-stdlib=libc\\+\\+"
     OR APPLE)
    return()
  endif()
  target_link_options(${target} BEFORE ${scope}
                      "LINKER:--push-state,--no-as-needed,-lstdc++,--pop-state")
endfunction()
