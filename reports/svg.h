// A tiny inline-SVG writer for the HTML scorecard: axes, lines, points,
// bands, heat-map cells. Every text (labels, <title> tooltips) goes through
// HtmlEscape; class names and colours come from the caller's fixed sets,
// never from data. Coordinates are printed with one decimal.
#ifndef CMAX_REPORTS_SVG_H_
#define CMAX_REPORTS_SVG_H_

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cmax::reports {

// &, <, >, " and ' escaped: safe in element text and in quoted attributes.
// The one escape helper of the HTML renderings.
std::string HtmlEscape(std::string_view text);

// A linear or log2 map from a data range onto a pixel range.
class Scale {
 public:
  Scale(double lo, double hi, double px_lo, double px_hi, bool log2 = false);
  double operator()(double v) const;
  // About `n` round tick values inside the range (powers of two when log2).
  std::vector<double> Ticks(int n) const;
  double lo() const { return lo_; }
  double hi() const { return hi_; }

 private:
  double lo_, hi_, px_lo_, px_hi_;
  bool log2_;
};

class Svg {
 public:
  // `label` becomes the <svg>'s aria-label and its first <title>.
  Svg(int width, int height, const std::string& css_class, const std::string& label);

  // Each mark takes a `title` (escaped; empty for none) shown as a tooltip
  // and read by screen readers and tests.
  void Rect(double x, double y, double w, double h, const std::string& fill,
            const std::string& title, const std::string& css_class = "");
  void Line(double x1, double y1, double x2, double y2, const std::string& stroke,
            const std::string& title, bool dashed = false, double width = 1);
  void Circle(double cx, double cy, double r, const std::string& fill, const std::string& title);
  void Polyline(const std::vector<std::pair<double, double>>& points, const std::string& stroke,
                const std::string& title, double width = 1.5);
  // A closed filled area (a band between two lines).
  void Polygon(const std::vector<std::pair<double, double>>& points, const std::string& fill,
               const std::string& title, double opacity = 0.25);
  // anchor: "start", "middle" or "end".
  void Text(double x, double y, const std::string& text, const std::string& anchor = "start",
            double size = 11, double rotate = 0);
  // A y axis at x = `x` (value ticks from `y`), an x axis at y = `y0`.
  void YAxis(const Scale& y, double x, double x_end, const std::string& unit, int ticks = 5);
  void XAxis(const Scale& x, double y0, const std::string& label, int ticks = 6,
             bool bytes = false);

  std::string Finish();

 private:
  std::string out_;
};

// "4 KiB", "16 MiB", "8 GiB" for message sizes.
std::string FormatBytes(double bytes);

}  // namespace cmax::reports

#endif  // CMAX_REPORTS_SVG_H_
