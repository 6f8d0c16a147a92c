#include "virtual_time.h"

#include <algorithm>

namespace bp {

bool runVirtualLoop(ArrivalPlan &plan, VirtualTime &time, VirtualDriver &driver,
                    const std::atomic<bool> *cancel)
{
    for (;;) {
        if (plan.more() && cancel && cancel->load(std::memory_order_relaxed))
            return false;
        const std::optional<ArrivalPlan::Due> arrival = plan.next();
        const std::optional<TimePoint> early = driver.earlyEvent(), late = driver.lateEvent();
        if (!arrival && !early && !late) {
            if (driver.idle())
                continue;
            return true;
        }
        TimePoint next = TimePoint::max();
        if (arrival)
            next = arrival->at;
        if (early)
            next = std::min(next, *early);
        if (late)
            next = std::min(next, *late);
        time.moveTo(next);
        if (early && *early <= time.now()) {
            driver.runEarly();
        } else if (arrival && arrival->at <= time.now()) {
            plan.take(*arrival);
            driver.arrive(arrival->index);
        }
        driver.settle();
    }
}

} // namespace bp
