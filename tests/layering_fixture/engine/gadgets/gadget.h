// Fixture: a folder with no floor.
#include "engine/core/status.h"
