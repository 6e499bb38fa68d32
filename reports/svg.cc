#include "reports/svg.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "reports/judge_util.h"

namespace cmax::reports {
namespace {

std::string N(double v) {
  if (!std::isfinite(v)) return "0";
  return absl::StrFormat("%.1f", v);
}

std::string TitleTag(const std::string& title) {
  return title.empty() ? std::string() : absl::StrCat("<title>", HtmlEscape(title), "</title>");
}

}  // namespace

std::string HtmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 16);
  for (char ch : text) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out.push_back(ch);
    }
  }
  return out;
}

Scale::Scale(double lo, double hi, double px_lo, double px_hi, bool log2)
    : lo_(lo), hi_(hi), px_lo_(px_lo), px_hi_(px_hi), log2_(log2) {
  if (log2_) {
    lo_ = std::max(lo_, 1e-12);
    hi_ = std::max(hi_, lo_ * 2);
  }
  if (!(hi_ > lo_)) hi_ = lo_ + 1;
}

double Scale::operator()(double v) const {
  double t = log2_ ? (std::log2(std::max(v, 1e-12)) - std::log2(lo_)) /
                         (std::log2(hi_) - std::log2(lo_))
                   : (v - lo_) / (hi_ - lo_);
  return px_lo_ + t * (px_hi_ - px_lo_);
}

std::vector<double> Scale::Ticks(int n) const {
  std::vector<double> out;
  if (log2_) {
    const int a = static_cast<int>(std::ceil(std::log2(lo_)));
    const int b = static_cast<int>(std::floor(std::log2(hi_)));
    const int step = std::max(1, (b - a + n - 1) / std::max(1, n));
    for (int e = a; e <= b; e += step) out.push_back(std::ldexp(1.0, e));
    return out;
  }
  const double raw = (hi_ - lo_) / std::max(1, n);
  const double mag = std::pow(10, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (raw <= m * mag) {
      step = m * mag;
      break;
    }
  }
  for (double v = std::ceil(lo_ / step) * step; v <= hi_ + step * 1e-9; v += step) {
    out.push_back(std::fabs(v) < step * 1e-9 ? 0 : v);
  }
  return out;
}

Svg::Svg(int width, int height, const std::string& css_class, const std::string& label) {
  absl::StrAppend(&out_, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"", css_class,
                  "\" viewBox=\"0 0 ", width, " ", height, "\" width=\"", width, "\" height=\"",
                  height, "\" role=\"img\" aria-label=\"", HtmlEscape(label), "\">",
                  TitleTag(label), "\n");
}

void Svg::Rect(double x, double y, double w, double h, const std::string& fill,
               const std::string& title, const std::string& css_class) {
  absl::StrAppend(&out_, "<rect x=\"", N(x), "\" y=\"", N(y), "\" width=\"", N(std::max(0.0, w)),
                  "\" height=\"", N(std::max(0.0, h)), "\" fill=\"", fill, "\"",
                  css_class.empty() ? "" : absl::StrCat(" class=\"", css_class, "\""), ">",
                  TitleTag(title), "</rect>\n");
}

void Svg::Line(double x1, double y1, double x2, double y2, const std::string& stroke,
               const std::string& title, bool dashed, double width) {
  absl::StrAppend(&out_, "<line x1=\"", N(x1), "\" y1=\"", N(y1), "\" x2=\"", N(x2), "\" y2=\"",
                  N(y2), "\" stroke=\"", stroke, "\" stroke-width=\"", N(width), "\"",
                  dashed ? " stroke-dasharray=\"4 3\"" : "", ">", TitleTag(title), "</line>\n");
}

void Svg::Circle(double cx, double cy, double r, const std::string& fill,
                 const std::string& title) {
  absl::StrAppend(&out_, "<circle cx=\"", N(cx), "\" cy=\"", N(cy), "\" r=\"", N(r),
                  "\" fill=\"", fill, "\">", TitleTag(title), "</circle>\n");
}

void Svg::Polyline(const std::vector<std::pair<double, double>>& points,
                   const std::string& stroke, const std::string& title, double width) {
  absl::StrAppend(&out_, "<polyline fill=\"none\" stroke=\"", stroke, "\" stroke-width=\"",
                  N(width), "\" points=\"");
  for (const auto& [x, y] : points) absl::StrAppend(&out_, N(x), ",", N(y), " ");
  absl::StrAppend(&out_, "\">", TitleTag(title), "</polyline>\n");
}

void Svg::Polygon(const std::vector<std::pair<double, double>>& points, const std::string& fill,
                  const std::string& title, double opacity) {
  absl::StrAppend(&out_, "<polygon fill=\"", fill, "\" fill-opacity=\"", N(opacity),
                  "\" stroke=\"none\" points=\"");
  for (const auto& [x, y] : points) absl::StrAppend(&out_, N(x), ",", N(y), " ");
  absl::StrAppend(&out_, "\">", TitleTag(title), "</polygon>\n");
}

void Svg::Text(double x, double y, const std::string& text, const std::string& anchor,
               double size, double rotate) {
  absl::StrAppend(&out_, "<text x=\"", N(x), "\" y=\"", N(y), "\" font-size=\"", N(size),
                  "\" text-anchor=\"", anchor, "\"",
                  rotate != 0 ? absl::StrCat(" transform=\"rotate(", N(rotate), " ", N(x), " ",
                                             N(y), ")\"")
                              : std::string(),
                  ">", HtmlEscape(text), "</text>\n");
}

void Svg::YAxis(const Scale& y, double x, double x_end, const std::string& unit, int ticks) {
  Line(x, y(y.lo()), x, y(y.hi()), "#57606a", "");
  for (double v : y.Ticks(ticks)) {
    Line(x - 3, y(v), x_end, y(v), "#eaeef2", "");
    Text(x - 5, y(v) + 4, FormatNumber(v), "end", 10);
  }
  Text(x - 5, y(y.hi()) - 6, unit, "end", 10);
}

void Svg::XAxis(const Scale& x, double y0, const std::string& label, int ticks, bool bytes) {
  Line(x(x.lo()), y0, x(x.hi()), y0, "#57606a", "");
  for (double v : x.Ticks(ticks)) {
    Line(x(v), y0, x(v), y0 + 3, "#57606a", "");
    Text(x(v), y0 + 14, bytes ? FormatBytes(v) : FormatNumber(v), "middle", 10);
  }
  if (!label.empty()) Text((x(x.lo()) + x(x.hi())) / 2, y0 + 28, label, "middle", 10);
}

std::string Svg::Finish() {
  absl::StrAppend(&out_, "</svg>\n");
  return std::move(out_);
}

std::string FormatBytes(double bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  return absl::StrCat(FormatNumber(bytes), " ", kUnits[u]);
}

}  // namespace cmax::reports
