# The CUDA split (engine/torch/cuda_plugin.h): the binaries link only
# libtorch_cpu and libc10, never a CUDA library, and a CUDA request fails with
# one clear line and the tool's exit code, not a crash, whatever is missing.
# Usage: cmake -DREADELF=... -DBINARIES="a;b" -DBENCH=<batchpilot-bench>
#              -DCONSOLE=<batchpilot or empty> -DPLUGIN=<built plugin or empty> -P check_cuda_split.cmake
set(failures)
cmake_policy(SET CMP0057 NEW) # IN_LIST

# 1. No CUDA library among any binary's NEEDED entries; libtorch_cpu there
#    (so that a readelf that printed nothing does not pass).
foreach(bin IN LISTS BINARIES)
  execute_process(COMMAND ${READELF} -d ${bin} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    list(APPEND failures "readelf -d ${bin} failed: ${err}")
    continue()
  endif()
  string(REGEX MATCHALL "\\(NEEDED\\)[^\n]*\\[[^]]+\\]" needed "${out}")
  set(names)
  foreach(line IN LISTS needed)
    string(REGEX REPLACE ".*\\[([^]]+)\\]" "\\1" name "${line}")
    list(APPEND names ${name})
    if(name MATCHES "^lib(torch_cuda|c10_cuda|cudart|torch_nvshmem|cublas|cublasLt|cudnn|nccl|cusparse|cufft|curand|cupti|nvrtc|caffe2_nvrtc)[.-]"
       OR name STREQUAL "libtorch.so")
      list(APPEND failures "${bin}: NEEDED ${name} (a CUDA library: only the plugin may link it)")
    endif()
  endforeach()
  if(NOT "libtorch_cpu.so" IN_LIST names OR NOT "libc10.so" IN_LIST names)
    list(APPEND failures "${bin}: libtorch_cpu.so and libc10.so expected among NEEDED, got: ${names}")
  endif()
  message(STATUS "${bin}: NEEDED torch/CUDA entries: libtorch_cpu.so libc10.so only")
endforeach()

# run(NAME EXPECT_RC_NONZERO ENV... COMMAND ...) -> ${NAME}_rc, ${NAME}_out
function(run name)
  cmake_parse_arguments(R "" "" "ENV;COMMAND" ${ARGN})
  execute_process(COMMAND ${CMAKE_COMMAND} -E env ${R_ENV} ${R_COMMAND} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE err TIMEOUT 60)
  set(${name}_rc "${rc}" PARENT_SCOPE)
  set(${name}_out "${out}${err}" PARENT_SCOPE)
endfunction()

# expect_clean_failure(NAME CODE REGEX): exit code CODE (the tool's code for
# a failure: 1 for batchpilot-bench, 2 for batchpilot's start-up; not a
# signal, not 0), and the error line matches REGEX.
function(expect_clean_failure name code regex)
  if(NOT "${${name}_rc}" STREQUAL "${code}")
    list(APPEND failures "${name}: exit code ${${name}_rc}, expected ${code} (a clean failure):\n${${name}_out}")
  elseif(NOT "${${name}_out}" MATCHES "${regex}")
    list(APPEND failures "${name}: expected '${regex}' in:\n${${name}_out}")
  else()
    message(STATUS "${name}: exit ${code}, ${CMAKE_MATCH_0}")
  endif()
  set(failures "${failures}" PARENT_SCOPE)
endfunction()

# 2. No plugin: the one line says CUDA support is not installed. Both the
#    benchmark tool and the headless console.
run(bench_no_plugin ENV BATCHPILOT_CUDA_PLUGIN=${CMAKE_CURRENT_LIST_DIR}/no-such-plugin.so
    COMMAND ${BENCH} bandwidth --device cuda)
expect_clean_failure(bench_no_plugin 1 "CUDA support is not installed[^\n]*no-such-plugin.so")
if(CONSOLE)
  run(console_no_plugin ENV BATCHPILOT_CUDA_PLUGIN=${CMAKE_CURRENT_LIST_DIR}/no-such-plugin.so
                            QT_QPA_PLATFORM=offscreen
      COMMAND ${CONSOLE} --headless --device cuda --port 0)
  expect_clean_failure(console_no_plugin 2 "CUDA support is not installed")
endif()
# --device auto without a plugin stays on the CPU (a CPU run is unaffected).
run(bench_auto ENV BATCHPILOT_CUDA_PLUGIN=${CMAKE_CURRENT_LIST_DIR}/no-such-plugin.so
    COMMAND ${BENCH} bandwidth --device auto --mib 16 --repeats 1)
if(NOT bench_auto_rc EQUAL 0 OR NOT bench_auto_out MATCHES "cpu")
  list(APPEND failures "bench_auto: --device auto without the plugin should run on the CPU:\n${bench_auto_out}")
endif()

# 3. The build tree's plugin is found and loaded. Without a GPU (here) it
#    reports what the CUDA runtime says (the driver), not "not installed";
#    with one, the copy runs.
if(PLUGIN)
  if(NOT EXISTS "${PLUGIN}")
    list(APPEND failures "the plugin ${PLUGIN} was not built")
  endif()
  run(bench_plugin ENV BATCHPILOT_CUDA_PLUGIN= COMMAND ${BENCH} bandwidth --device cuda --mib 16 --repeats 1)
  if(bench_plugin_rc EQUAL 0)
    message(STATUS "bench_plugin: a GPU is present; the copy ran on it")
  else()
    expect_clean_failure(bench_plugin 1 "CUDA is not usable: [^\n]*(driver|libcudart|no GPU)|CUDA support cannot be loaded: [^\n]*lib[a-zA-Z0-9_]+\\.so")
    if(bench_plugin_out MATCHES "not installed")
      list(APPEND failures "bench_plugin: the build tree's plugin was not found:\n${bench_plugin_out}")
    endif()
  endif()
endif()

if(failures)
  string(JOIN "\n" text ${failures})
  message(FATAL_ERROR "${text}")
endif()
