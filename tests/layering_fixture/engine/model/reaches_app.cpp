// Fixture: an engine file reaching out of engine/ by a relative path.
#include "../../app/rest/server.h"
