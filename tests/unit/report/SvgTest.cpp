// The SVG helpers behind plait-report: escaping, round axis ticks, byte units, charts.
#include "runtime/report/Svg.h"

#include <algorithm>
#include <cmath>

#include <gtest/gtest.h>

namespace plait::report {
namespace {

TEST(HtmlEscape, EscapesMarkupAndQuotes) {
  EXPECT_EQ(htmlEscape("a<b>&\"c\"'d'"), "a&lt;b&gt;&amp;&quot;c&quot;&#39;d&#39;");
  EXPECT_EQ(htmlEscape("blocks.0/attn"), "blocks.0/attn");
  EXPECT_EQ(htmlEscape("</script><script>x</script>"),
            "&lt;/script&gt;&lt;script&gt;x&lt;/script&gt;");
  EXPECT_EQ(htmlEscape("héllo"), "héllo"); // UTF-8 passes through
  EXPECT_EQ(htmlEscape(""), "");
}

TEST(NiceTicks, RoundStepsCoveringTheRange) {
  EXPECT_EQ(niceTicks(0, 10, 5), (std::vector<double>{0, 2, 4, 6, 8, 10}));
  EXPECT_EQ(niceTicks(0, 882112, 5),
            (std::vector<double>{0, 200000, 400000, 600000, 800000, 1000000}));
  EXPECT_EQ(niceTicks(3.9, 4.4, 5), (std::vector<double>{3.9, 4.0, 4.1, 4.2, 4.3, 4.4}));
  std::vector<double> t = niceTicks(0.13, 0.97, 4);
  EXPECT_LE(t.front(), 0.13);
  EXPECT_GE(t.back(), 0.97);
  EXPECT_LE(t.size(), 7u);
}

TEST(NiceTicks, IntegerStepsAreWhole) {
  EXPECT_EQ(niceTicks(1, 3, 8, /*integer=*/true), (std::vector<double>{1, 2, 3}));
  for (double v : niceTicks(1, 5, 20, true))
    EXPECT_EQ(v, (double)(long long)v);
}

TEST(NiceTicks, DegenerateRanges) {
  EXPECT_EQ(niceTicks(0, 0), (std::vector<double>{0, 0.2, 0.4, 0.6, 0.8, 1}));
  std::vector<double> one = niceTicks(4, 4);
  EXPECT_LT(one.front(), 4);
  EXPECT_GT(one.back(), 4);
  std::vector<double> swapped = niceTicks(10, 0);
  EXPECT_EQ(swapped.front(), 0);
  EXPECT_EQ(swapped.back(), 10);
  EXPECT_EQ(niceTicks(NAN, 1), (std::vector<double>{0, 1}));
  for (double v : niceTicks(-1, 1))
    EXPECT_FALSE(std::signbit(v) && v == 0) << "no -0 tick";
}

TEST(Format, NumbersAndBytes) {
  EXPECT_EQ(formatNumber(0.1 + 0.2), "0.3");
  EXPECT_EQ(formatNumber(1500), "1500");
  EXPECT_EQ(formatNumber(0), "0");
  EXPECT_EQ(formatBytes(512), "512 B");
  EXPECT_EQ(formatBytes(1536), "1.5 KiB");
  EXPECT_EQ(formatBytes(882112), "861.44 KiB");
  EXPECT_EQ(formatBytes(3.25 * 1048576), "3.25 MiB");
  EXPECT_STREQ(byteUnitFor(1023).name, "B");
  EXPECT_STREQ(byteUnitFor(2 * 1073741824.0).name, "GiB");
}

TEST(Charts, LineChartHasIdAxesAndMarks) {
  LineChart chart;
  chart.id = "chart-x";
  chart.title = "a <title>";
  chart.xLabel = "step";
  chart.yLabel = "loss";
  chart.series.push_back({"loss & more", {{1, 4.3}, {2, 4.1}, {3, 3.9}}});
  chart.refLines.push_back({4.0, "ref"});
  std::string svg = renderLineChart(chart);
  EXPECT_EQ(svg.rfind("<svg id=\"chart-x\" class=\"plait-chart\"", 0), 0u);
  EXPECT_NE(svg.find("<title id=\"chart-x-title\">a &lt;title&gt;</title>"), std::string::npos);
  EXPECT_NE(svg.find("class=\"mark line\""), std::string::npos);
  EXPECT_NE(svg.find("loss &amp; more"), std::string::npos);
  EXPECT_EQ(svg.find("loss & more"), std::string::npos);
  EXPECT_NE(svg.find(">step</text>"), std::string::npos);
  EXPECT_NE(svg.find("class=\"ref\""), std::string::npos);
  EXPECT_EQ(svg.substr(svg.size() - 6), "</svg>");
}

TEST(Charts, StackedAreaAndBars) {
  LineChart area;
  area.id = "a";
  area.stacked = true;
  area.yBytes = true;
  area.yLabel = "bytes";
  area.series.push_back({"param", {{0, 2048}, {1, 2048}}});
  area.series.push_back({"activation", {{0, 0}, {1, 4096}}});
  std::string svg = renderLineChart(area);
  EXPECT_NE(svg.find("bytes (KiB)"), std::string::npos);
  size_t polygons = 0;
  for (size_t at = 0; (at = svg.find("<polygon", at)) != std::string::npos; ++at)
    ++polygons;
  EXPECT_EQ(polygons, 2u);

  BarChart bars;
  bars.id = "b";
  bars.categories = {"wte", "a-very-long-unit-name-here", "<evil>"};
  bars.seriesNames = {"params"};
  bars.values = {{10, 20, 0}};
  svg = renderBarChart(bars);
  size_t rects = 0;
  for (size_t at = 0; (at = svg.find("class=\"mark bar\"", at)) != std::string::npos; ++at)
    ++rects;
  EXPECT_EQ(rects, 2u); // zero draws nothing
  EXPECT_NE(svg.find("a-very-long-un"), std::string::npos);
  EXPECT_NE(svg.find("&lt;evil&gt;"), std::string::npos);
  EXPECT_EQ(svg.find("<evil>"), std::string::npos);
}

TEST(Charts, EmptySeriesStillDrawAxes) {
  LineChart chart;
  chart.id = "empty";
  std::string svg = renderLineChart(chart);
  EXPECT_NE(svg.find("class=\"axis\""), std::string::npos);
  EXPECT_EQ(svg.find("class=\"mark"), std::string::npos);
}

} // namespace
} // namespace plait::report
