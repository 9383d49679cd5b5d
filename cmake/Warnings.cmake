# fracpack_warnings(target): our warning flags on our own targets only (PRIVATE), so a project
# that adds fracpack with add_subdirectory() or find_package() keeps its own. FRACPACK_WERROR
# turns them into errors (the clang CI job builds that way).
function(fracpack_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    # GCC 12 false positive on std::string concatenation at -O2 (GCC bug 105329).
    target_compile_options(${target} PRIVATE -Wno-restrict)
  endif()
  if(FRACPACK_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

# fracpack_unity(target): with FRACPACK_UNITY, the target's sources compile 16 to a file, so the
# heavy headers (nlohmann/json, fmt, gRPC) are parsed and their templates instantiated once per
# batch. The release build stays one file at a time, which proves every file compiles alone;
# the unity build proves no two files of a library clash.
function(fracpack_unity target)
  if(FRACPACK_UNITY)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 16)
  endif()
endfunction()
