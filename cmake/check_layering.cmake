# Fails when a file under engine/ includes a Qt header, or when a torch header
# is included outside the files allowed to pay its ~20 s compile cost.
# Usage: cmake -DSOURCE_DIR=<repo> -P check_layering.cmake
file(GLOB_RECURSE engine_files "${SOURCE_DIR}/engine/*.h" "${SOURCE_DIR}/engine/*.cpp"
     "${SOURCE_DIR}/bench/*.h" "${SOURCE_DIR}/bench/*.cpp")
set(failures "")
foreach(f IN LISTS engine_files)
  file(STRINGS "${f}" qt_lines REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]Q")
  if(qt_lines)
    list(APPEND failures "${f}: Qt include in the Qt-free layer: ${qt_lines}")
  endif()
endforeach()
# torch headers: only engine/torch/ may include them
file(GLOB_RECURSE all_sources "${SOURCE_DIR}/engine/*.h" "${SOURCE_DIR}/engine/*.cpp"
     "${SOURCE_DIR}/app/*.h" "${SOURCE_DIR}/app/*.cpp" "${SOURCE_DIR}/ui/*.h" "${SOURCE_DIR}/ui/*.cpp"
     "${SOURCE_DIR}/bench/*.cpp" "${SOURCE_DIR}/bench/*.h")
foreach(f IN LISTS all_sources)
  if(f MATCHES "/engine/torch/")
    continue()
  endif()
  file(STRINGS "${f}" torch_lines REGEX "^[ \t]*#[ \t]*include[ \t]*<(torch|ATen|c10)/")
  if(torch_lines)
    list(APPEND failures "${f}: torch include outside engine/torch/: ${torch_lines}")
  endif()
endforeach()
if(failures)
  list(JOIN failures "\n" msg)
  message(FATAL_ERROR "Layering check failed:\n${msg}")
endif()
