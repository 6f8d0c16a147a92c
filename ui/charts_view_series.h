// The series of the console's charts, by chart: the indices ChartsView's
// construction (charts_view_build.cpp) and its redraws (charts_view_draw.cpp)
// share. Private to those files.
#pragma once

#include "chart_history.h"

#include <QList>
#include <QPointF>

#include <cmath>

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

// The history's samples from `first` on as the points of one field, x in
// seconds before `now` (a NaN sample: no point).
struct WindowPoints {
    const ChartHistory &history;
    std::size_t first = 0;
    double now = 0;
    QList<QPointF> operator()(Field field) const
    {
        QList<QPointF> out;
        out.reserve(qsizetype(history.size() - first));
        for (std::size_t i = first; i < history.size(); ++i) {
            const ChartSample &s = history.at(i);
            const double v = s.*field;
            if (!std::isnan(v))
                out.append(QPointF(s.t - now, v));
        }
        return out;
    }
};

} // namespace bp::ui::charts
