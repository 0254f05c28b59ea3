// Inline SVG charts for plait-report: escaping, axis ticks, line/area and bar charts.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace plait::report {

/// `text` safe inside HTML/SVG text and double- or single-quoted attribute values.
std::string htmlEscape(std::string_view text);

/// Round tick values covering [lo, hi]: steps of 1, 2 or 5 times a power of ten, about
/// `target` intervals, the first tick <= lo and the last >= hi. With `integer`, steps are
/// at least 1 (step numbers). An empty or inverted range is widened around `lo`.
std::vector<double> niceTicks(double lo, double hi, int target = 5, bool integer = false);

/// A tick label: up to 6 significant digits, no trailing zeros ("0.3", "1500", "2.5e+07").
std::string formatNumber(double value);

/// Bytes for people: "512 B", "1.5 KiB", "3.25 MiB", "1.02 GiB".
std::string formatBytes(double bytes);

/// The binary unit an axis of byte values up to `maxBytes` is labelled in, and its scale.
struct ByteUnit {
  const char *name; // "B", "KiB", "MiB", "GiB", "TiB"
  double scale;     // bytes per unit
};
ByteUnit byteUnitFor(double maxBytes);

/// A horizontal reference line (an arena size, a memory limit, a prediction).
struct RefLine {
  double y = 0;
  std::string label;
};

struct Series {
  std::string name;
  std::vector<std::pair<double, double>> points; // (x, y), x ascending
};

/// A line chart, or a stacked area chart (series stacked bottom to top in order; then every
/// series must have the same x values).
struct LineChart {
  std::string id;    // the <svg> id; every chart also has class "plait-chart"
  std::string title; // the <svg>'s accessible <title>
  std::string xLabel, yLabel;
  bool yBytes = false;   // y values are bytes: the axis is labelled in a binary unit
  bool yFromZero = true; // otherwise the y range hugs the data (a loss curve)
  bool integerX = false;
  bool stacked = false;
  std::vector<Series> series;
  std::vector<RefLine> refLines;
};
std::string renderLineChart(const LineChart &chart);

/// A bar chart: one bar per category, the series stacked in it (a series with a zero value
/// in a category draws nothing there).
struct BarChart {
  std::string id, title, xLabel, yLabel;
  bool yBytes = false;
  std::vector<std::string> categories;
  std::vector<std::string> seriesNames;
  std::vector<std::vector<double>> values; // [series][category]
  std::vector<RefLine> refLines;
};
std::string renderBarChart(const BarChart &chart);

/// The fill colour of series `i` in every chart (a colour-blind safe palette).
const char *seriesColor(size_t i);

} // namespace plait::report
