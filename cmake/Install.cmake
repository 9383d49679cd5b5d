# cmake --install: the four layer libraries, the public headers (include/fracpack/<layer>/),
# the `fracpack` command, a CMake package (find_package(fracpack) → fracpack::core, ::queues,
# ::sim, ::server) and pkg-config files (fracpack-core, -queues, -sim, -server, and fracpack for
# all four). The version is the project's (CMakeLists.txt), the one `fracpack --version` prints.
include(CMakePackageConfigHelpers)

set(FRACPACK_LAYERS core queues sim server)
set(FRACPACK_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/fracpack)

install(TARGETS fracpack_core fracpack_queues fracpack_sim fracpack_server EXPORT fracpackTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS fracpack_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY include/fracpack DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.hpp")
install(EXPORT fracpackTargets NAMESPACE fracpack:: DESTINATION ${FRACPACK_CMAKE_DIR})

configure_package_config_file(cmake/fracpackConfig.cmake.in ${CMAKE_CURRENT_BINARY_DIR}/fracpackConfig.cmake
                              INSTALL_DESTINATION ${FRACPACK_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/fracpackConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/fracpackConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/fracpackConfigVersion.cmake
              cmake/FindCSV.cmake
        DESTINATION ${FRACPACK_CMAKE_DIR})

# pkg-config: a shared build needs only each layer's public dependencies; a static one also
# lists what the archives use (pkg-config --static).
# prefix is found from the .pc file's own place (${pcfiledir}), so `cmake --install --prefix P`
# works for any P, not only the configured CMAKE_INSTALL_PREFIX.
file(RELATIVE_PATH FRACPACK_PC_UP "/root/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/root")
string(REGEX REPLACE "/$" "" FRACPACK_PC_UP "${FRACPACK_PC_UP}")
set(FRACPACK_PC_PREFIX "\${pcfiledir}/${FRACPACK_PC_UP}")
get_target_property(fracpack_library_type fracpack_core TYPE)
set(FRACPACK_PC_core_REQUIRES "fmt nlohmann_json")
set(FRACPACK_PC_core_PRIVATE "yaml-0.1")
set(FRACPACK_PC_core_LIBS_PRIVATE "-pthread")
set(FRACPACK_PC_queues_REQUIRES "fracpack-core = ${PROJECT_VERSION}")
set(FRACPACK_PC_queues_PRIVATE "")
set(FRACPACK_PC_queues_LIBS_PRIVATE "")
set(FRACPACK_PC_sim_REQUIRES "fracpack-queues = ${PROJECT_VERSION}")
set(FRACPACK_PC_sim_PRIVATE "re2 clp")
set(FRACPACK_PC_sim_LIBS_PRIVATE "-lcsv")
set(FRACPACK_PC_server_REQUIRES "fracpack-queues = ${PROJECT_VERSION}")
set(FRACPACK_PC_server_PRIVATE "grpc++ protobuf cpp-httplib spdlog simdjson sqlite3 openssl zlib")
set(FRACPACK_PC_server_LIBS_PRIVATE "-lgrpc++_reflection")
foreach(layer IN LISTS FRACPACK_LAYERS)
  set(FRACPACK_PC_NAME fracpack-${layer})
  set(FRACPACK_PC_LIB fracpack_${layer})
  set(FRACPACK_PC_REQUIRES "${FRACPACK_PC_${layer}_REQUIRES}")
  if(fracpack_library_type STREQUAL "STATIC_LIBRARY")
    set(FRACPACK_PC_REQUIRES_PRIVATE "${FRACPACK_PC_${layer}_PRIVATE}")
    set(FRACPACK_PC_LIBS_PRIVATE "${FRACPACK_PC_${layer}_LIBS_PRIVATE}")
  else()
    set(FRACPACK_PC_REQUIRES_PRIVATE "")
    set(FRACPACK_PC_LIBS_PRIVATE "")
  endif()
  configure_file(cmake/fracpack-layer.pc.in ${CMAKE_CURRENT_BINARY_DIR}/pkgconfig/fracpack-${layer}.pc @ONLY)
endforeach()
configure_file(cmake/fracpack.pc.in ${CMAKE_CURRENT_BINARY_DIR}/pkgconfig/fracpack.pc @ONLY)
install(DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/pkgconfig DESTINATION ${CMAKE_INSTALL_LIBDIR})
