# Fails when a layer's file includes a header of a layer it does not link
# (CMakeLists.txt, lemon_layer). Run by the build, once per layer, whenever
# one of its sources or headers changes:
#   cmake -DLAYER=name -DALLOWED="name;dep;..." -DFILES="a.cpp;b.h;..."
#         -DSTAMP=path -P check_layer.cmake
cmake_minimum_required(VERSION 3.25)
set(bad "")
foreach(file IN LISTS FILES)
  file(STRINGS "${file}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"lemon/")
  foreach(line IN LISTS lines)
    string(REGEX MATCH "\"lemon/([a-z_]+)/" _ "${line}")
    set(layer "${CMAKE_MATCH_1}")
    if(layer STREQUAL "api")  # an API room: lemon/api/<name>/ is layer api_<name>
      string(REGEX MATCH "\"lemon/api/([a-z_]+)/" _ "${line}")
      set(layer "api_${CMAKE_MATCH_1}")
    endif()
    if(NOT layer IN_LIST ALLOWED)
      string(STRIP "${line}" line)
      string(APPEND bad "\n  ${file}: ${line} (layer ${layer})")
    endif()
  endforeach()
endforeach()
if(bad)
  list(REMOVE_ITEM ALLOWED "${LAYER}")
  string(REPLACE ";" ", " allowed "${ALLOWED}")
  message(FATAL_ERROR "Layer ${LAYER} may include only its own headers and those of "
                      "the layers it links (${allowed}); these include others:${bad}\n"
                      "Either the code belongs in another layer, or CMakeLists.txt's "
                      "lemon_layer(${LAYER} DEPS ...) should name the layer, if that "
                      "keeps the layers acyclic (docs/architecture.md).")
endif()
file(WRITE "${STAMP}" "ok\n")
