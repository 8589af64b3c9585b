# Script mode: writes OUTPUT, a C++ source that defines NAMESPACE::SYMBOL, a char array holding
# the bytes of INPUT followed by a NUL, and NAMESPACE::SYMBOLSize, the byte count without the NUL.
# Bytes rather than a raw string literal, so no text in INPUT can end the literal early and no
# compiler limit on string literal length applies. NAME is the input's name for the comment.
#
#   cmake -DINPUT=... -DOUTPUT=... -DNAMESPACE=ftbench::cost::detail -DSYMBOL=kBuiltinCatalogYaml
#         -DNAME=configs/catalog.yaml -P cmake/EmbedFile.cmake
foreach(var INPUT OUTPUT NAMESPACE SYMBOL)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "EmbedFile.cmake: -D${var}=... is required")
  endif()
endforeach()
if(NOT DEFINED NAME)
  set(NAME "${INPUT}")
endif()

file(READ "${INPUT}" hex HEX)
string(LENGTH "${hex}" hex_length)
math(EXPR size "${hex_length} / 2")
# "2320..." -> "'\x23','\x20',...", 16 bytes a line: character literals, so that bytes above
# 0x7f (UTF-8 text) are chars without a narrowing conversion.
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "'\\\\x\\1'," bytes "${hex}")
set(sixteen "")
foreach(i RANGE 15)  # CMake regexes have no {n} repeat
  string(APPEND sixteen "'.x[0-9a-f][0-9a-f]',")
endforeach()
string(REGEX REPLACE "(${sixteen})" "\\1\n    " bytes "${bytes}")

set(content "// Generated from ${NAME} by cmake/EmbedFile.cmake. Do not edit.
#include <cstddef>

namespace ${NAMESPACE} {

extern const char ${SYMBOL}[];
extern const std::size_t ${SYMBOL}Size;

const char ${SYMBOL}[] = {
    ${bytes}'\\0'};
const std::size_t ${SYMBOL}Size = ${size};

}  // namespace ${NAMESPACE}
")
file(WRITE "${OUTPUT}" "${content}")
