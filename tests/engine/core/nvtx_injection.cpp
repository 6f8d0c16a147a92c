// A minimal NVTX injection library, the way Nsight Systems attaches: NVTX v3
// loads the library named by NVTX_INJECTION64_PATH at the first NVTX call and
// calls its InitializeInjectionNvtx2(), which fills in the domain functions
// the tool wants to see. This one records every domain, category name, range
// push and pop, so test_nvtx can check what a replay marks — on a machine
// with no GPU and no profiler.
#include <nvtx3/nvToolsExt.h>

#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace {

struct DomainRecord {
    std::string name;
    std::map<std::uint32_t, std::string> categories;
};

struct Event {
    bool push;
    std::string domain;
    std::uint32_t category;
    std::string message;
};

std::mutex g_mutex;
std::vector<DomainRecord *> g_domains; // never freed: handles outlive the test
std::vector<Event> g_events;

DomainRecord *recordOf(nvtxDomainHandle_t h)
{
    return reinterpret_cast<DomainRecord *>(h);
}

nvtxDomainHandle_t NVTX_API domainCreateA(const char *name)
{
    std::lock_guard lock(g_mutex);
    g_domains.push_back(new DomainRecord{name ? name : "", {}});
    return reinterpret_cast<nvtxDomainHandle_t>(g_domains.back());
}

void NVTX_API domainNameCategoryA(nvtxDomainHandle_t d, std::uint32_t category, const char *name)
{
    std::lock_guard lock(g_mutex);
    if (d)
        recordOf(d)->categories[category] = name ? name : "";
}

int NVTX_API domainRangePushEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
    std::lock_guard lock(g_mutex);
    Event e{true, d ? recordOf(d)->name : "", a ? a->category : 0, ""};
    if (a && a->messageType == NVTX_MESSAGE_TYPE_ASCII && a->message.ascii)
        e.message = a->message.ascii;
    g_events.push_back(std::move(e));
    return 0;
}

int NVTX_API domainRangePop(nvtxDomainHandle_t d)
{
    std::lock_guard lock(g_mutex);
    g_events.push_back({false, d ? recordOf(d)->name : "", 0, ""});
    return 0;
}

template <class F> void install(NvtxFunctionTable table, unsigned size, unsigned id, F fn)
{
    if (id < size + 1 && table[id])
        *table[id] = reinterpret_cast<NvtxFunctionPointer>(fn);
}

} // namespace

extern "C" {

__attribute__((visibility("default"))) int NVTX_API
InitializeInjectionNvtx2(NvtxGetExportTableFunc_t getExportTable)
{
    const auto *callbacks =
        static_cast<const NvtxExportTableCallbacks *>(getExportTable(NVTX_ETID_CALLBACKS));
    if (!callbacks || !callbacks->GetModuleFunctionTable)
        return 0;
    NvtxFunctionTable table = nullptr;
    unsigned size = 0;
    if (!callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &table, &size) || !table)
        return 0;
    install(table, size, NVTX_CBID_CORE2_DomainCreateA, &domainCreateA);
    install(table, size, NVTX_CBID_CORE2_DomainNameCategoryA, &domainNameCategoryA);
    install(table, size, NVTX_CBID_CORE2_DomainRangePushEx, &domainRangePushEx);
    install(table, size, NVTX_CBID_CORE2_DomainRangePop, &domainRangePop);
    return 1;
}

// For the test: every recorded event, in order. `category` is the category's
// registered name ("" when unnamed); pops carry no category or message.
__attribute__((visibility("default"))) void bpNvtxEvents(void (*visit)(int push, const char *domain,
                                                                       const char *category,
                                                                       const char *message, void *ctx),
                                                         void *ctx)
{
    std::lock_guard lock(g_mutex);
    for (const Event &e : g_events) {
        std::string category;
        for (const DomainRecord *d : g_domains)
            if (d->name == e.domain && d->categories.count(e.category))
                category = d->categories.at(e.category);
        visit(e.push ? 1 : 0, e.domain.c_str(), category.c_str(), e.message.c_str(), ctx);
    }
}

__attribute__((visibility("default"))) void bpNvtxReset()
{
    std::lock_guard lock(g_mutex);
    g_events.clear();
}
}
