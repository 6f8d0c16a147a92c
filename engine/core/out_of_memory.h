// One answer to "is this failure an out-of-memory error?", for every
// backend and for the engine's memory guard. Before there were two matchers
// that disagreed: the engine's (case-sensitive) missed c10's "C10 Out of
// Memory" and "DefaultCPUAllocator: not enough memory"; torch's missed
// "std::bad_alloc" and the C library's "Cannot allocate memory". A ResourceExhausted status makes the memory
// guard split the batch and lower memory_batch_limit; anything else fails the batch as Internal.
//
// Qt-free and torch-free (plain strings), so engine/ and engine/torch/ share it.
#pragma once

#include <string_view>

namespace bp {

// True when `what` (an exception's message) says that an allocation failed:
// host or device memory, any of the spellings libtorch, CUDA, the C++
// runtime and the C library use. Case-insensitive.
bool looksLikeOutOfMemory(std::string_view what);

} // namespace bp
