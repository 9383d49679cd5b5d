# The layer check (ctest: layers): every #include "..." in the libraries' sources and headers
# must point to its own layer or a lower one (docs/architecture.md), installed headers may only
# include installed headers, the standard library, fmt and nlohmann/json.
#   cmake -DSOURCE_DIR=<repository> -P cmake/CheckLayers.cmake
# Layers, lowest first: core, k8s, binpack (fracpack::core), queues, then sim and server
# (siblings). A layer may include itself and the layers in its "may" list.
cmake_minimum_required(VERSION 3.25)
set(may_core core)
set(may_k8s core k8s)
set(may_binpack core binpack)
set(may_queues core k8s binpack queues)
set(may_sim core k8s binpack queues sim)
set(may_server core k8s binpack queues server)
# Path prefixes (of files, and of include names) → layer.
set(prefixes
  "fracpack/core/=core" "fracpack/k8s/=k8s" "fracpack/binpack/=binpack" "fracpack/queues/=queues"
  "fracpack/sim/=sim" "fracpack/server/=server" "fracpack/v1/=server" "google/rpc/=server"
  "core/=core" "k8s/=k8s" "binpack/=binpack" "queues/=queues" "state/=queues" "cycle/=queues"
  "trace/=sim" "density/=sim" "quota/=sim" "plot/=sim" "jobs/=sim" "plugin_api/=server")

function(layer_of path out)
  set(${out} "" PARENT_SCOPE)
  foreach(entry IN LISTS prefixes)
    string(REPLACE "=" ";" pair "${entry}")
    list(GET pair 0 prefix)
    list(GET pair 1 layer)
    string(FIND "${path}" "${prefix}" at)
    if(at EQUAL 0)
      set(${out} ${layer} PARENT_SCOPE)
      return()
    endif()
  endforeach()
endfunction()

file(GLOB_RECURSE files RELATIVE ${SOURCE_DIR} ${SOURCE_DIR}/include/*.hpp ${SOURCE_DIR}/src/*.hpp
     ${SOURCE_DIR}/src/*.cpp ${SOURCE_DIR}/src/*.in)
set(errors "")
set(checked 0)
foreach(file IN LISTS files)
  string(REGEX REPLACE "^(include|src)/" "" inner "${file}")
  layer_of("${inner}" mine)
  if(mine STREQUAL "")
    string(APPEND errors "${file}: not in any layer (add its folder to cmake/CheckLayers.cmake)\n")
    continue()
  endif()
  file(STRINGS ${SOURCE_DIR}/${file} lines REGEX "^#include ")
  foreach(line IN LISTS lines)
    math(EXPR checked "${checked} + 1")
    set(name "")
    if(line MATCHES "^#include \"([^\"]+)\"")
      set(name ${CMAKE_MATCH_1})
    elseif(line MATCHES "^#include <(fracpack/[^>]+)>")  # our headers spelled as a system's
      set(name ${CMAKE_MATCH_1})
    endif()
    if(name)
      if(NOT name MATCHES "/")  # the same folder
        continue()
      endif()
      layer_of("${name}" theirs)
      if(theirs STREQUAL "")
        string(APPEND errors "${file}: includes \"${name}\", which is in no layer\n")
      elseif(NOT theirs IN_LIST may_${mine})
        string(APPEND errors "${file} (${mine}): includes \"${name}\" (${theirs}), a higher or sibling layer\n")
      endif()
      if(file MATCHES "^include/" AND NOT name MATCHES "^fracpack/(core|k8s|binpack|queues|sim|server)/")
        string(APPEND errors "${file}: an installed header includes \"${name}\", which is not installed\n")
      endif()
    elseif(file MATCHES "^include/" AND line MATCHES "^#include <([^>]+/[^>]+)>")
      set(name ${CMAKE_MATCH_1})
      if(NOT name MATCHES "^(fmt|nlohmann)/")
        string(APPEND errors "${file}: an installed header includes <${name}> (only the standard "
                             "library, fmt and nlohmann/json are public dependencies)\n")
      endif()
    endif()
  endforeach()
endforeach()
list(LENGTH files count)
if(errors)
  message(NOTICE "${errors}")  # NOTICE is printed as is; FATAL_ERROR would wrap the lines
  message(FATAL_ERROR "layer check: ${count} files, ${checked} includes, the ones above go upward")
endif()
message(STATUS "layer check: ${count} files, ${checked} includes, every one downward")
