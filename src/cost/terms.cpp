#include "cost/terms.hpp"

#include <algorithm>
#include <array>

#include <fmt/ranges.h>

#include "core/error.hpp"
#include "core/files.hpp"
#include "core/units.hpp"

namespace sapp::cost::terms {

namespace {

// One profile: `defaults` (data/frameworks.yaml), then what the profile states.
FrameworkProfile profile_from(const nlohmann::json& defaults, const nlohmann::json& stated, const std::string& file, const std::string& name) {
  static const std::vector<std::string> keys = {"source",
                                                "overlap",
                                                "runtime_gib",
                                                "fragmentation",
                                                "loss_fused",
                                                "logits_whole_over_tp",
                                                "param_bytes",
                                                "grad_bytes",
                                                "optimizer_bytes",
                                                "fp8_grad_bytes",
                                                "gather_bytes",
                                                "fp8_transformer_engine",
                                                "fp8_param_gather",
                                                "zero3_gathers_once_with_pp",
                                                "cp_kv_gathered_once",
                                                "cp_kv_repeated",
                                                "zero2_keeps_weights_sharded",
                                                "zero3_gathers_once_per_step",
                                                "optimizer_casts_per_parameter",
                                                "selective_modules"};
  io::Reader base{defaults, file, "defaults"};
  io::Reader own{stated, file, "profiles." + name};
  base.only(keys);
  own.only(keys);
  // The profile's value of `key` when it states one, else the default's.
  auto pick = [&](const std::string& key) -> const io::Reader& { return own.has(key) ? own : base; };
  auto fraction = [&](const io::Reader& rd, const std::string& key, double fallback) {
    const double v = rd.number_or(key, fallback);
    if (v < 0 || v > 1) rd.bad(key, "a fraction from 0 to 1");
    return v;
  };
  auto bytes = [&](const std::string& key) {
    const double v = pick(key).number(key);
    if (v < 0 || v > 64) pick(key).bad(key, "bytes per element, 0 to 64");
    return v;
  };
  FrameworkProfile p;
  p.name = name;
  p.source = own.string("source");
  for (const io::Reader* rd : {&base, &own}) {
    if (rd->has("overlap")) read_overlap(rd->child("overlap"), p.overlap);
  }
  p.runtime_bytes = pick("runtime_gib").number("runtime_gib") * 1073741824.0;
  if (p.runtime_bytes < 0) pick("runtime_gib").bad("runtime_gib", "GiB, at least 0");
  p.fragmentation = fraction(pick("fragmentation"), "fragmentation", 0.0);
  p.loss_fused = pick("loss_fused").boolean("loss_fused");
  p.logits_whole_over_tp = pick("logits_whole_over_tp").boolean("logits_whole_over_tp");
  p.param_bytes = bytes("param_bytes");
  p.grad_bytes = bytes("grad_bytes");
  p.optimizer_bytes = bytes("optimizer_bytes");
  p.fp8_grad_bytes = bytes("fp8_grad_bytes");
  p.gather_bytes = bytes("gather_bytes");
  p.fp8_transformer_engine = pick("fp8_transformer_engine").boolean("fp8_transformer_engine");
  p.fp8_param_gather = pick("fp8_param_gather").boolean("fp8_param_gather");
  p.zero3_gathers_once_with_pp = pick("zero3_gathers_once_with_pp").boolean("zero3_gathers_once_with_pp");
  p.cp_kv_gathered_once = pick("cp_kv_gathered_once").boolean("cp_kv_gathered_once");
  p.cp_kv_repeated = pick("cp_kv_repeated").boolean("cp_kv_repeated");
  p.zero2_keeps_weights_sharded = pick("zero2_keeps_weights_sharded").boolean("zero2_keeps_weights_sharded");
  p.zero3_gathers_once_per_step = pick("zero3_gathers_once_per_step").boolean("zero3_gathers_once_per_step");
  p.optimizer_casts_per_parameter = pick("optimizer_casts_per_parameter").boolean("optimizer_casts_per_parameter");
  const io::Reader& modules = pick("selective_modules");
  const nlohmann::json& list = modules.node.at("selective_modules");
  if (!list.is_array()) modules.bad("selective_modules", "a list of recompute module names");
  for (const auto& m : list) {
    if (!m.is_string()) modules.bad("selective_modules", "a list of recompute module names");
    p.selective_modules.push_back(m.get<std::string>());
  }
  try {
    (void)recompute_switches(p.selective_modules);
  } catch (const Error& e) {
    modules.bad("selective_modules", e.what());
  }
  return p;
}

const std::vector<FrameworkProfile>& profiles() {
  static const std::vector<FrameworkProfile> p = load_framework_profiles(io::data_dir() + "/frameworks.yaml");
  return p;
}

// (device id, precision) pairs with measured runs in validation/runs.yaml, and whether their held-out step-time
// errors meet the target (median <= 8 %). Figures as scripts/validation_report.sh printed them; the flag is
// checked against the runs by Validation.ValidatedFlagAgreesWithTheRunsOfEachDeviceAndPrecision.
struct ValidatedPair {
  const char* device;
  const char* precision;  // precision_name's
  bool validated;
  const char* runs;
};
constexpr std::array<ValidatedPair, 18> kValidated = {{
    {"ascend-910b", "BF16", true,
     "one held-out BF16 run in validation/runs.yaml (MindSpeed-LLM Qwen3-30B-A3B on 16 Atlas 800T A2 NPUs, +4.1 %): a single run, the "
     "efficiencies are priors"},
    {"ascend-910c", "BF16", true,
     "2 held-out BF16 runs in validation/runs.yaml, median 4.9 %: MindSpeed-LLM Qwen3-8B on 16 A3 dies -0.7 %, DeepSeek-V3 on 512 dies "
     "+9.0 % (its published throughput read per 910C chip, two dies; its --moe-fb-overlap priced as the EP all-to-all overlapped, its "
     "dualpipev as DualPipe-V): two runs, the efficiencies are priors"},
    {"a100-80g", "BF16", true, "Narayanan et al. 2021 Table 1 (fp16, 10 held-out runs, median 6 %)"},
    {"h100-sxm", "FP8", true,
     "30 held-out FP8 runs in validation/runs.yaml, median 5.2 %: NeMo 24.07 / 24.12 dense runs within 8 % (Nemotron-3 8B / 22B and "
     "Nemotron-4 340B -4.5, -5.2, -7.8 %), NeMo 24.03 Llama 2 7B from 4k to 512k over CP up to 16 within -1.2 to +5.2 %, Megatron-Bridge "
     "25.11 dense -0.1 % and -15.4 %; MLPerf Training v5.0 Llama 3.1 405B on 512 to 8192 GPUs -10.9 % to -4.9 %, v4.1 GPT-3 175B +9.2 % "
     "and +11.5 %; Megatron-Bridge FP8 MoE runs off by 2-12 % (Nemotron 3 Nano -2.5 %); the 2025-2026 runs priced with cuDNN 9.19's "
     "attention (docs/validation.md, 'Attention kernels by software release')"},
    {"h100-sxm", "BF16", false,
     "21 held-out BF16 H100 runs in validation/runs.yaml, median 8.8 %: the Megatron-Core MoE team's Qwen3-235B-A22B layouts on 256 "
     "(Megatron-MoE-ModelZoo) -42 % to +35 % at 4k and -6.4 % to +4.8 % at 16k-128k (with cuDNN 9.19's attention, as their 2025 "
     "containers ran; +26 % to +53 % at 2024's fitted rate); NeMo AutoModel LoRA Llama 3.1 8B +2.2 %, Qwen2.5 7B +7.3 %, "
     "Llama 3.3 70B on 16 -22 %; AutoModel pre-training Qwen3-30B-A3B +35 %, Nemotron 3 Nano +27 %, DeepSeek-V3 +5.5 % (256) and -8.8 % "
     "(1024), Kimi K2 -8.1 %, Llama3-70B +7.5 %; Megatron-Bridge GPT-OSS-120B -13 %; Megatron-Core r0.8.0 GPT 1.7B -17.5 %, 7.1B -15.1 %; "
     "the BF16 GEMM efficiency is a prior (0.69), not fitted"},
    {"b200", "FP8", true,
     "10 held-out B200 FP8 runs in validation/runs.yaml, median 7.5 %: NeMo 25.02 dense -7.7 % to +0.0 %, Megatron-Bridge MXFP8 MoE -19.6 % "
     "to +7.4 %, NeMo Mixtral +10.4 % and -19.3 % (64k); the FP8 efficiencies were fitted on two Megatron-Bridge 25.11 dense MXFP8 runs"},
    {"b200", "BF16", false,
     "two B200 BF16 runs (Megatron-Bridge GPT-OSS-120B: 26.04 EP8 -28 %, 26.02 EP64 over 8 nodes -1.1 %); the BF16 GEMM efficiency is "
     "the FP8 fit's times Transformer Engine's published B300 BF16 / MXFP8 kernel ratio (1.093)"},
    {"gb200", "FP8", true,
     "10 held-out GB200 FP8 runs in validation/runs.yaml, median 3.6 %, priced with B200's efficiencies and cuDNN 9.19's attention: "
     "Megatron-Core's DeepSeek-V3 study (MXFP8, EP 32, its launch script) -3.8 %, the Megatron-Core MoE team's Qwen3-235B-A22B at 128k "
     "over CP 4 +2.2 %; Megatron-Bridge dense Llama 3 8B (25.11) -2.2 %, Llama 3 70B and 3.1 405B (26.04) +0.2 % and -1.0 % (MXFP8), "
     "3.1 405B +5.6 % (per-tensor FP8); 26.04 MoE Qwen3-30B-A3B -9.1 %, Qwen3-235B-A22B +3.5 %, DeepSeek-V3 +5.9 %, Nemotron 3 Nano "
     "-25.0 %"},
    {"gb200", "BF16", false,
     "two GB200 BF16 runs (Megatron-Bridge 26.04 GPT-OSS-120B -30 %; the Megatron-Core MoE team's Qwen3-235B-A22B on 256, "
     "Megatron-MoE-ModelZoo, +5.0 %); the BF16 GEMM efficiency is B200's, its FP8 fit's times Transformer Engine's B300 kernel ratio"},
    {"gb300", "FP8", true,
     "8 held-out GB300 FP8 runs in validation/runs.yaml, median 4.5 %, with cuDNN 9.19's published GB300 attention: Megatron-Bridge "
     "26.04 Llama 3.1 405B -0.1 % (MXFP8) and +5.2 % (per-tensor FP8), MoE Qwen3-30B-A3B -7.4 %, Qwen3-235B-A22B +3.8 % (the "
     "Megatron-Core MoE team's on 64 at EP 64 -16.7 %), DeepSeek-V3 +3.7 %, Kimi K2 -2.1 %, Nemotron 3 Nano -27.8 %; the FP8 "
     "efficiencies were fitted on two dense Megatron-Bridge GB300 MXFP8 runs (Llama 3 8B, 70B)"},
    {"gb300", "BF16", false,
     "one GB300 BF16 run (Megatron-Bridge 26.04 GPT-OSS-120B, -19 %); the BF16 GEMM efficiency is the FP8 fit's times Transformer "
     "Engine's published B300 BF16 / MXFP8 kernel ratio (1.093)"},
    {"gb200", "NVFP4", true,
     "4 held-out GB200 NVFP4 runs in validation/runs.yaml, median 5.3 % (Megatron-Bridge 26.04 Llama 3 70B -10.0 %, Llama 3.1 405B "
     "-5.3 %; MLPerf Training v5.1 Llama 3.1 405B on 512 +2.8 %, Llama 3.1 8B on 8 +5.2 % with its FP8 attention priced in BF16 at cuDNN "
     "9.19's rate): "
     "nothing fitted on NVFP4, its GEMM rate is Transformer Engine's B300 kernel ratio over MXFP8 (1.90) times the FP8 one"},
    {"gb300", "NVFP4", true,
     "3 held-out GB300 NVFP4 runs in validation/runs.yaml, median 6.4 % (Megatron-Bridge 26.04 Llama 3 70B +12.5 %, Llama 3.1 405B "
     "-6.4 %; MLPerf Training v5.1 Llama 3.1 405B on 512 +0.9 %): nothing fitted on NVFP4, its GEMM rate is Transformer Engine's B300 "
     "kernel ratio over MXFP8 (1.90) times the FP8 one; three runs"},
    {"b300", "FP8", false,
     "3 held-out B300 MXFP8 MoE runs in validation/runs.yaml, median 15.5 % (Megatron-Bridge 26.04: Qwen3-235B-A22B -0.7 %, DeepSeek-V3 "
     "PP16 -15.5 %, Nemotron 3 Nano -25.7 %), priced with GB300's efficiencies times 0.944, fitted on its Qwen3-30B-A3B run: three runs of "
     "one release, no dense run"},
    {"b300", "BF16", false,
     "two B300 BF16 runs (Megatron-Bridge GPT-OSS-120B: 26.04 EP8 -35 %, 26.02 EP64 over 8 nodes -34 %); the BF16 GEMM efficiency is the "
     "FP8 fit's times Transformer Engine's published B300 BF16 / MXFP8 kernel ratio (1.093)"},
    {"h200", "FP8", false,
     "2 held-out H200 float8 runs in validation/runs.yaml (torchtitan Llama 3.1 8B FSDP on 32 and 64 H200, June 2025), median 9.1 %: -8.3 % "
     "and -9.9 %; H200's efficiencies are priors, fitted on no run"},
    {"h100-96g", "BF16", false,
     "8 held-out torchtitan BF16 runs at the 500 W power limit in validation/runs.yaml, median 8.0 %: Llama 3.1 8B FSDP8 / FSDP128, eager "
     "and compiled, -5.0 % to -8.5 %; 70B FSDP32 x TP8 -4.9 % (async TP -14.1 %); 8B FSDP8 x TP8 -19.8 % (async TP -29.8 %): too fast "
     "where TP 8 leaves an 8B model's GEMMs 512 to 1792 wide; the peak is the H100 NVL's, the lower end of the bracket torchtitan gives"},
    {"h100-96g", "FP8", false,
     "torchtitan Float8 runs at a 500 W power limit in validation/runs.yaml (16 runs, median 10.1 %): Llama 3.1 8B FSDP +6 % / +8 %, "
     "FSDP8 x TP8 -15 % (async TP -27 %), 70B 2D +9 % (async TP -9 %), 405B 3D / 4D -0.2 % to -16 %, 8B at 32k to 256k (CP 1 to 8) +13 % "
     "to -19 %; torchao's Float8 casts, the CP ring's per-step kernels and the 500 W clock are not modelled"},
}};

struct ModuleSwitches {
  const char* module;
  std::vector<std::string> switches;
};
const std::vector<ModuleSwitches>& module_table() {
  static const std::vector<ModuleSwitches> t = {
      {"core_attn", {"core_attn"}},
      {"mla_up_proj", {"attn_up"}},
      {"moe_act", {"act"}},
      {"layernorm", {"norm"}},
      {"mlp", {"mlp", "ffn_up", "dense_act"}},
      {"moe", {"moe", "act", "shared"}},
      {"shared_experts", {"shared"}},
      {"torchtitan_op_sac", {"core_attn", "norm", "dense_act", "act", "k_proj", "ffn_up"}},
      {"hyperparallel_selective", {"core_attn", "norm", "dense_act", "act"}},
  };
  return t;
}
constexpr std::array<const char*, 11> kSwitches = {"core_attn", "attn_up", "act", "norm", "dropout", "mlp", "moe", "shared", "dense_act", "k_proj", "ffn_up"};

}  // namespace

std::vector<std::string> recompute_switches(const std::vector<std::string>& modules) {
  std::vector<std::string> out;
  auto add = [&](const std::string& sw) {
    if (std::find(out.begin(), out.end(), sw) == out.end()) out.push_back(sw);
  };
  for (const auto& m : modules) {
    bool found = false;
    for (const auto& row : module_table()) {
      if (m == row.module) {
        for (const auto& sw : row.switches) add(sw);
        found = true;
      }
    }
    for (const char* sw : kSwitches) {
      if (!found && m == sw) {
        add(sw);
        found = true;
      }
    }
    if (!found) {
      std::string known;
      for (const auto& row : module_table()) known += std::string(known.empty() ? "" : ", ") + row.module;
      throw Error("recompute_modules: expected a module (" + known + ") or an op-record switch, got '" + m + "'");
    }
  }
  return out;
}

std::vector<std::string> recompute_switches(const nlohmann::json& stated, const std::string& where) {
  std::vector<std::string> modules;
  if (stated.is_string()) {
    for (const std::string& m : io::split_commas(stated.get<std::string>())) modules.push_back(io::trim(m));
  } else {
    for (const nlohmann::json& m : io::one_or_many(stated, where, "an empty list recomputes nothing; leave it out instead")) {
      if (!m.is_string()) fail(where, "expected module names, got {}", m.dump());
      modules.push_back(m.get<std::string>());
    }
  }
  try {
    return recompute_switches(modules);
  } catch (const Error& e) {
    fail(where, "{}", e.what());
  }
}

// The profiles of data/frameworks.yaml, by name.
std::vector<FrameworkProfile> load_framework_profiles(const std::string& file) {
  const nlohmann::json tree = io::read_tree(file);
  io::Reader top{tree, file, ""};
  top.only({"defaults", "profiles"});
  if (!tree.contains("defaults") || !tree.at("defaults").is_object()) top.bad("defaults", "a mapping of every profile key");
  if (!tree.contains("profiles") || !tree.at("profiles").is_object() || tree.at("profiles").empty()) top.bad("profiles", "a mapping of named profiles");
  std::vector<FrameworkProfile> out;
  for (const auto& [name, stated] : tree.at("profiles").items()) {
    if (!stated.is_object()) top.bad("profiles." + name, "a mapping of profile keys");
    out.push_back(profile_from(tree.at("defaults"), stated, file, name));
  }
  return out;
}

const FrameworkProfile& framework_profile(const std::string& name, const std::string& where) {
  for (const auto& p : profiles())
    if (p.name == name) return p;
  fail(where, "'{}' is not a known framework; known: {}", name, fmt::join(framework_names(), ", "));
}

void apply_profile(const FrameworkProfile& profile, plan::Training& training) {
  training.reserve_bytes = profile.runtime_bytes;
  training.activation_fragmentation = profile.fragmentation;
  training.loss_fused = profile.loss_fused;
  training.logits_whole_over_tp = profile.logits_whole_over_tp;
  training.param_bytes = profile.param_bytes;
  training.grad_bytes = profile.grad_bytes;
  training.optimizer_bytes = profile.optimizer_bytes;
  training.fp8_grad_bytes = profile.fp8_grad_bytes;
  training.fp8_transformer_engine = profile.fp8_transformer_engine;
  training.fp8_param_gather = profile.fp8_param_gather;
  training.gather_bytes = profile.gather_bytes;
  training.zero3_gathers_once_with_pp = profile.zero3_gathers_once_with_pp;
  training.cp_kv_gathered_once = profile.cp_kv_gathered_once;
  training.cp_kv_repeated = profile.cp_kv_repeated;
  training.zero2_keeps_weights_sharded = profile.zero2_keeps_weights_sharded;
  training.zero3_gathers_once_per_step = profile.zero3_gathers_once_per_step;
  training.optimizer_casts_per_parameter = profile.optimizer_casts_per_parameter;
  training.recompute_modules = profile.selective_modules.empty() ? std::vector<std::string>{} : recompute_switches(profile.selective_modules);
}

namespace {
// Piecewise-linear through (kFlashHeadDims, tflops), flat outside.
double head_dim_tflops(const double (&tflops)[3], double head_dim) {
  const auto& d = kFlashHeadDims;
  if (head_dim <= d[0]) return tflops[0];
  for (std::size_t i = 1; i < 3; ++i) {
    if (head_dim <= d[i]) return tflops[i - 1] + (tflops[i] - tflops[i - 1]) * (head_dim - d[i - 1]) / (d[i] - d[i - 1]);
  }
  return tflops[2];
}
}  // namespace

double attention_kernel_rate(plan::AttentionKernel kernel, double head_dim) {
  if (kernel == plan::AttentionKernel::TorchSdpa)
    return kTorchSdpaAttentionRate * head_dim_tflops(kFlash2AttentionTflops, head_dim) / kFlash2AttentionTflops[1];
  return head_dim_tflops(kCudnnAttentionTflops, head_dim) / kCudnnAttentionTflops[1];
}

double cudnn919_attention_efficiency(const hardware::Hardware& hw, double keys_per_call, double head_dim) {
  const hardware::Efficiency& e = hw.efficiency;
  if (e.attention_cudnn919 <= 0 || e.attention_cudnn919_half_keys <= 0)
    fail(hw.label(),
         "states no published cuDNN 9.19 attention rate (efficiency.attention_cudnn919 and attention_cudnn919_half_keys); price "
         "--attention-kernel fused or torch_sdpa on it, or state the pair in its file");
  const double keys = std::max(keys_per_call, 1.0);
  return e.attention_cudnn919 * keys / (keys + e.attention_cudnn919_half_keys) * attention_kernel_rate(plan::AttentionKernel::Fused, head_dim);
}

plan::AttentionKernel resolved_attention_kernel(plan::AttentionKernel kernel, const hardware::Hardware& hw) {
  if (kernel != plan::AttentionKernel::Auto) return kernel;
  const hardware::Efficiency& e = hw.efficiency;
  return e.attention_cudnn919 > 0 && e.attention_cudnn919_half_keys > 0 ? plan::AttentionKernel::Cudnn919 : plan::AttentionKernel::Fused;
}

plan::AttentionKernel parse_attention_kernel(const std::string& name, const std::string& where) {
  if (name == "auto") return plan::AttentionKernel::Auto;
  if (name == "fused") return plan::AttentionKernel::Fused;
  if (name == "torch_sdpa") return plan::AttentionKernel::TorchSdpa;
  if (name == "cudnn9.19") return plan::AttentionKernel::Cudnn919;
  fail(where,
       "expected auto (today's cuDNN: cudnn9.19 where the device states its rate, else fused), fused (cuDNN through "
       "Transformer Engine, the devices' fitted rate), torch_sdpa (torch.nn.functional.scaled_dot_product_attention) or "
       "cudnn9.19 (cuDNN 9.19's published rate), got '{}'",
       name);
}

std::string to_string(plan::AttentionKernel kernel) {
  switch (kernel) {
    case plan::AttentionKernel::TorchSdpa: return "torch_sdpa";
    case plan::AttentionKernel::Cudnn919: return "cudnn9.19";
    case plan::AttentionKernel::Auto: return "auto";
    case plan::AttentionKernel::Fused: break;
  }
  return "fused";
}

std::vector<std::string> framework_names() {
  std::vector<std::string> out;
  for (const auto& p : profiles()) out.push_back(p.name);
  return out;
}

std::string precision_name(const plan::Training& training) {
  switch (training.gemm_precision()) {
    case plan::Training::Gemm::Bf16: return "BF16";
    case plan::Training::Gemm::Fp8: return "FP8";
    case plan::Training::Gemm::Fp4: return "NVFP4";
  }
  return "BF16";
}

Validity validated(const hardware::Hardware& hw, const std::string& precision) {
  for (const auto& v : kValidated) {
    if (hw.id == v.device && v.precision == precision) return {v.validated, v.runs};
  }
  return {false, "no measured " + precision + " run on " + hw.label() + " in validation/runs.yaml: its efficiency factors are priors, not fitted or checked"};
}

}  // namespace sapp::cost::terms

namespace sapp::cost {

void read_overlap(const io::Reader& map, Overlap& into) {
  map.only({"tp", "dp", "ep", "cp", "pp", "pp_1f1b"});
  for (auto [key, value] : {std::pair{"tp", &into.tp}, {"dp", &into.dp}, {"ep", &into.ep}, {"cp", &into.cp}, {"pp", &into.pp}, {"pp_1f1b", &into.pp_1f1b}}) {
    if (map.has(key)) *value = map.quantity(key, units::kOverlap);
  }
}

}  // namespace sapp::cost
