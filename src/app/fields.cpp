// The option tables of every request (estimate, search, plan, balance, decompose, guide, calibrate), and how a JSON
// value is checked into a field.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <set>

#include <fmt/format.h>

#include "app/request.hpp"
#include "core/error.hpp"
#include "core/files.hpp"
#include "core/units.hpp"
#include "cost/terms.hpp"

namespace sapp::app {

using nlohmann::json;

std::string where_of(Source source, const std::string& key, const std::string& file) {
  switch (source) {
    case Source::CommandLine: {
      std::string option = "--" + key;
      std::replace(option.begin(), option.end(), '_', '-');
      return option;
    }
    case Source::File: return at(file, key);
    case Source::Python: return key;
  }
  return key;
}

namespace {

// A whole number in [lowest, highest], from a JSON integer, an integral JSON float, or text (the command line).
long long whole(const json& v, const std::string& where, long long lowest, long long highest, const char* unit) {
  long long out = 0;
  if (v.is_boolean()) fail(where, "{} is not a whole number of {}", v.dump(), unit);
  if (v.is_number_integer()) {
    if (v.is_number_unsigned() && v.get<unsigned long long>() > static_cast<unsigned long long>(highest))
      fail(where, "{} is above the limit of {} {}", v.dump(), highest, unit);
    out = v.get<long long>();
  } else if (v.is_number_float()) {
    double d = v.get<double>();
    if (!std::isfinite(d) || d != std::floor(d)) fail(where, "{} is not a whole number of {}", v.dump(), unit);
    if (d > static_cast<double>(highest)) fail(where, "{} is above the limit of {} {}", v.dump(), highest, unit);
    if (d < static_cast<double>(lowest)) fail(where, "{} is below the minimum of {} {}", v.dump(), lowest, unit);
    out = static_cast<long long>(d);
  } else if (v.is_string()) {
    std::string t = io::trim(v.get<std::string>());
    if (t.empty() || t.find_first_not_of("0123456789") != std::string::npos) {
      if (!t.empty() && t[0] == '-' && t.size() > 1 && t.find_first_not_of("0123456789", 1) == std::string::npos)
        fail(where, "{} is below the minimum of {} {}", t, lowest, unit);
      fail(where, "'{}' is not a whole number of {}", t, unit);
    }
    auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), out);
    if (ec == std::errc::result_out_of_range || out > highest) fail(where, "{} is above the limit of {} {}", t, highest, unit);
    if (ec != std::errc() || end != t.data() + t.size()) fail(where, "'{}' is not a whole number of {}", t, unit);
  } else {
    fail(where, "{} is not a whole number of {}", v.dump(), unit);
  }
  if (out < lowest) fail(where, "{} is below the minimum of {} {}", out, lowest, unit);
  if (out > highest) fail(where, "{} is above the limit of {} {}", out, highest, unit);
  return out;
}

int degree(const json& v, const std::string& where, long long lowest = 1) { return static_cast<int>(whole(v, where, lowest, kMaxDegree, "(a degree)")); }

// A finite number in [lowest, highest].
double real(const json& v, const std::string& where, double lowest, double highest, const char* unit) {
  double out = 0;
  if (v.is_number() && !v.is_boolean()) {
    out = v.get<double>();
  } else if (v.is_string()) {
    std::string t = io::trim(v.get<std::string>());
    char* end = nullptr;
    errno = 0;
    out = std::strtod(t.c_str(), &end);
    if (t.empty() || end != t.c_str() + t.size()) fail(where, "'{}' is not a number ({})", t, unit);
    if (errno == ERANGE && std::fabs(out) > 1.0) fail(where, "{} is out of range ({} to {} {})", t, lowest, highest, unit);
  } else {
    fail(where, "{} is not a number ({})", v.dump(), unit);
  }
  if (!std::isfinite(out)) fail(where, "{} is not a finite number ({})", v.is_string() ? v.get<std::string>() : v.dump(), unit);
  if (out < lowest || out > highest) fail(where, "{:g} is out of range: expected {:g} to {:g} {}", out, lowest, highest, unit);
  return out;
}

bool truth(const json& v, const std::string& where) {
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_string()) {
    std::string t = io::lower(io::trim(v.get<std::string>()));
    if (t == "true" || t == "on" || t == "yes" || t == "1") return true;
    if (t == "false" || t == "off" || t == "no" || t == "0") return false;
  }
  fail(where, "{} is not true or false", v.dump());
}

std::string text(const json& v, const std::string& where) {
  if (!v.is_string()) fail(where, "{} is not text", v.dump());
  return v.get<std::string>();
}

std::string choice(const json& v, const std::string& where, const std::vector<std::string>& allowed) {
  std::string t = v.is_boolean() ? (v.get<bool>() ? "on" : "off") : text(v, where);
  if (std::find(allowed.begin(), allowed.end(), t) == allowed.end()) fail(where, "'{}' is not one of {}", t, fmt::join(allowed, ", "));
  return t;
}

// A search dimension: "auto", one value, "1,2,4", or a list.
search::Dim dimension(const json& v, const std::string& where, int lowest = 1, int highest = static_cast<int>(kMaxDegree)) {
  if (v.is_number_integer() && !v.is_boolean()) return std::vector<int>{static_cast<int>(whole(v, where, lowest, highest, "(a degree)"))};
  return search::dim_from_json(v, where, lowest, highest);
}

std::string show_number(double v) { return fmt::format("{:g}", v); }
std::string show_dim(const search::Dim& d) {
  if (!d) return "auto";
  return fmt::format("{}", fmt::join(*d, ","));
}

using units::kGiB;

// The job's fields, for any request that holds a JobRequest `job`.
template <typename Request>
void add_job_fields(std::vector<Field<Request>>& f) {
  using R = Request;
  f.push_back({"model", "-m",
               "bundled model name (e.g. llama3-70b), the HuggingFace id of a bundled one (Qwen/Qwen3-8B), a HuggingFace config.json / YAML path, or a "
               "HuggingFace model folder holding its config.json (required)",
               false, [](R& r, const json& v, const std::string& w) { r.job.model = text(v, w); }, [](const R&) { return std::string(); }});
  f.push_back({"hardware", "-H",
               "bundled device (h100-sxm, h100-96g, a100-80g, h200, b200, gb200, b300, gb300, mi300x, ascend-910b, ascend-910c) or a hardware YAML path", false,
               [](R& r, const json& v, const std::string& w) { r.job.hardware = text(v, w); }, [](const R& r) { return r.job.hardware; }});
  f.push_back({"framework", "",
               fmt::format("training system whose runtime profile applies (overlaps, runtime reserve, fragmentation, loss, parameter / gradient / "
                           "optimizer dtypes): {} (the --overlap-*, --reserve-gib and --*-bytes options given as well win)",
                           fmt::join(cost::terms::framework_names(), ", ")),
               false,
               [](R& r, const json& v, const std::string& w) {
                 const cost::terms::FrameworkProfile& p = cost::terms::framework_profile(text(v, w), w);
                 r.job.overlap = p.overlap;
                 cost::terms::apply_profile(p, r.job.training);
               },
               [](const R&) { return std::string(); }});
  f.push_back({"devices", "-d", fmt::format("number of devices in the job (required; at most {})", kMaxDevices), false,
               [](R& r, const json& v, const std::string& w) { r.job.devices = whole(v, w, 1, kMaxDevices, "devices"); },
               [](const R&) { return std::string(); }});
  f.push_back({"global_batch", "-b", fmt::format("global batch in sequences (required; at most {})", kMaxGlobalBatch), false,
               [](R& r, const json& v, const std::string& w) { r.job.training.global_batch = whole(v, w, 1, kMaxGlobalBatch, "sequences"); },
               [](const R&) { return std::string(); }});
  f.push_back({"seq", "-s", "sequence length in tokens", false,
               [](R& r, const json& v, const std::string& w) { r.job.training.seq = whole(v, w, 1, kMaxSequence, "tokens"); },
               [](const R& r) { return std::to_string(r.job.training.seq); }});
  f.push_back({"memory_limit_gib", "", "per-device memory budget in GiB (0: the device's HBM)", false,
               [](R& r, const json& v, const std::string& w) { r.job.memory_limit_gib = real(v, w, 0, kMaxMemoryLimitGib, "GiB"); },
               [](const R& r) { return show_number(r.job.memory_limit_gib); }});
  f.push_back({"reserve_gib", "", "per-device reserve for allocator fragmentation and framework context, GiB", false,
               [](R& r, const json& v, const std::string& w) { r.job.training.reserve_bytes = real(v, w, 0, kMaxMemoryLimitGib, "GiB") * kGiB; },
               [](const R& r) { return show_number(r.job.training.reserve_bytes / kGiB); }});
  f.push_back({"no_flash_attention", "", "price eager attention (an s x s score tensor) instead of flash attention", true,
               [](R& r, const json& v, const std::string& w) { r.job.training.flash_attention = !truth(v, w); }, nullptr});
  f.push_back({"attention_kernel", "",
               "the flash-attention kernel: auto (the default: today's cuDNN, cudnn9.19 on a device whose file states its rate, "
               "else fused), fused (cuDNN through Transformer Engine at the device's fitted rate: cuDNN 9.0 of 2024 on H100), "
               "torch_sdpa (torch.nn.functional.scaled_dot_product_attention running FlashAttention-2, as PyTorch did on H100 in "
               "2024: 0.52 x as fast at head dimension 128) or cudnn9.19 (cuDNN 9.19 at its published benchmark's rate, on devices "
               "whose file states it: h100-sxm, h200, gb200, gb300, b300); each runs narrower heads slower (64: 0.67 x)",
               false,
               [](R& r, const json& v, const std::string& w) {
                 r.job.training.attention_kernel = cost::terms::parse_attention_kernel(choice(v, w, {"auto", "fused", "torch_sdpa", "cudnn9.19"}), w);
               },
               [](const R& r) { return cost::terms::to_string(r.job.training.attention_kernel); }});
  f.push_back({"eager_norms", "",
               "norms as PyTorch eager ops, one memory pass each (torchtitan's 2024 RMSNorm without torch.compile: 9 x the bytes "
               "of a fused norm) instead of one fused kernel",
               true, [](R& r, const json& v, const std::string& w) { r.job.training.eager_norms = truth(v, w); }, nullptr});
  f.push_back({"fp8", "", "GEMMs in FP8 at the device's FP8 peak (attention and element-wise ops stay BF16)", true,
               [](R& r, const json& v, const std::string& w) { r.job.training.fp8 = truth(v, w); }, nullptr});
  f.push_back({"fp4", "",
               "GEMMs in NVFP4 (Transformer Engine's NVFP4BlockScaling recipe; Megatron's --fp4-format e2m1) at the device's FP4 peak: "
               "implies --fp8's Transformer Engine copies, weight cache and param gather, each at NVFP4's size",
               true,
               [](R& r, const json& v, const std::string& w) {
                 r.job.training.fp4 = truth(v, w);
                 if (r.job.training.fp4) r.job.training.fp8 = true;
               },
               nullptr});
  f.push_back({"fp8_param_gather", "",
               "Megatron's --fp8-param-gather: under FP8 the weights are kept in FP8 and Transformer Engine caches no FP8 copy of them (without "
               "it: 2 bytes more per layer parameter, an FP8 copy and its transpose kept across micro-batches; NeMo's and Megatron-Bridge's "
               "FP8 recipes set it)",
               true, [](R& r, const json& v, const std::string& w) { r.job.training.fp8_param_gather = truth(v, w); }, nullptr});
  f.push_back({"fp8_transformer_engine", "",
               "FP8 through Transformer Engine: the GEMM inputs kept for the backward in FP8, an FP8 weight copy cached across micro-batches "
               "(false: torchao's Float8Linear, which keeps them in BF16); default: the framework's",
               true, [](R& r, const json& v, const std::string& w) { r.job.training.fp8_transformer_engine = truth(v, w); }, nullptr});
  f.push_back({"less_memory", "", "interleaved schedule's less-memory variant (fewer warm-up micro-batches)", true,
               [](R& r, const json& v, const std::string& w) { r.job.training.interleave_less_memory = truth(v, w); }, nullptr});
  f.push_back({"param_bytes", "", "bytes per weight", false,
               [](R& r, const json& v, const std::string& w) { r.job.training.param_bytes = real(v, w, 0.5, 8, "bytes"); },
               [](const R& r) { return show_number(r.job.training.param_bytes); }});
  f.push_back({"grad_bytes", "", "bytes per gradient", false,
               [](R& r, const json& v, const std::string& w) {
                 r.job.training.grad_bytes = real(v, w, 0.5, 8, "bytes");
                 r.job.training.fp8_grad_bytes = 0;  // stated: under FP8 too
               },
               [](const R& r) { return show_number(r.job.training.grad_bytes); }});
  f.push_back({"optimizer_bytes", "", "optimizer bytes per parameter (fp32 master + two Adam moments = 12)", false,
               [](R& r, const json& v, const std::string& w) { r.job.training.optimizer_bytes = real(v, w, 0, 64, "bytes"); },
               [](const R& r) { return show_number(r.job.training.optimizer_bytes); }});
  f.push_back({"gather_bytes", "", "bytes per parameter element as ZeRO-3 / FSDP all-gathers it (0: --param-bytes)", false,
               [](R& r, const json& v, const std::string& w) { r.job.training.gather_bytes = real(v, w, 0, 8, "bytes"); },
               [](const R& r) { return show_number(r.job.training.gather_bytes); }});
  f.push_back({"reduce_bytes", "", "bytes per gradient element as the data-parallel reduce sends it (0: as kept, --grad-bytes)", false,
               [](R& r, const json& v, const std::string& w) { r.job.training.reduce_bytes = real(v, w, 0, 8, "bytes"); },
               [](const R& r) { return show_number(r.job.training.reduce_bytes); }});
  f.push_back({"loss_parallel", "",
               "the loss reads the logits split by vocabulary over TP (true: Megatron, torchtitan's default) or gathered whole on every TP "
               "rank (false: HyperParallel without accelerator.loss_parallel)",
               false, [](R& r, const json& v, const std::string& w) { r.job.training.logits_whole_over_tp = !truth(v, w); },
               [](const R& r) { return r.job.training.logits_whole_over_tp ? std::string("false") : std::string("true"); }});
  f.push_back({"compute_bytes", "", "bytes per activation element", false,
               [](R& r, const json& v, const std::string& w) { r.job.training.compute_bytes = real(v, w, 0.5, 8, "bytes"); },
               [](const R& r) { return show_number(r.job.training.compute_bytes); }});
  f.push_back({"capacity_factor", "", "MoE routed-token factor (1 = dropless, balanced)", false,
               [](R& r, const json& v, const std::string& w) { r.job.training.capacity_factor = real(v, w, 0.01, 64, "(a factor)"); },
               [](const R& r) { return show_number(r.job.training.capacity_factor); }});
  f.push_back({"rank_order", "", "rank order of the launcher, innermost first; decides which link each group's collectives use", false,
               [](R& r, const json& v, const std::string& w) { r.job.training.rank_order = plan::parse_rank_order(text(v, w), w); },
               [](const R& r) {
                 std::string out;
                 for (char c : r.job.training.rank_order) out += std::string(out.empty() ? "" : "-") + c + "p";
                 return out;
               }});
  f.push_back({"allow_tp_across_nodes", "", "let TP groups span nodes", true,
               [](R& r, const json& v, const std::string& w) { r.job.allow_tp_across_nodes = truth(v, w); }, nullptr});
  f.push_back({"recompute_modules", "",
               "what `selective` recomputes, as Megatron's --recompute-modules / torchtitan's selective AC name it (e.g. core_attn,mlp,layernorm); "
               "default: the framework's (Megatron: core_attn), else HyperParallel's selective (core_attn,layernorm,moe_act plus the dense MLP's "
               "activation)",
               false, [](R& r, const json& v, const std::string& w) { r.job.training.recompute_modules = cost::terms::recompute_switches(v, w); },
               [](const R&) { return std::string(); }});
  f.push_back({"optimizer_comm_recompute", "",
               "MindSpore's parallel_optimizer_comm_recompute: ZeRO-3's weights gathered again for the backward instead of kept from the forward "
               "(one layer's held at a time, one more all-gather per micro-batch); the mindformers profile's ZeRO-3 only",
               true, [](R& r, const json& v, const std::string& w) { r.job.training.zero3_regathers_in_backward = truth(v, w); }, nullptr});
  f.push_back({"lora_rank", "",
               "LoRA fine-tuning: adapter rank on every linear layer (0: every weight trains); frozen weights keep no gradient, no "
               "optimizer state and skip their weight-gradient GEMM",
               false, [](R& r, const json& v, const std::string& w) { r.job.training.lora_rank = whole(v, w, 0, 65536, "(a rank)"); },
               [](const R& r) { return std::to_string(r.job.training.lora_rank); }});
  f.push_back({"loss_chunked", "",
               "the head and loss run over vocabulary chunks and never hold the logits (Cut Cross-Entropy; AutoModel's "
               "FusedLinearCrossEntropy): no logits kept, the logits computed again in the backward",
               true, [](R& r, const json& v, const std::string& w) { r.job.training.loss_chunked = truth(v, w); }, nullptr});
  f.push_back({"loss_fused", "",
               "the loss writes its gradient in place (true: Megatron's fused vocab-parallel cross entropy, Transformer Engine's parallel "
               "cross entropy) or is PyTorch's F.cross_entropy on fp32 logits, its log-softmax and gradient kept in fp32 (false: torchtitan, "
               "NeMo AutoModel's MaskedCrossEntropy); default: the framework's",
               false, [](R& r, const json& v, const std::string& w) { r.job.training.loss_fused = truth(v, w); },
               [](const R& r) { return r.job.training.loss_fused ? std::string("true") : std::string("false"); }});
  f.push_back({"cp_kv_gathered_once", "",
               "ring CP's K,V all-gathered once per attention pass, waited after its first step (true: PyTorch's all-gather rotater, "
               "torchtitan's default context_parallel_rotate_method) or passed a block beside each step (false: Transformer Engine's ring); "
               "default: the framework's",
               false, [](R& r, const json& v, const std::string& w) { r.job.training.cp_kv_gathered_once = truth(v, w); },
               [](const R& r) { return r.job.training.cp_kv_gathered_once ? std::string("true") : std::string("false"); }});
  f.push_back({"cp_kv_repeated", "",
               "GQA's K,V repeated to the query heads before attention, so that CP exchanges n_heads of them (true: torchtitan's models "
               "before its #2259, 2026-01) or n_kv_heads (false); default: the framework's",
               false, [](R& r, const json& v, const std::string& w) { r.job.training.cp_kv_repeated = truth(v, w); },
               [](const R& r) { return r.job.training.cp_kv_repeated ? std::string("true") : std::string("false"); }});
  f.push_back({"defer_grad_sync", "",
               "FSDP2's gradient sync on the step's last micro-batch only (NeMo AutoModel's defer_fsdp_grad_sync): ZeRO-2/3 gradients "
               "accumulate unsharded and are reduce-scattered once per step",
               true, [](R& r, const json& v, const std::string& w) { r.job.training.defer_grad_sync = truth(v, w); }, nullptr});
  f.push_back({"pipeline_runs", "",
               "pipelines run one after another per step under PP, each over micro-batches / pipeline_runs with its own fill, drain and "
               "data-parallel reduce (torchtitan and NeMo AutoModel run one per gradient-accumulation step); 1: one pipeline of all of them",
               false,
               [](R& r, const json& v, const std::string& w) { r.job.training.pipeline_runs = static_cast<int>(whole(v, w, 1, kMaxMicroBatches, "runs")); },
               [](const R& r) { return std::to_string(r.job.training.pipeline_runs); }});
  f.push_back({"seq_split", "",
               "MindSpore's sequence pipeline (MindFormers' pipeline_scheduler seqpipe, seq_split_num; Seq1F1B): each micro-batch crosses "
               "the pipeline as this many segments of the sequence, each attending to the earlier ones through a KV cache; 1: whole sequences",
               false,
               [](R& r, const json& v, const std::string& w) { r.job.training.seq_split = static_cast<int>(whole(v, w, 1, kMaxMicroBatches, "segments")); },
               [](const R& r) { return std::to_string(r.job.training.seq_split); }});
  f.push_back({"dualpipe_v", "",
               "DualPipe-V pipeline schedule (MindSpeed's --schedules-method dualpipev, torchtitan's DualPipeV): two chunks per stage in a V "
               "(needs --vpp 2 and at least 2 x PP micro-batches), the head on stage 0, a third of 1F1B's bubble",
               true, [](R& r, const json& v, const std::string& w) { r.job.training.dualpipe_v = truth(v, w); }, nullptr});
  f.push_back({"moe_imbalance", "", "MoE token imbalance: tokens on the busiest EP rank over the mean (1 = balanced)", false,
               [](R& r, const json& v, const std::string& w) { r.job.training.moe_imbalance = real(v, w, 1, 64, "(a factor)"); },
               [](const R& r) { return show_number(r.job.training.moe_imbalance); }});
  f.push_back({"moe_dispatcher", "", "MoE token dispatcher: alltoall (Megatron's) or deepep (DeepEP/HybridEP: one copy per remote node)", false,
               [](R& r, const json& v, const std::string& w) {
                 r.job.training.ep_dedup_per_node = choice(v, w, {"alltoall", "deepep"}) == "deepep";
               },
               [](const R& r) { return std::string(r.job.training.ep_dedup_per_node ? "deepep" : "alltoall"); }});
  f.push_back({"moe_contiguous_routing", "",
               "MoE: each token's top-k experts are k consecutive experts (NeMo AutoModel's fake_balanced_gate, a benchmark gate): a DeepEP "
               "dispatch reaches ceil(k x ranks / experts) ranks or nodes per token, not a random spread",
               true, [](R& r, const json& v, const std::string& w) { r.job.training.moe_contiguous_routing = truth(v, w); }, nullptr});
  f.push_back({"shared_expert_overlap", "", "MoE shared experts run while the dispatch and combine are in flight (Megatron's moe_shared_expert_overlap)", true,
               [](R& r, const json& v, const std::string& w) { r.job.training.shared_expert_overlap = truth(v, w); }, nullptr});
  f.push_back({"split_counts_embedding_and_loss", "",
               "the even stage split counts the embedding and the loss (and MTP) as layers (Megatron's account_for_embedding/loss_in_pipeline_split)", true,
               [](R& r, const json& v, const std::string& w) { r.job.training.pipeline_split_counts_head = truth(v, w); }, nullptr});
  f.push_back({"overlap_tp", "", "fraction of TP collectives hidden under compute", false,
               [](R& r, const json& v, const std::string& w) { r.job.overlap.tp = real(v, w, 0, 1, "(a fraction)"); },
               [](const R& r) { return show_number(r.job.overlap.tp); }});
  f.push_back({"overlap_dp", "", "fraction of DP gradient/parameter collectives hidden (capped by the last backward)", false,
               [](R& r, const json& v, const std::string& w) { r.job.overlap.dp = real(v, w, 0, 1, "(a fraction)"); },
               [](const R& r) { return show_number(r.job.overlap.dp); }});
  f.push_back({"overlap_ep", "", "fraction of MoE all-to-all hidden", false,
               [](R& r, const json& v, const std::string& w) { r.job.overlap.ep = real(v, w, 0, 1, "(a fraction)"); },
               [](const R& r) { return show_number(r.job.overlap.ep); }});
  f.push_back({"overlap_cp", "", "share of each ring-CP step's attention that hides the step's K,V transfer (1: all of it, a side stream)", false,
               [](R& r, const json& v, const std::string& w) { r.job.overlap.cp = real(v, w, 0, 1, "(a fraction)"); },
               [](const R& r) { return show_number(r.job.overlap.cp); }});
  f.push_back({"overlap_pp", "", "fraction of steady-state pipeline sends hidden (with or without interleaving; default: the framework's)", false,
               [](R& r, const json& v, const std::string& w) {
                 r.job.overlap.pp = real(v, w, 0, 1, "(a fraction)");
                 r.job.overlap.pp_1f1b = -1.0;  // stated: for every schedule
               },
               [](const R& r) { return show_number(r.job.overlap.pp); }});
}

// The stated split's fields, for any request with `std::optional<plan::StageSplit> split`.
template <typename Request>
void add_split_fields(std::vector<Field<Request>>& f) {
  using R = Request;
  f.push_back({"stage_layers", "",
               "layers per pipeline stage as run, e.g. 4,5,5,4; with VPP one row per chunk separated by '/' (chunk-major); default: the even split", false,
               [](R& r, const json& v, const std::string& w) {
                 if (!r.split) r.split.emplace();
                 r.split->layers = plan::read_counts(v, w);
               },
               [](const R&) { return std::string(); }});
  f.push_back({"stage_recompute", "",
               "recomputed layers per stage (or chunk), e.g. 'full=3,4,4,2 selective=1,0,0,0': the first layers of each chunk fully, the next "
               "selectively (needs --stage-layers)",
               false,
               [](R& r, const json& v, const std::string& w) {
                 if (!r.split) r.split.emplace();
                 plan::read_recompute_counts(*r.split, v, w);
               },
               [](const R&) { return std::string(); }});
}

std::vector<Field<EstimateRequest>> make_estimate_fields() {
  using R = EstimateRequest;
  std::vector<Field<R>> f;
  add_job_fields(f);
  f.push_back({"tp", "", "tensor parallel degree", false, [](R& r, const json& v, const std::string& w) { r.layout.tp = degree(v, w); },
               [](const R& r) { return std::to_string(r.layout.tp); }});
  f.push_back({"pp", "", "pipeline parallel degree", false, [](R& r, const json& v, const std::string& w) { r.layout.pp = degree(v, w); },
               [](const R& r) { return std::to_string(r.layout.pp); }});
  f.push_back({"cp", "", "context parallel degree", false, [](R& r, const json& v, const std::string& w) { r.layout.cp = degree(v, w); },
               [](const R& r) { return std::to_string(r.layout.cp); }});
  f.push_back({"cp_algo", "", "context parallel algorithm: ring or all2all", false,
               [](R& r, const json& v, const std::string& w) {
                 r.layout.cp_algo = choice(v, w, {"ring", "all2all"}) == "ring" ? plan::CpAlgo::Ring : plan::CpAlgo::AllToAll;
               },
               [](const R& r) { return std::string(plan::to_string(r.layout.cp_algo)); }});
  f.push_back({"ep", "", "expert parallel degree (carved out of DP x CP x TP)", false,
               [](R& r, const json& v, const std::string& w) { r.layout.ep = degree(v, w); }, [](const R& r) { return std::to_string(r.layout.ep); }});
  f.push_back({"etp", "", "expert tensor parallel degree", false, [](R& r, const json& v, const std::string& w) { r.layout.etp = degree(v, w); },
               [](const R& r) { return std::to_string(r.layout.etp); }});
  f.push_back({"vpp", "", "virtual pipeline chunks per stage (interleaved 1F1B)", false,
               [](R& r, const json& v, const std::string& w) { r.layout.vpp = degree(v, w); }, [](const R& r) { return std::to_string(r.layout.vpp); }});
  f.push_back({"mbs", "", "micro-batch size", false, [](R& r, const json& v, const std::string& w) { r.layout.mbs = degree(v, w); },
               [](const R& r) { return std::to_string(r.layout.mbs); }});
  f.push_back({"zero", "", "ZeRO stage: 0 none, 1 optimizer (Megatron's distributed optimizer), 2 + gradients, 3 + parameters", false,
               [](R& r, const json& v, const std::string& w) { r.layout.zero = static_cast<int>(whole(v, w, 0, 3, "(a ZeRO stage)")); },
               [](const R& r) { return std::to_string(r.layout.zero); }});
  f.push_back({"optimizer_shard", "", "ZeRO shard group size (0: all of DP x CP)", false,
               [](R& r, const json& v, const std::string& w) { r.layout.optimizer_shard = degree(v, w, 0); },
               [](const R& r) { return std::to_string(r.layout.optimizer_shard); }});
  f.push_back({"recompute", "", "activation recompute: off, selective or full", false,
               [](R& r, const json& v, const std::string& w) { r.layout.recompute = plan::read_activation_checkpoint_mode(v, w); },
               [](const R& r) { return std::string(plan::to_string(r.layout.recompute)); }});
  f.push_back({"sp", "", "sequence parallelism (shards the TP-replicated activations)", true,
               [](R& r, const json& v, const std::string& w) { r.layout.sp = truth(v, w); }, nullptr});
  f.push_back({"explain", "", "print each memory term of one stage (the peak one unless --explain-stage) with its formula and inputs", true,
               [](R& r, const json& v, const std::string& w) { r.explain = truth(v, w); }, nullptr});
  f.push_back({"explain_stage", "", "the stage --explain prints (implies --explain)", false,
               [](R& r, const json& v, const std::string& w) {
                 r.explain_stage = static_cast<int>(whole(v, w, 0, kMaxDegree, "(a stage index)"));
                 r.explain = true;
               },
               [](const R&) { return std::string(); }});
  add_split_fields(f);
  return f;
}

std::vector<Field<SearchRequest>> make_search_fields() {
  using R = SearchRequest;
  std::vector<Field<R>> f;
  add_job_fields(f);
  f.push_back({"tp", "", "tensor parallel degrees: one, a list like 1,2,4, or auto (powers of two within a node)", false,
               [](R& r, const json& v, const std::string& w) { r.space.tp = dimension(v, w); }, [](const R& r) { return show_dim(r.space.tp); }});
  f.push_back({"pp", "", "pipeline parallel degrees (auto: every divisor up to the layers)", false,
               [](R& r, const json& v, const std::string& w) { r.space.pp = dimension(v, w); }, [](const R& r) { return show_dim(r.space.pp); }});
  f.push_back({"cp", "", "context parallel degrees (auto: powers of two up to 32)", false,
               [](R& r, const json& v, const std::string& w) { r.space.cp = dimension(v, w); }, [](const R& r) { return show_dim(r.space.cp); }});
  f.push_back({"ep", "", "expert parallel degrees (auto: powers of two up to the experts)", false,
               [](R& r, const json& v, const std::string& w) { r.space.ep = dimension(v, w); }, [](const R& r) { return show_dim(r.space.ep); }});
  f.push_back({"etp", "", "expert tensor parallel degrees (auto: 1 or TP)", false,
               [](R& r, const json& v, const std::string& w) { r.space.etp = dimension(v, w); }, [](const R& r) { return show_dim(r.space.etp); }});
  f.push_back({"vpp", "", "virtual pipeline chunks (auto: 1-4 and every larger even split of a stage)", false,
               [](R& r, const json& v, const std::string& w) { r.space.vpp = dimension(v, w); }, [](const R& r) { return show_dim(r.space.vpp); }});
  f.push_back({"mbs", "", "micro-batch sizes (auto: powers of two up to 8)", false,
               [](R& r, const json& v, const std::string& w) { r.space.mbs = dimension(v, w); }, [](const R& r) { return show_dim(r.space.mbs); }});
  f.push_back({"dp", "", "data parallel degrees to keep (auto: whatever the devices and the other degrees leave)", false,
               [](R& r, const json& v, const std::string& w) { r.space.dp = dimension(v, w); }, [](const R& r) { return show_dim(r.space.dp); }});
  f.push_back({"micro_batches", "", "micro-batch counts per step to keep (auto: whatever the global batch, DP and micro-batch size leave)", false,
               [](R& r, const json& v, const std::string& w) { r.space.micro_batches = dimension(v, w); },
               [](const R& r) { return show_dim(r.space.micro_batches); }});
  f.push_back({"zero", "", "ZeRO stages 0-3", false, [](R& r, const json& v, const std::string& w) { r.space.zero = dimension(v, w, 0, 3); },
               [](const R& r) { return show_dim(r.space.zero); }});
  f.push_back({"sp", "", "sequence parallelism: on, off or auto", false,
               [](R& r, const json& v, const std::string& w) {
                 std::string t = choice(v, w, {"on", "off", "auto", "true", "false"});
                 if (t == "auto")
                   r.space.sp.reset();
                 else
                   r.space.sp = std::vector<bool>{t == "on" || t == "true"};
               },
               [](const R& r) { return r.space.sp ? std::string(r.space.sp->front() ? "on" : "off") : std::string("auto"); }});
  f.push_back({"cp_algo", "", "ring, all2all or auto", false,
               [](R& r, const json& v, const std::string& w) {
                 std::string t = choice(v, w, {"ring", "all2all", "auto"});
                 if (t == "auto")
                   r.space.cp_algo.reset();
                 else
                   r.space.cp_algo = std::vector<plan::CpAlgo>{t == "ring" ? plan::CpAlgo::Ring : plan::CpAlgo::AllToAll};
               },
               [](const R& r) { return r.space.cp_algo ? std::string(plan::to_string(r.space.cp_algo->front())) : std::string("auto"); }});
  f.push_back({"recompute", "", "recompute modes: off, selective, full, a list, or auto", false,
               [](R& r, const json& v, const std::string& w) {
                 if (v.is_string()) {
                   json modes = json::array();
                   for (const std::string& mode : io::split_commas(v.get<std::string>())) modes.push_back(io::trim(mode));
                   r.space.recompute = plan::read_recompute_modes(modes.size() == 1 ? modes[0] : modes, w);
                 } else {
                   r.space.recompute = plan::read_recompute_modes(v, w);
                 }
               },
               [](const R&) { return std::string("auto"); }});
  f.push_back({"optimizer_shard", "", "ZeRO shard group size (0: all of DP x CP)", false,
               [](R& r, const json& v, const std::string& w) { r.space.optimizer_shard = degree(v, w, 0); },
               [](const R& r) { return std::to_string(r.space.optimizer_shard); }});
  f.push_back({"top", "-k", "show the K fastest layouts (rows)", false,
               [](R& r, const json& v, const std::string& w) { r.top = static_cast<int>(whole(v, w, 1, 1000000, "rows")); },
               [](const R& r) { return std::to_string(r.top); }});
  f.push_back({"threads", "-j", "worker threads (0: every core); results do not depend on it", false,
               [](R& r, const json& v, const std::string& w) { r.threads = static_cast<int>(whole(v, w, 0, 4096, "threads")); },
               [](const R& r) { return std::to_string(r.threads); }});
  f.push_back({"unfold", "", "list layouts of identical time and memory one by one instead of one row with a count", true,
               [](R& r, const json& v, const std::string& w) { r.unfold = truth(v, w); }, nullptr});
  add_split_fields(f);
  return f;
}

std::vector<Field<PlanRequest>> make_plan_fields() {
  using R = PlanRequest;
  std::vector<Field<R>> f;
  // Every search option, applied to the search part of the plan request.
  for (const Field<SearchRequest>& sf : search_fields()) {
    f.push_back({sf.key, sf.short_option, sf.help, sf.flag, [set = sf.set](R& r, const json& v, const std::string& w) { set(r, v, w); },
                 sf.show ? std::function<std::string(const R&)>([show = sf.show](const R& r) { return show(r); }) : nullptr});
  }
  f.push_back({"candidates", "", "how many of the search's best layouts to balance", false,
               [](R& r, const json& v, const std::string& w) { r.candidates = static_cast<int>(whole(v, w, 1, 1000, "layouts")); },
               [](const R& r) { return std::to_string(r.candidates); }});
  f.push_back({"balance_time_limit_s", "", "time limit of each layout's balancing (the best plan found so far is kept)", false,
               [](R& r, const json& v, const std::string& w) { r.balance_time_limit_s = real(v, w, 0.01, 3600, "seconds"); },
               [](const R& r) { return show_number(r.balance_time_limit_s); }});
  f.push_back({"emit_layers", "", "write the best plan's layer descriptors (the balancer's layers JSON, from sapp's cost model) to this file", false,
               [](R& r, const json& v, const std::string& w) { r.emit_layers = text(v, w); }, [](const R&) { return std::string(); }});
  return f;
}

template <typename Request>
void apply_fields(Request& request, const std::vector<Field<Request>>& fields, const json& values, Source source, const std::string& file,
                  const std::set<std::string>& skip, const std::string& prefix = "") {
  if (!values.is_object()) fail(file, "{}expected a mapping of options, got {}", prefix, values.type_name());
  for (const auto& item : values.items()) {
    const std::string& key = item.key();
    if (skip.count(key)) continue;
    auto it = std::find_if(fields.begin(), fields.end(), [&](const Field<Request>& f) { return f.key == key; });
    if (it == fields.end()) {
      std::vector<std::string> keys;
      keys.reserve(fields.size());
      for (const auto& f : fields) keys.push_back(f.key);
      fail(where_of(source, prefix + key, file), "unknown option; known: {}", fmt::join(keys, ", "));
    }
  }
  // In table order, so the same values give the same request whatever order they were stated in.
  for (const auto& f : fields) {
    if (values.contains(f.key) && !values.at(f.key).is_null()) f.set(request, values.at(f.key), where_of(source, prefix + f.key, file));
  }
}

}  // namespace

const std::vector<Field<EstimateRequest>>& estimate_fields() {
  static const std::vector<Field<EstimateRequest>> fields = make_estimate_fields();
  return fields;
}

const std::vector<Field<SearchRequest>>& search_fields() {
  static const std::vector<Field<SearchRequest>> fields = make_search_fields();
  return fields;
}

void apply(EstimateRequest& request, const json& values, Source source, const std::string& file) {
  if (source != Source::File) request.job.source = source;
  apply_fields(request, estimate_fields(), values, source, file, {});
}

const std::vector<Field<PlanRequest>>& plan_fields() {
  static const std::vector<Field<PlanRequest>> fields = make_plan_fields();
  return fields;
}

namespace {

// Reads a `config` file named in `values` into the request (top-level keys, and dimensions under `search:`).
// Returns the file's tree (null without --config).
template <typename Request>
json apply_config(Request& request, const std::vector<Field<Request>>& fields, const json& values, Source source, const std::string& file) {
  if (!values.is_object() || !values.contains("config") || values.at("config").is_null()) return json();
  std::string path = text(values.at("config"), where_of(source, "config", file));
  json tree = io::read_tree(path);
  if (!tree.is_object()) fail(path, "expected a mapping of options (and/or a `search:` mapping of dimensions), got {}", tree.type_name());
  if (tree.contains("search")) {
    if (!tree.at("search").is_object()) fail(path, "search: expected a mapping of dimensions, got {}", tree.at("search").type_name());
    apply_fields(request, fields, tree.at("search"), Source::File, path, {}, "search.");
  }
  apply_fields(request, fields, tree, Source::File, path, {"search"});
  return tree;
}

// The --config file, then the other values, then what the file states that a later --framework reset.
template <typename Request>
void apply_with_config(Request& request, const std::vector<Field<Request>>& fields, const json& values, Source source, const std::string& file) {
  if (source != Source::File) request.job.source = source;
  json tree = apply_config(request, fields, values, source, file);
  apply_fields(request, fields, values, source, file, {"config"});
  json again = stated_under_framework(tree, values);
  if (!again.empty()) apply_fields(request, fields, again, Source::File, text(values.at("config"), where_of(source, "config", file)), {});
}

}  // namespace

json stated_under_framework(const json& earlier, const json& later) {
  static const std::set<std::string> governed = {"reserve_gib",       "param_bytes",         "grad_bytes",    "optimizer_bytes",  "gather_bytes",
                                                 "reduce_bytes",      "loss_parallel",       "loss_fused",    "fp8_param_gather", "fp8_transformer_engine",
                                                 "recompute_modules", "overlap_tp",          "overlap_dp",    "overlap_ep",       "overlap_cp",
                                                 "overlap_pp",        "cp_kv_gathered_once", "cp_kv_repeated"};
  json out = json::object();
  if (!earlier.is_object() || !later.is_object() || !later.contains("framework")) return out;
  for (const auto& key : governed) {
    if (earlier.contains(key) && !later.contains(key)) out[key] = earlier.at(key);
  }
  return out;
}

void apply(PlanRequest& request, const json& values, Source source, const std::string& file) {
  apply_with_config(request, plan_fields(), values, source, file);
}

void apply(SearchRequest& request, const json& values, Source source, const std::string& file) {
  apply_with_config(request, search_fields(), values, source, file);
}

namespace {

std::vector<Field<BalanceRequest>> make_balance_fields() {
  using R = BalanceRequest;
  std::vector<Field<R>> f;
  f.push_back({"layers", "-l", "layers JSON (layers_description with HEAD, BODY, TAIL) (required)", false,
               [](R& r, const json& v, const std::string& w) { r.layers = text(v, w); }, [](const R&) { return std::string(); }});
  f.push_back({"stages", "-s", fmt::format("pipeline stages (required; at most {})", kMaxStages), false,
               [](R& r, const json& v, const std::string& w) { r.stages = static_cast<int>(whole(v, w, 1, kMaxStages, "stages")); },
               [](const R&) { return std::string(); }});
  f.push_back({"micro_batches", "-m", fmt::format("micro-batches per step (required; at most {})", kMaxMicroBatches), false,
               [](R& r, const json& v, const std::string& w) { r.micro_batches = static_cast<int>(whole(v, w, 1, kMaxMicroBatches, "micro-batches")); },
               [](const R&) { return std::string(); }});
  f.push_back({"memory_limit", "", "per-device memory limit in MB (0: none)", false,
               [](R& r, const json& v, const std::string& w) { r.memory_limit_mb = real(v, w, 0, kMaxMemoryLimitGib * 1024, "MB"); },
               [](const R& r) { return show_number(r.memory_limit_mb); }});
  f.push_back({"interleave", "-i", "chunks per stage (interleaved 1F1B), or auto: 1..4 by simulated step time", false,
               [](R& r, const json& v, const std::string& w) {
                 r.interleave_auto = v.is_string() && io::trim(v.get<std::string>()) == "auto";
                 if (!r.interleave_auto) r.interleave = static_cast<int>(whole(v, w, 1, kMaxInterleave, "chunks"));
               },
               [](const R& r) { return r.interleave_auto ? std::string("auto") : std::to_string(r.interleave); }});
  f.push_back({"less_memory", "", "interleaved schedule's less-memory variant", true,
               [](R& r, const json& v, const std::string& w) { r.less_memory = truth(v, w); }, nullptr});
  f.push_back({"dualpipe_v", "",
               "DualPipe-V schedule (DeepSeek's DualPipe repository): two chunks per stage in a V, head and tail on stage 0; needs --interleave 2 and "
               "micro-batches >= 2 x stages",
               true, [](R& r, const json& v, const std::string& w) { r.dualpipe_v = truth(v, w); }, nullptr});
  f.push_back({"zero_bubble", "", "zero-bubble ZB-H1 schedule (Qi et al. 2023): split backward, weight gradients deferred by the stage index", true,
               [](R& r, const json& v, const std::string& w) { r.zero_bubble = truth(v, w); }, nullptr});
  f.push_back({"recompute_kinds", "", "allowed recompute kinds, e.g. full,selective,comm,both (default: every kind the layers state)", false,
               [](R& r, const json& v, const std::string& w) { r.recompute_kinds = text(v, w); }, [](const R&) { return std::string(); }});
  f.push_back({"recompute_num_layers", "",
               "Megatron's block recompute: every chunk's first N layers fully recomputed, the rest not (N, or auto: each N balanced, the fastest "
               "kept; default: any mix per chunk)",
               false,
               [](R& r, const json& v, const std::string& w) {
                 r.recompute_num_layers = v.is_number_integer() ? std::to_string(whole(v, w, 0, kMaxLayers, "layers")) : text(v, w);
               },
               [](const R&) { return std::string(); }});
  f.push_back({"constant_memory", "", "MB added to every stage (beyond the layers file's constant_memory_mb)", false,
               [](R& r, const json& v, const std::string& w) { r.constant_memory_mb = real(v, w, 0, kMaxMemoryLimitGib * 1024, "MB"); },
               [](const R& r) { return show_number(r.constant_memory_mb); }});
  f.push_back({"time_limit", "", "seconds; the solve stops there with the best plan found, its lower bound and gap (0: none)", false,
               [](R& r, const json& v, const std::string& w) { r.time_limit_s = real(v, w, 0, 1e6, "seconds"); },
               [](const R& r) { return show_number(r.time_limit_s); }});
  f.push_back({"solver", "", "dp: lower bound by dynamic program, plans simulated; enumerate: simulate every plan (small cases)", false,
               [](R& r, const json& v, const std::string& w) {
                 r.solver = choice(v, w, {"dp", "enumerate"});
               },
               [](const R& r) { return r.solver; }});
  f.push_back({"chunk_spread", "", "most layers the chunks of one stage may differ by (0: no limit)", false,
               [](R& r, const json& v, const std::string& w) { r.chunk_spread = static_cast<int>(whole(v, w, 0, kMaxLayers, "layers")); },
               [](const R& r) { return std::to_string(r.chunk_spread); }});
  f.push_back({"svg", "", "write the simulated timeline and memory curves to this SVG file", false,
               [](R& r, const json& v, const std::string& w) { r.svg = text(v, w); }, [](const R&) { return std::string(); }});
  f.push_back({"manual", "", "YAML of hand-written strategies (offset, recompute, select_recompute, select_comm_recompute) to simulate", false,
               [](R& r, const json& v, const std::string& w) { r.manual = text(v, w); }, [](const R&) { return std::string(); }});
  f.push_back({"naive", "", "also simulate the even splits with no recompute and with all layers recomputed", true,
               [](R& r, const json& v, const std::string& w) { r.naive = truth(v, w); }, nullptr});
  return f;
}

std::vector<Field<DecomposeRequest>> make_decompose_fields() {
  using R = DecomposeRequest;
  std::vector<Field<R>> f;
  f.push_back({"measured", "",
               "YAML: stages, runs[] of {layers, recompute{kind: per stage}, peaks_mb}; or the reference planner's dry-run input (pipeline_config, "
               "recompute_config, memory_usage) (required)",
               false, [](R& r, const json& v, const std::string& w) { r.measured = text(v, w); }, [](const R&) { return std::string(); }});
  f.push_back({"no_constant", "", "fit no per-stage constant", true, [](R& r, const json& v, const std::string& w) { r.no_constant = truth(v, w); }, nullptr});
  return f;
}

std::vector<Field<GuideRequest>> make_guide_fields() {
  using R = GuideRequest;
  std::vector<Field<R>> f;
  f.push_back({"stages", "-s",
               fmt::format("pipeline stages (required; 4 to {}: two body stages at different depths tell parameters from activations)", kMaxStages), false,
               [](R& r, const json& v, const std::string& w) { r.stages = static_cast<int>(whole(v, w, 4, kMaxStages, "stages")); },
               [](const R&) { return std::string(); }});
  f.push_back({"layers_total", "", fmt::format("body layers of the model (required; at most {})", kMaxLayers), false,
               [](R& r, const json& v, const std::string& w) { r.layers_total = whole(v, w, 1, kMaxLayers, "layers"); },
               [](const R&) { return std::string(); }});
  f.push_back({"recompute_kinds", "", "kinds to tell apart (default selective,comm,both,full)", false,
               [](R& r, const json& v, const std::string& w) { r.recompute_kinds = text(v, w); }, [](const R&) { return std::string(); }});
  f.push_back({"no_constant", "", "fit no per-stage constant", true, [](R& r, const json& v, const std::string& w) { r.no_constant = truth(v, w); }, nullptr});
  return f;
}

std::vector<Field<CalibrateRequest>> make_calibrate_fields() {
  using R = CalibrateRequest;
  std::vector<Field<R>> f;
  f.push_back({"hardware", "-H", "bundled device or hardware YAML to calibrate", false,
               [](R& r, const json& v, const std::string& w) { r.hardware = text(v, w); }, [](const R& r) { return r.hardware; }});
  f.push_back({"runs", "",
               "YAML of measured runs: runs[] of {model, framework, devices, global_batch, seq, tp, pp, cp, vpp, ep, etp, mbs, zero, sp, recompute, "
               "recompute_modules, fp8, grad_bytes, attention_kernel, eager_norms, cp_kv_gathered_once, cp_kv_repeated, dispatcher, ep_overlap, "
               "pipeline_split_counts_head, overlap, "
               "step_time_s | tokens_per_s_per_device} (required)",
               false, [](R& r, const json& v, const std::string& w) { r.runs = text(v, w); }, [](const R&) { return std::string(); }});
  f.push_back({"attention_apart", "",
               "fit the attention kernel's efficiency with a scale of its own (runs at long sequences, where attention is most of the "
               "work), the GEMMs' and memory's with another",
               true, [](R& r, const json& v, const std::string& w) { r.attention_apart = truth(v, w); }, nullptr});
  return f;
}

}  // namespace

const std::vector<Field<BalanceRequest>>& balance_fields() {
  static const std::vector<Field<BalanceRequest>> fields = make_balance_fields();
  return fields;
}
const std::vector<Field<DecomposeRequest>>& decompose_fields() {
  static const std::vector<Field<DecomposeRequest>> fields = make_decompose_fields();
  return fields;
}
const std::vector<Field<GuideRequest>>& guide_fields() {
  static const std::vector<Field<GuideRequest>> fields = make_guide_fields();
  return fields;
}
const std::vector<Field<CalibrateRequest>>& calibrate_fields() {
  static const std::vector<Field<CalibrateRequest>> fields = make_calibrate_fields();
  return fields;
}

void apply(BalanceRequest& request, const json& values, Source source, const std::string& file) {
  request.source = source;
  apply_fields(request, balance_fields(), values, source, file, {});
}
void apply(DecomposeRequest& request, const json& values, Source source, const std::string& file) {
  request.source = source;
  apply_fields(request, decompose_fields(), values, source, file, {});
}
void apply(GuideRequest& request, const json& values, Source source, const std::string& file) {
  request.source = source;
  apply_fields(request, guide_fields(), values, source, file, {});
}
void apply(CalibrateRequest& request, const json& values, Source source, const std::string& file) {
  request.source = source;
  apply_fields(request, calibrate_fields(), values, source, file, {});
}

}  // namespace sapp::app
