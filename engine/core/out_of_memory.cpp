#include "out_of_memory.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>

namespace bp {

bool looksLikeOutOfMemory(std::string_view what)
{
    std::string lower(what);
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return char(std::tolower(c)); });
    // Lower-case fragments; each is what one allocator says.
    static constexpr std::array<std::string_view, 6> kFragments = {
        "out of memory",             // CUDA, libtorch's caching allocators ("C10 Out of Memory")
        "could not allocate memory", // c10's SizesAndStrides
        "can't allocate memory",     // libtorch's DefaultCPUAllocator (Linux)
        "not enough memory",         // libtorch's DefaultCPUAllocator (other platforms)
        "cannot allocate memory",    // strerror(ENOMEM)
        "bad_alloc",                 // std::bad_alloc's what()
    };
    return std::any_of(kFragments.begin(), kFragments.end(),
                       [&](std::string_view f) { return lower.find(f) != std::string::npos; });
}

} // namespace bp
