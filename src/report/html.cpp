#include "report/html.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/files.hpp"
#include "core/units.hpp"

namespace sapp::report {

std::string html_escape(const std::string& text) { return io::markup_escape(text); }

namespace {

using units::kGiB;

// Colours of the memory categories and time terms, shared by every chart.
struct Part {
  const char* name;
  const char* colour;
};
constexpr Part kMemoryParts[] = {{"parameters", "#4c72b0"},  {"gradients", "#dd8452"}, {"optimizer", "#55a868"},
                                 {"activations", "#c44e52"}, {"buffers", "#8172b3"},   {"reserve", "#937860"}};
constexpr Part kTimeParts[] = {{"compute", "#4c72b0"}, {"recompute", "#dd8452"}, {"TP", "#55a868"},     {"CP", "#c44e52"},       {"EP", "#8172b3"},
                               {"DP", "#937860"},      {"PP", "#da8bc3"},        {"bubble", "#8c8c8c"}, {"optimizer", "#ccb974"}};

std::string legend(const Part* parts, std::size_t n) {
  std::string out = "<div class=legend>";
  for (std::size_t i = 0; i < n; ++i) out += fmt::format("<span><i style=\"background:{}\"></i>{}</span>", parts[i].colour, parts[i].name);
  return out + "</div>";
}

// A "nice" axis step for a range: 1, 2 or 5 times a power of ten, about `ticks` ticks.
double nice_step(double range, int ticks) {
  double raw = range / std::max(1, ticks);
  double mag = std::pow(10.0, std::floor(std::log10(std::max(raw, 1e-300))));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (raw <= m * mag) return m * mag;
  }
  return 10.0 * mag;
}

std::string scatter_svg(const SearchReport& r) {
  if (r.scatter.empty()) return "<p>No fitting candidate to plot.</p>";
  const double W = 760, H = 420, L = 70, R = 20, T = 20, B = 50;
  double x_max = r.subject.capacity_bytes / kGiB * 1.02;
  double y_min = 1e300, y_max = 0;
  for (const auto& c : r.scatter) {
    y_min = std::min(y_min, c.step_s);
    y_max = std::max(y_max, c.step_s);
  }
  if (y_max <= y_min) y_max = y_min * 1.1 + 1e-9;
  double pad = 0.05 * (y_max - y_min);
  y_min = std::max(0.0, y_min - pad);
  y_max += pad;
  auto X = [&](double gib) { return L + (W - L - R) * gib / x_max; };
  auto Y = [&](double s) { return T + (H - T - B) * (1.0 - (s - y_min) / (y_max - y_min)); };
  std::string svg = fmt::format("<svg viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\" role=img aria-label=\"step time against peak memory\">", W, H, W, H);
  double xs = nice_step(x_max, 8);
  for (int tick = 0; tick * xs <= x_max; ++tick) {
    const double x = tick * xs;
    svg += fmt::format("<line x1={:.1f} y1={} x2={:.1f} y2={} class=grid /><text x={:.1f} y={} class=tick text-anchor=middle>{:g}</text>", X(x), T, X(x), H - B,
                       X(x), H - B + 16, x);
  }
  double ys = nice_step(y_max - y_min, 6);
  for (int tick = static_cast<int>(std::ceil(y_min / ys)); tick * ys <= y_max; ++tick) {
    const double y = tick * ys;
    svg += fmt::format("<line x1={} y1={:.1f} x2={} y2={:.1f} class=grid /><text x={} y={:.1f} class=tick text-anchor=end>{:g}</text>", L, Y(y), W - R, Y(y),
                       L - 6, Y(y) + 4, y);
  }
  svg += fmt::format("<text x={} y={} text-anchor=middle>peak memory per device (GiB)</text>", (L + W - R) / 2, H - 8);
  svg += fmt::format("<text transform=\"translate(16 {}) rotate(-90)\" text-anchor=middle>step time (s)</text>", (T + H - B) / 2);
  double cap = r.subject.capacity_bytes / kGiB;
  svg += fmt::format("<line x1={:.1f} y1={} x2={:.1f} y2={} class=capacity /><text x={:.1f} y={} class=tick text-anchor=end>capacity</text>", X(cap), T, X(cap),
                     H - B, X(cap) - 4, T + 12);
  for (const auto& c : r.scatter) {
    double radius = 1.5 + std::min(4.0, std::log10(static_cast<double>(c.count)));
    svg += fmt::format("<circle cx={:.1f} cy={:.1f} r={:.1f} class=pt><title>{:.2f} GiB, {:.3f} s, {} layouts</title></circle>", X(c.peak_memory_bytes / kGiB),
                       Y(c.step_s), radius, c.peak_memory_bytes / kGiB, c.step_s, c.count);
  }
  std::string path;
  for (const auto& p : r.pareto) {
    path += fmt::format("{}{:.1f},{:.1f}", path.empty() ? "M" : " L", X(p.peak_memory_bytes / kGiB), Y(p.time.step_s));
  }
  if (!path.empty()) svg += fmt::format("<path d=\"{}\" class=front />", path);
  for (const auto& p : r.pareto) {
    svg += fmt::format("<circle cx={:.1f} cy={:.1f} r=4 class=frontpt><title>Pareto: {} — {:.2f} GiB, {:.3f} s</title></circle>", X(p.peak_memory_bytes / kGiB),
                       Y(p.time.step_s), html_escape(p.layout.describe()), p.peak_memory_bytes / kGiB, p.time.step_s);
  }
  if (!r.rows.empty()) {
    const auto& best = r.rows.front().candidate;
    svg += fmt::format("<circle cx={:.1f} cy={:.1f} r=7 class=best><title>rank 1: {}</title></circle>", X(best.peak_memory_bytes / kGiB), Y(best.time.step_s),
                       html_escape(best.layout.describe()));
  }
  return svg + "</svg>";
}

std::string rejections_svg(const SearchReport& r) {
  if (r.rejected.empty()) return "<p>No candidate was rejected.</p>";
  std::vector<std::pair<long long, std::string>> rows;
  long long most = 1;
  for (const auto& [rule, count] : r.rejected) {
    rows.emplace_back(count, rule);
    most = std::max(most, count);
  }
  std::sort(rows.rbegin(), rows.rend());
  const double W = 760, bar = 22, L = 200;
  const double H = bar * static_cast<double>(rows.size()) + 10;
  std::string svg = fmt::format("<svg viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\" role=img aria-label=\"rejections per rule\">", W, H, W, H);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    double w = (W - L - 90) * static_cast<double>(rows[i].first) / static_cast<double>(most);
    double y = 5 + bar * static_cast<double>(i);
    svg += fmt::format("<text x={} y={:.0f} text-anchor=end>{}</text><rect x={} y={:.0f} width={:.1f} height={} class=rej /><text x={:.1f} y={:.0f}>{}</text>",
                       L - 8, y + 15, html_escape(rows[i].second), L, y + 3, std::max(1.0, w), bar - 6, L + w + 6, y + 15, rows[i].first);
  }
  return svg + "</svg>";
}

std::string stage_memory_svg(const cost::MemoryEstimate& m) {
  const double W = 760, H = 300, L = 60, B = 40, T = 15;
  double top = std::max(m.capacity_bytes, m.peak_bytes) / kGiB * 1.05;
  std::size_t n = m.stages.size();
  double slot = (W - L - 10) / static_cast<double>(std::max<std::size_t>(n, 1));
  auto Y = [&](double gib) { return T + (H - T - B) * (1.0 - gib / top); };
  std::string svg = fmt::format("<svg viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\" role=img aria-label=\"memory per stage\">", W, H, W, H);
  double ys = nice_step(top, 6);
  for (int tick = 0; tick * ys <= top; ++tick) {
    const double y = tick * ys;
    svg += fmt::format("<line x1={} y1={:.1f} x2={} y2={:.1f} class=grid /><text x={} y={:.1f} class=tick text-anchor=end>{:g}</text>", L, Y(y), W - 10, Y(y),
                       L - 6, Y(y) + 4, y);
  }
  for (std::size_t i = 0; i < n; ++i) {
    const auto& s = m.stages[i];
    double act = std::max(s.activations + s.buffers, s.optimizer_step) - s.buffers;
    double parts[] = {s.params, s.grads, s.optimizer, act, s.buffers, s.reserve};
    double base = 0;
    double x = L + slot * static_cast<double>(i) + slot * 0.15;
    for (std::size_t p = 0; p < 6; ++p) {
      double g = parts[p] / kGiB;
      svg += fmt::format("<rect x={:.1f} y={:.1f} width={:.1f} height={:.1f} fill=\"{}\"><title>stage {} {}: {:.2f} GiB</title></rect>", x, Y(base + g),
                         slot * 0.7, Y(base) - Y(base + g), kMemoryParts[p].colour, s.stage, kMemoryParts[p].name, g);
      base += g;
    }
    if (n <= 32 || i % (n / 16) == 0) svg += fmt::format("<text x={:.1f} y={} class=tick text-anchor=middle>{}</text>", x + slot * 0.35, H - B + 16, s.stage);
  }
  svg += fmt::format("<line x1={} y1={:.1f} x2={} y2={:.1f} class=capacity /><text x={} y={:.1f} class=tick text-anchor=end>capacity {:.1f} GiB</text>", L,
                     Y(m.capacity_bytes / kGiB), W - 10, Y(m.capacity_bytes / kGiB), W - 12, Y(m.capacity_bytes / kGiB) - 4, m.capacity_bytes / kGiB);
  svg += fmt::format("<text x={} y={} text-anchor=middle>pipeline stage</text>", (L + W) / 2, H - 6);
  svg += fmt::format("<text transform=\"translate(14 {}) rotate(-90)\" text-anchor=middle>GiB per device</text>", (T + H - B) / 2);
  return svg + "</svg>" + legend(kMemoryParts, 6);
}

std::string breakdown_svg(const cost::StepTime& t) {
  const cost::Breakdown& b = t.breakdown;
  double parts[] = {b.compute_s, b.recompute_s, b.tp_comm_s, b.cp_comm_s, b.ep_comm_s, b.dp_comm_s, b.pp_comm_s, b.bubble_s, b.optimizer_s};
  double total = 0;
  for (double p : parts) total += p;
  const double W = 760, H = 46;
  std::string svg = fmt::format("<svg viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\" role=img aria-label=\"step time breakdown\">", W, H, W, H);
  double x = 0;
  for (std::size_t i = 0; i < 9; ++i) {
    double w = total > 0 ? W * parts[i] / total : 0;
    svg += fmt::format("<rect x={:.1f} y=4 width={:.1f} height=30 fill=\"{}\"><title>{}: {:.3f} s</title></rect>", x, w, kTimeParts[i].colour,
                       kTimeParts[i].name, parts[i]);
    x += w;
  }
  return svg + "</svg>" + legend(kTimeParts, 9);
}

std::string table_html(const SearchReport& r) {
  std::string out =
      "<table id=ranked class=sortable><thead><tr><th>rank</th><th>layout</th><th>twins</th><th>peak GiB</th><th>step s</th><th>tokens/s/device</th>"
      "<th>MFU %</th><th>compute s</th><th>recompute s</th><th>TP s</th><th>CP s</th><th>EP s</th><th>DP s</th><th>PP s</th><th>bubble s</th>"
      "</tr></thead><tbody>";
  for (std::size_t i = 0; i < r.rows.size(); ++i) {
    const auto& c = r.rows[i].candidate;
    const auto& b = c.time.breakdown;
    out += fmt::format(
        "<tr><td>{}</td><td class=l>{}</td><td>{}</td><td>{:.2f}</td><td>{:.3f}</td><td>{:.0f}</td><td>{:.1f}</td><td>{:.3f}</td><td>{:.3f}</td><td>{:.3f}</td>"
        "<td>{:.3f}</td><td>{:.3f}</td><td>{:.3f}</td><td>{:.3f}</td><td>{:.3f}</td></tr>",
        i + 1, html_escape(c.layout.describe()), c.twins, c.peak_memory_bytes / kGiB, c.time.step_s, c.time.tokens_per_s_per_device, 100 * c.time.mfu,
        b.compute_s, b.recompute_s, b.tp_comm_s, b.cp_comm_s, b.ep_comm_s, b.dp_comm_s, b.pp_comm_s, b.bubble_s);
  }
  return out + "</tbody></table>";
}

// "chunk 0: full 2, none 3; chunk 1: none 5" (kinds with no layer left out).
std::string recompute_text(const PlanStage& s) {
  std::string out;
  for (std::size_t c = 0; c < s.recompute.size(); ++c) {
    std::string kinds;
    for (const auto& [kind, n] : s.recompute[c]) {
      if (n > 0) kinds += fmt::format("{}{} {}", kinds.empty() ? "" : ", ", kind, n);
    }
    out += fmt::format("{}{}{}", out.empty() ? "" : "; ", s.recompute.size() > 1 ? fmt::format("chunk {}: ", c) : std::string(), kinds);
  }
  return out;
}

std::string plans_html(const std::vector<Plan>& plans) {
  if (plans.empty()) return {};
  std::string out =
      "<h2>Balanced plans</h2><p>The best layouts of the search with layers and recompute balanced per stage and chunk, re-ranked on the balanced "
      "step time (a layout with PP 1 keeps its estimate).</p><table id=plans class=sortable><thead><tr><th>rank</th><th>layout</th><th>step s</th>"
      "<th>even split s</th><th>peak GiB</th><th>fits</th><th>balancer</th><th>layers per stage</th></tr></thead><tbody>";
  for (std::size_t i = 0; i < plans.size(); ++i) {
    const Plan& p = plans[i];
    std::string layers;
    for (const auto& s : p.stages) {
      std::string per_chunk;
      for (long long n : s.layers) per_chunk += fmt::format("{}{}", per_chunk.empty() ? "" : "+", n);
      layers += fmt::format("{}{}", layers.empty() ? "" : " ", per_chunk);
    }
    out += fmt::format("<tr><td>{}</td><td class=l>{}</td><td>{:.3f}</td><td>{:.3f}</td><td>{:.2f}</td><td>{}</td><td class=l>{}</td><td class=l>{}</td></tr>",
                       i + 1, html_escape(p.layout.describe()), p.step_time_s, p.even_step_time_s, p.peak_memory_bytes / kGiB, p.fits ? "yes" : "NO",
                       html_escape(p.status), html_escape(layers));
  }
  out += "</tbody></table>";
  const Plan& best = plans.front();
  if (!best.stages.empty()) {
    out +=
        "<h3>Stages of the chosen plan</h3><table><thead><tr><th>stage</th><th>layers per chunk</th><th>recompute</th><th>peak GiB</th><th>time s (one "
        "micro-batch)</th></tr></thead><tbody>";
    for (const auto& s : best.stages) {
      std::string per_chunk;
      for (long long n : s.layers) per_chunk += fmt::format("{}{}", per_chunk.empty() ? "" : ", ", n);
      out += fmt::format("<tr><td>{}</td><td>{}</td><td class=l>{}</td><td>{:.2f}</td><td>{:.4f}</td></tr>", s.stage, per_chunk, html_escape(recompute_text(s)),
                         s.peak_memory_bytes / kGiB, s.time_s);
    }
    out += "</tbody></table>";
  }
  if (!best.timeline_svg.empty()) out += "<h3>Pipeline timeline and memory of the chosen plan</h3><div class=scroll>" + best.timeline_svg + "</div>";
  return out;
}

constexpr const char* kStyle = R"(
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1200px}
h1{font-size:20px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ddd}h3{font-size:15px}
table{border-collapse:collapse;font-size:12px;margin:8px 0}th,td{border:1px solid #ddd;padding:3px 6px;text-align:right}
td.l{text-align:left;font-family:monospace}th{background:#f4f4f4;cursor:pointer;user-select:none}
th.asc::after{content:" \25B2"}th.desc::after{content:" \25BC"}
.grid{stroke:#eee}.tick{font-size:11px;fill:#555}.capacity{stroke:#c00;stroke-dasharray:4 3}
.pt{fill:#4c72b0;fill-opacity:.35}.front{fill:none;stroke:#dd8452;stroke-width:2}.frontpt{fill:#dd8452}.best{fill:none;stroke:#000;stroke-width:2}
.rej{fill:#8172b3}.legend span{margin-right:14px;font-size:12px}.legend i{display:inline-block;width:10px;height:10px;margin-right:4px}
.scroll{overflow-x:auto}#status{color:#777;font-size:11px}
)";

// Sorts a table by the clicked column (numbers as numbers); marks the page loaded for the headless check.
constexpr const char* kScript = R"(
window.addEventListener('error',function(e){document.getElementById('status').textContent='script error: '+e.message;});
document.querySelectorAll('table.sortable').forEach(function(table){
  table.querySelectorAll('th').forEach(function(th,col){
    th.addEventListener('click',function(){
      var body=table.tBodies[0],rows=Array.prototype.slice.call(body.rows),asc=!th.classList.contains('asc');
      table.querySelectorAll('th').forEach(function(h){h.classList.remove('asc','desc');});
      th.classList.add(asc?'asc':'desc');
      rows.sort(function(a,b){var x=a.cells[col].textContent,y=b.cells[col].textContent,nx=parseFloat(x),ny=parseFloat(y);
        var c=(!isNaN(nx)&&!isNaN(ny))?nx-ny:x.localeCompare(y);return asc?c:-c;});
      rows.forEach(function(r){body.appendChild(r);});
    });
  });
});
document.getElementById('status').textContent='loaded';
)";

}  // namespace

std::string to_html(const SearchReport& r, const std::vector<Plan>& plans) {
  const Subject& s = r.subject;
  std::string out = "<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>sapp: " + html_escape(s.model) + " on " + std::to_string(s.devices) + " x " +
                    html_escape(s.hardware_name) + "</title><style>" + kStyle + "</style></head><body>";
  out += fmt::format(
      "<h1>{} on {} x {}</h1><p>Global batch {} sequences of {} tokens; {:.2f} GiB per device. {} candidates, {} fit; {:.2f} s on {} thread(s).</p>",
      html_escape(s.model), s.devices, html_escape(s.hardware_name), s.global_batch, s.seq, s.capacity_bytes / kGiB, r.evaluated, r.fitting, r.seconds,
      r.threads);
  out += plans_html(plans);
  out += "<h2>Ranked layouts</h2><p>Click a column to sort. Twins: layouts of the same step time and peak memory folded into one row.</p>" + table_html(r);
  out +=
      "<h2>Step time against peak memory</h2><p>Every fitting candidate, binned (a dot's size grows with the layouts in it); the Pareto front (no other "
      "layout is both faster and smaller) in orange; rank 1 circled.</p>" +
      scatter_svg(r);
  out += "<h2>Rejections per rule</h2>" + rejections_svg(r);
  if (!r.rows.empty()) {
    const SearchRow& best = r.rows.front();
    out += "<h2>Memory per stage of rank 1</h2><p>" + html_escape(best.candidate.layout.describe()) + "</p>" + stage_memory_svg(best.memory);
    out += "<h2>Step time of rank 1</h2>" + breakdown_svg(best.candidate.time);
  }
  out += std::string("<p id=status>not loaded</p><script>") + kScript + "</script></body></html>\n";
  return out;
}

}  // namespace sapp::report
