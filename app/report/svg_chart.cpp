#include "svg_chart.h"

#include "axis_scale.h"

#include <algorithm>
#include <cmath>

namespace bp::report {

namespace {

constexpr int kLeft = 64;
constexpr int kRight = 18;
constexpr int kPlotTop = 40;
constexpr int kLegendGap = 52;  // plot bottom -> series legend baseline
constexpr int kMarkerLine = 15; // height of one marker summary line
constexpr double kCharWidth = 0.58; // average glyph width / font size (DejaVu Sans)
const QString kFont = QStringLiteral("DejaVu Sans, Verdana, Arial, sans-serif");

QString esc(const QString &s) { return s.toHtmlEscaped(); }
QString num(double v) { return QString::number(v, 'f', 1); }

int textWidth(const QString &s, int fontSize) { return int(std::ceil(double(s.size()) * fontSize * kCharWidth)); }

QString elide(const QString &s, int maxWidth, int fontSize)
{
    const int maxChars = std::max(4, int(maxWidth / (fontSize * kCharWidth)));
    return s.size() <= maxChars ? s : s.left(maxChars - 1) + QChar(0x2026);
}

QString text(double x, double y, const QString &s, int size, const QString &anchor = QStringLiteral("start"),
             const QString &extra = {})
{
    return QStringLiteral("<text x=\"%1\" y=\"%2\" font-family=\"%3\" font-size=\"%4\" fill=\"#222\" "
                          "text-anchor=\"%5\"%6>%7</text>\n")
        .arg(num(x), num(y), kFont)
        .arg(size)
        .arg(anchor, extra, esc(s));
}

int markerLines(const LineChart &c)
{
    const int n = int(c.markers.size());
    return n <= c.maxMarkerLines ? n : c.maxMarkerLines + 1; // + "and N more"
}

// Data range of every series (finite values only); nullopt when none.
std::optional<std::pair<double, double>> yRange(const LineChart &c)
{
    std::optional<std::pair<double, double>> r;
    for (const ChartSeries &s : c.series)
        for (double v : s.y)
            if (std::isfinite(v))
                r = r ? std::pair{std::min(r->first, v), std::max(r->second, v)} : std::pair{v, v};
    return r;
}

} // namespace

int chartHeight(const LineChart &c)
{
    return kPlotTop + c.plotHeight + kLegendGap + 10 + markerLines(c) * kMarkerLine;
}

QString renderSvgChart(const LineChart &c, const SvgOptions &options)
{
    const int height = chartHeight(c);
    const double left = kLeft, right = c.width - kRight, top = kPlotTop, bottom = kPlotTop + c.plotHeight;
    QString svg = QStringLiteral("<svg %1width=\"%2\" height=\"%3\" viewBox=\"0 0 %2 %3\" role=\"img\">\n")
                      .arg(options.xmlNamespace ? QStringLiteral("xmlns=\"http://www.w3.org/2000/svg\" ") : QString())
                      .arg(c.width)
                      .arg(height);
    svg += QStringLiteral("<rect x=\"0\" y=\"0\" width=\"%1\" height=\"%2\" fill=\"#ffffff\"/>\n").arg(c.width).arg(height);
    svg += text(left, 18, c.title, 14, QStringLiteral("start"), QStringLiteral(" font-weight=\"bold\""));

    const auto range = yRange(c);
    if (c.x.empty() || !range) {
        svg += QStringLiteral("<rect x=\"%1\" y=\"%2\" width=\"%3\" height=\"%4\" fill=\"#fafafa\" stroke=\"#bbb\"/>\n")
                   .arg(num(left), num(top), num(right - left), num(bottom - top));
        svg += text((left + right) / 2, (top + bottom) / 2, c.emptyText, 12, QStringLiteral("middle"));
        return svg + QStringLiteral("</svg>\n");
    }

    // Axes: x from the session start (or the first point, if earlier) to the
    // last point or marker; y from zero for non-negative data.
    double xMin = std::min(0.0, c.x.front()), xMax = c.x.back();
    for (const ChartMarker &m : c.markers)
        xMax = std::max(xMax, m.x);
    const AxisScale xs = AxisScale::nice(xMin, xMax, 8);
    const AxisScale ys = AxisScale::nice(std::min(0.0, range->first), c.yMax ? *c.yMax : range->second, 5);
    auto px = [&](double v) { return xs.map(v, left, right); };
    auto py = [&](double v) { return ys.map(std::clamp(v, ys.lo, ys.hi), bottom, top); };

    for (double t : ys.ticks()) {
        svg += QStringLiteral("<line x1=\"%1\" y1=\"%2\" x2=\"%3\" y2=\"%2\" stroke=\"#e4e4e4\" stroke-width=\"1\"/>\n")
                   .arg(num(left), num(py(t)), num(right));
        svg += text(left - 6, py(t) + 4, QString::number(t, 'f', ys.decimals()), 11, QStringLiteral("end"));
    }
    for (double t : xs.ticks()) {
        svg += QStringLiteral("<line x1=\"%1\" y1=\"%2\" x2=\"%1\" y2=\"%3\" stroke=\"#888\" stroke-width=\"1\"/>\n")
                   .arg(num(px(t)), num(bottom), num(bottom + 4));
        svg += text(px(t), bottom + 16, QString::number(t, 'f', xs.decimals()), 11, QStringLiteral("middle"));
    }
    svg += QStringLiteral("<path d=\"M %1 %2 L %1 %3 L %4 %3\" fill=\"none\" stroke=\"#666\" stroke-width=\"1\"/>\n")
               .arg(num(left), num(top), num(bottom), num(right));
    svg += text((left + right) / 2, bottom + 32, c.xLabel, 11, QStringLiteral("middle"));
    svg += text(14, (top + bottom) / 2, c.yLabel, 11, QStringLiteral("middle"),
                QStringLiteral(" transform=\"rotate(-90 14 %1)\"").arg(num((top + bottom) / 2)));

    // Config markers under the data, labels above the plot where they fit.
    double lastLabelEnd = -1e9;
    for (const ChartMarker &m : c.markers) {
        const double x = px(m.x);
        svg += QStringLiteral("<line x1=\"%1\" y1=\"%2\" x2=\"%1\" y2=\"%3\" stroke=\"#7a4fa0\" stroke-width=\"1.2\" "
                              "stroke-dasharray=\"4 3\"><title>%4</title></line>\n")
                   .arg(num(x), num(top - 2), num(bottom), esc(m.label + " " + m.summary));
        const int w = textWidth(m.label, 10);
        if (x - w / 2.0 > lastLabelEnd + 3) {
            svg += text(x, top - 6, m.label, 10, QStringLiteral("middle"));
            lastLabelEnd = x + w / 2.0;
        }
    }

    for (const ChartSeries &s : c.series) {
        QString d;
        std::vector<std::pair<double, double>> lone; // one-point segments get a dot
        int run = 0;
        for (std::size_t i = 0; i < c.x.size() && i < s.y.size(); ++i) {
            if (!std::isfinite(s.y[i])) {
                if (run == 1)
                    lone.emplace_back(c.x[i - 1], s.y[i - 1]);
                run = 0;
                continue;
            }
            d += QStringLiteral("%1%2 %3 ").arg(run ? QStringLiteral("L") : QStringLiteral("M"), num(px(c.x[i])), num(py(s.y[i])));
            ++run;
        }
        if (run == 1)
            lone.emplace_back(c.x[std::min(c.x.size(), s.y.size()) - 1], s.y[std::min(c.x.size(), s.y.size()) - 1]);
        if (!d.isEmpty())
            svg += QStringLiteral("<path d=\"%1\" fill=\"none\" stroke=\"%2\" stroke-width=\"1.8\" "
                                  "stroke-linejoin=\"round\"%3/>\n")
                       .arg(d.trimmed(), s.color,
                            s.dashed ? QStringLiteral(" stroke-dasharray=\"6 3\"") : QString());
        for (const auto &[x, y] : lone)
            svg += QStringLiteral("<circle cx=\"%1\" cy=\"%2\" r=\"2.5\" fill=\"%3\"/>\n").arg(num(px(x)), num(py(y)), s.color);
    }

    // Legend: the series, then the markers' summaries.
    double lx = left;
    const double ly = bottom + kLegendGap - 4;
    for (const ChartSeries &s : c.series) {
        svg += QStringLiteral("<line x1=\"%1\" y1=\"%2\" x2=\"%3\" y2=\"%2\" stroke=\"%4\" stroke-width=\"2.5\"%5/>\n")
                   .arg(num(lx), num(ly - 4), num(lx + 18), s.color,
                        s.dashed ? QStringLiteral(" stroke-dasharray=\"6 3\"") : QString());
        svg += text(lx + 23, ly, s.name, 11);
        lx += 23 + textWidth(s.name, 11) + 18;
    }
    const int shown = std::min<int>(int(c.markers.size()), c.maxMarkerLines);
    for (int i = 0; i < shown; ++i) {
        const ChartMarker &m = c.markers[std::size_t(i)];
        svg += text(left, ly + kMarkerLine * (i + 1), elide(m.label + "  " + m.summary, int(right - left), 10), 10);
    }
    if (int(c.markers.size()) > shown)
        svg += text(left, ly + kMarkerLine * (shown + 1),
                    QStringLiteral("… and %1 more config changes (see the config timeline)").arg(c.markers.size() - shown),
                    10);
    return svg + QStringLiteral("</svg>\n");
}

} // namespace bp::report
