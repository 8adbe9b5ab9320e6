#include "pipeline/svg.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/files.hpp"

namespace sapp::simulate {

namespace {

std::string escape(const std::string& text) { return io::markup_escape(text); }

// Base colours per block kind (forward blue, backward orange, weight-gradient green), lighter per chunk.
std::string colour(BlockKind kind, int chunk, int chunks) {
  int r = 0, g = 0, b = 0;
  switch (kind) {
    case BlockKind::Forward:
      r = 90;
      g = 130;
      b = 220;
      break;
    case BlockKind::Backward:
      r = 240;
      g = 150;
      b = 50;
      break;
    case BlockKind::Weight:
      r = 80;
      g = 170;
      b = 100;
      break;
  }
  double lighten = chunks > 1 ? 0.45 * chunk / (chunks - 1) : 0.0;
  auto mix = [&](int c) { return static_cast<int>(std::lround(c + (255 - c) * lighten)); };
  return fmt::format("rgb({},{},{})", mix(r), mix(g), mix(b));
}

// A round tick step (1, 2 or 5 times a power of ten) giving about `target` ticks over `span`.
double tick_step(double span, int target) {
  double raw = span / target;
  double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double f : {1.0, 2.0, 5.0}) {
    if (f * p >= raw) return f * p;
  }
  return 10 * p;
}

std::string stage_colour(int stage, int stages) { return fmt::format("hsl({},70%,40%)", stages > 1 ? 360 * stage / stages : 0); }

}  // namespace

std::string render_svg(const SimResult& res, int chunks, const SvgOptions& opt) {
  const double width = 1200;
  const double left = 70;
  const double right = 20;
  const double row = 22;
  const int stages = static_cast<int>(res.timeline.size());
  const double top = 60;
  const double timeline_h = row * stages;
  const double gap = 50;
  const double mem_h = 220;
  const int per_row = 10;  // stage legend entries per row
  const int legend_rows = (stages + per_row - 1) / per_row;
  const double height = top + timeline_h + gap + mem_h + 40 + 16.0 * legend_rows + 20;
  const double span = res.end > 0 ? res.end : 1;
  auto x = [&](double t) { return left + (width - left - right) * t / span; };
  std::string s = fmt::format(R"X(<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" viewBox="0 0 {} {}" font-family="sans-serif" font-size="11">
<rect x="0" y="0" width="{}" height="{}" fill="white"/>
<text x="{}" y="20" font-size="15" font-weight="bold">{}</text>
<text x="{}" y="40">{}</text>
)X",
                              width, height, width, height, width, height, left, escape(opt.title), left, escape(opt.summary));
  // Timeline rows.
  for (int st = 0; st < stages; ++st) {
    double y = top + row * st;
    s += fmt::format(R"X(<text x="{}" y="{:.1f}" text-anchor="end">stage {}</text>
)X",
                     left - 6, y + row * 0.7, st);
    for (const auto& tb : res.timeline[static_cast<std::size_t>(st)]) {
      double x0 = x(tb.start);
      double w = std::max(0.5, x(tb.end) - x0);
      const char* kind = tb.block.kind == BlockKind::Forward ? "F" : tb.block.kind == BlockKind::Backward ? "B" : "W";
      s += fmt::format(
          R"X(<rect x="{:.2f}" y="{:.1f}" width="{:.2f}" height="{:.1f}" fill="{}" stroke="white" stroke-width="0.5"><title>{} chunk {} micro {}: {:.4g} to {:.4g}</title></rect>
)X",
          x0, y + 1, w, row - 2, colour(tb.block.kind, tb.block.chunk, chunks), kind, tb.block.chunk, tb.block.micro, tb.start, tb.end);
      if (w > 14) {
        s += fmt::format(R"X(<text x="{:.2f}" y="{:.1f}" text-anchor="middle" font-size="9" fill="white">{}</text>
)X",
                         x0 + w / 2, y + row * 0.68, tb.block.micro);
      }
    }
  }
  // Time axis under the timeline (and again under the memory curves).
  const double step = tick_step(span, 10);
  auto time_axis = [&](double at) {
    std::string a = fmt::format(R"X(<line class="axis" x1="{}" x2="{}" y1="{:.1f}" y2="{:.1f}" stroke="#333"/>
)X",
                                left, width - right, at, at);
    const auto ticks = static_cast<int>(std::floor(span * (1 + 1e-9) / step));
    for (int i = 0; i <= ticks; ++i) {
      double t = i * step;
      a += fmt::format(
          R"X(<line class="tick" x1="{:.2f}" x2="{:.2f}" y1="{:.1f}" y2="{:.1f}" stroke="#333"/><text x="{:.2f}" y="{:.1f}" text-anchor="middle" font-size="9">{:g}</text>
)X",
          x(t), x(t), at, at + 4, x(t), at + 13, t);
    }
    return a;
  };
  s += time_axis(top + timeline_h + 2);
  s += fmt::format(R"X(<text x="{}" y="{:.1f}" text-anchor="end" font-size="9">time ({})</text>
)X",
                   width - right, top + timeline_h + 26, escape(opt.time_unit));
  // Memory curves.
  double mem_top = top + timeline_h + gap;
  double peak = opt.memory_limit;
  for (double p : res.peak_memory) peak = std::max(peak, p);
  if (peak <= 0) peak = 1;
  auto y = [&](double m) { return mem_top + mem_h - mem_h * m / (peak * 1.05); };
  s += fmt::format(R"X(<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#999"/>
<text x="{}" y="{:.1f}">memory per stage ({}), peak {:.0f}</text>
)X",
                   left, mem_top, width - left - right, mem_h, left, mem_top - 8, escape(opt.memory_unit),
                   *std::max_element(res.peak_memory.begin(), res.peak_memory.end()));
  // Memory axis ticks.
  const double mem_step = tick_step(peak * 1.05, 5);
  const auto mem_ticks = static_cast<int>(std::floor(peak * 1.05 / mem_step));
  for (int i = 0; i <= mem_ticks; ++i) {
    double m = i * mem_step;
    s += fmt::format(
        R"X(<line class="tick" x1="{}" x2="{}" y1="{:.2f}" y2="{:.2f}" stroke="#333"/><line x1="{}" x2="{}" y1="{:.2f}" y2="{:.2f}" stroke="#eee"/><text x="{}" y="{:.2f}" text-anchor="end" font-size="9">{:g}</text>
)X",
        left - 4, left, y(m), y(m), left, width - right, y(m), y(m), left - 6, y(m) + 3, m);
  }
  s += time_axis(mem_top + mem_h);
  for (int st = 0; st < stages; ++st) {
    const auto& pts = res.memory[static_cast<std::size_t>(st)];
    std::string path;
    double last = pts.empty() ? 0 : pts.front().second;
    for (std::size_t i = 0; i < pts.size(); ++i) {
      // A step curve: memory holds its value until the next change.
      if (i == 0)
        path += fmt::format("M{:.2f},{:.2f}", x(pts[i].first), y(pts[i].second));
      else
        path += fmt::format(" L{:.2f},{:.2f} L{:.2f},{:.2f}", x(pts[i].first), y(last), x(pts[i].first), y(pts[i].second));
      last = pts[i].second;
    }
    path += fmt::format(" L{:.2f},{:.2f}", x(span), y(last));
    s += fmt::format(R"X(<path d="{}" fill="none" stroke="{}" stroke-width="1.2"><title>stage {}: peak {:.1f}</title></path>
)X",
                     path, stage_colour(st, stages), st, res.peak_memory[static_cast<std::size_t>(st)]);
  }
  if (opt.memory_limit > 0) {
    s += fmt::format(R"X(<line x1="{}" x2="{}" y1="{:.2f}" y2="{:.2f}" stroke="red" stroke-dasharray="6,4"/>
<text x="{}" y="{:.2f}" fill="red" text-anchor="end">limit {:.0f}</text>
)X",
                     left, width - right, y(opt.memory_limit), y(opt.memory_limit), width - right, y(opt.memory_limit) - 4, opt.memory_limit);
  }
  // Stage legend of the memory curves.
  for (int st = 0; st < stages; ++st) {
    const int legend_row = st / per_row;
    double lx = left + 105.0 * (st % per_row);
    double ly = mem_top + mem_h + 34 + 16.0 * legend_row;
    s += fmt::format(
        R"X(<g class="stage-legend"><line x1="{:.1f}" x2="{:.1f}" y1="{:.1f}" y2="{:.1f}" stroke="{}" stroke-width="2.5"/><text x="{:.1f}" y="{:.1f}">stage {} ({:.0f})</text></g>
)X",
        lx, lx + 16, ly - 4, ly - 4, stage_colour(st, stages), lx + 20, ly, st, res.peak_memory[static_cast<std::size_t>(st)]);
  }
  // Legend.
  double ly = height - 15;
  s += fmt::format(R"X(<rect x="{}" y="{}" width="12" height="10" fill="{}"/><text x="{}" y="{}">forward</text>
<rect x="{}" y="{}" width="12" height="10" fill="{}"/><text x="{}" y="{}">backward (incl. recompute)</text>
<rect x="{}" y="{}" width="12" height="10" fill="{}"/><text x="{}" y="{}">weight gradient</text>
<text x="{}" y="{}">lighter shades: later chunks; time 0 to {:.4g} {}; stage legend: peak {}</text>
</svg>
)X",
                   left, ly - 9, colour(BlockKind::Forward, 0, 1), left + 16, ly, left + 90, ly - 9, colour(BlockKind::Backward, 0, 1), left + 106, ly,
                   left + 280, ly - 9, colour(BlockKind::Weight, 0, 1), left + 296, ly, left + 420, ly, span, escape(opt.time_unit), escape(opt.memory_unit));
  return s;
}

}  // namespace sapp::simulate
