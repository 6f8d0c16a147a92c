// One arrival plan, without Qt: the arrivals a replay sends and a
// simulation runs (ReplayPlan's requests, the tuner's and the capacity
// planner's windows), and the one cursor over them that the replay driver
// (real and virtual clock) and the simulator pace: the open-loop arrivals
// at their offsets merged with the follow-up turns the conversation book
// (conversation_book.h) releases, each `think` after its previous turn ended.
//
// A live plan (the traffic pacer's, traffic_pacer.h) starts empty and owns
// the arrivals that add() appends as a schedule draws them; it forgets
// those its caller is done with (forgetBefore()), so an unlimited load
// keeps only a window.
//
// Not thread-safe: the replay driver and the pacer lock around it
// (completions arrive on engine or client threads); the simulator is
// single-threaded.
#pragma once

#include "conversation_book.h"
#include "trace_csv.h"

#include <cstddef>
#include <deque>
#include <optional>
#include <span>
#include <vector>

namespace bp {

// One arrival of a plan.
struct PlannedArrival {
    Duration offset{};   // from the start, scaled by speed; a follow-up turn's is only its recorded time
    int inputTokens = 1; // a follow-up turn: its new user text (the prompt adds the context)
    int maxNewTokens = 0;
    std::uint64_t id = 0; // 0 = position + 1
    int priority = 0;
    std::optional<Duration> timeout; // deadline = arrival + timeout
    // The trace's prefix blocks (hash ids, blockTokens each): the prompt's
    // leading ids are the blocks' (prefix_tokens.h), the same ids for the
    // same hash id in every replay, simulation and target; a fleet's router
    // keys on them (prefixKeyOf(); none: no key).
    PrefixBlocks blocks{};
    int blockTokens = 0;
    // Multi-turn: the conversation and turn, and the plan positions of the
    // previous and next turn (-1: none). A turn with a previous one is sent
    // `think` after that turn ends (closed loop), its prompt the previous
    // prompt + answer + its own new text; one whose previous turn is outside
    // the plan starts open loop at its offset.
    std::int64_t conversation = 0;
    int turn = 0;
    Duration think{};
    std::ptrdiff_t previous = -1;
    std::ptrdiff_t next = -1;
    double sourceS = 0; // its time in the source (replay progress)
    bool followUp() const { return previous >= 0; }
};

class ArrivalPlan {
public:
    // `arrivals` in offset order, outliving the cursor; offsets count from `start`.
    ArrivalPlan(std::span<const PlannedArrival> arrivals, TimePoint start, int vocabSize);
    // A live plan: no arrivals until add().
    ArrivalPlan(TimePoint start, int vocabSize);

    // Live plans: appends `a`, an open-loop arrival (offset order) or the
    // follow-up of a turn already in the plan (`a.previous`, which must not
    // have gone out yet: it becomes that turn's `next`). Returns its position.
    std::size_t add(PlannedArrival a);
    // Live plans: positions below `position` will not be named again.
    void forgetBefore(std::size_t position);

    struct Due {
        TimePoint at{};
        std::size_t index = 0;
    };
    // The next arrival: the earliest of the next open-loop one and the
    // released follow-ups (ties: the lower position); nullopt when every
    // open-loop arrival is out and no follow-up is released yet.
    std::optional<Due> next();
    // The earliest released follow-up: a virtual clock may not run past it.
    std::optional<TimePoint> releasedAt() const;
    // Open-loop arrivals left, or follow-ups released and not yet taken.
    bool more();
    // `due` (from next()) goes out now.
    void take(const Due &due);

    const PlannedArrival &operator[](std::size_t index) const
    {
        return m_live ? m_window[index - m_base] : m_arrivals[index];
    }
    // The positions so far (a live plan: forgotten ones included).
    std::size_t size() const { return m_live ? m_base + m_window.size() : m_arrivals.size(); }
    TimePoint start() const { return m_start; }
    std::uint64_t idOf(std::size_t index) const { return (*this)[index].id ? (*this)[index].id : index + 1; }

    // The prompt of arrival `index`: `own` (its new text), after the
    // context of its previous turn for a follow-up.
    std::vector<TokenId> prompt(std::size_t index, std::vector<TokenId> own);
    // It went out with `prompt` (after any clamp); kept while its follow-up waits.
    void sent(std::size_t index, const std::vector<TokenId> &prompt);
    // It ended (completed, failed or was refused) at `at` with `answer`:
    // its follow-up is released `think` later.
    void ended(std::size_t index, TimePoint at, std::vector<TokenId> answer);

private:
    void skipFollowUps();

    std::span<const PlannedArrival> m_arrivals;
    TimePoint m_start;
    int m_vocab;
    std::size_t m_open = 0; // the next open-loop position to consider
    ConversationBook m_book;
    bool m_live = false;
    std::deque<PlannedArrival> m_window; // a live plan's, from position m_base
    std::size_t m_base = 0;
};

} // namespace bp
