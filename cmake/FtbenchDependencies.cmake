# Every dependency comes from a Debian 12 package (scripts/setup.sh installs them) or, on a GPU
# machine, from PyTorch's own LibTorch (CMAKE_PREFIX_PATH=$(python3 -c 'import torch;
# print(torch.utils.cmake_prefix_path)')).
find_package(yaml-cpp REQUIRED)
find_package(nlohmann_json 3.9 REQUIRED)
find_package(fmt REQUIRED)
find_package(spdlog REQUIRED)
find_package(CLI11 REQUIRED)
find_package(OpenSSL REQUIRED COMPONENTS Crypto)
find_package(Threads REQUIRED)
# Unicode regular expressions for BPE pre-tokenization (libpcre2-dev) and SentencePiece models
# (libsentencepiece-dev): neither ships a CMake package config on Debian 12, both ship .pc files.
# Without pkg-config (a GPU machine's image may lack it; scripts/device-build.sh), the headers and
# libraries are looked for on CMAKE_PREFIX_PATH and wrapped in targets of the same names.
find_package(PkgConfig QUIET)
if(PKG_CONFIG_FOUND AND NOT FTBENCH_NO_PKG_CONFIG)
  pkg_check_modules(PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8)
  pkg_check_modules(SENTENCEPIECE REQUIRED IMPORTED_TARGET sentencepiece)
else()
  # ftbench_find_library(TARGET HEADER LIBRARY...): what the .pc file's Libs would name.
  function(ftbench_find_library target header)
    find_path(${target}_INCLUDE_DIR ${header} REQUIRED)
    set(libraries "")
    foreach(library IN LISTS ARGN)
      find_library(${target}_${library}_LIBRARY ${library} REQUIRED)
      list(APPEND libraries "${${target}_${library}_LIBRARY}")
    endforeach()
    add_library(PkgConfig::${target} INTERFACE IMPORTED GLOBAL)
    set_target_properties(PkgConfig::${target} PROPERTIES
      INTERFACE_INCLUDE_DIRECTORIES "${${target}_INCLUDE_DIR}"
      INTERFACE_LINK_LIBRARIES "${libraries}")
    message(STATUS "ftbench: ${target}: ${libraries} (without pkg-config)")
  endfunction()
  ftbench_find_library(PCRE2 pcre2.h pcre2-8)
  ftbench_find_library(SENTENCEPIECE sentencepiece_processor.h sentencepiece sentencepiece_train)
endif()
if(FTBENCH_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()

# The vendor runtimes for the GPU query modules (src/device/query_modules), looked for whatever LibTorch the
# build uses, so that both modules compile, link and run in CI without a GPU. Optional: a module
# whose runtime is missing is not built, and `ftbench devices` and the report say so.
# CUDA: the toolkit's static runtime (scripts/setup.sh does not install it; CI machines have
# /usr/local/cuda, and a CUDA build of LibTorch needs the toolkit anyway). Set CUDAToolkit_ROOT
# for another location.
find_package(CUDAToolkit QUIET)
if(CUDAToolkit_FOUND AND TARGET CUDA::cudart_static)
  set(FTBENCH_HAVE_CUDA_RUNTIME ON)
  message(STATUS "ftbench: CUDA query module: CUDA ${CUDAToolkit_VERSION} static runtime in "
                 "${CUDAToolkit_LIBRARY_DIR}")
else()
  set(FTBENCH_HAVE_CUDA_RUNTIME OFF)
  message(STATUS "ftbench: CUDA query module: not built (no CUDA toolkit found; set "
                 "CUDAToolkit_ROOT)")
endif()
# HIP: the runtime's header and libamdhip64 (Debian's libamdhip64-dev, or a ROCm install under
# ROCM_PATH, HIP_PATH or /opt/rocm, which wins over the system's so that a ROCm build of LibTorch
# and the module share one runtime). Host code only: no hipcc, no HIP language.
find_path(FTBENCH_HIP_INCLUDE_DIR hip/hip_runtime_api.h
          HINTS $ENV{ROCM_PATH} $ENV{HIP_PATH} /opt/rocm PATH_SUFFIXES include)
find_library(FTBENCH_AMDHIP64_LIBRARY amdhip64
             HINTS $ENV{ROCM_PATH} $ENV{HIP_PATH} /opt/rocm PATH_SUFFIXES lib lib64)
if(FTBENCH_HIP_INCLUDE_DIR AND FTBENCH_AMDHIP64_LIBRARY)
  set(FTBENCH_HAVE_HIP_RUNTIME ON)
  message(STATUS "ftbench: HIP query module: ${FTBENCH_AMDHIP64_LIBRARY}")
else()
  set(FTBENCH_HAVE_HIP_RUNTIME OFF)
  message(STATUS "ftbench: HIP query module: not built (no hip/hip_runtime_api.h and "
                 "libamdhip64 found; scripts/setup.sh installs libamdhip64-dev, or set ROCM_PATH)")
endif()

if(FTBENCH_WITH_TORCH)
  # LibTorch up to 2.7 links torch::nvtoolsext to CUDA::nvToolsExt, a library CUDA >= 12.8 no
  # longer ships (NVTX 3 is header-only, CUDA::nvtx3): stand in for it so that such a LibTorch
  # configures with a newer toolkit (a PyPI 2.4 to 2.7 wheel, Debian 13's libtorch-cuda 2.6, with
  # CUDA 13).
  if(CUDAToolkit_FOUND AND NOT TARGET CUDA::nvToolsExt)
    add_library(CUDA::nvToolsExt INTERFACE IMPORTED)
    if(TARGET CUDA::nvtx3)
      target_link_libraries(CUDA::nvToolsExt INTERFACE CUDA::nvtx3)
    endif()
    message(STATUS "ftbench: CUDA::nvToolsExt missing (CUDA ${CUDAToolkit_VERSION}); defined as "
                   "an interface target for LibTorch's CMake files")
  endif()
  find_package(Torch REQUIRED)
  include(FtbenchTorchLibraries)
  ftbench_torch_libraries_of("${TORCH_INSTALL_PREFIX}" foreign_torch_libraries ${TORCH_LIBRARIES})
  if(foreign_torch_libraries)
    message(FATAL_ERROR
      "ftbench: the LibTorch found (Torch_DIR ${Torch_DIR}, prefix ${TORCH_INSTALL_PREFIX}) "
      "lists libraries of another LibTorch: ${foreign_torch_libraries}. Either its CMake files "
      "took them from the system's folders, which their find_library searches first (name its "
      "own in the cache variables it uses: TORCH_LIBRARY, c10_LIBRARY, C10_CUDA_LIBRARY; "
      "scripts/device-build.sh does), or this build folder was configured before against that "
      "other LibTorch and keeps its cache (use a new build folder, or pass -DTorch_DIR)")
  endif()
  include(FtbenchTorchIncludes)
  ftbench_system_fmt_before_torch(${TORCH_LIBRARIES})
  # LibTorch's CMake adds its flags (ABI, -D_GLIBCXX_USE_CXX11_ABI) through TORCH_CXX_FLAGS.
  set(CMAKE_CXX_FLAGS "${CMAKE_CXX_FLAGS} ${TORCH_CXX_FLAGS}")
  if(TARGET torch_hip OR TARGET c10_hip)
    set(FTBENCH_TORCH_BACKEND "rocm")
  elseif(TARGET torch_cuda OR TARGET c10_cuda)
    set(FTBENCH_TORCH_BACKEND "cuda")
  else()
    set(FTBENCH_TORCH_BACKEND "cpu")
  endif()
  message(STATUS "ftbench: LibTorch ${Torch_VERSION} (${FTBENCH_TORCH_BACKEND} build)")
  # The C++ standard and the APIs the torch side compiles with (cmake/FtbenchTorchApi.cmake).
  include(FtbenchTorchApi)
  find_file(FTBENCH_TORCH_VERSION_H torch/version.h PATHS ${TORCH_INCLUDE_DIRS} NO_DEFAULT_PATH)
  ftbench_torch_cxx_standard("${FTBENCH_TORCH_VERSION_H}" FTBENCH_TORCH_CXX_STANDARD)
  # ROCm builds of LibTorch compile their headers with USE_ROCM and __HIP_PLATFORM_AMD__, and
  # their CMake targets do not pass them on; the torch side defines them (src/CMakeLists.txt).
  set(FTBENCH_TORCH_PROBE_DEFINITIONS "")
  set(FTBENCH_TORCH_PROBE_INCLUDES "")
  if(FTBENCH_TORCH_BACKEND STREQUAL "rocm")
    set(FTBENCH_TORCH_PROBE_DEFINITIONS -DUSE_ROCM -D__HIP_PLATFORM_AMD__)
    set(FTBENCH_TORCH_PROBE_INCLUDES ${FTBENCH_HIP_INCLUDE_DIR})
  elseif(FTBENCH_TORCH_BACKEND STREQUAL "cuda")
    set(FTBENCH_TORCH_PROBE_INCLUDES ${CUDAToolkit_INCLUDE_DIRS})
  endif()
  ftbench_torch_allocator_api(${FTBENCH_TORCH_BACKEND} FTBENCH_ALLOCATOR_API)
  ftbench_torch_tf32_api(FTBENCH_TF32_API)
  ftbench_torch_cpu_allocator_api(FTBENCH_CPU_ALLOCATOR_API)
  # Only the headers: the group and gloo's code come with LibTorch's own libraries (a CUDA
  # LibTorch links its own build of gloo; linking the system's beside it is asking for trouble).
  # gloo's headers: the system's (Debian's libgloo-dev), else the first on CMAKE_PREFIX_PATH (a
  # PyTorch wheel ships none: scripts/prepare-device-deps.sh carries Debian's to a GPU machine).
  # They come after LibTorch's own directories, should a LibTorch ship them.
  find_path(FTBENCH_GLOO_INCLUDE_DIR gloo/algorithm.h)
  set(FTBENCH_GLOO_INCLUDES "")
  if(FTBENCH_GLOO_INCLUDE_DIR AND NOT FTBENCH_GLOO_INCLUDE_DIR IN_LIST
                                      CMAKE_CXX_IMPLICIT_INCLUDE_DIRECTORIES)
    set(FTBENCH_GLOO_INCLUDES ${FTBENCH_GLOO_INCLUDE_DIR})
  endif()
  ftbench_torch_c10d_gloo(FTBENCH_HAVE_C10D_GLOO)
  message(STATUS "ftbench: c10d Gloo group: ${FTBENCH_HAVE_C10D_GLOO} (gloo headers: "
                 "${FTBENCH_GLOO_INCLUDE_DIR})")
  set(FTBENCH_HAVE_C10D_NCCL OFF)
  if(FTBENCH_TORCH_BACKEND STREQUAL "cuda")
    ftbench_torch_c10d_nccl(FTBENCH_HAVE_C10D_NCCL)
  endif()
  message(STATUS "ftbench: c10d NCCL group: ${FTBENCH_HAVE_C10D_NCCL}")
  message(STATUS "ftbench: torch side in C++${FTBENCH_TORCH_CXX_STANDARD}; caching allocator: "
                 "${FTBENCH_ALLOCATOR_API}; TF32 switch: ${FTBENCH_TF32_API}; CPU allocator: "
                 "${FTBENCH_CPU_ALLOCATOR_API}")
endif()
