// Fixture: a scheduler reaching up into the executor by a relative path,
// and a bare include of its own floor (allowed).
#include "batch_helpers.h"
#include "../exec/engine.h"
