// What `calibrate --target` prints of a remote calibration: the server's
// settings and the model simulated, the fit term by term with its error,
// the limits /metrics showed and the probe's size.
#pragma once

#include "engine/sim/calibration/calibration.h"

#include <QTextStream>

namespace bp::app {

void printRemoteFit(QTextStream &out, const Calibration &c);

} // namespace bp::app
