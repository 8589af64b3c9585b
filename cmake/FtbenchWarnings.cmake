# Warnings for our own targets only (dependencies' headers are included as SYSTEM).
function(ftbench_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra)
  if(FTBENCH_SANITIZE)
    target_compile_options(${target} PRIVATE -fsanitize=address,undefined -fno-omit-frame-pointer)
    target_link_options(${target} PRIVATE -fsanitize=address,undefined)
  endif()
endfunction()
