// Facts about the machine a session ran on, stored with the session so a
// result can be judged later ("this p99 was on a 2-core VM"). Qt-free.
#pragma once

#include <nlohmann/json.hpp>

namespace bp {

// {"hostname", "os", "kernel", "arch", "cpu", "logical_cores",
//  "memory_bytes", "sqlite"} — fields that cannot be read are left out.
nlohmann::json hostFacts();

} // namespace bp
