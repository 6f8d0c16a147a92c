#include "nvtx.h"

#ifndef BATCHPILOT_HAVE_NVTX

namespace bp::nvtx {
namespace detail {
const bool g_enabled = false;
void push(Category, const char *) noexcept {}
void pop() noexcept {}
} // namespace detail
bool compiledIn() noexcept
{
    return false;
}
} // namespace bp::nvtx

#else
#include <nvtx3/nvToolsExt.h>

#include <cstdlib>

namespace bp::nvtx {
namespace {

bool injectionRequested()
{
    const char *path = std::getenv("NVTX_INJECTION64_PATH");
    return path && *path;
}

struct Domain {
    nvtxDomainHandle_t handle;
    Domain() : handle(nvtxDomainCreateA("BatchPilot"))
    {
        nvtxDomainNameCategoryA(handle, std::uint32_t(Category::Engine), "engine");
        nvtxDomainNameCategoryA(handle, std::uint32_t(Category::Backend), "backend");
        nvtxDomainNameCategoryA(handle, std::uint32_t(Category::Rest), "rest");
    }
};

nvtxDomainHandle_t domain()
{
    static const Domain d; // created on first use, after the injection (if any) loaded
    return d.handle;
}

std::uint32_t colorOf(Category c)
{
    switch (c) {
    case Category::Engine: return 0xFF2E7D32;  // green
    case Category::Backend: return 0xFF1565C0; // blue
    case Category::Rest: return 0xFFEF6C00;    // orange
    }
    return 0xFF757575;
}

} // namespace

namespace detail {

const bool g_enabled = injectionRequested();

void push(Category category, const char *message) noexcept
{
    nvtxEventAttributes_t a{};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.category = std::uint32_t(category);
    a.colorType = NVTX_COLOR_ARGB;
    a.color = colorOf(category);
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = message;
    nvtxDomainRangePushEx(domain(), &a);
}

void pop() noexcept
{
    nvtxDomainRangePop(domain());
}

} // namespace detail

bool compiledIn() noexcept
{
    return true;
}
} // namespace bp::nvtx
#endif
