#include "report/report.hpp"

#include <fmt/format.h>

namespace sapp::io {

using nlohmann::json;

std::string gib(double bytes) { return fmt::format("{:.2f}", bytes / 1073741824.0); }

json layout_json(const plan::Layout& l) {
  return json{{"dp", l.dp},
              {"tp", l.tp},
              {"sp", l.sp},
              {"pp", l.pp},
              {"vpp", l.vpp},
              {"cp", l.cp},
              {"cp_algo", to_string(l.cp_algo)},
              {"ep", l.ep},
              {"etp", l.etp},
              {"micro_batch_size", l.mbs},
              {"micro_batches", l.micro_batches},
              {"zero", l.zero},
              {"optimizer_shard", l.optimizer_shard},
              {"recompute", to_string(l.recompute)}};
}

json memory_json(const model::Model& model, const plan::Layout& layout, const cost::MemoryEstimate& est) {
  model::ParamCounts p = model.params();
  json stages = json::array();
  for (const auto& s : est.stages) {
    stages.push_back(json{{"stage", s.stage},
                          {"layers", s.layers},
                          {"memory_bytes",
                           {{"params", s.params},
                            {"grads", s.grads},
                            {"optimizer", s.optimizer},
                            {"activations", s.activations},
                            {"buffers", s.buffers},
                            {"reserve", s.reserve},
                            {"optimizer_step", s.optimizer_step},
                            {"total", s.total()}}}});
  }
  return json{
      {"model", model.spec.name},
      {"arch", model.spec.arch},
      {"params",
       {{"total", p.total}, {"active", p.active}, {"embedding", p.embedding}, {"head", p.head}, {"layers", p.layers}, {"mtp", p.mtp}, {"vision", p.vision}}},
      {"layout", layout_json(layout)},
      {"stages", stages},
      {"peak_memory_bytes", est.peak_bytes},
      {"peak_stage", est.peak_stage},
      {"capacity_bytes", est.capacity_bytes},
      {"fits", est.fits()}};
}

std::string memory_table(const model::Model& model, const plan::Layout& layout, const cost::MemoryEstimate& est, const std::string& hw) {
  model::ParamCounts p = model.params();
  std::string out = fmt::format("{} ({}): {:.2f} B parameters, {:.2f} B active\n", model.spec.name, model.spec.arch, p.total / 1e9, p.active / 1e9);
  out += fmt::format("layout: {}\n", layout.describe());
  out += fmt::format("{:>5} {:>6} {:>9} {:>9} {:>9} {:>11} {:>9} {:>9} {:>9}   (GiB per device)\n", "stage", "layers", "params", "grads", "optimizer",
                     "activations", "buffers", "reserve", "total");
  for (const auto& s : est.stages) {
    out += fmt::format("{:>5} {:>6} {:>9} {:>9} {:>9} {:>11} {:>9} {:>9} {:>9}{}\n", s.stage, s.layers, gib(s.params), gib(s.grads), gib(s.optimizer),
                       gib(s.activations), gib(s.buffers), gib(s.reserve), gib(s.total()), s.stage == est.peak_stage ? "  <- peak" : "");
  }
  out += fmt::format("peak {} GiB on stage {} of {} GiB ({}): {}\n", gib(est.peak_bytes), est.peak_stage, gib(est.capacity_bytes), hw,
                     est.fits() ? "fits" : "DOES NOT FIT");
  const cost::StageMemory& peak = est.stages.at(static_cast<std::size_t>(est.peak_stage));
  if (peak.optimizer_step > peak.activations + peak.buffers) {
    out += fmt::format("stage {} peaks in the optimizer step: its fp32 gradient copy ({} GiB) outweighs activations + buffers ({} GiB)\n", peak.stage,
                       gib(peak.optimizer_step), gib(peak.activations + peak.buffers));
  }
  return out;
}

}  // namespace sapp::io
