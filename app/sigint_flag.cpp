#include "sigint_flag.h"

#include <csignal>

namespace bp::app {

namespace {

std::atomic<bool> g_interrupted{false};

extern "C" void onSigint(int)
{
    g_interrupted.store(true);
}

} // namespace

SigintFlag::SigintFlag() : m_old((g_interrupted.store(false), std::signal(SIGINT, onSigint))) {}

SigintFlag::~SigintFlag()
{
    std::signal(SIGINT, m_old);
}

const std::atomic<bool> *SigintFlag::flag() const
{
    return &g_interrupted;
}

} // namespace bp::app
