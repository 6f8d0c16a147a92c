// Fixture: the executor naming a backend directly.
#include "engine/torch/torch_models.h"
