// Ctrl+C as a flag for the long commands (replay, tune, plan, calibrate
// --target): while a SigintFlag lives, SIGINT sets the flag instead of
// killing the process, so the command stops and keeps what it did.
#pragma once

#include <atomic>

namespace bp::app {

class SigintFlag {
public:
    SigintFlag();  // clears the flag, installs the handler
    ~SigintFlag(); // restores the handler found at construction
    SigintFlag(const SigintFlag &) = delete;
    SigintFlag &operator=(const SigintFlag &) = delete;

    // What the command polls (one process-wide flag: a signal handler can
    // reach nothing else).
    const std::atomic<bool> *flag() const;

private:
    void (*m_old)(int);
};

} // namespace bp::app
