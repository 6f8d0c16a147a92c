// Fixture: allowed, the executor includes the scheduler below it, and a
// header of its own folder by its bare name.
#include "engine/sched/scheduler.h"
#include "engine_parts.h"
