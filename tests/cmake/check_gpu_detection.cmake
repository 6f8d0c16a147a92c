# The quick start's GPU detection, with a fake nvidia-smi:
# configuring on a machine whose nvidia-smi lists a GPU compiles the CUDA
# kernels for that GPU's compute capability; with no nvidia-smi (or one that
# fails, as on a box without the driver) for sm_80, sm_90, sm_100 and PTX, and the CUDA paths still
# compile. Usage: cmake -DSOURCE_DIR=<repo> -DWORK_DIR=<tmp> -P check_gpu_detection.cmake
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}/bin")
find_program(REAL_NVCC nvcc PATHS /usr/local/cuda/bin)
get_filename_component(NVCC_DIR "${REAL_NVCC}" DIRECTORY)

function(configure name smi_output expect)
  set(bin "${WORK_DIR}/${name}-bin")
  file(MAKE_DIRECTORY "${bin}")
  if(NOT smi_output STREQUAL "")
    file(WRITE "${bin}/nvidia-smi" "#!/bin/sh\nprintf '%s\\n' \"${smi_output}\"\n")
    file(CHMOD "${bin}/nvidia-smi" PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE)
  endif()
  # PATH without any real nvidia-smi: the fake one (or none), nvcc, the basics
  set(path "${bin}:${NVCC_DIR}:/usr/bin:/bin")
  execute_process(COMMAND ${CMAKE_COMMAND} -E env PATH=${path}
                          ${CMAKE_COMMAND} -S "${SOURCE_DIR}/tests/cmake/gpu_detect" -B "${WORK_DIR}/${name}"
                          -DBP_SOURCE_DIR=${SOURCE_DIR}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${name}: configure failed (${rc}):\n${out}\n${err}")
  endif()
  foreach(want IN LISTS expect)
    string(FIND "${out}" "${want}" at)
    if(at EQUAL -1)
      message(FATAL_ERROR "${name}: expected '${want}' in the configure output:\n${out}")
    endif()
  endforeach()
  message(STATUS "${name}: ok")
endfunction()

configure(a100 "NVIDIA A100-SXM4-80GB, 8.0"
  "CUDA kernels for this machine's GPU: NVIDIA A100-SXM4-80GB (sm_8.0);arch=compute_80,code=sm_80;CUDA=ON")
configure(h200 "NVIDIA H200, 9.0"
  "CUDA kernels for this machine's GPU: NVIDIA H200 (sm_9.0);arch=compute_90,code=sm_90;CUDA=ON")
configure(none "" "no GPU seen by nvidia-smi;arch=compute_80,code=sm_80;arch=compute_90,code=sm_90;arch=compute_100,code=sm_100;arch=compute_100,code=compute_100;CUDA=ON")
