# FRACPACK_SANITIZE: sanitizers for the whole build (a sanitizer build is its own build folder).
#   address,undefined  ASan + UBSan; UBSan findings abort, so a test that triggers one fails
#   thread             TSan
# -O1 with frame pointers keeps the reports readable and the suite fast enough for CI.
if(FRACPACK_SANITIZE)
  set(flags -fsanitize=${FRACPACK_SANITIZE} -fno-omit-frame-pointer -g)
  if(FRACPACK_SANITIZE MATCHES "undefined")
    list(APPEND flags -fno-sanitize-recover=undefined)
  endif()
  if(FRACPACK_BUILD_FUZZ AND CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    list(APPEND flags -fsanitize=fuzzer-no-link)  # coverage for libFuzzer in the libraries too
  endif()
  add_compile_options(${flags})
  add_link_options(-fsanitize=${FRACPACK_SANITIZE})
endif()
