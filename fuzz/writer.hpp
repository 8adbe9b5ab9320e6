// Shared by the framework-config fuzz targets: the input is read as the format; a file that reads is then edited by
// that format's writer with a fixed plan (as `--emit` edits a user's file in place) and the written text read again.
// Each step may refuse only with sapp::Error; any other exception, a crash, a leak or undefined behaviour is a finding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "config/config.hpp"
#include "core/error.hpp"

namespace sapp::fuzz {

inline int read_and_write_back(const std::uint8_t* data, std::size_t size, config::EmitFormat emit) {
  const config::Format format = config::format_of(emit);
  std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const config::Loaded loaded = config::read_text(text, "fuzz", format);
    // TP 2 with SP, PP 2 and DP 2 on 8 devices, 8 micro-batches of one sequence, ZeRO 1; for a MindSpeed-LLM FSDP2
    // launch (read by the Megatron reader), what its trainer runs: DP 8, ZeRO 3, and its own writer.
    const bool fsdp2 = loaded.dialect == config::kMindSpeedFsdp2Dialect;
    config::Plan plan;
    plan.layout.tp = fsdp2 ? 1 : 2;
    plan.layout.sp = !fsdp2;
    plan.layout.pp = fsdp2 ? 1 : 2;
    plan.layout.dp = fsdp2 ? 8 : 2;
    plan.layout.zero = fsdp2 ? 3 : 1;
    plan.layout.micro_batches = fsdp2 ? 2 : 8;
    plan.devices = 8;
    plan.global_batch = 16;
    plan.seq = 2048;
    const auto layers = loaded.model_config.is_object() ? loaded.model_config.find("num_hidden_layers") : loaded.model_config.end();
    plan.num_layers = layers != loaded.model_config.end() && layers->is_number_integer() ? layers->get<long long>() : 4;
    // A Megatron-Bridge YAML (read by the Megatron reader) through its own writer too.
    const bool bridge = loaded.dialect == config::kMegatronBridgeDialect;
    const config::EmitFormat writer = fsdp2 ? config::EmitFormat::MindSpeedFsdp2 : bridge ? config::EmitFormat::MegatronBridge : emit;
    const std::string written = config::emit(writer, plan, &loaded, "fuzz");
    (void)config::read_text(written, "fuzz-written", format);
  } catch (const Error&) {
  }
  return 0;
}

}  // namespace sapp::fuzz
