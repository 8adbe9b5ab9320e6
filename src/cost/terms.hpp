// cost/terms: the named, cited home of the model-level and step-level terms the estimators use, in the style of
// Megatron's theoretical_memory_usage.py: each constant or formula has a name with its unit, and its source beside
// it. memory.cpp and time.cpp read these names; explain_stage() prints from them, so the explanation cannot drift
// from the arithmetic. Also here, as data with their sources: the framework runtime profiles (what each training
// system overlaps, keeps and reserves) and which (device, precision) pairs are validated against measured runs.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/files.hpp"
#include "hardware/hardware.hpp"
#include "plan/layout.hpp"

namespace sapp::cost {

// Fractions of each communication that compute hides, stated and documented rather than buried in code (a
// framework's runtime profile states them; the estimator also bounds each by the compute it runs beside).
struct Overlap {
  double tp = 0.5;  // TP all-gather/reduce-scatter pipelined with the GEMMs around them (Megatron tp-comm-overlap)
  double dp = 0.9;  // gradient reduce-scatter / parameter all-gather overlapped with backward / forward, but at
                    // most the last micro-batch's backward hides it (the reduce starts when the grads are ready)
  double ep = 0.0;  // MoE dispatch/combine all-to-all: exposed by default
  double cp = 1.0;  // ring CP: share of each ring step's attention that hides the step's K,V transfer (a side
                    // stream; terms::ring_cp_exposed_seconds)
  double pp = 1.0;  // steady-state pipeline sends hidden under compute (fill/drain sends are always exposed)
  // The same under a schedule without interleaving (1F1B, GPipe); negative: as `pp`. Megatron-Core overlaps its
  // pipeline sends only in the interleaved schedule (overlap_p2p_comm); without interleaving each steady-state
  // step blocks on send_forward_recv_backward and send_backward_recv_forward (schedules.py,
  // forward_backward_pipelining_without_interleaving; Megatron-Bridge's comm_overlap.py sets overlap_p2p_comm only
  // with VP > 1 and batch_p2p_comm otherwise): the Megatron, NeMo and Megatron-Bridge profiles state 0.
  double pp_1f1b = -1.0;
  // The share of steady-state pipeline sends hidden under a schedule with `vpp` chunks per stage.
  [[nodiscard]] double pp_for(long long vpp) const { return vpp > 1 || pp_1f1b < 0 ? pp : pp_1f1b; }
};
// An overlap mapping ({tp, dp, ep, cp, pp, pp_1f1b}, each a fraction from 0 to 1; keys not stated keep `into`'s) read over
// `into`: the framework profiles' and the validation runs' (their recipes' overlap where it differs).
void read_overlap(const io::Reader& map, Overlap& into);

}  // namespace sapp::cost

namespace sapp::cost::terms {

// ---- step-level constants --------------------------------------------------------------------------------------
// Backward over forward compute of a GEMM (dgrad + wgrad): the forward is 1/3, the backward 2/3 of a layer's
// work. Source: Narayanan et al. 2021 (arXiv:2104.04473) section 5.1, "the backward pass is twice the forward".
inline constexpr double kForwardShare = 1.0 / 3.0;
inline constexpr double kBackwardShare = 2.0 / 3.0;
// The weight-gradient GEMMs' share of a backward (W of the zero-bubble and DualPipe schedules): the input-gradient
// and weight-gradient GEMMs do the same FLOPs (Qi et al. 2023, arXiv:2401.10241, section 2).
inline constexpr double kWeightGradientShare = 0.5;
// LoRA: the share of the parameters trained. An adapter of rank r on a linear layer of in x out weights adds
// r (in + out) weights (Hu et al. 2021, arXiv:2106.09685 section 4); priced at 2 r / hidden of all parameters, exact
// for a square layer and above the share of the wider MLP layers (r (1/h + 1/ffn)); 1 when every weight trains.
// Frozen weights keep their copy in the parameter dtype and nothing else.
inline double trainable_fraction(const plan::Training& training, double hidden) {
  return training.lora_rank > 0 && hidden > 0 ? std::min(1.0, 2.0 * static_cast<double>(training.lora_rank) / hidden) : 1.0;
}
// Backward over forward work of a frozen weight's GEMM: the input gradient only (1), plus the adapters' share of a
// weight gradient; 2 when every weight trains.
inline double frozen_gemm_backward(double trainable) { return 1.0 + trainable; }
// Loss: the logits upcast to fp32, log-softmax, its gradient: bytes moved per logit, forward and backward
// (read bf16 2 + write fp32 4, read 4 + write 4 for the gradient ~ 12). Memory-bound (Megatron's
// vocab_parallel_cross_entropy, fused).
inline constexpr double kLossBytesPerLogit = 12.0;
// Loss backward's transient peak on the last stage, on top of the kept bf16 logits and their fp32 upcast (the
// `head_activations` term, bc + 4 bytes per logit): Megatron's fused vocab-parallel cross entropy keeps the
// softmax in the fp32 buffer and writes the gradient in place (megatron/core/tensor_parallel/cross_entropy.py): 0
// more bytes; PyTorch's F.cross_entropy on .float() logits (torchtitan) saves the fp32 log-softmax (4) and
// materialises its fp32 gradient (4) during the backward: 8 more bytes per logit, for one micro-batch. Under tensor
// parallelism torchtitan runs it in torch's loss_parallel context (vocab-sharded DTensor logits; on by default), whose
// backward fuses the nll and log-softmax gradients as `(grad_input + exp(x)) * grad_output`
// (torch/distributed/tensor/parallel/loss.py, _nll_loss_and_log_softmax_backward): the saved fp32 log-softmax x, the
// fp32 grad_input, their fp32 sum and the fp32 product are live at once, 16 bytes per logit, while torchtitan has
// already freed the bf16 logits: 10 more bytes per logit than the head_activations term's 6.
inline constexpr double kLossBackwardBytesPerLogitFused = 0.0;
inline constexpr double kLossBackwardBytesPerLogitUnfused = 8.0;
inline constexpr double kLossBackwardBytesPerLogitLossParallel = 10.0;
// Ranks the logits are split over: TP (the head's vocabulary-parallel output, which every framework's fused or
// loss_parallel cross entropy reads), or 1 when the head's output is gathered whole on every TP rank for a loss over
// the full vocabulary (plan::Training::logits_whole_over_tp: HyperParallel without accelerator.loss_parallel, whose
// trainer then keeps Transformers' ForCausalLMLoss; torchtitan with disable_loss_parallel; ColwiseParallel with
// output_layouts Replicate()).
inline double logits_split(const plan::Training& training, int tp) { return training.logits_whole_over_tp ? 1.0 : static_cast<double>(tp); }
// The loss backward's transient bytes per (local) logit, and the name of that loss for --explain.
inline double loss_backward_bytes_per_logit(const plan::Training& training, int tp) {
  if (training.loss_fused) return kLossBackwardBytesPerLogitFused;
  return logits_split(training, tp) > 1 ? kLossBackwardBytesPerLogitLossParallel : kLossBackwardBytesPerLogitUnfused;
}
inline const char* loss_backward_name(const plan::Training& training, int tp) {
  if (training.loss_chunked) return "chunked linear cross entropy: no logits held";
  if (training.loss_fused) return "fused cross entropy";
  if (tp > 1 && training.logits_whole_over_tp) return "unfused cross entropy on logits gathered whole over TP";
  return tp > 1 ? "torch loss_parallel cross entropy" : "unfused cross entropy";
}
// LM head forward FLOPs for `tokens` tokens: 2 t h V, once for the model and once per MTP depth (each MTP depth
// has its own output projection through the shared head). Source: Narayanan et al. 2021 eq. 3 (the V/(16 l h) term
// is the head's 6 t h V over the layers' 96 t l h^2).
inline double lm_head_forward_flops(double tokens, double hidden, double vocab, double mtp_depths) {
  return 2.0 * tokens * hidden * vocab * (1.0 + mtp_depths);
}
// The LM head's GEMMs run in BF16 under an FP8 recipe: Megatron-Core builds the output layer as
// tensor_parallel.ColumnParallelLinear, outside Transformer Engine's FP8 autocast (megatron/core/models/gpt/
// gpt_model.py; an MXFP8 head is opt-in with fp8_output_proj since Megatron-LM 3f6a2ed, May 2026), and torchtitan's
// Float8 conversion skips the `output` module (torchtitan 9dec370 float8.py, module_filter_fn fqn != "output").
inline constexpr bool kLmHeadRunsInFp8 = false;
// Bytes the loss moves (forward and backward) for `tokens` tokens: kLossBytesPerLogit per logit, per MTP depth too.
inline double loss_bytes(double tokens, double vocab, double mtp_depths) { return tokens * vocab * kLossBytesPerLogit * (1.0 + mtp_depths); }
// Ring CP: cp-1 steps of K,V forward; backward passes K,V and their gradients: 3 (cp-1) transfers of one K,V block.
// Source: Megatron-Core context_parallel (attention backward sends dK, dV with K, V), Liu et al. 2023 Ring Attention.
inline constexpr double kRingCpPassesPerStep = 3.0;
// Ring CP merges each step's partial result into the running one on the compute stream: the forward's output
// (out += out_step x exp(lse_step - lse), one fused pass reading both and writing one: 3 elements of the compute
// dtype per output element), the backward's dQ (dq.add_(dq_step)) and the dK,dV passed along the ring (dkv.add_),
// the same 3 per element. Under the load-balanced causal split the steps past the diagonal cover half of the local
// queries: (cp + 1) / 2 whole and (cp - 1) / 2 half steps, (3 cp + 1) / 4 whole ones' worth. Source: Transformer
// Engine transformer_engine/pytorch/attention/dot_product_attention/context_parallel.py (AttnFuncWithCPAndKVP2P,
// flash_attn_fwd_out_correction, dq.add_, dkv.add_; commit d0067d0da), BF16 attention in the bshd / sbhd layouts.
// PyTorch's experimental CP merges in fp32 with more passes (torchtitan's runs): not priced beyond this.
inline constexpr double kRingMergeElementsPerPass = 3.0;
inline double ring_merge_steps(double cp) { return cp > 1 ? (3.0 * cp + 1.0) / 4.0 : 0.0; }
// Exposed time of a ring CP layer: each of the cp-1 forward steps sends the next K,V block while the attention of
// the block at hand runs (a side stream: Transformer Engine's AttnFuncWithCP, cp_stream; Megatron-Core's context
// parallelism), and each backward step sends K,V and the dK,dV accumulated so far (2 blocks) beside that step's
// attention backward. A step's transfer is hidden up to `overlap` times its step's attention (the load-balanced
// split gives every step 1/cp of the layer's attention), the rest is exposed. `block_s` is one K,V block's
// transfer, `attention_fwd_s` / `attention_bwd_s` the layer's attention kernels on this rank.
inline double ring_cp_exposed_seconds(double cp, double block_s, double attention_fwd_s, double attention_bwd_s, double overlap) {
  if (cp <= 1) return 0;
  double forward = std::max(0.0, block_s - overlap * attention_fwd_s / cp);
  double backward = std::max(0.0, (kRingCpPassesPerStep - 1.0) * block_s - overlap * attention_bwd_s / cp);
  return (cp - 1) * (forward + backward);
}
// Ring CP with its K,V gathered once per attention pass (plan::Training::cp_kv_gathered_once), as PyTorch's
// experimental context parallelism runs it with the all-gather rotater (torch/distributed/tensor/experimental/
// _attention.py, _AllGatherRotater: "Only one communication will be done"; _templated_ring_attention and its
// backward): the forward all-gathers every rank's K,V (cp - 1 blocks received) before its first step and waits for
// them after that step's attention; the backward gathers them again the same way and, after each of its cp - 1
// steps, passes the dK,dV accumulated so far to the next rank (an all-to-all permute, fp32 under _cp_options.
// convert_to_f32), waited at the next step. The first step and each later one hold 1/cp of the layer's attention
// under the load-balanced causal split. `block_s` is one K,V block's transfer, `grad_block_s` its fp32 dK,dV's.
struct GatheredCp {
  double forward_s = 0;   // exposed, forward (a full recompute runs it again)
  double backward_s = 0;  // exposed, backward
  double raw_s = 0;       // every transfer, exposed or not
};
inline GatheredCp gathered_cp_seconds(double cp, double block_s, double grad_block_s, double attention_fwd_s, double attention_bwd_s, double overlap) {
  GatheredCp g;
  if (cp <= 1) return g;
  const double gather_s = (cp - 1.0) * block_s;
  g.forward_s = std::max(0.0, gather_s - overlap * attention_fwd_s / cp);
  g.backward_s = std::max(0.0, gather_s - overlap * attention_bwd_s / cp) + (cp - 1.0) * std::max(0.0, grad_block_s - overlap * attention_bwd_s / cp);
  g.raw_s = 2.0 * gather_s + (cp - 1.0) * grad_block_s;
  return g;
}
// All-to-all CP (Ulysses): q, k, v, output forward and their four in backward. Source: Jacobs et al. 2023 (arXiv:2309.14509).
// A linear-attention mixer (Mamba-2, Gated DeltaNet) under CP, whatever the CP algorithm, switches from the sequence
// split to a head split and back around its scan as Ulysses does (Megatron-Core's MambaContextParallel: an all-to-all
// of the projected x, B, C, z and dt before the scan, of its output after): priced as the same eight all-to-alls of
// the layer's hidden width (Mamba-2's in and out widths are 3.8 and 1.5 hidden for Nemotron 3 Nano, 5.3 hidden
// against Ulysses' 4).
inline constexpr double kUlyssesAllToAlls = 8.0;
// EP: dispatch + combine in the forward, their transposes in the backward. Source: Megatron-Core MoE
// token_dispatcher.py (MoEAlltoAllTokenDispatcher).
inline constexpr double kEpAllToAlls = 4.0;
// Communication workspaces hold two copies of what they move: a collective's input and its output (TP's gathered
// input and reduce-scatter staging, EP's dispatch and combine buffers, CP's send and receive K,V blocks), FSDP's
// gathered layer and the next one it prefetches (PyTorch FSDP2 with forward prefetch, torchtitan).
inline constexpr double kCommBufferCopies = 2.0;
// The optimizer step upcasts gradients kept below fp32 (bf16 reduction) to an fp32 copy of the local shard.
inline constexpr double kFp32Bytes = 4.0;
// Transformer Engine's FP8 weight cache, bytes per weight element: the row-wise FP8 copy and its transpose (the
// column-wise data the backward's data-gradient GEMM reads on Hopper), one byte each; kept across micro-batches
// when Megatron passes is_first_microbatch (transformer_engine/pytorch/module/linear.py get_weight_workspace with
// cache_name "weight"). MXFP8's block scales (1/32 byte per element and copy) are left out.
inline constexpr double kFp8WeightCacheBytes = 2.0;
// ZeRO-2/3 gradient bucket staged for reduce-scatter: Megatron's DDP bucket_size default 40 M elements
// (megatron/core/distributed/distributed_data_parallel_config.py: bucket_size = max(40000000, 1000000 * dp)).
inline constexpr double kDpBucketElements = 40e6;

// ---- MoE as it runs -----------------------------------------------------------------------------------------
// Grouped GEMM (Megatron-Core TEGroupedMLP / CUTLASS grouped GEMM) on narrow experts: on top of the dense GEMM
// time (rows ramp on the rows each local expert gets), grouped_gemm_half_width / width of the same work priced at
// the BF16 GEMM rate, whatever the GEMM precision (tile shapes and per-expert launches, which FP8 does not speed
// up); width = the expert's FFN width per expert-TP rank; grouped_gemm_half_width is the device's (hardware
// efficiency block, each fitted on one `fitted: true` MoE row of validation/runs.yaml and named there).
// Dropless routing with forced-balanced tokens (NeMo/Megatron-Bridge benchmarks) still lands unevenly on the
// EP ranks per micro-batch: the slowest rank waits for the most loaded one. Default imbalance factor (max over
// mean of tokens per EP rank) for dropless routing when a run states none; 1 when the router is forced to balance.
inline constexpr double kDroplessImbalance = 1.0;
// A weight-gradient GEMM adds its product into the gradient kept across micro-batches: Megatron-Core's
// gradient_accumulation_fusion (default with Transformer Engine) has TE's Linear and GroupedLinear accumulate into
// main_grad inside the GEMM (fuse_wgrad_accumulation; megatron/core/extensions/transformer_engine.py, TEGroupedLinear),
// PyTorch's autograd adds into .grad after it. Either way the GEMM reads and writes every gradient element of its
// weight once per micro-batch (grad_bytes each way) besides reading its two inputs, so it cannot run faster than
// those bytes at the device's memory rate. The bound binds where a weight sees few rows per micro-batch: a routed
// expert's weight gradient over K rows does 2 K FLOPs per weight element against 2 x grad_bytes moved, K / grad_bytes
// FLOPs per byte, below B200's or H100's FP8 balance point (about 450 FLOPs per byte at the fitted efficiencies)
// under ~1800 rows with fp32 gradients, ~900 with bf16: DeepSeek-V3 over EP 8 gives each expert 1024 rows per
// micro-batch, over EP 32 4096. Bytes one weight-gradient pass moves at least:
inline double wgrad_pass_min_bytes(double weight_elements, double grad_bytes, double input_elements, double input_bytes) {
  return weight_elements * 2.0 * grad_bytes + input_elements * input_bytes;
}
// Megatron-Core's alltoall token dispatcher copies tokens_per_expert to the host in every dispatch (the grouped
// GEMM's split sizes and the all-to-all's output splits; token_dispatcher.py, `.to(torch.device("cpu"))`), which
// drains the launch queue: after each sync the GPU waits for the CPU to launch the layer's next kernels again
// (without CUDA graphs ~200 kernels per MoE layer forward + backward at ~10 us of PyTorch launch cost each).
// Seconds per MoE layer and micro-batch, forward + backward: that count times that cost, a prior, not fitted.
// DeepEP / HybridEP runs (with CUDA graphs on the router and preprocessing in the Megatron-Bridge configs) pay 0.
inline constexpr double kAllToAllDispatcherHostSeconds = 2.0e-3;
// An EP all-to-all hidden behind compute runs its kernels on SMs the compute then lacks: Megatron-Core gives
// DeepEP 20 SMs (TransformerConfig.moe_deepep_num_sms, default 20; HybridEP 16); NCCL's all-to-all on a side
// stream is priced alike. While hidden, the compute runs on (sm_count - kEpCommSms) of the device's SMs, so each
// hidden second costs kEpCommSms / sm_count seconds of compute (hardware sm_count; 0 = not stated: no cost).
inline constexpr double kEpCommSms = 20.0;
// Share of the TP all-gathers and reduce-scatters hidden under the GEMMs with Megatron's --tp-comm-overlap
// (Transformer Engine's userbuffers pipeline each collective in chunks against the GEMM it feeds; the first and last
// chunk stay exposed): the NeMo and Megatron-Bridge profiles, whose recipes set tp_comm_overlap, and a script that
// states the flag. A documented approximation, not fitted.
inline constexpr double kUserbuffersTpOverlap = 0.9;
// Share of a TP collective hidden when it and its GEMM are split into n pieces and pipelined (MindSpeed's
// --use-ascend-coc --coc-parallel-num n): the piece that starts or ends the pipeline has nothing to hide behind,
// the other n - 1 of n overlap. n = 1: nothing hidden.
inline double chunked_tp_overlap(long long pieces) { return pieces <= 1 ? 0.0 : 1.0 - 1.0 / static_cast<double>(pieces); }
// Share of the EP all-to-all hidden when the framework overlaps it with another micro-batch's compute
// (Megatron-Core's --overlap-moe-expert-parallel-comm, MindSpeed's --moe-fb-overlap, DeepSeek's dual-batch
// overlap): all of it, each hidden second still costing kEpCommSms of the SMs.
inline constexpr double kOverlappedEpAllToAll = 1.0;

// Whether ZeRO-3's parameters stay gathered for the whole step and its gradients accumulate unsharded
// (plan::Training::zero3_gathers_once_with_pp, under PP): one all-gather and one reduce-scatter per step, and the
// stage's parameters (gather dtype) and gradients (gradient dtype) held whole.
inline bool zero3_keeps_stage_gathered(const plan::Training& training, const plan::Layout& l);
// Whether the layout's ZeRO shards the weights: ZeRO-3, and ZeRO-2 as FSDP2 runs it
// (plan::Training::zero2_keeps_weights_sharded).
inline bool shards_weights(const plan::Training& training, const plan::Layout& l) {
  return l.zero >= 3 || (l.zero == 2 && training.zero2_keeps_weights_sharded);
}
inline bool zero3_keeps_stage_gathered(const plan::Training& training, const plan::Layout& l) {
  return shards_weights(training, l) &&
         ((training.zero3_gathers_once_with_pp && l.pp > 1) || (training.zero3_gathers_once_per_step && !training.zero3_regathers_in_backward));
}
// Whether ZeRO-3's gradients accumulate unsharded: under torch pipelining's no-sync backwards (with the stage kept
// gathered); under MindSpore's parallel optimizer whenever there is something to accumulate (several micro-batches
// or accumulation steps), kept gathered or not.
inline bool zero3_accumulates_unsharded(const plan::Training& training, const plan::Layout& l) {
  if (training.zero3_gathers_once_per_step) return l.zero >= 3 && l.micro_batches > 1;
  return zero3_keeps_stage_gathered(training, l) || (training.defer_grad_sync && l.zero >= 2 && l.micro_batches > 1);
}

// ---- framework runtime profiles -------------------------------------------------------------------------------
// What a training system overlaps, keeps and reserves, each with its source. `overlap_*` are the fractions of
// a collective the system's mechanism can hide; the estimator also bounds each by the compute it really runs
// concurrently (cost::Overlap, time.cpp).
// torch.nn.functional.scaled_dot_product_attention as PyTorch nightlies of December 2024 ran it on H100: the
// FlashAttention-2 backend, not cuDNN's: 329.5 against 631.3 TFLOPS, forward, BF16, one shape (batch 1, 24 heads,
// 4608 tokens, head dim 128; pytorch/pytorch issue #142132, torch 2.6.0.dev20241204). The backward is assumed to
// run at the same ratio. Which backend SDPA picks depends on the PyTorch version and the device: a run states it
// (--attention-kernel), no framework profile assumes it.
inline constexpr double kTorchSdpaAttentionRate = 329.5 / 631.3;
// Flash attention by head dimension: BF16 forward on H100 SXM5, sequence 4k, non-causal, in TFLOPS at head
// dimension 64 / 128 / 256 (Shah et al. 2024, FlashAttention-3, arXiv:2407.08608, Figure 5): cuDNN 408 / 609 / 581,
// FlashAttention-2 321 / 368 / 323. A narrower head does less work per loaded tile. Linear between the points,
// flat outside; the backward and other devices are assumed to follow the same shape (not measured here).
inline constexpr double kFlashHeadDims[] = {64, 128, 256};
inline constexpr double kCudnnAttentionTflops[] = {408, 609, 581};
inline constexpr double kFlash2AttentionTflops[] = {321, 368, 323};
// A kernel's speed at one head dimension relative to cuDNN's at head dimension 128, where every device's attention
// efficiency was fitted: the head-dimension shape above times kTorchSdpaAttentionRate for torch_sdpa.
double attention_kernel_rate(plan::AttentionKernel kernel, double head_dim);
// cuDNN 9.19's fused attention as NVIDIA's published training benchmark measured it (NVIDIA/cudnn-frontend,
// benchmark/sdpa_benchmark_training/results/{h200,gb200}_919_only_cudnn/llama3.1_*.csv at df73764: BF16, 64 query and
// 8 key-value heads of dimension 128, batch 1, 2k to 32k tokens, causal and unmasked; docs/validation.md, "Attention
// kernels by software release"): a call whose queries attend k keys on average runs its forward + 2.5 x backward
// FLOPs at attention_cudnn919 x k / (k + attention_cudnn919_half_keys) of the device's BF16 peak (each query tile
// pays a fixed cost, loading Q, rescaling and writing O, that a short key loop does not amortise). The fraction of
// the BF16 peak for a call of `keys_per_call` keys per query at `head_dim` (attention_kernel_rate's head-dimension
// shape); fails naming the device when its file states no published rate.
double cudnn919_attention_efficiency(const hardware::Hardware& hw, double keys_per_call, double head_dim);
// "auto", "fused", "torch_sdpa" or "cudnn9.19"; otherwise fails naming `where`.
plan::AttentionKernel parse_attention_kernel(const std::string& name, const std::string& where = "attention_kernel");
// The kernel a run's `kernel` prices on `hw`: Auto is cuDNN 9.19's published rate where the device's file states it
// (efficiency.attention_cudnn919 and its half keys), else the device's fitted rate (Fused); the others as stated.
plan::AttentionKernel resolved_attention_kernel(plan::AttentionKernel kernel, const hardware::Hardware& hw);
std::string to_string(plan::AttentionKernel kernel);

struct FrameworkProfile {
  std::string name;
  std::string source;
  // What it hides: Megatron --tp-comm-overlap (userbuffers) ~0.9 of TP, plain 0; --overlap-grad-reduce /
  // --overlap-param-gather or FSDP's prefetch for DP; --overlap-moe-expert-parallel-comm, dual-batch overlap for EP.
  Overlap overlap;
  // Memory the runtime keeps beyond the tensors priced op by op: CUDA context, NCCL buffers, cuBLAS/TE workspace,
  // allocator reserve. Bytes per device.
  double runtime_bytes = 1073741824.0;
  // Caching allocator fragmentation, as a fraction of the activations (reserved vs allocated peak).
  double fragmentation = 0.0;
  bool loss_fused = true;             // Megatron's fused vocab-parallel cross entropy; torch F.cross_entropy is not
  bool logits_whole_over_tp = false;  // plan::Training's field of that name
  // Training-state dtypes, bytes per element (plan::Training's fields of the same names). Megatron's mixed
  // precision: bf16 weights, fp32 main_grad, fp32 master copy + two Adam moments.
  double param_bytes = 2;
  double grad_bytes = 4;
  double optimizer_bytes = 12;
  double fp8_grad_bytes = 0;                   // under FP8 (0: grad_bytes)
  double gather_bytes = 0;                     // parameters as ZeRO-3 / FSDP gathers them (0: param_bytes)
  bool fp8_transformer_engine = true;          // plan::Training's field of that name (false: torchao)
  bool fp8_param_gather = false;               // plan::Training's field of that name
  bool zero3_gathers_once_with_pp = false;     // plan::Training's field of that name
  bool cp_kv_gathered_once = false;            // plan::Training's field of that name
  bool cp_kv_repeated = false;                 // plan::Training's field of that name
  bool zero2_keeps_weights_sharded = false;    // plan::Training's field of that name
  bool zero3_gathers_once_per_step = false;    // plan::Training's field of that name
  bool optimizer_casts_per_parameter = false;  // plan::Training's field of that name
  // What `--recompute selective` recomputes in this system, as named modules (recompute_switches); empty: the op
  // records' default (HyperParallel's selective: the cheap ops).
  std::vector<std::string> selective_modules;
};
// The profiles a framework file states (data/frameworks.yaml: `defaults`, then `profiles` by name); fails naming the
// file and key of anything it cannot read.
std::vector<FrameworkProfile> load_framework_profiles(const std::string& file);
// The profile named `name` (the bundled data/frameworks.yaml); otherwise fails naming `where` and the known names.
const FrameworkProfile& framework_profile(const std::string& name, const std::string& where = "framework");
// Sets what a profile says of the training job: runtime reserve, fragmentation, loss, state dtypes, and what
// selective recompute drops.
void apply_profile(const FrameworkProfile& profile, plan::Training& training);
std::vector<std::string> framework_names();

// ---- recompute modules ---------------------------------------------------------------------------------------
// The op-record switches (data/op_records.yaml) a framework's named recompute module drops. Megatron's
// recompute_modules (megatron/core/transformer/transformer_config.py): core_attn, mla_up_proj, moe_act, layernorm,
// mlp, moe, shared_experts; torchtitan's per-op selective AC (torchtitan_op_sac: matmul outputs kept except every
// second, attention outputs kept, norms and activations recomputed); HyperParallel's / MindFormers' selective
// (hyperparallel_selective: the cheap ops, norms and activations, with the core attention). A switch name is
// accepted as itself. Throws on an unknown name, listing the known ones.
std::vector<std::string> recompute_switches(const std::vector<std::string>& modules);
// The same for modules as a file or the command line states them: a comma-separated string, one name or a list;
// fails naming `where`.
std::vector<std::string> recompute_switches(const nlohmann::json& stated, const std::string& where);

// ---- validation status ------------------------------------------------------------------------------------------
// Whether the efficiencies of a (device, precision) pair were checked against measured runs of that device in that
// precision (validation/runs.yaml), and why not when they were not. An estimate prints it.
struct Validity {
  bool validated = false;
  std::string reason;
};
// The GEMM precision a run is priced in: BF16, FP8 or NVFP4.
std::string precision_name(const plan::Training& training);
Validity validated(const hardware::Hardware& hw, const std::string& precision);

}  // namespace sapp::cost::terms
