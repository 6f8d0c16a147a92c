# The layering rules, checked on every build and as the `layering` test.
# Fails when
#  - a file under engine/ or bench/ includes a Qt header;
#  - a torch header is included outside engine/torch/ (the files allowed to
#    pay its ~20 s compile cost);
#  - a ui/ header is included outside ui/ and entry/: only the composition
#    root (entry/) sits above the console; engine/, bench/, app/, app/rest and
#    app/report read top-down and never up into ui/;
#  - anything includes a file of entry/ (nothing sits above the root).
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
     "${SOURCE_DIR}/entry/*.h" "${SOURCE_DIR}/entry/*.cpp" "${SOURCE_DIR}/bench/*.cpp" "${SOURCE_DIR}/bench/*.h")
foreach(f IN LISTS all_sources)
  if(f MATCHES "/engine/torch/")
    continue()
  endif()
  file(STRINGS "${f}" torch_lines REGEX "^[ \t]*#[ \t]*include[ \t]*<(torch|ATen|c10)/")
  if(torch_lines)
    list(APPEND failures "${f}: torch include outside engine/torch/: ${torch_lines}")
  endif()
endforeach()
# ui/ headers: only the composition root (and ui/ itself) may include them.
file(GLOB_RECURSE lower_layers "${SOURCE_DIR}/engine/*.h" "${SOURCE_DIR}/engine/*.cpp"
     "${SOURCE_DIR}/app/*.h" "${SOURCE_DIR}/app/*.cpp" "${SOURCE_DIR}/bench/*.h" "${SOURCE_DIR}/bench/*.cpp")
foreach(f IN LISTS lower_layers)
  file(STRINGS "${f}" ui_lines REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"](\\.\\./)*ui/")
  if(ui_lines)
    list(APPEND failures "${f}: ui/ include outside the composition root (entry/): ${ui_lines}")
  endif()
endforeach()
# entry/: the top; nothing includes it.
file(GLOB_RECURSE below_root "${SOURCE_DIR}/engine/*.h" "${SOURCE_DIR}/engine/*.cpp"
     "${SOURCE_DIR}/app/*.h" "${SOURCE_DIR}/app/*.cpp" "${SOURCE_DIR}/ui/*.h" "${SOURCE_DIR}/ui/*.cpp"
     "${SOURCE_DIR}/bench/*.h" "${SOURCE_DIR}/bench/*.cpp")
foreach(f IN LISTS below_root)
  file(STRINGS "${f}" root_lines REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"](\\.\\./)*entry/")
  if(root_lines)
    list(APPEND failures "${f}: includes the composition root (entry/), which sits above every layer: ${root_lines}")
  endif()
endforeach()
if(failures)
  list(JOIN failures "\n" msg)
  message(FATAL_ERROR "Layering check failed:\n${msg}")
endif()
