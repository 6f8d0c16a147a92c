// Fixture: allowed, the executor includes the scheduler below it.
#include "engine/sched/scheduler.h"
