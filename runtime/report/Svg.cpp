// Inline SVG charts for plait-report: escaping, axis ticks, line/area and bar charts.
#include "runtime/report/Svg.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace plait::report {

std::string htmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    case '\'':
      out += "&#39;";
      break;
    default:
      out += c;
    }
  }
  return out;
}

std::vector<double> niceTicks(double lo, double hi, int target, bool integer) {
  if (!std::isfinite(lo) || !std::isfinite(hi))
    return {0, 1};
  if (hi < lo)
    std::swap(lo, hi);
  if (hi == lo) { // one value: a range around it
    if (lo == 0) {
      hi = 1;
    } else {
      double pad = std::abs(lo) * 0.5;
      lo -= pad;
      hi += pad;
    }
  }
  // step = k * 10^e. Ticks are computed as (i * k) * 10^e, or (i * k) / 10^-e for e < 0, so
  // that 0.1 * 3 comes out as the double nearest 0.3, like the label says.
  double rough = (hi - lo) / std::max(target, 1);
  int e = (int)std::floor(std::log10(rough));
  double residual = rough / std::pow(10.0, e);
  double k = residual <= 1 + 1e-9 ? 1 : residual <= 2 + 1e-9 ? 2 : residual <= 5 + 1e-9 ? 5 : 10;
  if (integer && e < 0) {
    e = 0;
    k = 1;
  }
  auto tick = [&](double i) {
    return e >= 0 ? i * k * std::pow(10.0, e) : i * k / std::pow(10.0, -e);
  };
  double step = tick(1);
  double first = std::floor(lo / step + 1e-9);
  double last = std::ceil(hi / step - 1e-9);
  std::vector<double> ticks;
  for (double i = first; i <= last; ++i)
    ticks.push_back(i == 0 ? 0.0 : tick(i)); // no "-0"
  return ticks;
}

std::string formatNumber(double value) {
  if (value == 0)
    return "0";
  return fmt::format("{:.6g}", value);
}

ByteUnit byteUnitFor(double maxBytes) {
  static const ByteUnit units[] = {
      {"TiB", 1099511627776.0}, {"GiB", 1073741824.0}, {"MiB", 1048576.0}, {"KiB", 1024.0}};
  for (const ByteUnit &u : units)
    if (maxBytes >= u.scale)
      return u;
  return {"B", 1};
}

std::string formatBytes(double bytes) {
  ByteUnit unit = byteUnitFor(std::abs(bytes));
  if (unit.scale == 1)
    return fmt::format("{} B", (long long)std::llround(bytes));
  double v = bytes / unit.scale;
  return fmt::format("{} {}", formatNumber(std::round(v * 100) / 100), unit.name);
}

const char *seriesColor(size_t i) {
  // Okabe-Ito, without black.
  static const char *palette[] = {"#0072B2", "#E69F00", "#009E73", "#CC79A7",
                                  "#56B4E9", "#D55E00", "#F0E442", "#999999"};
  return palette[i % (sizeof(palette) / sizeof(palette[0]))];
}

namespace {

constexpr double kWidth = 760, kHeight = 300;
constexpr double kLeft = 74, kRight = 24, kBottom = 48;
constexpr double kCharWidth = 6.6;     // of the 12px sans-serif labels, roughly
constexpr double kTickCharWidth = 6.0; // of the 11px tick labels

std::string num(double v) { return fmt::format("{:.1f}", v); }

/// The legend's rows across the top margin; returns the SVG and sets the plot's top edge.
std::string legend(const std::vector<std::string> &names, double &top) {
  std::string out;
  double x = kLeft, y = 16;
  for (size_t i = 0; i < names.size(); ++i) {
    double w = 14 + 6 + kCharWidth * names[i].size() + 16;
    if (x + w > kWidth - kRight && x > kLeft) {
      x = kLeft;
      y += 18;
    }
    out +=
        fmt::format("<rect class=\"swatch\" x=\"{}\" y=\"{}\" width=\"14\" height=\"10\" "
                    "fill=\"{}\"/><text x=\"{}\" y=\"{}\">{}</text>",
                    num(x), num(y - 9), seriesColor(i), num(x + 20), num(y), htmlEscape(names[i]));
    x += w;
  }
  top = names.empty() ? 20 : y + 16;
  return out;
}

/// A y axis over [0 or the data's low end, maxY] in round ticks: the scale, and its SVG
/// (grid lines, tick labels, the axis label).
struct YAxis {
  double lo = 0, hi = 1, scale = 1, top = 0, bottom = 0;
  double at(double y) const { return bottom - (y / scale - lo) / (hi - lo) * (bottom - top); }
  std::string svg;
};

YAxis yAxis(double minY, double maxY, bool bytes, const std::string &label, double top) {
  YAxis axis;
  axis.top = top;
  axis.bottom = kHeight - kBottom;
  std::string unitLabel = label;
  if (bytes) {
    ByteUnit unit = byteUnitFor(std::max(std::abs(minY), std::abs(maxY)));
    axis.scale = unit.scale;
    unitLabel += fmt::format(" ({})", unit.name);
  }
  std::vector<double> ticks = niceTicks(minY / axis.scale, maxY / axis.scale, 5);
  axis.lo = ticks.front();
  axis.hi = ticks.back();
  for (double t : ticks) {
    double y = axis.at(t * axis.scale);
    axis.svg += fmt::format("<line class=\"grid\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>"
                            "<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
                            num(kLeft), num(y), num(kWidth - kRight), num(y), num(kLeft - 6),
                            num(y + 4), htmlEscape(formatNumber(t)));
  }
  double middle = (axis.top + axis.bottom) / 2;
  axis.svg +=
      fmt::format("<line class=\"axis\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/>"
                  "<text class=\"label\" transform=\"rotate(-90)\" x=\"{3}\" y=\"14\" "
                  "text-anchor=\"middle\">{4}</text>",
                  num(kLeft), num(axis.top), num(axis.bottom), num(-middle), htmlEscape(unitLabel));
  return axis;
}

std::string refLines(const std::vector<RefLine> &lines, const YAxis &axis) {
  std::string out;
  for (const RefLine &r : lines) {
    double y = axis.at(r.y);
    out += fmt::format("<line class=\"ref\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>"
                       "<text class=\"ref-label\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
                       num(kLeft), num(y), num(kWidth - kRight), num(y), num(kWidth - kRight - 4),
                       num(y - 4), htmlEscape(r.label));
  }
  return out;
}

std::string xAxisLabel(const std::string &label) {
  return fmt::format("<text class=\"label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
                     num((kLeft + kWidth - kRight) / 2), num(kHeight - 8), htmlEscape(label));
}

std::string open(const std::string &id, const std::string &title) {
  return fmt::format("<svg id=\"{0}\" class=\"plait-chart\" role=\"img\" "
                     "aria-labelledby=\"{0}-title\" viewBox=\"0 0 {1} {2}\" width=\"{1}\" "
                     "height=\"{2}\" xmlns=\"http://www.w3.org/2000/svg\">"
                     "<title id=\"{0}-title\">{3}</title>",
                     htmlEscape(id), (int)kWidth, (int)kHeight, htmlEscape(title));
}

} // namespace

std::string renderLineChart(const LineChart &chart) {
  std::vector<std::string> names;
  for (const Series &s : chart.series)
    names.push_back(s.name);
  double top = 0;
  std::string svg = open(chart.id, chart.title) + legend(names, top);

  // Data ranges (stacked: of the running sums).
  double minX = INFINITY, maxX = -INFINITY, minY = INFINITY, maxY = -INFINITY;
  std::vector<std::vector<double>> sums; // [series][point]
  for (const Series &s : chart.series) {
    std::vector<double> sum;
    for (size_t p = 0; p < s.points.size(); ++p) {
      auto [x, y] = s.points[p];
      if (chart.stacked && !sums.empty() && p < sums.back().size())
        y += sums.back()[p];
      sum.push_back(y);
      minX = std::min(minX, x);
      maxX = std::max(maxX, x);
      minY = std::min(minY, y);
      maxY = std::max(maxY, y);
    }
    sums.push_back(std::move(sum));
  }
  for (const RefLine &r : chart.refLines) {
    minY = std::min(minY, r.y);
    maxY = std::max(maxY, r.y);
  }
  if (minX > maxX) { // no points at all
    minX = 0;
    maxX = 1;
  }
  if (minY > maxY)
    minY = maxY = 0;
  if (chart.yFromZero)
    minY = std::min(minY, 0.0);
  YAxis axis = yAxis(minY, maxY, chart.yBytes, chart.yLabel, top);
  double x0 = kLeft, x1 = kWidth - kRight;
  auto sx = [&](double x) {
    return maxX == minX ? (x0 + x1) / 2 : x0 + (x - minX) / (maxX - minX) * (x1 - x0);
  };
  svg += axis.svg;
  for (double t : niceTicks(minX, maxX, 8, chart.integerX)) {
    if (t < minX - 1e-9 * std::abs(maxX - minX) || t > maxX + 1e-9 * std::abs(maxX - minX))
      continue;
    svg += fmt::format("<line class=\"axis\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/>"
                       "<text class=\"tick\" x=\"{0}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>",
                       num(sx(t)), num(axis.bottom), num(axis.bottom + 5), num(axis.bottom + 18),
                       htmlEscape(formatNumber(t)));
  }
  svg += fmt::format("<line class=\"axis\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>", num(x0),
                     num(axis.bottom), num(x1), num(axis.bottom));
  svg += xAxisLabel(chart.xLabel);

  for (size_t i = 0; i < chart.series.size(); ++i) {
    const Series &s = chart.series[i];
    if (s.points.empty())
      continue;
    std::string line;
    for (size_t p = 0; p < s.points.size(); ++p)
      line += fmt::format("{}{},{}", p ? " " : "", num(sx(s.points[p].first)),
                          num(axis.at(sums[i][p])));
    if (chart.stacked) {
      std::string band = line;
      for (size_t p = s.points.size(); p-- > 0;)
        band += fmt::format(" {},{}", num(sx(s.points[p].first)),
                            num(axis.at(i == 0 ? 0.0 : sums[i - 1][p])));
      svg += fmt::format("<polygon class=\"mark area\" points=\"{}\" fill=\"{}\"><title>{}"
                         "</title></polygon>",
                         band, seriesColor(i), htmlEscape(s.name));
    } else {
      svg += fmt::format("<polyline class=\"mark line\" points=\"{}\" stroke=\"{}\"><title>{}"
                         "</title></polyline>",
                         line, seriesColor(i), htmlEscape(s.name));
      if (s.points.size() <= 60) // few points: mark each, with its value on hover
        for (auto [x, y] : s.points)
          svg += fmt::format("<circle class=\"mark dot\" cx=\"{}\" cy=\"{}\" r=\"2.5\" "
                             "fill=\"{}\"><title>{} at {}: {}</title></circle>",
                             num(sx(x)), num(axis.at(y)), seriesColor(i), htmlEscape(s.name),
                             htmlEscape(formatNumber(x)),
                             htmlEscape(chart.yBytes ? formatBytes(y) : formatNumber(y)));
    }
  }
  svg += refLines(chart.refLines, axis);
  return svg + "</svg>";
}

std::string renderBarChart(const BarChart &chart) {
  double top = 0;
  std::string svg = open(chart.id, chart.title) + legend(chart.seriesNames, top);
  size_t n = chart.categories.size();
  double maxY = 0;
  for (size_t c = 0; c < n; ++c) {
    double sum = 0;
    for (const auto &series : chart.values)
      sum += c < series.size() ? series[c] : 0;
    maxY = std::max(maxY, sum);
  }
  for (const RefLine &r : chart.refLines)
    maxY = std::max(maxY, r.y);
  YAxis axis = yAxis(0, maxY, chart.yBytes, chart.yLabel, top);
  svg += axis.svg;
  double x0 = kLeft, x1 = kWidth - kRight;
  double band = n ? (x1 - x0) / n : x1 - x0;
  double barWidth = std::max(1.0, band * 0.7);
  // Labels are cut to what a bar's band holds (at least 16 characters), and only every k-th
  // category is labelled when even that overlaps.
  size_t maxChars = std::max<size_t>(16, (size_t)std::max(0.0, (band - 8) / kTickCharWidth));
  size_t longest = 1;
  for (const std::string &c : chart.categories)
    longest = std::max(longest, std::min(c.size(), maxChars));
  size_t every = std::max<size_t>(1, (size_t)std::ceil((kTickCharWidth * longest + 8) / band));
  for (size_t c = 0; c < n; ++c) {
    double center = x0 + band * (c + 0.5);
    double base = 0;
    for (size_t s = 0; s < chart.values.size(); ++s) {
      double v = c < chart.values[s].size() ? chart.values[s][c] : 0;
      if (v <= 0)
        continue;
      double yTop = axis.at(base + v), yBottom = axis.at(base);
      std::string what = chart.yBytes ? formatBytes(v) : formatNumber(v);
      std::string series = s < chart.seriesNames.size() ? chart.seriesNames[s] : "";
      svg += fmt::format("<rect class=\"mark bar\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" "
                         "fill=\"{}\"><title>{}{}{}: {}</title></rect>",
                         num(center - barWidth / 2), num(yTop), num(barWidth),
                         num(std::max(0.5, yBottom - yTop)), seriesColor(s),
                         htmlEscape(chart.categories[c]), series.empty() ? "" : " · ",
                         htmlEscape(series), htmlEscape(what));
      base += v;
    }
    if (c % every == 0) {
      std::string label = chart.categories[c];
      if (label.size() > maxChars) { // cut at a UTF-8 character boundary
        size_t cut = maxChars - 1;
        while (cut > 0 && (static_cast<unsigned char>(label[cut]) & 0xC0) == 0x80)
          --cut;
        label = label.substr(0, cut) + "…";
      }
      svg += fmt::format("<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
                         num(center), num(axis.bottom + 16), htmlEscape(label));
    }
  }
  svg += fmt::format("<line class=\"axis\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>", num(x0),
                     num(axis.bottom), num(x1), num(axis.bottom));
  svg += xAxisLabel(chart.xLabel);
  svg += refLines(chart.refLines, axis);
  return svg + "</svg>";
}

} // namespace plait::report
