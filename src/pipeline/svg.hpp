// simulate/svg: draws a simulated schedule as SVG: one row per stage (blocks coloured by kind, shaded by chunk,
// labelled with the micro-batch), above the per-stage memory curves with the memory limit as a dashed line; time
// axes with round ticks under both, memory ticks, and a legend naming each stage's curve colour and peak.
#pragma once

#include <string>

#include "pipeline/schedule.hpp"

namespace sapp::simulate {

struct SvgOptions {
  std::string title;
  std::string summary;      // a line under the title (step time, bubbles)
  double memory_limit = 0;  // drawn when > 0
  std::string memory_unit = "MB";
  std::string time_unit = "time units";
};

std::string render_svg(const SimResult& result, int chunks, const SvgOptions& options);

}  // namespace sapp::simulate
