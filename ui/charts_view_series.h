// The series of the console's charts, by chart: the indices ChartsView's
// construction (charts_view.cpp) and its redraws (charts_view_draw.cpp)
// share. Private to those two files.
#pragma once

#include "chart_history.h"

namespace bp::ui::charts {

// PredictedP99 / PredictedTtft / PredictedTpot: the Advisor's prediction,
// next to the measured p99s, hidden until a candidate is applied live.
enum LatencySeries { TotalP50, TotalP90, TotalP99, QueueP50, QueueP99, PredictedP99 };
enum ThroughputSeries { Requests, InputTokens, OutputTokens, Goodput };
enum TokenSeries { TtftP50, TtftP99, TpotP50, TpotP99, TtftSlo, TpotSlo, PredictedTtft, PredictedTpot };
enum SequenceSeries { Running, Waiting, Kv, PrefixHits };
enum UtilSeries { Busy, Cpu, Gpu, MemBw, MemUsed };
enum PaddingSeries { Padding, MeanBatch };

using Field = double ChartSample::*;

} // namespace bp::ui::charts
