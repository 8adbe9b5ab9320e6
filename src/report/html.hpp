// report/html: one self-contained HTML page for a search (and, when given, the balanced plans of a `plan`
// run): no network, no server; inline SVG for the charts and a few lines of inline script for sorting the
// table. Sections: the ranked layouts (sortable), step time against peak memory for every fitting candidate
// with the Pareto front marked, rejection counts per rule, the chosen layout's per-stage memory against
// capacity, its step-time breakdown, and (with plans) the balanced pipeline timeline with memory curves.
#pragma once

#include <string>
#include <vector>

#include "report/report.hpp"

namespace sapp::report {

// A pipeline stage of a balanced plan, for the page.
struct PlanStageView {
  int stage = 0;
  std::vector<long long> layers;  // per chunk
  std::string recompute;          // e.g. "full 2, selective 1"
  double peak_memory_bytes = 0;
  double time_s = 0;  // one micro-batch, all chunks
};

// A plan as the page shows it: its layout, times and stages, and its timeline drawn as SVG.
struct PlanView {
  plan::Layout layout;
  double step_time_s = 0;
  double even_step_time_s = 0;  // the same layout with an even split (the search's estimate)
  double peak_memory_bytes = 0;
  bool fits = true;
  bool balanced = false;  // false: PP 1, the estimate is kept
  std::string status;     // "proved optimal", "best found, gap 3.1 %", ...
  std::vector<PlanStageView> stages;
  std::string timeline_svg;  // empty when there is no pipeline
};

std::string to_html(const SearchReport& search, const std::vector<PlanView>& plans = {});

// Escapes &, <, >, " and ' for HTML text and attributes.
std::string html_escape(const std::string& text);

}  // namespace sapp::report
