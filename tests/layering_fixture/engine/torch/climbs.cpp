// Fixture: a backend reaching up into the schedulers.
#include "engine/sched/scheduler.h"
