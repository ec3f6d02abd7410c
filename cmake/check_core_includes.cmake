# Run with: cmake -DCORE_DIR=<src/core> -P check_core_includes.cmake
# Fails when a file under CORE_DIR includes a header that is neither from the C++
# standard library nor another core header ("core/..."), or when a file outside
# core/plugins/ includes one of core/plugins/: the plugins are the core's top layer
# (they implement sched/'s interfaces and register themselves), so nothing below
# depends on them.
cmake_minimum_required(VERSION 3.25)
set(allowed_std
  algorithm any array atomic bit bitset cassert cctype cerrno cfloat charconv chrono cinttypes
  climits cmath compare concepts cstddef cstdint cstdio cstdlib cstring deque exception
  expected functional initializer_list iomanip ios iosfwd iostream istream iterator limits
  list map memory memory_resource new numeric optional ostream queue random ranges ratio
  set source_location span sstream stack stdexcept string string_view system_error tuple
  type_traits typeinfo unordered_map unordered_set utility variant vector version)
file(GLOB_RECURSE files "${CORE_DIR}/*.h" "${CORE_DIR}/*.cc")
set(bad "")
foreach(f IN LISTS files)
  file(STRINGS "${f}" lines REGEX "^[ \t]*#[ \t]*include")
  foreach(line IN LISTS lines)
    if(line MATCHES "#[ \t]*include[ \t]*<([^>]+)>")
      if(NOT CMAKE_MATCH_1 IN_LIST allowed_std)
        list(APPEND bad "${f}: <${CMAKE_MATCH_1}>")
      endif()
    elseif(line MATCHES "#[ \t]*include[ \t]*\"([^\"]+)\"")
      set(header "${CMAKE_MATCH_1}")  # each MATCHES below resets CMAKE_MATCH_1
      if(NOT header MATCHES "^core/")
        list(APPEND bad "${f}: \"${header}\"")
      elseif(header MATCHES "^core/plugins/" AND NOT f MATCHES "^${CORE_DIR}/plugins/")
        list(APPEND bad "${f}: \"${header}\" (a plugin, from below the plugins layer)")
      endif()
    endif()
  endforeach()
endforeach()
if(bad)
  list(JOIN bad "\n  " msg)
  message(FATAL_ERROR "core includes something outside the standard library, or a plugin from below core/plugins/:\n  ${msg}")
endif()
message(STATUS "core includes only the standard library and core headers (${CMAKE_CURRENT_LIST_FILE})")
