#include "host_facts.h"

#include <sqlite3.h>

#include <fstream>
#include <string>
#include <thread>

#ifdef __unix__
#include <sys/utsname.h>
#include <unistd.h>
#endif

namespace bp {

namespace {
// The value after "key:" on the first line of `file` that starts with `key`.
std::string procField(const char *file, const std::string &key)
{
    std::ifstream in(file);
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind(key, 0) != 0)
            continue;
        const auto colon = line.find(':');
        if (colon == std::string::npos)
            continue;
        auto value = line.substr(colon + 1);
        const auto first = value.find_first_not_of(" \t");
        return first == std::string::npos ? std::string() : value.substr(first);
    }
    return {};
}
} // namespace

nlohmann::json hostFacts()
{
    nlohmann::json j = nlohmann::json::object();
#ifdef __unix__
    char host[256] = {};
    if (gethostname(host, sizeof host - 1) == 0)
        j["hostname"] = std::string(host);
    utsname u{};
    if (uname(&u) == 0) {
        j["os"] = std::string(u.sysname);
        j["kernel"] = std::string(u.release);
        j["arch"] = std::string(u.machine);
    }
    const long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGESIZE);
    if (pages > 0 && pageSize > 0)
        j["memory_bytes"] = std::int64_t(pages) * std::int64_t(pageSize);
#endif
    if (auto cpu = procField("/proc/cpuinfo", "model name"); !cpu.empty())
        j["cpu"] = cpu;
    if (auto cores = std::thread::hardware_concurrency(); cores > 0)
        j["logical_cores"] = cores;
    j["sqlite"] = sqlite3_libversion();
    return j;
}

} // namespace bp
