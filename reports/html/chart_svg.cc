#include "reports/html/chart_svg.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "reports/judge_util.h"
#include "reports/outcome_order.h"
#include "reports/svg.h"

namespace cmax::reports {
namespace {

constexpr char kMedian[] = "#0550ae";
constexpr char kFence[] = "#bc4c00";
constexpr char kReference[] = "#8250df";
constexpr char kBar[] = "#54aeff";
constexpr char kOutlier[] = "#cf222e";
constexpr char kBand[] = "#54aeff";
// Line colours (fixed, colour-blind friendly set of Okabe and Ito, 2008).
constexpr const char* kPalette[] = {"#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9",
                                    "#d55e00", "#f0e442", "#000000"};

std::string V(double v, const std::string& unit) { return FormatValue(v, unit); }

std::string Caption(const v1::Chart& c) {
  std::string out = absl::StrCat("<figcaption><strong>", HtmlEscape(c.title()), "</strong>");
  if (c.simulated()) absl::StrAppend(&out, " <span class=\"sim\">(simulated)</span>");
  const auto& s = c.stats();
  if (s.n() > 0 && c.kind() == "series") {
    absl::StrAppend(&out, "<br>", s.n(), " line", s.n() == 1 ? "" : "s",
                    "; the lines' means: median ", HtmlEscape(V(s.median(), c.unit())),
                    ", range ", HtmlEscape(FormatNumber(s.min())), " to ",
                    HtmlEscape(V(s.max(), c.unit())));
  } else if (s.n() > 0) {
    absl::StrAppend(&out, "<br>", s.n(), " value", s.n() == 1 ? "" : "s", "; median ",
                    HtmlEscape(V(s.median(), c.unit())), ", range ",
                    HtmlEscape(FormatNumber(s.min())), " to ", HtmlEscape(V(s.max(), c.unit())));
    if (c.kind() == "per_subject" && s.n() >= 4) {
      absl::StrAppend(&out, ", fences (Q1 \u2212 1.5 IQR, Q3 + 1.5 IQR) ",
                      HtmlEscape(FormatNumber(s.low_fence())), " and ",
                      HtmlEscape(FormatNumber(s.high_fence())));
    }
  }
  if (c.reference() > 0) {
    absl::StrAppend(&out, "; ", HtmlEscape(c.reference_label()), " ",
                    HtmlEscape(V(c.reference(), c.unit())));
  }
  if (!c.note().empty()) absl::StrAppend(&out, "<br>", HtmlEscape(c.note()));
  absl::StrAppend(&out, "</figcaption>\n");
  return out;
}

// Horizontal reference lines of a value axis: IQR band, median, fences,
// reference (datasheet peak or plan floor).
void StatLinesY(const v1::Chart& c, const Scale& y, double x0, double x1, Svg* svg) {
  const auto& s = c.stats();
  if (s.n() >= 4) {
    svg->Rect(x0, y(s.q3()), x1 - x0, y(s.q1()) - y(s.q3()), kBand,
              absl::StrCat("interquartile range ", FormatNumber(s.q1()), " to ",
                           V(s.q3(), c.unit())),
              "iqr");
    svg->Line(x0, y(s.low_fence()), x1, y(s.low_fence()), kFence,
              absl::StrCat("low fence (Q1 - 1.5 IQR) ", V(s.low_fence(), c.unit())), true);
    svg->Line(x0, y(s.high_fence()), x1, y(s.high_fence()), kFence,
              absl::StrCat("high fence (Q3 + 1.5 IQR) ", V(s.high_fence(), c.unit())), true);
  }
  if (s.n() > 0 && c.kind() == "per_subject") {
    svg->Line(x0, y(s.median()), x1, y(s.median()), kMedian,
              absl::StrCat("fleet median ", V(s.median(), c.unit())), false, 2);
  }
  if (c.reference() > 0) {
    svg->Line(x0, y(c.reference()), x1, y(c.reference()), kReference,
              absl::StrCat(c.reference_label(), " ", V(c.reference(), c.unit())), true, 2);
  }
}

double Top(const v1::Chart& c, double data_max) {
  double top = std::max({data_max, c.reference(), c.stats().n() >= 4 ? c.stats().high_fence() : 0});
  return top > 0 ? top * 1.08 : 1;
}

std::string PerSubjectValues(const v1::Chart& c) {
  const int n = c.values_size();
  const bool labels = n <= 32;
  const int w = 760, h = labels ? 300 : 240;
  const double l = labels ? 110 : 64, r = 16, t = 16, b = labels ? 90 : 30;
  Svg svg(w, h, "chart", c.title());
  double vmax = 0;
  for (const auto& v : c.values()) vmax = std::max(vmax, v.value());
  const Scale y(0, Top(c, vmax), h - b, t);
  svg.YAxis(y, l, w - r, c.unit());
  StatLinesY(c, y, l, w - r, &svg);
  const double slot = (w - l - r) / std::max(1, n);
  for (int i = 0; i < n; ++i) {
    const auto& v = c.values(i);
    const double x = l + slot * i;
    svg.Rect(x + slot * 0.15, y(v.value()), slot * 0.7, y(0) - y(v.value()),
             v.outlier() ? kOutlier : kBar,
             absl::StrCat(v.subject(), ": ", V(v.value(), c.unit()),
                          v.outlier() ? " (outlier)" : ""),
             v.outlier() ? "bar outlier" : "bar");
    if (labels) svg.Text(x + slot / 2, h - b + 12, v.subject(), "end", 10, -40);
  }
  svg.Line(l, y(0), w - r, y(0), "#57606a", "");
  return svg.Finish();
}

std::string Histogram(const v1::Chart& c) {
  const int w = 760, h = 240;
  const double l = 64, r = 16, t = 16, b = 44;
  Svg svg(w, h, "chart", c.title());
  const double lo = c.bin_edges(0), hi = c.bin_edges(c.bin_edges_size() - 1);
  double xlo = lo, xhi = hi;
  if (c.reference() > 0) {
    xlo = std::min(xlo, c.reference());
    xhi = std::max(xhi, c.reference());
  }
  const Scale x(xlo, xhi + (xhi - xlo) * 0.02, l, w - r);
  int cmax = 1;
  for (int k : c.bin_counts()) cmax = std::max(cmax, k);
  const Scale y(0, cmax * 1.1, h - b, t);
  svg.YAxis(y, l, w - r, "count");
  svg.XAxis(x, h - b, c.unit());
  for (int i = 0; i < c.bin_counts_size(); ++i) {
    const double a = c.bin_edges(i), e = c.bin_edges(i + 1);
    const int k = c.bin_counts(i);
    if (k == 0) continue;
    svg.Rect(x(a), y(k), std::max(1.0, x(e) - x(a) - 1), y(0) - y(k), kBar,
             absl::StrCat(FormatNumber(a), " to ", V(e, c.unit()), ": ", k), "bin");
  }
  const auto& s = c.stats();
  auto vline = [&](double v, const char* colour, const std::string& title, bool dashed) {
    if (v < x.lo() || v > x.hi()) return;
    svg.Line(x(v), t, x(v), h - b, colour, title, dashed, 2);
  };
  vline(s.median(), kMedian, absl::StrCat("fleet median ", V(s.median(), c.unit())), false);
  vline(s.low_fence(), kFence, absl::StrCat("low fence (Q1 - 1.5 IQR) ", V(s.low_fence(), c.unit())),
        true);
  vline(s.high_fence(), kFence,
        absl::StrCat("high fence (Q3 + 1.5 IQR) ", V(s.high_fence(), c.unit())), true);
  if (c.reference() > 0) {
    vline(c.reference(), kReference,
          absl::StrCat(c.reference_label(), " ", V(c.reference(), c.unit())), true);
  }
  for (const auto& v : c.values()) {
    svg.Circle(x(v.value()), h - b - 4, 3, kOutlier,
               absl::StrCat(v.subject(), ": ", V(v.value(), c.unit()), " (outlier)"));
  }
  return svg.Finish();
}

std::string Series(const v1::Chart& c) {
  const int w = 760, h = 280;
  const double l = 64, r = 16, t = 16, b = 44;
  Svg svg(w, h, "chart", c.title());
  double xlo = 0, xhi = 0, ymax = 0;
  bool first = true;
  auto see_x = [&](double v) {
    if (first || v < xlo) xlo = v;
    if (first || v > xhi) xhi = v;
    first = false;
  };
  for (const auto& s : c.series()) {
    for (double v : s.x()) see_x(v);
    for (double v : s.y()) ymax = std::max(ymax, v);
  }
  for (double v : c.band_x()) see_x(v);
  for (double v : c.band_max()) ymax = std::max(ymax, v);
  if (!c.x_log()) xlo = std::min(xlo, 0.0);
  const Scale x(xlo, xhi > xlo ? xhi : xlo + 1, l, w - r, c.x_log());
  const Scale y(0, Top(c, ymax), h - b, t);
  svg.YAxis(y, l, w - r, c.unit());
  svg.XAxis(x, h - b, c.x_label(), 6, c.x_log());
  if (c.reference() > 0) {
    svg.Line(l, y(c.reference()), w - r, y(c.reference()), kReference,
             absl::StrCat(c.reference_label(), " ", V(c.reference(), c.unit())), true, 2);
  }
  if (c.band_x_size() > 0) {
    std::vector<std::pair<double, double>> poly, med;
    for (int i = 0; i < c.band_x_size(); ++i) poly.emplace_back(x(c.band_x(i)), y(c.band_max(i)));
    for (int i = c.band_x_size() - 1; i >= 0; --i) {
      poly.emplace_back(x(c.band_x(i)), y(c.band_min(i)));
    }
    for (int i = 0; i < c.band_x_size(); ++i) med.emplace_back(x(c.band_x(i)), y(c.band_median(i)));
    svg.Polygon(poly, kBand, absl::StrCat("fleet band: min to max of ", c.subjects(), " lines"));
    svg.Polyline(med, kMedian, absl::StrCat("fleet median of ", c.subjects(), " lines"), 2);
  }
  for (int i = 0; i < c.series_size(); ++i) {
    const auto& s = c.series(i);
    std::vector<std::pair<double, double>> pts;
    for (int j = 0; j < s.x_size() && j < s.y_size(); ++j) pts.emplace_back(x(s.x(j)), y(s.y(j)));
    const std::string colour = c.band_x_size() > 0 ? kOutlier : kPalette[i % 8];
    std::string title = absl::StrCat(s.name(), s.outlier() ? " (outlier)" : "");
    if (s.y_size() > 0) {
      absl::StrAppend(&title, ": ", FormatNumber(*std::min_element(s.y().begin(), s.y().end())),
                      " to ", V(*std::max_element(s.y().begin(), s.y().end()), c.unit()));
    }
    if (pts.size() == 1) {
      svg.Circle(pts[0].first, pts[0].second, 3, colour, title);
    } else {
      svg.Polyline(pts, colour, title, s.outlier() ? 2.5 : 1.5);
    }
  }
  return svg.Finish();
}

std::string SeriesLegend(const v1::Chart& c) {
  if (c.series_size() == 0) return "";
  std::string out = "<ul class=\"legend\">";
  for (int i = 0; i < c.series_size(); ++i) {
    const auto& s = c.series(i);
    const std::string colour = c.band_x_size() > 0 ? kOutlier : kPalette[i % 8];
    absl::StrAppend(&out, "<li><span class=\"sw\" style=\"background:", colour, "\"></span>",
                    HtmlEscape(s.name()), s.outlier() ? " <span class=\"fail\">outlier</span>" : "",
                    "</li>");
  }
  absl::StrAppend(&out, "</ul>\n");
  return out;
}

std::string Heatmap(const v1::Chart& c) {
  std::vector<std::string> names;
  std::map<std::string, int> index;
  auto add = [&](const std::string& n) {
    if (index.emplace(n, 0).second) names.push_back(n);
  };
  for (const auto& k : c.cells()) {
    add(k.row());
    add(k.col());
  }
  std::sort(names.begin(), names.end());
  for (size_t i = 0; i < names.size(); ++i) index[names[i]] = static_cast<int>(i);
  const int n = static_cast<int>(names.size());
  const double cell = std::clamp(560.0 / std::max(1, n), 8.0, 36.0);
  const bool labels = cell >= 12;
  const double l = labels ? 120 : 10, t = labels ? 90 : 10;
  const int w = static_cast<int>(l + cell * n + 10), h = static_cast<int>(t + cell * n + 10);
  Svg svg(w, h, "chart heat", c.title());
  const double med = c.stats().median() > 0 ? c.stats().median() : 1;
  for (const auto& k : c.cells()) {
    const double x = l + cell * index[k.col()], y = t + cell * index[k.row()];
    std::string fill, title;
    if (k.state() == "unreachable") {
      fill = "#82071e";
      title = absl::StrCat(k.row(), " \u2192 ", k.col(), ": unreachable");
    } else {
      const double ratio = k.value() / med;
      fill = ratio <= 1.25 ? "#2da44e" : ratio <= 2 ? "#d4a72c" : ratio <= 4 ? "#fb8f44" : "#cf222e";
      title = absl::StrCat(k.row(), " \u2192 ", k.col(), ": ", V(k.value(), c.unit()), " (",
                           FormatNumber(ratio), "x the median)");
    }
    svg.Rect(x, y, cell - 1, cell - 1, fill, title, "cell");
  }
  if (labels) {
    for (int i = 0; i < n; ++i) {
      svg.Text(l - 4, t + cell * i + cell / 2 + 4, names[i], "end", 10);
      svg.Text(l + cell * i + cell / 2, t - 4, names[i], "start", 10, -45);
    }
  }
  return svg.Finish();
}

std::string OutlierList(const v1::Chart& c) {
  if (c.values_size() == 0) return "";
  std::vector<std::string> items;
  for (const auto& v : c.values()) {
    items.push_back(absl::StrCat("<li><a href=\"#", NodeAnchor(v.node()), "\">",
                                 HtmlEscape(v.subject()), "</a>: ",
                                 HtmlEscape(V(v.value(), c.unit())), "</li>"));
  }
  return absl::StrCat("<p>Outliers named:</p><ul class=\"outliers\">", absl::StrJoin(items, ""),
                      "</ul>\n");
}

const char* OutcomeFill(const std::string& o) {
  if (o == "critical") return "#82071e";
  if (o == "fail") return "#cf222e";
  if (o == "warn") return "#d4a72c";
  if (o == "partial") return "#9ad0a5";
  if (o == "pass") return "#2da44e";
  return "#d0d7de";  // not measured
}

std::string OutcomeWords(const std::string& o) {
  if (o == "partial") return "measured, something not measured";
  if (o == "not_measured") return "not measured";
  return o;
}

}  // namespace

std::string NodeAnchor(const std::string& node) {
  std::string out = "node-";
  for (char ch : node) {
    const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                    (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-';
    out.push_back(ok ? ch : '_');
  }
  return out;
}

std::string ChartFigure(const v1::Chart& c) {
  std::string svg;
  std::string extra;
  if (c.kind() == "per_subject") {
    if (c.bin_counts_size() > 0) {
      svg = Histogram(c);
      extra = OutlierList(c);
    } else {
      svg = PerSubjectValues(c);
    }
  } else if (c.kind() == "series") {
    svg = Series(c);
    extra = SeriesLegend(c);
  } else if (c.kind() == "heatmap") {
    svg = Heatmap(c);
    extra = absl::StrCat(
        "<ul class=\"legend\"><li><span class=\"sw\" style=\"background:#2da44e\"></span>"
        "up to 1.25x the median</li><li><span class=\"sw\" style=\"background:#d4a72c\">"
        "</span>up to 2x</li><li><span class=\"sw\" style=\"background:#fb8f44\"></span>up "
        "to 4x</li><li><span class=\"sw\" style=\"background:#cf222e\"></span>more</li><li>"
        "<span class=\"sw\" style=\"background:#82071e\"></span>unreachable</li></ul>\n");
  } else {
    return "";
  }
  return absl::StrCat("<figure class=\"chart-fig\" data-chart=\"", HtmlEscape(c.id()), "\">\n",
                      svg, Caption(c), extra, "</figure>\n");
}

std::string NodeGridFigure(const v1::Scorecard& card) {
  if (card.node_grid().empty()) return "";
  struct Row {
    std::vector<std::string> nodes;
    std::vector<std::string> outcomes;
  };
  std::vector<Row> rows;
  const bool grouped = card.node_grid_size() > kMaxGridRows;
  if (!grouped) {
    for (const auto& g : card.node_grid()) rows.push_back({{g.node()}, {g.outcomes().begin(), g.outcomes().end()}});
  } else {
    std::map<std::vector<std::string>, size_t> by_pattern;
    for (const auto& g : card.node_grid()) {
      std::vector<std::string> o(g.outcomes().begin(), g.outcomes().end());
      auto [it, inserted] = by_pattern.emplace(o, rows.size());
      if (inserted) rows.push_back({{}, o});
      rows[it->second].nodes.push_back(g.node());
    }
    // The worst patterns first, then the most common. A cell's badness is
    // its outcome's (outcome_order.h); "partial" (measured, something not
    // measured) counts as not measured.
    auto rank = [](const Row& r) {
      int w = 0;
      for (const auto& o : r.outcomes) {
        w = std::max(w, OutcomeBadness(o == "partial" ? "not_measured" : o));
      }
      return w;
    };
    std::stable_sort(rows.begin(), rows.end(), [&](const Row& a, const Row& b) {
      if (rank(a) != rank(b)) return rank(a) > rank(b);
      return a.nodes.size() > b.nodes.size();
    });
  }
  const int cols = card.categories_size();
  const double cw = 92, ch = 20, l = 220, t = 24;
  const int w = static_cast<int>(l + cw * cols + 8);
  const int h = static_cast<int>(t + ch * rows.size() + 8);
  Svg svg(w, h, "chart grid", "Nodes by category: verdict per cell");
  for (int j = 0; j < cols; ++j) {
    svg.Text(l + cw * j + cw / 2, t - 8, card.categories(j).name(), "middle", 11);
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    std::string label = r.nodes.size() == 1 ? r.nodes[0] : absl::StrCat(r.nodes.size(), " nodes: ", r.nodes[0], r.nodes.size() > 1 ? ", \u2026" : "");
    if (label.size() > 34) label = label.substr(0, 33) + "\u2026";
    svg.Text(l - 6, t + ch * i + ch / 2 + 4, label, "end", 11);
    for (int j = 0; j < cols && j < static_cast<int>(r.outcomes.size()); ++j) {
      std::string who = r.nodes.size() == 1 ? r.nodes[0]
                                            : absl::StrCat(r.nodes.size(), " nodes (",
                                                           absl::StrJoin(std::vector<std::string>(r.nodes.begin(), r.nodes.begin() + std::min<size_t>(r.nodes.size(), 10)), ", "),
                                                           r.nodes.size() > 10 ? ", \u2026" : "", ")");
      svg.Rect(l + cw * j + 1, t + ch * i + 1, cw - 2, ch - 2, OutcomeFill(r.outcomes[j]),
               absl::StrCat(who, " \u00b7 ", card.categories(j).name(), ": ",
                            OutcomeWords(r.outcomes[j])),
               "cell");
    }
  }
  std::string legend = "<ul class=\"legend\">";
  for (const char* o : {"pass", "partial", "warn", "fail", "critical", "not_measured"}) {
    absl::StrAppend(&legend, "<li><span class=\"sw\" style=\"background:", OutcomeFill(o),
                    "\"></span>", OutcomeWords(o), "</li>");
  }
  absl::StrAppend(&legend, "</ul>");
  return absl::StrCat(
      "<figure class=\"chart-fig\" data-chart=\"node-grid\">\n", svg.Finish(),
      "<figcaption><strong>Nodes by category</strong>",
      grouped ? absl::StrCat(": ", card.node_grid_size(), " nodes in ", rows.size(),
                             " groups of identical outcomes")
              : std::string(),
      "</figcaption>\n", legend, "</figure>\n");
}

}  // namespace cmax::reports
