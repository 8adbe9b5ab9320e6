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

std::string to_html(const SearchReport& search, const std::vector<Plan>& plans = {});

// Escapes &, <, >, " and ' for HTML text and attributes.
std::string html_escape(const std::string& text);

}  // namespace sapp::report
