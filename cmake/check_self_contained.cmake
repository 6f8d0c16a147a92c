# The repository stands alone: a user clones it and nothing else. This check
# (the `self_contained` test) fails when the build, a test, a script or a doc
# names a path above the source root:
#  - a CMake file (CMakeLists.txt, *.cmake, CMakePresets.json) whose
#    ${PROJECT_SOURCE_DIR} / ${CMAKE_SOURCE_DIR} / ${sourceDir} is followed
#    by `/..`, or whose ${CMAKE_CURRENT_SOURCE_DIR}/../.. climbs above the
#    root from the folder the file is in;
#  - any file of the build, tests, benches, scripts or docs naming the
#    sibling folders a development checkout may have beside it (`../shared`,
#    `../.library`), wherever they sit (`/work/shared` too).
# Usage: cmake -DSOURCE_DIR=<repo> -P check_self_contained.cmake
# SOURCE_DIR may be any tree; tests/packaging/self_contained_fixture is one
# that must fail (the `self_contained_catches` test checks the checker).
cmake_policy(SET CMP0007 NEW)
get_filename_component(root "${SOURCE_DIR}" ABSOLUTE)
set(failures "")

# 1. CMake files: variables that name the root, then `..`.
file(GLOB_RECURSE cmake_files "${root}/CMakeLists.txt" "${root}/*.cmake" "${root}/CMakePresets.json")
list(FILTER cmake_files EXCLUDE REGEX "/build/|/\\.git/")
if(NOT SOURCE_DIR MATCHES "self_contained_fixture")
  list(FILTER cmake_files EXCLUDE REGEX "/self_contained_fixture/")
endif()
# This file names the patterns it looks for; it is the one exception.
list(FILTER cmake_files EXCLUDE REGEX "/cmake/check_self_contained\\.cmake$")
foreach(f IN LISTS cmake_files)
  file(STRINGS "${f}" lines REGEX "\\$\\{(PROJECT_SOURCE_DIR|CMAKE_SOURCE_DIR|sourceDir)\\}/\\.\\.")
  foreach(line IN LISTS lines)
    list(APPEND failures "${f}: names a path above the source root: ${line}")
  endforeach()
  # ${CMAKE_CURRENT_SOURCE_DIR} followed by more `..` than the file is deep.
  get_filename_component(dir "${f}" DIRECTORY)
  file(RELATIVE_PATH rel "${root}" "${dir}")
  set(depth 0)
  if(NOT rel STREQUAL "")
    string(REPLACE "/" ";" parts "${rel}")
    list(LENGTH parts depth)
  endif()
  file(STRINGS "${f}" lines REGEX "\\$\\{CMAKE_CURRENT_(SOURCE|LIST)_DIR\\}(/\\.\\.)+")
  foreach(line IN LISTS lines)
    string(REGEX MATCHALL "\\$\\{CMAKE_CURRENT_(SOURCE|LIST)_DIR\\}(/\\.\\.)+" uses "${line}")
    foreach(use IN LISTS uses)
      string(REGEX MATCHALL "/\\.\\." ups "${use}")
      list(LENGTH ups n)
      if(n GREATER depth)
        list(APPEND failures "${f}: climbs ${n} folders from a folder ${depth} deep: ${line}")
      endif()
    endforeach()
  endforeach()
endforeach()

# 2. Every text file of the build, tests, benches, scripts and docs: the
#    development checkout's sibling folders by name.
file(GLOB_RECURSE text_files
     "${root}/*.txt" "${root}/*.cmake" "${root}/*.json" "${root}/*.sh" "${root}/*.py" "${root}/*.md"
     "${root}/*.cpp" "${root}/*.h" "${root}/*.in" "${root}/.ci/*" "${root}/quickstart.sh")
list(FILTER text_files EXCLUDE REGEX "/build/|/\\.git/")
if(NOT SOURCE_DIR MATCHES "self_contained_fixture")
  list(FILTER text_files EXCLUDE REGEX "/self_contained_fixture/")
endif()
# This file names the patterns it looks for; it is the one exception.
list(FILTER text_files EXCLUDE REGEX "/cmake/check_self_contained\\.cmake$")
foreach(f IN LISTS text_files)
  file(STRINGS "${f}" lines REGEX "\\.\\./(shared|\\.library)(/|$|[^A-Za-z0-9_])|/work/(shared|\\.library)")
  foreach(line IN LISTS lines)
    list(APPEND failures "${f}: names a folder outside the repository: ${line}")
  endforeach()
endforeach()

if(failures)
  list(JOIN failures "\n  " text)
  message(FATAL_ERROR "The repository must stand alone; these refer outside it:\n  ${text}")
endif()
list(LENGTH cmake_files nc)
list(LENGTH text_files nt)
message(STATUS "self-contained: ${nc} CMake files and ${nt} text files name nothing above ${root}")
