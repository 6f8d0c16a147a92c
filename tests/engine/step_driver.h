// Drives a StepModel the way an iteration-level scheduler does, for the
// step tests of every model: each sequence joins at a given step, feeds its
// prompt in chunks, then one decode token per step, and is released when it
// has its tokens. After every step the model's cachedTokens() must equal the
// tokens the live sequences have fed.
#pragma once

#include "engine/model/backend.h"

#include <QString>

#include <map>

namespace bp::testing {

struct Driven {
    std::uint64_t id = 0;
    std::vector<TokenId> prompt;
    int maxNew = 0;
    int chunk = 1;       // prompt tokens per step
    int joinAt = 0;      // the step it joins at
    std::size_t fed = 0; // prompt tokens fed
    std::vector<TokenId> generated;

    bool done() const { return int(generated.size()) >= maxNew; }
    std::int64_t held() const // tokens in the model's cache
    {
        return std::int64_t(fed + generated.size()) - (fed == prompt.size() && !generated.empty() ? 1 : 0);
    }
    StepItem next() const
    {
        StepItem item;
        item.sequence = id;
        if (fed < prompt.size()) {
            const std::size_t n = std::min(prompt.size() - fed, std::size_t(chunk));
            item.tokens.assign(prompt.begin() + std::ptrdiff_t(fed),
                               prompt.begin() + std::ptrdiff_t(fed + n));
            item.sample = fed + n == prompt.size();
        } else {
            item.tokens = {generated.back()};
        }
        return item;
    }
};

inline Driven driven(std::uint64_t id, std::vector<TokenId> prompt, int maxNew, int chunk, int joinAt)
{
    Driven d;
    d.id = id;
    d.prompt = std::move(prompt);
    d.maxNew = maxNew;
    d.chunk = chunk;
    d.joinAt = joinAt;
    return d;
}

// Runs `all` to completion; fills `finished` (in finishing order). Returns
// an error message, empty on success.
inline QString driveSteps(StepModel &steps, const std::vector<Driven> &all, std::vector<Driven> &finished)
{
    std::map<std::uint64_t, Driven> live;
    for (int step = 0; finished.size() < all.size(); ++step) {
        if (step > 10000)
            return QStringLiteral("no progress");
        for (const Driven &d : all)
            if (d.joinAt == step)
                live[d.id] = d;
        std::vector<StepItem> items;
        for (const auto &entry : live)
            items.push_back(entry.second.next());
        std::vector<StepOutcome> out;
        if (Status s = steps.step(items, out); !s)
            return QStringLiteral("step %1 failed: %2").arg(step).arg(QString::fromStdString(s.toString()));
        if (out.size() != items.size())
            return QStringLiteral("step %1: %2 outcomes for %3 items")
                .arg(step)
                .arg(out.size())
                .arg(items.size());
        for (std::size_t i = 0; i < items.size(); ++i) {
            if (!out[i].status)
                return QStringLiteral("step %1, sequence %2: %3")
                    .arg(step)
                    .arg(items[i].sequence)
                    .arg(QString::fromStdString(out[i].status.toString()));
            Driven &d = live[items[i].sequence];
            if (d.fed < d.prompt.size())
                d.fed += items[i].tokens.size();
            if (items[i].sample)
                d.generated.push_back(out[i].next);
        }
        std::int64_t held = 0;
        for (auto it = live.begin(); it != live.end();) {
            if (it->second.done()) {
                steps.release(it->first);
                finished.push_back(it->second);
                it = live.erase(it);
            } else {
                held += it->second.held();
                ++it;
            }
        }
        if (steps.cachedTokens() != held)
            return QStringLiteral("step %1: cachedTokens %2, live sequences hold %3")
                .arg(step)
                .arg(steps.cachedTokens())
                .arg(held);
    }
    if (steps.cachedTokens() != 0)
        return QStringLiteral("%1 tokens cached after every sequence left").arg(steps.cachedTokens());
    return {};
}

} // namespace bp::testing
