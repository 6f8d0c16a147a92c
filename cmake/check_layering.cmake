# The layering rules, checked on every build and as the `layering` test.
# Fails when
#  - a file under engine/ or bench/ includes a Qt header;
#  - a torch header is included outside engine/torch/ (the files allowed to
#    pay its ~20 s compile cost);
#  - a ui/ header is included outside ui/ and entry/: only the composition
#    root (entry/) sits above the console; engine/, bench/, app/, app/rest and
#    app/report read top-down and never up into ui/;
#  - anything includes a file of entry/ (nothing sits above the root);
#  - a file of engine/ includes a floor of engine/ above its own (the floor
#    order below, docs/architecture.md "The engine's floors"), or a folder of
#    engine/ has no floor; every quoted include is resolved, "engine/..." from
#    the root and a bare or relative one from the file's folder;
#  - a file of engine/ includes anything outside engine/.
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
# The engine's floors, lowest first: a file may include its own floor and
# the floors below it, never one above. engine/sim/ is four floors, one per
# subsystem. engine/torch/ (the libtorch backends) stands beside the stack:
# it may include the floors up to model/, and no other engine file includes
# it (callers reach a backend through model/model_registry.h).
set(engine_floors core config metrics model sched exec workload telemetry store replay
    sim/calibration sim/simulation sim/tune sim/fleet)
list(FIND engine_floors model model_floor)
# The floor of a path relative to engine/ ("sched/batcher.cpp" -> sched,
# "sim/tune/tuner.h" -> sim/tune), and its rank: -1 for torch, -2 for none.
function(engine_floor rel out_floor out_rank)
  string(REGEX MATCH "^sim/[^/]+/" sub "${rel}")
  if(sub)
    string(REGEX REPLACE "/$" "" floor "${sub}")
  else()
    string(REGEX MATCH "^[^/]+" floor "${rel}")
  endif()
  list(FIND engine_floors "${floor}" rank)
  if(rank EQUAL -1 AND NOT floor STREQUAL "torch")
    set(rank -2)
  endif()
  set(${out_floor} "${floor}" PARENT_SCOPE)
  set(${out_rank} ${rank} PARENT_SCOPE)
endfunction()
file(GLOB_RECURSE engine_sources RELATIVE "${SOURCE_DIR}/engine" "${SOURCE_DIR}/engine/*.h"
     "${SOURCE_DIR}/engine/*.cpp" "${SOURCE_DIR}/engine/*.cu" "${SOURCE_DIR}/engine/*.cuh")
foreach(rel IN LISTS engine_sources)
  engine_floor("${rel}" floor rank)
  if(rank EQUAL -2)
    list(APPEND failures "engine/${rel}: engine/${floor}/ has no floor: place it in the floor order (cmake/check_layering.cmake, docs/architecture.md)")
    continue()
  endif()
  # Every quoted include, resolved as the compiler would: "engine/..." from
  # the source root, a bare or relative one ("batcher.h", "../exec/engine.h")
  # from the including file's folder first.
  file(STRINGS "${SOURCE_DIR}/engine/${rel}" engine_includes REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
  get_filename_component(rel_dir "${SOURCE_DIR}/engine/${rel}" DIRECTORY)
  foreach(line IN LISTS engine_includes)
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\".*" "\\1" included "${line}")
    if(included MATCHES "^engine/")
      string(REGEX REPLACE "^engine/" "" target "${included}")
    elseif(included MATCHES "^(app|bench|ui|entry|tests)/")
      list(APPEND failures "engine/${rel}: includes ${included}: the engine includes nothing outside engine/")
      continue()
    else()
      get_filename_component(resolved "${included}" ABSOLUTE BASE_DIR "${rel_dir}")
      file(RELATIVE_PATH target "${SOURCE_DIR}/engine" "${resolved}")
      if(target MATCHES "^\\.\\./")
        file(RELATIVE_PATH outside "${SOURCE_DIR}" "${resolved}")
        list(APPEND failures "engine/${rel}: includes \"${included}\" (${outside}): the engine includes nothing outside engine/")
        continue()
      endif()
    endif()
    engine_floor("${target}" to_floor to_rank)
    if(to_floor STREQUAL floor)
      continue()
    endif()
    if(to_rank EQUAL -2)
      list(APPEND failures "engine/${rel}: includes engine/${target}, in a folder with no floor")
    elseif(to_floor STREQUAL "torch")
      list(APPEND failures "engine/${rel}: includes engine/${target}: only engine/torch/ includes the backends")
    elseif(floor STREQUAL "torch" AND to_rank GREATER model_floor)
      list(APPEND failures "engine/${rel}: climbs from engine/torch/ to engine/${to_floor}/: the backends include the floors up to model/ only")
    elseif(NOT floor STREQUAL "torch" AND to_rank GREATER rank)
      list(APPEND failures "engine/${rel}: climbs from floor engine/${floor}/ to engine/${to_floor}/, above it: engine/${target}")
    endif()
  endforeach()
endforeach()
if(failures)
  # Indented lines are printed as they are (CMake wraps the others).
  list(JOIN failures "\n  " msg)
  set(msg "  ${msg}")
  message(FATAL_ERROR "Layering check failed:\n${msg}")
endif()
