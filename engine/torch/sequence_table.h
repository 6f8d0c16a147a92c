// The sequence tables of the step models (trunk_steps.h, torchscript_decoder.cpp):
// a map from the scheduler's sequence id to what the model keeps of it,
// guarded by the model's mutex.
//
// Internal to engine/torch/.
#pragma once

#include <mutex>

namespace bp {

// Takes `sequence`'s entry out of `table` under `mutex`: what it held, or an
// empty one (a null pointer) when the sequence is not there (released
// already, or never started). The caller gives back what it held outside
// the lock.
template <class Table>
typename Table::mapped_type takeSequence(std::mutex &mutex, Table &table,
                                         const typename Table::key_type &sequence)
{
    std::lock_guard lock(mutex);
    const auto it = table.find(sequence);
    if (it == table.end())
        return {};
    typename Table::mapped_type gone = std::move(it->second);
    table.erase(it);
    return gone;
}

} // namespace bp
