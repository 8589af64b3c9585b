# Warnings for our own targets only (dependencies' headers are included as SYSTEM), and the
# sanitizers (FTBENCH_SANITIZE) and fuzzing coverage (FTBENCH_FUZZ) for the same targets:
# libraries, modules (libftbench_spm.so and the GPU query modules the tests dlopen), tests.
function(ftbench_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra)
  if(FTBENCH_SANITIZE)
    # UBSan stops at the first report (-fno-sanitize-recover) so that a test with undefined
    # behaviour fails instead of printing and passing.
    target_compile_options(${target} PRIVATE -fsanitize=address,undefined
                                             -fno-sanitize-recover=all -fno-omit-frame-pointer)
    target_link_options(${target} PRIVATE -fsanitize=address,undefined)
  endif()
  if(FTBENCH_FUZZ)
    # Coverage instrumentation for libFuzzer without its main(); fuzz/CMakeLists.txt links the
    # fuzz targets with -fsanitize=fuzzer. Other programs get the sanitizer runtime's no-op
    # coverage callbacks.
    target_compile_options(${target} PRIVATE -fsanitize=fuzzer-no-link)
  endif()
endfunction()
