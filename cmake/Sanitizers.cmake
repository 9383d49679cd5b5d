# FRACPACK_SANITIZE: sanitizers for the whole build (a sanitizer build is its own build folder).
#   address,undefined  ASan + UBSan; UBSan findings abort, so a test that triggers one fails
#   thread             TSan
# The jobs build with -O1 (the suite fast enough) and line tables only (reports name file and
# line; full debug info doubled the link time); frame pointers keep the stacks whole.
if(FRACPACK_SANITIZE)
  set(flags -fsanitize=${FRACPACK_SANITIZE} -fno-omit-frame-pointer)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    list(APPEND flags -gline-tables-only)
  else()
    list(APPEND flags -g1)
  endif()
  if(FRACPACK_SANITIZE MATCHES "undefined")
    # vptr is off: it needs every library's type info from the same compiler, and Debian's
    # spdlog, gRPC and libstdc++ are GCC's (their shared_ptr control blocks read as "invalid vptr").
    list(APPEND flags -fno-sanitize-recover=undefined -fno-sanitize=vptr)
  endif()
  if(FRACPACK_BUILD_FUZZ AND CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    list(APPEND flags -fsanitize=fuzzer-no-link)  # coverage for libFuzzer in the libraries too
  endif()
  if(FRACPACK_SANITIZE MATCHES "thread")
    # Debian's protobuf, gRPC, Abseil and OpenSSL are not instrumented: protobuf's headers must see
    # the library's class layout (the header says why), and TSAN_OPTIONS ignore_noninstrumented_modules
    # (scripts/ci/sanitizer-env.sh) keeps their interceptor calls out of the reports.
    list(APPEND flags "$<$<COMPILE_LANGUAGE:CXX>:SHELL:-include ${PROJECT_SOURCE_DIR}/tests/sanitizers/tsan_library_layout.hpp>")
  endif()
  add_compile_options(${flags})
  add_link_options(-fsanitize=${FRACPACK_SANITIZE})
endif()
