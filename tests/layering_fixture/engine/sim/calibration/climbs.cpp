// Fixture: calibration reaching up into the tuner.
#include "engine/sim/tune/tuner.h"
