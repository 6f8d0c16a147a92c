// Finding and loading the CUDA plugin (libbatchpilot_cuda.so,
// cuda/cuda_plugin_api.h). The binaries link only libtorch_cpu and libc10;
// the plugin, which links libtorch_cuda and the CUDA libraries, is opened
// with dlopen the first time a CUDA device is asked for (--device cuda,
// cuda:N, or auto on a machine whose NVIDIA driver is present), once per
// process.
//
// Where it is looked for, first found wins:
//   1. $BATCHPILOT_CUDA_PLUGIN: a path to the file (nothing else is tried)
//   2. <executable's folder>/../lib/batchpilot/libbatchpilot_cuda.so
//      (an installed package: /usr/bin -> /usr/lib/batchpilot)
//   3. the build tree's lib/batchpilot/ (tests and tools run from build/)
//   4. the dynamic loader's own search (LD_LIBRARY_PATH, ld.so.conf)
//
// Torch-free header.
#pragma once

#include "engine/core/result.h"

#include "cuda/cuda_plugin_api.h"

#include <string>

namespace bp {

// The plugin's table, or Unavailable with one line saying what is missing:
// "CUDA support is not installed: ..." when no plugin file exists, the
// loader's words (a missing CUDA library) when it exists but cannot load, a
// version mismatch, or the CUDA runtime's words when it loads but cannot
// start (no driver, no GPU). The answer is computed once and kept.
Result<const BpCudaPluginApi *> cudaPlugin();

// The plugin is loaded and its runtime started (cudaPlugin() succeeded).
bool cudaPluginLoaded();

// Whether an NVIDIA driver looks present (its /proc or /dev entries), the
// cheap test --device auto makes before loading the plugin.
bool nvidiaDriverPresent();

// Test hook: the next graph capture fails once it has begun (inside the
// capture), as a step that breaks capture would. Process-wide, one shot.
void failNextGraphCapture();
bool takeGraphCaptureFault();

} // namespace bp
