#include "cuda_plugin.h"

#include <torch/headeronly/version.h>

#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace bp {

namespace {

constexpr const char *kPluginFile = "libbatchpilot_cuda.so";
constexpr const char *kInstallHint =
    "install the batchpilot-cuda package, or set BATCHPILOT_CUDA_PLUGIN to the "
    "path of libbatchpilot_cuda.so";

std::string executableDir()
{
    std::error_code ec;
    const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    return ec ? std::string() : exe.parent_path().string();
}

std::string dlerrorText()
{
    const char *e = dlerror();
    return e ? e : "unknown dlopen error";
}

Result<const BpCudaPluginApi *> openPlugin(const std::string &path)
{
    // RTLD_LOCAL: nothing of the plugin's own symbols is for anyone but us;
    // its NEEDED libtorch_cuda registers torch's CUDA backend as it loads.
    void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle)
        return Status(StatusCode::Unavailable,
                      "CUDA support cannot be loaded: " + dlerrorText() +
                          " (the NVIDIA CUDA 13 libraries libtorch_cuda needs must be installed: "
                          "docs/packaging.md)");
    auto entry = reinterpret_cast<BpCudaPluginEntry>(dlsym(handle, "batchpilot_cuda_plugin"));
    if (!entry)
        return Status(StatusCode::Unavailable, "CUDA support cannot be loaded: " + path +
                                                   " is not a BatchPilot CUDA plugin (" + dlerrorText() +
                                                   ")");
    const BpCudaPluginApi *api = entry(BATCHPILOT_CUDA_PLUGIN_ABI);
    if (!api || api->abi != BATCHPILOT_CUDA_PLUGIN_ABI || api->size != sizeof(BpCudaPluginApi))
        return Status(StatusCode::Unavailable, "CUDA support cannot be loaded: " + path +
                                                   " is a plugin of another BatchPilot version (interface " +
                                                   std::to_string(BATCHPILOT_CUDA_PLUGIN_ABI) + " wanted)");
    if (std::string(api->torchVersion) != TORCH_VERSION)
        return Status(StatusCode::Unavailable, "CUDA support cannot be loaded: " + path +
                                                   " was built for libtorch " + api->torchVersion +
                                                   ", this program for " + TORCH_VERSION);
    char err[512] = {};
    if (api->deviceCount(err, sizeof err) < 0)
        return Status(StatusCode::Unavailable, std::string("CUDA is not usable: ") + err);
    return api;
}

Result<const BpCudaPluginApi *> loadPlugin()
{
    if (const char *env = std::getenv("BATCHPILOT_CUDA_PLUGIN"); env && *env) {
        if (!std::filesystem::exists(env))
            return Status(StatusCode::Unavailable,
                          std::string("CUDA support is not installed: BATCHPILOT_CUDA_PLUGIN "
                                      "names ") +
                              env + ", which does not exist");
        return openPlugin(env);
    }
    std::vector<std::string> tried;
    std::vector<std::string> candidates;
    if (const std::string dir = executableDir(); !dir.empty())
        candidates.push_back(dir + "/../lib/batchpilot/" + kPluginFile);
#ifdef BATCHPILOT_CUDA_PLUGIN_BUILD_DIR
    {
        // appended, not `std::string(...) + "/" + ...`: GCC 12 reports a false
        // -Warray-bounds on that temporary's inlined copy
        std::string built = BATCHPILOT_CUDA_PLUGIN_BUILD_DIR;
        built += '/';
        built += kPluginFile;
        candidates.push_back(std::move(built));
    }
#endif
    for (const std::string &path : candidates) {
        std::error_code ec;
        if (std::filesystem::exists(path, ec))
            return openPlugin(std::filesystem::weakly_canonical(path, ec).string());
        tried.push_back(path);
    }
    // The loader's own search: only a file it cannot find counts as "not
    // installed"; anything else (a missing dependency) is its words.
    if (dlopen(kPluginFile, RTLD_NOW | RTLD_LOCAL))
        return openPlugin(kPluginFile);
    const std::string why = dlerrorText();
    const std::string_view notFound = ": cannot open shared object file";
    const auto at = why.find(kPluginFile);
    if (at == std::string::npos || why.compare(at + std::strlen(kPluginFile), notFound.size(), notFound) != 0)
        return Status(StatusCode::Unavailable, "CUDA support cannot be loaded: " + why);
    std::string where;
    for (const std::string &t : tried)
        where += t + ", ";
    return Status(StatusCode::Unavailable, "CUDA support is not installed: " + std::string(kInstallHint) +
                                               " (" + kPluginFile + " is not in " + where +
                                               "nor on the loader's path)");
}

std::once_flag g_once;
Result<const BpCudaPluginApi *> *g_result = nullptr; // set once, never freed (process lifetime)
std::atomic<bool> g_failCapture{false};

} // namespace

Result<const BpCudaPluginApi *> cudaPlugin()
{
    std::call_once(g_once, [] { g_result = new Result<const BpCudaPluginApi *>(loadPlugin()); });
    return *g_result;
}

bool cudaPluginLoaded()
{
    return bool(cudaPlugin());
}

bool nvidiaDriverPresent()
{
    std::error_code ec;
    return std::filesystem::exists("/proc/driver/nvidia/version", ec) ||
           std::filesystem::exists("/dev/nvidiactl", ec);
}

void failNextGraphCapture()
{
    g_failCapture = true;
}

bool takeGraphCaptureFault()
{
    return g_failCapture.exchange(false);
}

} // namespace bp
