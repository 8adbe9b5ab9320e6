// plan/layout (layer plan: a layout, the run facts, every layout rule, where a layout puts the model): a parallel layout (one candidate) and the run facts it
// is priced under, plus the rules a layout must meet. Plain value types shared by the memory, performance and search parts.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/family.hpp"

namespace sapp::plan {

enum class Recompute { Off, Selective, Full };
enum class CpAlgo { Ring, AllToAll };

const char* to_string(Recompute r);
const char* to_string(CpAlgo a);
// Reads a recompute mode as the trainer's activation_checkpoint.mode (docs/reference-planner.md §2): YAML's bare `off` is false
// and means off, `none` is off; `true`, lists and `auto` are refused.
Recompute parse_recompute(const std::string& text, const std::string& where);
// Reads recompute as a search dimension (docs/reference-planner.md §2): "auto" for every mode, one mode, or a list of modes, in the
// order stated, each once. YAML's bare `off` (false) is off; true, an empty list or a non-mode is refused.
std::vector<Recompute> read_recompute_modes(const nlohmann::json& stated, const std::string& where);
// Reads one activation-checkpoint mode as the trainer does: null is off; lists, auto and true are refused.
Recompute read_activation_checkpoint_mode(const nlohmann::json& stated, const std::string& where);

struct StageSplit;  // plan/split.hpp

struct Layout {
  int dp = 1;
  int tp = 1;
  int pp = 1;
  int cp = 1;
  int ep = 1;
  int etp = 1;  // expert tensor parallel
  int vpp = 1;  // virtual pipeline chunks per stage
  bool sp = false;
  CpAlgo cp_algo = CpAlgo::Ring;
  int mbs = 1;              // micro-batch size
  int micro_batches = 1;    // per step, per pipeline (gradient accumulation steps)
  int zero = 1;             // 0 none, 1 optimizer states, 2 + gradients, 3 + parameters
  int optimizer_shard = 0;  // shard group size for ZeRO; 0 = the whole DP x CP group
  Recompute recompute = Recompute::Off;
  // An uneven split of layers (and per-chunk recompute) as a team runs it; null: the even split with
  // `recompute` for every layer. Shared and immutable, so copying a layout stays cheap.
  std::shared_ptr<const StageSplit> split;

  [[nodiscard]] long long devices() const { return 1LL * dp * tp * pp * cp; }
  [[nodiscard]] int tsp() const { return sp ? tp : 1; }
  [[nodiscard]] int expert_dp() const { return dp * cp * tp / (ep * etp); }
  // The ranks ZeRO shards non-expert (all of DP x CP, or the optimizer shard size) and expert states over.
  [[nodiscard]] double zero_group() const { return optimizer_shard > 0 ? optimizer_shard : static_cast<double>(dp) * cp; }
  [[nodiscard]] double expert_zero_group() const;
  [[nodiscard]] std::string describe() const;
};

// The flash-attention kernel a run calls: cuDNN's fused attention through Transformer Engine (what the devices'
// attention efficiencies were fitted with), torch.nn.functional.scaled_dot_product_attention running
// FlashAttention-2 (--attention-kernel; their speed: cost::terms::attention_kernel_rate), or cuDNN 9.19's fused
// attention at the rate its published benchmark measured (cost::terms::cudnn919_attention_rate). Auto, the default:
// today's cuDNN, cuDNN 9.19's rate on a device whose file states it, else the fitted one
// (cost::terms::resolved_attention_kernel).
enum class AttentionKernel { Auto, Fused, TorchSdpa, Cudnn919 };

// NVFP4 storage per element: a 4-bit E2M1 value and one E4M3 scale per block of 16 (NVIDIA's NVFP4 format, as
// Transformer Engine's NVFP4Tensor stores each of its row-wise and column-wise copies).
inline constexpr double kNvfp4BytesPerElement = 0.5 + 1.0 / 16.0;
// Bytes moved per element when Transformer Engine quantises a GEMM input (the op records' `qcast`): under FP8 it
// reads the BF16 input and writes an FP8 copy and the transpose the backward needs, 4 bytes. NVFP4's casts do more
// (a global amax pass, the random Hadamard transform of the weight-gradient inputs, stochastic rounding of the
// gradients, 16-element scales): its per-step quantisation cost over MXFP8's, measured on a B300 as autocast minus
// pre-quantised GEMM time per layer (6.453 - 3.764 against 8.984 - 7.161 ms; Transformer Engine's GEMM profiling
// guide, the measurement hardware::kNvfp4OverMxfp8GemmRate cites), scales FP8's 4 bytes.
inline constexpr double kFp8CastBytesPerElement = 4.0;
inline constexpr double kNvfp4CastBytesPerElement = kFp8CastBytesPerElement * (6.453 - 3.764) / (8.984 - 7.161);

struct Training {
  long long global_batch = 0;
  long long seq = 0;
  bool flash_attention = true;
  AttentionKernel attention_kernel = AttentionKernel::Auto;
  // Norms run as PyTorch eager ops, one pass over memory per op (torchtitan's 2024 RMSNorm without torch.compile),
  // instead of one fused kernel (Transformer Engine, Megatron, torch.compile): the op records' `eager` symbol
  // (data/op_records.yaml, norms). Other element-wise ops stay priced fused.
  bool eager_norms = false;
  double param_bytes = 2;       // bf16 weights
  double grad_bytes = 4;        // fp32 gradient accumulation buffer (Megatron's main_grad)
  double optimizer_bytes = 12;  // fp32 master copy + two Adam moments
  // Bytes per gradient when the GEMMs run in FP8 (0: grad_bytes). NeMo / Megatron-Bridge FP8 recipes set
  // grad_reduce_in_fp32 = False: gradients kept and reduced in BF16.
  double fp8_grad_bytes = 0;
  // Bytes per element of the parameters ZeRO-3 / FSDP gathers (0: param_bytes). FSDP2 keeps fp32 shards and
  // gathers them cast to MixedPrecisionPolicy.param_dtype (bf16 in torchtitan and AutoModel).
  double gather_bytes = 0;
  // Bytes per gradient element as the data-parallel reduce sends it (0: gradient_bytes()). FSDP2's
  // MixedPrecisionPolicy.reduce_dtype, which defaults to its param_dtype: HyperParallel's fp32 shards gathered in
  // bf16 reduce their gradients in bf16 and keep them in fp32.
  double reduce_bytes = 0;
  // ZeRO-3 / FSDP under pipeline parallelism as torch.distributed.pipelining runs FSDP2 with torchtitan's default
  // reshard policy: a stage's parameters are gathered once per step and kept (reshard_after_forward = not
  // pp_enabled), its gradients accumulate unsharded in the reduce dtype (set_requires_gradient_sync(False) on every
  // backward but the last) and are reduce-scattered once. False: gathered and resharded per layer and micro-batch.
  bool zero3_gathers_once_with_pp = false;
  // Ring CP's K,V exchanged by one all-gather per attention pass instead of block by block beside each step: PyTorch's
  // experimental context parallelism with its all-gather rotater (torchtitan's default context_parallel_rotate_method
  // "allgather"). The forward gathers every rank's K,V before its first step and waits after that step's attention;
  // the backward gathers them again and passes the dK,dV accumulated in fp32 rank to rank after each step
  // (terms::gathered_cp_seconds). False: Transformer Engine's ring (Megatron's p2p), a block per step.
  bool cp_kv_gathered_once = false;
  // GQA's K,V repeated to the query heads before the attention call, so that ring CP exchanges (and gathers) n_heads
  // of them, not n_kv_heads: torchtitan's models repeated them (repeat_kv) until "GQA without kv repeats" (torchtitan
  // #2259, 2026-01-27), four weeks before its TOML configs gave way to Python ones (#2386).
  bool cp_kv_repeated = false;
  // ZeRO-2 as torch's FSDP2 runs it (fully_shard with reshard_after_forward=False: torchtitan's
  // fsdp_reshard_after_forward "never", AutoModel's and HyperParallel's reshard_after_forward false): the weights stay
  // sharded like ZeRO-3's, and their gathered copies (gather dtype) are kept from a layer's forward to its backward,
  // so the stage is held gathered within a micro-batch and gathered again for the next one (reshard_after_backward).
  // False: ZeRO-2 as Megatron FSDP's optim_grads and DeepSpeed run it, the weights whole on every rank.
  bool zero2_keeps_weights_sharded = false;
  // ZeRO-3 as MindSpore's parallel optimizer runs it (optimizer_level level1, MindFormers' enable_parallel_optimizer
  // with gradient_accumulation_shard False): weights and optimizer states sliced over DP; each weight all-gathered in
  // the compute dtype once before its first forward use and kept until its backward (under PP every gather waits on
  // the first micro-batch: held the whole step); gradients reduce-scattered once per step; accumulated gradients
  // (pipeline micro-batches, accumulation steps) held unsharded in the parameter dtype. Sources: MindSpore's
  // "Optimizer Parallel" page (docs r2.6.0) and set_auto_parallel_context's optimizer_level; mindspore
  // ccsrc/frontend/parallel/pass/overlap_opt_shard_in_pipeline.cc.
  bool zero3_gathers_once_per_step = false;
  // FSDP2's gradient sync skipped on every micro-batch's backward but the step's last (NeMo AutoModel's
  // defer_fsdp_grad_sync, default on; set_requires_gradient_sync(False)): ZeRO-2 / ZeRO-3 gradients accumulate
  // unsharded in the gradient dtype and are reduce-scattered once per step instead of once per micro-batch.
  bool defer_grad_sync = false;
  // MindSpore's parallel_optimizer_comm_recompute (MindFormers' recompute_config; optimizer_level level3): the
  // gathered weights are released after their forward use and gathered again for the backward: one layer's at a
  // time, one more all-gather per micro-batch.
  bool zero3_regathers_in_backward = false;
  // The optimizer casts each parameter's gradient to fp32 inside its own update (MindFormers' AdamW, mindformers
  // core/optim/adamw.py _update_run_op, applied parameter by parameter by hyper_map), so no whole fp32 copy of the
  // half-precision gradients exists at the step (Megatron's distributed optimizer keeps one: false).
  bool optimizer_casts_per_parameter = false;
  double compute_bytes = 2;             // activations
  double capacity_factor = 1;           // MoE routed-token factor (1 = dropless, balanced)
  double reserve_bytes = 1073741824.0;  // allocator fragmentation and framework context, per device
  bool interleave_less_memory = false;
  bool fp8 = false;  // GEMMs in FP8 (Transformer Engine); attention and element-wise ops stay in BF16
  // With fp8: the GEMMs' low precision is NVFP4 (Transformer Engine's NVFP4BlockScaling recipe, Megatron's
  // --fp4-format e2m1 --fp4-recipe nvfp4), priced at the device's FP4 rate (hardware::Hardware::fp4_gemm_efficiency),
  // its quantised copies kNvfp4BytesPerElement each and its casts kNvfp4CastBytesPerElement; everything else
  // the fp8 fields say (Transformer Engine's copies kept for the backward, its weight cache, param gather, the BF16
  // LM head) holds for it as for FP8.
  bool fp4 = false;
  // FP8 through Transformer Engine (true) or torchao's Float8Linear (false: torchtitan's float8). Transformer
  // Engine's Linear, LayerNormLinear and GroupedLinear keep the FP8 copy of their input for the weight gradient
  // (its column-wise data, transformer_engine/pytorch/module/linear.py) and, given Megatron's is_first_microbatch,
  // cache each weight's FP8 copy and its transpose across the step's micro-batches (get_weight_workspace with
  // cache_name "weight"; Megatron's disable_parameter_transpose_cache is False by default). torchao keeps the
  // high-precision input, casts it again in the backward and caches no weight (torchao/float8/float8_linear.py).
  bool fp8_transformer_engine = true;
  // Megatron's fp8_param_gather (NeMo's and Megatron-Bridge's FP8 precision recipes set it): the weights themselves
  // are kept in FP8 (one byte, with a one-byte transpose), so Transformer Engine caches no other copy; priced as
  // param_bytes 2 with no cache. Megatron accepts it with the distributed optimizer only (ZeRO >= 1).
  bool fp8_param_gather = false;
  // Bytes per element of a linear layer's input kept for its weight gradient (the op records' `bq`).
  [[nodiscard]] double kept_gemm_input_bytes() const { return fp8 && fp8_transformer_engine ? quantized_bytes() : compute_bytes; }
  // The precision the GEMMs run in (attention and element-wise ops stay in compute_bytes).
  enum class Gemm { Bf16, Fp8, Fp4 };
  [[nodiscard]] Gemm gemm_precision() const {
    if (!fp8) return Gemm::Bf16;
    return fp4 ? Gemm::Fp4 : Gemm::Fp8;
  }
  // Bytes per element of a GEMM operand in the low precision: FP8's 1, NVFP4's kNvfp4BytesPerElement.
  [[nodiscard]] double quantized_bytes() const { return fp4 ? kNvfp4BytesPerElement : 1.0; }
  // Bytes moved per element by the casts that quantise a GEMM input (0 without FP8 or FP4).
  [[nodiscard]] double quantize_cast_bytes() const {
    if (!fp8) return 0.0;
    return fp4 ? kNvfp4CastBytesPerElement : kFp8CastBytesPerElement;
  }
  // How the launcher orders ranks, innermost first (Megatron's default: TP, then CP, DP, PP). It decides which
  // link each group's collectives run on. Experts follow Megatron's expert layout (expert-TP x EP innermost).
  std::array<char, 4> rank_order = {'t', 'c', 'd', 'p'};
  // The recompute switches `selective` drops (Megatron's recompute_modules, mapped to op-record switches:
  // core_attn, attn_up (mla_up_proj), act (moe_act), norm (layernorm), mlp, moe, shared); empty: the model's
  // profile list.
  std::vector<std::string> recompute_modules;
  // MoE: tokens on the most loaded EP rank over the mean (1 = balanced; the forced-balanced benchmarks).
  double moe_imbalance = 1.0;
  // MoE dispatcher: false = Megatron's alltoall dispatcher (every routed copy crosses the network on its own);
  // true = DeepEP / HybridEP (moe_flex_dispatcher_backend): a token crosses to each remote node once and fans out
  // over NVLink inside it.
  bool ep_dedup_per_node = false;
  // MoE: each token's k experts are consecutive (NeMo AutoModel's fake_balanced_gate, a benchmark setting), so the
  // dispatch reaches one or a few ranks and nodes per token instead of a random spread (cost/time.cpp, Routing).
  bool moe_contiguous_routing = false;
  // MoE: Megatron's moe_shared_expert_overlap (the shared experts run while the dispatch/combine are in flight).
  bool shared_expert_overlap = false;
  // The loss: Megatron's fused vocab-parallel cross entropy (true) or an unfused fp32 log-softmax (PyTorch).
  bool loss_fused = true;
  // The head and the loss run together over chunks of the vocabulary and never hold the logits (Cut Cross-Entropy,
  // Wijmans et al. 2024, arXiv:2411.09009; NeMo AutoModel's FusedLinearCrossEntropy): no logits or loss buffers
  // kept, and the backward computes the logits once more.
  bool loss_chunked = false;
  // The LM head's output gathered whole on every TP rank (an all-gather of the logits in forward) for a loss over
  // the full vocabulary, instead of kept split by vocabulary (cost::terms::logits_split).
  bool logits_whole_over_tp = false;
  // Caching-allocator fragmentation, as a fraction of activations (reserved over allocated peak).
  double activation_fragmentation = 0.0;
  // Pipelines run one after another per step under PP, each over micro_batches / pipeline_runs micro-batches with
  // its own fill, drain and data-parallel reduce: torchtitan's and NeMo AutoModel's gradient accumulation under PP
  // (their train step calls the pipeline schedule once per accumulation step). 1: one pipeline of all of them.
  int pipeline_runs = 1;
  // MindSpore's sequence pipeline (MindFormers' pipeline_scheduler seqpipe with parallel_config.seq_split_num;
  // Seq1F1B, Sun et al. 2024, arXiv:2406.03488): each micro-batch crosses the pipeline as seq_split segments of
  // seq / seq_split tokens, the schedule's units. A segment attends to the earlier ones through a KV cache
  // (mindformers/models/llama/llama_transformer.py: key_cache / value_cache tiled to the whole sequence), so
  // attention does the causal work of the whole sequence and keeps K and V of its whole length; each stage holds
  // seq_split - 1 more units in flight than 1F1B (the backward runs a micro-batch's segments last first).
  int seq_split = 1;
  // DualPipe-V (DeepSeek's DualPipe repository; MindSpeed's --schedules-method dualpipev, torchtitan's DualPipeV):
  // two chunks per stage in a V, chunk 0 of stage s the virtual stage s and chunk 1 the virtual stage 2 PP - 1 - s,
  // so stage 0 holds both the embedding and the head; the bubble is (PP - 1)(F&B + B - 3W) of one chunk (the
  // repository's table, PP its devices). Needs VPP 2 and at least 2 PP micro-batches; ignored without PP.
  bool dualpipe_v = false;
  // Pipeline split: the embedding, the loss and the MTP layers count as layers of the first and last chunks
  // (Megatron's account_for_embedding/loss_in_pipeline_split; plan::for_each_chunk_group).
  bool pipeline_split_counts_head = false;

  // LoRA fine-tuning (Hu et al. 2021, arXiv:2106.09685): rank of the adapters on every linear layer; 0 trains every
  // weight. The base weights are frozen: no gradient, no optimizer state, no weight-gradient GEMM
  // (terms::trainable_fraction).
  long long lora_rank = 0;

  // Tokens of one pipeline unit: the sequence, or one of its seq_split segments.
  [[nodiscard]] long long unit_seq() const { return seq / std::max(1, seq_split); }
  // Bytes per gradient as priced: fp8_grad_bytes under FP8 when stated, else grad_bytes.
  [[nodiscard]] double gradient_bytes() const { return fp8 && fp8_grad_bytes > 0 ? fp8_grad_bytes : grad_bytes; }
  // Bytes per gathered parameter element: gather_bytes when stated, else param_bytes.
  [[nodiscard]] double gathered_param_bytes() const { return gather_bytes > 0 ? gather_bytes : param_bytes; }
  // Bytes per gradient element the data-parallel reduce sends: reduce_bytes when stated, else gradient_bytes().
  [[nodiscard]] double reduced_gradient_bytes() const { return reduce_bytes > 0 ? reduce_bytes : gradient_bytes(); }
};

// Whether the layout runs DualPipe-V (Training::dualpipe_v, with PP).
[[nodiscard]] inline bool dualpipe_v(const Layout& layout, const Training& training) { return training.dualpipe_v && layout.pp > 1; }
// The rank of `pp` that holds virtual stage `k` (chunk k / pp): chunk-major (k mod pp), or in a V, chunk 1 back up
// the ranks (virtual stage pp + j on rank pp - 1 - j: DualPipe-V, torch's V schedules).
[[nodiscard]] inline long long rank_of_virtual(long long pp, long long k, bool v_shape) {
  const long long rank = k % pp;
  return v_shape && k / pp == 1 ? pp - 1 - rank : rank;
}
// The stage that holds virtual stage `k` (chunk k / PP): interleaved placement, or DualPipe-V's V.
[[nodiscard]] inline int stage_of_virtual(const Layout& layout, const Training& training, long long k) {
  return static_cast<int>(rank_of_virtual(layout.pp, k, dualpipe_v(layout, training)));
}
// The stage that holds the last layers, the head and the loss: the last stage, or stage 0 under DualPipe-V.
[[nodiscard]] inline int head_stage(const Layout& layout, const Training& training) { return dualpipe_v(layout, training) ? 0 : layout.pp - 1; }

// Megatron-Core's hybrid stack (MambaStack, core_v0.14.0 to core_v0.16.x: megatron/core/ssm/mamba_block.py,
// _select_layers_for_pipeline_parallel) gives each stage num_layers // PP layers and asserts that no virtual pipeline
// is set: a layout of `layers` that it runs as priced (search::Space::hybrid_even_pipeline, --emit megatron).
[[nodiscard]] inline bool hybrid_stack_runs_pipeline(long long layers, const Layout& l) { return l.vpp == 1 && layers % l.pp == 0; }

// Replication (ZeRO 0) beside another dimension: over DP > 1 with TP, PP or EP (DDP taking no other dimension),
// or with CP at all (CP's ranks shard nothing then). What a format whose DDP is one-dimensional and which shards over
// CP cannot state (torchtitan; search::Space::replication_alone).
[[nodiscard]] inline bool replicates_beside_other_dimensions(const Layout& l) {
  return l.zero == 0 && (l.cp > 1 || (l.dp > 1 && (l.tp > 1 || l.pp > 1 || l.ep > 1)));
}

// The pipelines the step runs one after another (Training::pipeline_runs): 1 without PP.
[[nodiscard]] inline int pipeline_runs(const Layout& layout, const Training& training) { return layout.pp > 1 ? std::max(1, training.pipeline_runs) : 1; }

// Reads a rank order like "tp-cp-dp-pp" (a permutation of tp, cp, dp and pp, innermost first).
std::array<char, 4> parse_rank_order(const std::string& text, const std::string& where);
// The consecutive ranks one group of `dim` ('t', 'c', 'd', 'p') spans under the order: the product of the
// degrees inside it, times its own degree.
long long group_span(const Layout& layout, const std::array<char, 4>& order, char dim);

// Expert parallelism carves its EP x expert-TP ranks out of each stage's DP x CP x TP ranks (`ranks_per_stage`):
// whether they divide them (check_layout's ep/dp rule; a launch file's own devices are checked against it too).
[[nodiscard]] inline bool experts_fit_stage_ranks(const Layout& layout, long long ranks_per_stage) {
  return ranks_per_stage % (1LL * layout.ep * layout.etp) == 0;
}

struct Violation {
  std::string rule;    // short name, used as the rejection reason in searches
  std::string detail;  // one sentence naming the numbers
};

// Every rule the layout breaks for this model and run (empty when it is valid). The first is the one to report.
// Sets DP (devices / (TP x PP x CP)) and the micro-batch count (global batch / (DP x micro-batch size)) of a
// layout whose other degrees are given; refuses, naming `devices_key` or `batch_key`, what does not divide.
void derive_data_parallel(Layout& layout, long long devices, long long global_batch, const std::string& devices_key, const std::string& batch_key);

// The machine a layout must be placed on, for the rules that depend on it.
struct Cluster {
  long long devices = 0;               // 0: not checked
  long long devices_per_node = 0;      // 0: unknown (TP is not checked against it)
  bool allow_tp_across_nodes = false;  // TP groups are kept within a node unless allowed
};

// Every rule the layout breaks for this model, run and cluster (empty when it is valid); the first is the one
// to report. `estimate`, `search` and `plan` all call this one function. `details = false` leaves the sentences
// empty (a search only counts the rules).
std::vector<Violation> check_layout(const model::Model& model, const Layout& layout, const Training& training, const Cluster& cluster, bool details = true);
// The same with only the device count known.
std::vector<Violation> check_layout(const model::Model& model, const Layout& layout, const Training& training, long long devices, bool details = true);

}  // namespace sapp::plan
