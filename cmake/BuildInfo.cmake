# FRACPACK_REVISION (git's short commit, "unknown" without git or outside a checkout) and
# FRACPACK_BUILD_DATE for `fracpack --version` and the fracpack_build_info metric. Taken at
# configure time; a commit or checkout re-runs the configure step, so they follow HEAD.
set(FRACPACK_REVISION "unknown")
find_package(Git QUIET)
if(GIT_FOUND)
  execute_process(COMMAND ${GIT_EXECUTABLE} rev-parse --short HEAD
                  WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}
                  OUTPUT_VARIABLE revision OUTPUT_STRIP_TRAILING_WHITESPACE
                  RESULT_VARIABLE revision_rc ERROR_QUIET)
  if(revision_rc EQUAL 0 AND revision MATCHES "^[0-9a-f]+$")
    set(FRACPACK_REVISION ${revision})
    # HEAD, and the branch it names (a loose ref: packed refs change with a commit too).
    execute_process(COMMAND ${GIT_EXECUTABLE} rev-parse --absolute-git-dir --git-common-dir --symbolic-full-name HEAD
                    WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}
                    OUTPUT_VARIABLE git_paths OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    string(REPLACE "\n" ";" git_paths "${git_paths}")
    list(LENGTH git_paths git_path_count)
    if(git_path_count EQUAL 3)
      list(GET git_paths 0 git_dir)
      list(GET git_paths 1 git_common_dir)
      list(GET git_paths 2 git_ref)
      get_filename_component(git_common_dir "${git_common_dir}" ABSOLUTE BASE_DIR ${CMAKE_CURRENT_SOURCE_DIR})
      foreach(watched "${git_dir}/HEAD" "${git_common_dir}/${git_ref}" "${git_common_dir}/packed-refs")
        if(EXISTS "${watched}")
          set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${watched}")
        endif()
      endforeach()
    endif()
  endif()
endif()
string(TIMESTAMP FRACPACK_BUILD_DATE "%Y-%m-%d" UTC)
configure_file(${CMAKE_CURRENT_SOURCE_DIR}/src/core/build_info.cpp.in ${CMAKE_CURRENT_BINARY_DIR}/gen/build_info.cpp @ONLY)
