// Fixture: a scheduler reaching up into the executor.
#include "engine/exec/engine.h"
