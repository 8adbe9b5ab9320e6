// Framework configs: each format reads what the file states, estimates, and reads back what it writes.
// Expected values are the files' own stated values (see the comments in examples/ and tests/configs/).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "app/app.hpp"
#include "config/config.hpp"
#include "core/error.hpp"
#include "core/files.hpp"
#include "cost/terms.hpp"
#include "helpers.hpp"

namespace sapp {
namespace {

std::string source(const std::string& rel) { return std::string(SAPP_SOURCE_DIR) + "/" + rel; }

// The request a config's text fills, nothing given on the command line (format detected when not given).
app::EstimateRequest filled(const std::string& text, const std::string& file, std::optional<config::Format> format = std::nullopt) {
  app::EstimateRequest r;
  config::fill(r, config::read_text(text, file, format), nlohmann::json::object());
  return r;
}

// A plan of `layout` on `devices` devices with its global batch, sequence and body layers (the rest as a test sets it).
config::Plan plan_of(const plan::Layout& layout, long long devices, long long global_batch, long long seq, long long layers) {
  config::Plan p;
  p.layout = layout;
  p.devices = devices;
  p.global_batch = global_batch;
  p.seq = seq;
  p.num_layers = layers;
  return p;
}

// A plan of the bundled model `name` on `devices` devices in data parallelism (ZeRO `zero`, EP `ep`), as the writers'
// read-back tests emit it.
config::Plan bundled_plan(const std::string& name, long long devices, long long global_batch, long long seq, int zero = 1, int ep = 1) {
  plan::Layout l;
  l.dp = static_cast<int>(devices);
  l.zero = zero;
  l.ep = ep;
  config::Plan p = plan_of(l, devices, global_batch, seq, 0);
  config::set_model(p, test::bundled(name));
  p.num_layers = p.model->num_layers;
  return p;
}

// The model a config file defines inline (HuggingFace keys), resolved as sapp prices it.
model::Model inline_model(const nlohmann::json& model_config, const std::string& file) {
  const auto& cat = test::catalog();
  return model::resolve(model::model_from_json(model_config, file), cat.records, cat.profiles);
}

struct Stated {
  std::string file;
  config::Format format;
  long long devices, tp, pp, vpp, mbs, global_batch, seq, zero;
  std::string recompute;
  std::string hardware;
};

class Examples : public ::testing::TestWithParam<Stated> {};

TEST_P(Examples, ReadsWhatTheFileStatesAndEstimates) {
  const Stated& s = GetParam();
  config::Loaded l = config::read_file(source(s.file));
  EXPECT_EQ(l.format, s.format);
  app::EstimateRequest r;
  config::fill(r, l, nlohmann::json{{"hardware", s.hardware}});
  EXPECT_EQ(r.job.devices, s.devices);
  EXPECT_EQ(r.layout.tp, s.tp);
  EXPECT_EQ(r.layout.pp, s.pp);
  EXPECT_EQ(r.layout.vpp, s.vpp);
  EXPECT_EQ(r.layout.mbs, s.mbs);
  EXPECT_EQ(r.job.training.global_batch, s.global_batch);
  EXPECT_EQ(r.job.training.seq, s.seq);
  EXPECT_EQ(r.layout.zero, s.zero);
  EXPECT_EQ(std::string(plan::to_string(r.layout.recompute)), s.recompute);
  report::EstimateReport rep = app::run_estimate(r);
  EXPECT_GT(rep.time.step_s, 0);
}

// Megatron: 8 nodes x 8 GPUs, TP 8, PP 4, 2 virtual stages, MBS 1, GBS 512, seq 8192, distributed optimizer, selective.
// torchtitan: shard 8, local batch 1, global 8, seq 8192, FSDP (ZeRO-3), selective by op.
// HyperParallel: tp 8 x pp 2 x dp_shard 2 = 32, GBS 64 = 32 x 1 x 2, seq 4096, FSDP, full.
// MindFormers: 16 x 4 x 16 = 1024, batch 1 x dp 16 x 32 micro-batches = 512, seq 4096, parallel optimizer (weights and
// optimizer states sliced: ZeRO-3 as MindSpore runs it); per-stage recompute.
// AutoModel: dp_size 8, local batch 4 per forward, global 512, seq 4096, FSDP2 with EP 8, whose MoE parallelizer keeps
// the gathered parameters to the backward (MoEParallelizerConfig.reshard_after_forward False: ZeRO-2), activation
// checkpointing true (full).
INSTANTIATE_TEST_SUITE_P(
    Formats, Examples,
    ::testing::Values(Stated{"examples/megatron/llama3-70b-h100x64.sh", config::Format::Megatron, 64, 8, 4, 2, 1, 512, 8192, 1, "selective", "h100-sxm"},
                      Stated{"examples/torchtitan/llama3-8b.toml", config::Format::Torchtitan, 8, 1, 1, 1, 1, 8, 8192, 3, "selective", "h100-sxm"},
                      Stated{"examples/hyperparallel/qwen3-32b-train.yaml", config::Format::HyperParallel, 32, 8, 2, 1, 1, 64, 4096, 3, "full", "ascend-910b"},
                      Stated{"examples/mindformers/deepseek-v3-1024.yaml", config::Format::MindFormers, 1024, 4, 16, 1, 1, 512, 4096, 3, "off", "ascend-910b"},
                      Stated{"examples/automodel/qwen3-30b-a3b-h100x8.yaml", config::Format::AutoModel, 8, 1, 1, 1, 4, 512, 4096, 2, "full", "h100-sxm"}),
    [](const auto& p) { return std::string(config::to_string(p.param.format)); });

// A MindFormers ChatGLM2Config (the shape of MindFormers' configs/glm4/finetune_glm4_9b.yaml): the embedding's rows as
// padded_vocab_size, multi-query attention with 2 KV groups, q/k/v biases only, RMSNorm; context.device_target Ascend
// prices the 910B unless -H says otherwise. Parameters by hand as in PublishedParams.Glm4_9bChat_9_40B.
// A model_config that leaves keys out gets its config class's defaults, as MindFormers builds the class
// (data/formats/mindformers-model-defaults.yaml): the bundled DeepSeek-V3 YAML without its MLA keys (legacy
// DeepseekV3Config: kv_lora_rank 512, q_lora_rank 1536, head dims 64 / 128 / 128) is the same model (it was priced as
// grouped-query attention, 1.1 B parameters more); an mcore DeepseekV3Config stating only its type is DeepSeek-V3
// (61 layers, 256 routed experts of 8 per token, 8 groups of which 4 per token, one MTP layer).
TEST(MindFormers, ModelConfigClassDefaults) {
  const std::string full = io::read_text(source("examples/mindformers/deepseek-v3-1024.yaml"));
  std::string cut = full;
  for (const std::string key :
       {"    kv_lora_rank: 512\n", "    q_lora_rank: 1536\n", "    qk_rope_head_dim: 64\n", "    v_head_dim: 128\n", "    qk_nope_head_dim: 128\n"}) {
    ASSERT_NE(cut.find(key), std::string::npos) << key;
    cut.erase(cut.find(key), key.size());
  }
  const model::Model whole = inline_model(config::read_text(full, "ds.yaml").model_config, "ds.yaml");
  const model::Model defaulted = inline_model(config::read_text(cut, "ds.yaml").model_config, "ds.yaml");
  EXPECT_EQ(defaulted.spec.kv_lora_rank, 512);
  EXPECT_EQ(defaulted.spec.q_lora_rank, 1536);
  EXPECT_EQ(defaulted.params().total, whole.params().total);

  const std::string mcore =
      "use_legacy: False\nparallel_config: {data_parallel: 8}\nmodel:\n  model_config:\n    type: DeepseekV3Config\n    num_hidden_layers: 4\n";
  const model::Model small = inline_model(config::read_text(mcore, "m.yaml").model_config, "m.yaml");
  EXPECT_EQ(small.spec.hidden_size, 7168);
  EXPECT_EQ(small.spec.num_layers, 4);  // stated
  EXPECT_EQ(small.spec.num_experts, 256);
  EXPECT_EQ(small.spec.experts_per_token, 8);
  EXPECT_EQ(small.spec.routing_groups, 8);
  EXPECT_EQ(small.spec.routing_group_limit, 4);
  EXPECT_EQ(small.mtp_layers(), 1);
}

TEST(MindFormers, ChatGlmKeysAndTheAscendTarget) {
  const std::string yaml = R"(context:
  device_target: "Ascend"
parallel_config:
  data_parallel: 8
model:
  model_config:
    type: ChatGLM2Config
    num_layers: 40
    padded_vocab_size: 151552
    hidden_size: 4096
    ffn_hidden_size: 13696
    kv_channels: 128
    num_attention_heads: 32
    seq_length: 8192
    rmsnorm: True
    add_bias_linear: False
    add_qkv_bias: True
    multi_query_attention: True
    multi_query_group_num: 2
)";
  config::Loaded l = config::read_text(yaml, "glm.yaml");
  EXPECT_EQ(l.format, config::Format::MindFormers);
  app::EstimateRequest r;
  config::fill(r, l, nlohmann::json::object());
  EXPECT_EQ(r.job.hardware, "ascend-910b");
  EXPECT_EQ(r.job.model_config.at("model_type"), "chatglm");
  auto m = inline_model(r.job.model_config, "glm.yaml");
  double h = 4096, a = 32, kv = 2, dh = 128, f = 13696, v = 151552;
  double layer = h * a * dh + (a + 2 * kv) * dh + 2 * h * kv * dh + a * dh * h + 3 * h * f + 2 * h;
  EXPECT_DOUBLE_EQ(m.params().total, 40 * layer + 2 * v * h + h);
  app::EstimateRequest gpu;
  config::fill(gpu, l, nlohmann::json{{"hardware", "h100-sxm"}});
  EXPECT_EQ(gpu.job.hardware, "h100-sxm");  // the command line wins
}

// MindFormers' parallel optimizer is MindSpore's: weights and optimizer states sliced over DP (ZeRO-3 as MindSpore
// runs it, not ZeRO-1). The keys of MindFormers' own 8-card Llama 2 7B fine-tuning YAML (configs/llama2/
// finetune_llama2_7b.yaml, v1.3.2: dp 8, no recompute, seq 4096, fp32 weights, bf16 compute, max_device_memory 58GB)
// fit, as that published config runs; priced as ZeRO-1 they needed 25 GiB more (fp32 weights and gradients whole).
TEST(MindFormers, ParallelOptimizerSlicesTheWeightsAndTheOfficialEightCardConfigFits) {
  const std::string yaml = R"(runner_config: {batch_size: 1}
parallel: {enable_parallel_optimizer: True, parallel_optimizer_config: {gradient_accumulation_shard: False}}
parallel_config: {data_parallel: 8, model_parallel: 1, pipeline_stage: 1, micro_batch_num: 1}
recompute_config: {recompute: False, select_recompute: False}
context: {max_device_memory: "58GB"}
model:
  model_config:
    type: LlamaConfig
    seq_length: 4096
    hidden_size: 4096
    num_layers: 32
    num_heads: 32
    vocab_size: 32000
    compute_dtype: "bfloat16"
    param_init_type: "float32"
    use_flash_attention: True
)";
  const app::EstimateRequest r = filled(yaml, "llama2-7b.yaml");
  EXPECT_EQ(r.layout.zero, 3);
  EXPECT_TRUE(r.job.training.zero3_gathers_once_per_step);  // the mindformers profile
  report::EstimateReport rep = app::run_estimate(r);
  EXPECT_TRUE(rep.fits());
  const auto& st = rep.memory.stages.at(0);
  EXPECT_DOUBLE_EQ(st.params, 4.0 * st.param_elements / 8);
  EXPECT_DOUBLE_EQ(st.optimizer, 8.0 * st.param_elements / 8);
  app::EstimateRequest zero1 = r;
  zero1.layout.zero = 1;
  EXPECT_GT(app::run_estimate(zero1).memory.peak_bytes, rep.memory.peak_bytes + 20.0 * 1073741824.0);
}

// MindFormers 1.7 names the model's HuggingFace folder (pretrained_model_dir) and keeps only its own keys in
// model_config; LoRA fine-tuning configs state pet_config (the base weights frozen).
TEST(MindFormers, PretrainedModelDirAndLoraPetConfig) {
  const std::string dir = test::temp_dir();
  test::write_file(dir + "/config.json", io::read_text(std::string(SAPP_SOURCE_DIR) + "/data/models/qwen3-8b.json"));
  const std::string yaml = "pretrained_model_dir: \"" + dir + R"("
parallel_config: {data_parallel: 8}
model:
  model_config:
    qkv_concat: True
    pet_config: {pet_type: lora, lora_rank: 8, target_modules: '.*wq|.*wv'}
)";
  config::Loaded l = config::read_text(yaml, "qwen3.yaml");
  app::EstimateRequest r;
  config::fill(r, l, nlohmann::json::object());
  EXPECT_EQ(r.job.model, dir + "/config.json");
  EXPECT_EQ(r.job.training.lora_rank, 8);
  EXPECT_FALSE(l.warnings.empty());  // target_modules priced as every linear layer, said
  // A folder that is not here (every official fine-tune YAML ships a placeholder): refused naming the key and
  // --model, which then names the model.
  const std::string missing = "pretrained_model_dir: /nowhere/Qwen3-32B\nparallel_config: {data_parallel: 8}\nmodel: {model_config: {qkv_concat: True}}\n";
  const config::Loaded placeholder = config::read_text(missing, "qwen3.yaml");
  app::EstimateRequest unnamed;
  try {
    config::fill(unnamed, placeholder, nlohmann::json::object());
    ADD_FAILURE() << "a missing folder read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("pretrained_model_dir"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--model"), std::string::npos) << e.what();
  }
  app::EstimateRequest named;
  config::fill(named, placeholder, nlohmann::json{{"model", "qwen3-8b"}});
  EXPECT_EQ(named.job.model, "qwen3-8b");
}

// MindFormers lays the YAML's model_config over the config.json (models/build_config.py merge_model_config:
// hf_dict.update(config_dict)): num_hidden_layers 16 over Qwen3-8B's 36 is a 16-layer model. The mcore models keep
// their weights in params_dtype (parallel_core/model_parallel_config.py, default float32; param_init_type is its other
// name): 4 bytes unstated under use_legacy False, as stated otherwise.
TEST(MindFormers, ModelConfigOverTheConfigJsonAndMcoreParamsDtype) {
  const std::string dir = test::temp_dir();
  test::write_file(dir + "/config.json", io::read_text(std::string(SAPP_SOURCE_DIR) + "/data/models/qwen3-8b.json"));
  auto fill = [&](const std::string& extra) {
    const std::string yaml = "use_legacy: False\npretrained_model_dir: \"" + dir + "\"\nparallel_config: {data_parallel: 8}\nmodel:\n  model_config:\n" + extra;
    app::EstimateRequest r;
    config::fill(r, config::read_text(yaml, "qwen3.yaml"), nlohmann::json::object());
    return r;
  };
  app::EstimateRequest cropped = fill("    num_hidden_layers: 16\n");
  ASSERT_TRUE(cropped.job.model_config.is_object());
  EXPECT_EQ(cropped.job.model_config.at("num_hidden_layers"), 16);
  EXPECT_EQ(cropped.job.model_config.at("hidden_size"), 4096);  // Qwen3-8B's config.json
  EXPECT_EQ(cropped.job.training.param_bytes, 4);               // mcore default params_dtype float32
  EXPECT_EQ(cropped.job.training.grad_bytes, 4);
  app::EstimateRequest bf16 = fill("    qkv_concat: True\n    params_dtype: bfloat16\n");
  EXPECT_EQ(bf16.job.model, dir + "/config.json");  // nothing of the json restated: named, not copied
  EXPECT_EQ(bf16.job.training.param_bytes, 2);
}

// HyperParallel's legacy train YAML hands enable_parallel_optimizer (default true) to MindSpore's parallel optimizer:
// ZeRO-3 as MindSpore runs it (the reference planner also divides the weights by d), and it writes back as stated.
TEST(HyperParallel, LegacyParallelOptimizerIsMindSporesAndRoundTrips) {
  const std::string yaml = R"(train:
  accelerator:
    dp_shard: 4
    tp_degree: 2
  global_batch_size: 32
  micro_batch_size: 1
  gradient_checkpointing: {activation_checkpoint: full}
model:
  config_overrides: {hidden_size: 4096, num_hidden_layers: 36, num_attention_heads: 32, num_key_value_heads: 8, intermediate_size: 12288,
                     vocab_size: 151936, qk_norm: true}
dataset: {data_transform: {max_seq_len: 4096}}
)";
  config::Loaded l = config::read_text(yaml, "legacy.yaml");
  EXPECT_EQ(l.format, config::Format::HyperParallel);
  app::EstimateRequest r;
  config::fill(r, l, nlohmann::json::object());
  EXPECT_EQ(r.layout.zero, 3);
  EXPECT_TRUE(r.job.training.zero3_gathers_once_per_step);
  report::EstimateReport rep = app::run_estimate(r);
  config::Plan p;
  p.layout = rep.layout;
  p.devices = r.job.devices;
  p.global_batch = 32;
  p.seq = 4096;
  p.num_layers = 36;
  const app::EstimateRequest back = filled(config::emit(config::EmitFormat::HyperParallel, p, &l, "qwen3-8b"), "back.yaml");
  EXPECT_EQ(back.layout.zero, 3);
  p.layout.zero = 1;  // not a MindSpore option: refused, not written as the parallel optimizer
  EXPECT_THROW((void)config::emit(config::EmitFormat::HyperParallel, p, &l, "qwen3-8b"), Error);
}

// MindFormers' legacy MoE (experts in moe_config.expert_num) shards each expert over model_parallel unless
// moe_config.expert_model_parallel says 1 (transformer.py's FeedForward strategy (ep, 1, mp); llama_layer.py's
// mp_moe); the mcore models (model_config.num_experts) keep whole experts (expert_tensor_parallel_size unset: 1).
TEST(MindFormers, ExpertTensorParallelFollowsTheModelParallelOfLegacyMoe) {
  const std::string head = R"(parallel_config:
  data_parallel: 2
  model_parallel: 4
  expert_parallel: 2
model:
  model_config:
    type: LlamaConfig
    hidden_size: 256
    num_layers: 2
    num_heads: 8
    intermediate_size: 512
    vocab_size: 1000
)";
  auto etp_of = [](const std::string& yaml) {
    app::EstimateRequest r;
    config::fill(r, config::read_text(yaml, "moe.yaml"), nlohmann::json::object());
    return r.layout.etp;
  };
  EXPECT_EQ(etp_of(head + "moe_config:\n  expert_num: 8\n  num_experts_chosen: 2\n"), 4);
  EXPECT_EQ(etp_of(head + "moe_config:\n  expert_num: 8\n  num_experts_chosen: 2\n  expert_model_parallel: 1\n"), 1);
  EXPECT_EQ(etp_of(head + "    num_experts: 8\n    num_experts_per_tok: 2\n"), 1);
}

// More of MindFormers' MoE and CP switches, as its code runs them: TeleChat2's ep_extend_tp multiplies EP by
// model_parallel with whole experts (research/telechat2/telechat_transformer.py), written back as stated; use_gmm
// selects the dropless MoEV3 (no capacity factor); use_ring_attention selects ring CP; parallel_optimizer_comm_recompute
// holds for the ZeRO-3 a search or --zero 3 prices even where the file's optimizer is off.
TEST(MindFormers, MoeAndCpSwitchesAsItsCodeRunsThem) {
  const std::string head = R"(parallel_config:
  data_parallel: 2
  model_parallel: 4
  expert_parallel: 2
  context_parallel: 2
parallel:
  enable_parallel_optimizer: False
recompute_config:
  parallel_optimizer_comm_recompute: True
model:
  model_config:
    type: LlamaConfig
    hidden_size: 256
    num_layers: 2
    num_heads: 8
    intermediate_size: 512
    vocab_size: 1000
    seq_length: 4096
    use_ring_attention: True
moe_config:
  expert_num: 8
  num_experts_chosen: 2
  capacity_factor: 1.5
)";
  auto read = [](const std::string& yaml) {
    config::Loaded l = config::read_text(yaml, "moe.yaml");
    app::EstimateRequest r;
    config::fill(r, l, nlohmann::json::object());
    return std::make_pair(l, r);
  };
  const auto [extended_file, extended] = read(head + "  ep_extend_tp: True\n  use_gmm: True\n");
  EXPECT_EQ(extended.layout.ep, 8);
  EXPECT_EQ(extended.layout.etp, 1);
  EXPECT_EQ(extended.job.training.capacity_factor, 1);  // dropless
  EXPECT_EQ(extended.layout.cp_algo, plan::CpAlgo::Ring);
  EXPECT_TRUE(extended.job.training.zero3_regathers_in_backward);
  EXPECT_EQ(read(head).second.job.training.capacity_factor, 1.5);
  config::Plan p = plan_of(extended.layout, 16, 2, 4096, 2);
  p.model_config = extended_file.model_config;
  const std::string written = config::emit(config::EmitFormat::MindFormers, p, &extended_file, "moe");
  EXPECT_NE(written.find("expert_parallel: 2"), std::string::npos) << written;
  EXPECT_EQ(read(written).second.layout.ep, 8);
}

// micro_batch_interleave_num 2 runs two slices side by side in each micro-batch (MindFormers' MicroBatchInterleaved):
// a micro-batch of batch_size x 2, micro_batch_num of them, the global batch unchanged.
TEST(MindFormers, MicroBatchInterleaveIsALargerMicroBatch) {
  const std::string yaml = R"(parallel_config: {data_parallel: 2, model_parallel: 2, pipeline_stage: 2, micro_batch_num: 4}
runner_config: {batch_size: 1}
micro_batch_interleave_num: 2
model:
  model_config: {type: LlamaConfig, hidden_size: 256, num_layers: 4, num_heads: 8, intermediate_size: 512, vocab_size: 1000, seq_length: 4096}
)";
  const app::EstimateRequest r = filled(yaml, "llama.yaml");
  EXPECT_EQ(r.layout.mbs, 2);
  EXPECT_EQ(r.job.training.global_batch, 16);  // 1 x 2 (data_parallel) x 4 (micro_batch_num) x 2
  EXPECT_EQ(app::run_estimate(r).layout.micro_batches, 4);
}

// --emit mindformers leaves what the plan does not change as the file states it: a selective plan keeps the file's
// select_recompute op patterns (True would mean MindFormers' default patterns), TP 1 keeps use_seq_parallel, a
// non-interleaved plan keeps pipeline_interleave True (it also switches seqpipe); a select_comm_recompute list of the
// file's 8 stages is switched off for a 4-stage plan (MindFormers' LayerSetting would index past its stages).
TEST(MindFormers, EmitLeavesWhatThePlanDoesNotChange) {
  const std::string yaml = R"(parallel_config:
  data_parallel: 1
  model_parallel: 1
  pipeline_stage: 8
  micro_batch_num: 8
  use_seq_parallel: True
parallel:
  pipeline_config:
    pipeline_interleave: True
    pipeline_scheduler: seqpipe
recompute_config:
  recompute: False
  select_recompute:
    'feed_forward\.mul': True
    'feed_forward\.reshape': True
  select_comm_recompute: [1, 1, 1, 1, 1, 1, 1, 1]
model:
  model_config:
    type: LlamaConfig
    hidden_size: 256
    num_layers: 8
    num_heads: 8
    intermediate_size: 512
    vocab_size: 1000
    seq_length: 4096
)";
  const config::Loaded l = config::read_text(yaml, "llama.yaml");
  app::EstimateRequest r;
  config::fill(r, l, nlohmann::json::object());
  ASSERT_EQ(r.layout.recompute, plan::Recompute::Selective);
  config::Plan p = plan_of(r.layout, 8, 8, 4096, 8);
  p.layout.pp = 4;
  p.layout.dp = 2;
  p.model_config = l.model_config;
  const std::string written = config::emit(config::EmitFormat::MindFormers, p, &l, "llama");
  EXPECT_NE(written.find("'feed_forward\\.reshape': True"), std::string::npos) << written;
  EXPECT_NE(written.find("use_seq_parallel: True"), std::string::npos) << written;
  EXPECT_NE(written.find("pipeline_interleave: True"), std::string::npos) << written;
  EXPECT_NE(written.find("select_comm_recompute: False"), std::string::npos) << written;
  const app::EstimateRequest back = filled(written, "back.yaml");
  EXPECT_EQ(back.layout.pp, 4);
  EXPECT_EQ(back.layout.recompute, plan::Recompute::Selective);
}

// MindSpore's sequence pipeline: pipeline_scheduler seqpipe under pipeline_interleave splits each micro-batch into
// parallel_config.seq_split_num segments (mindformers/models/llama/llama.py); without pipeline_interleave, or
// with one segment, the scheduler is 1F1B.
TEST(MindFormers, SeqpipeReadsTheSegmentsOfTheSequencePipeline) {
  // A 1F1B file of a small Llama on PP 4, and the same under pipeline_interleave with a scheduler and `split` keys
  // of its parallel_config.
  const std::string one_f_one_b =
      "parallel_config:\n  data_parallel: 1\n  model_parallel: 1\n  pipeline_stage: 4\n  micro_batch_num: 8\nmodel:\n  model_config:\n"
      "    type: LlamaConfig\n    hidden_size: 256\n    num_layers: 8\n    num_heads: 8\n    intermediate_size: 512\n    vocab_size: 1000\n"
      "    seq_length: 4096\n    use_flash_attention: True\n";
  auto scheduled = [&](const std::string& interleave, const std::string& split, const std::string& scheduler) {
    std::string yaml = one_f_one_b + "parallel:\n  pipeline_config:\n    pipeline_interleave: " + interleave + "\n    pipeline_scheduler: " + scheduler + "\n";
    yaml.insert(yaml.find("model:"), split);
    return yaml;
  };
  auto segments = [&](const std::string& interleave, const std::string& split) {
    const config::Loaded l = config::read_text(scheduled(interleave, split, "seqpipe"), "llama.yaml");
    app::EstimateRequest r;
    config::fill(r, l, nlohmann::json::object());
    return std::pair{r.job.training.seq_split, l.warnings.size()};
  };
  EXPECT_EQ(segments("True", "  seq_split_num: 4\n").first, 4);
  EXPECT_EQ(segments("False", "  seq_split_num: 4\n").first, 1);  // priced as 1F1B, and said so
  EXPECT_GT(segments("False", "  seq_split_num: 4\n").second, segments("True", "  seq_split_num: 4\n").second);
  EXPECT_EQ(segments("True", "").first, 1);
  // Written back: a sequence-pipeline plan states seqpipe (seqvpp interleaved) and its segments over a 1F1B file;
  // another plan sets a stated seqpipe back to 1f1b.
  const config::Loaded plain = config::read_text(one_f_one_b, "llama.yaml");
  app::EstimateRequest plain_request;
  config::fill(plain_request, plain, nlohmann::json::object());
  config::Plan seq_plan = plan_of(plain_request.layout, 4, 8, 4096, 8);
  seq_plan.seq_split = 4;
  for (int vpp : {1, 2}) {
    seq_plan.layout.vpp = vpp;
    const std::string written = config::emit(config::EmitFormat::MindFormers, seq_plan, &plain, "llama");
    const config::Loaded back = config::read_text(written, "back.yaml");
    EXPECT_EQ(back.values.at("seq_split"), 4) << written;
    EXPECT_NE(written.find(vpp > 1 ? "\"seqvpp\"" : "\"seqpipe\""), std::string::npos) << written;
  }
  seq_plan.layout.vpp = 1;
  seq_plan.seq_split = 1;
  const config::Loaded seqpipe = config::read_text(scheduled("True", "  seq_split_num: 4\n", "seqpipe"), "seq.yaml");
  EXPECT_EQ(seqpipe.values.at("seq_split"), 4);
  EXPECT_FALSE(config::read_text(config::emit(config::EmitFormat::MindFormers, seq_plan, &seqpipe, "llama"), "back.yaml").values.contains("seq_split"));
  // zero_bubble_v: DualPipe-V's V over pp_interleave_num 2.
  std::string zbv = scheduled("True", "", "zero_bubble_v");
  zbv.insert(zbv.find("parallel:\n"), "    pp_interleave_num: 2\n");  // under model_config
  app::EstimateRequest r;
  config::fill(r, config::read_text(zbv, "zbv.yaml"), nlohmann::json::object());
  EXPECT_TRUE(r.job.training.dualpipe_v);
  EXPECT_EQ(r.layout.vpp, 2);
  // Written back: the scheduler and the chunks' layers per physical stage read back as the same split; a plan
  // without DualPipe-V drops the scheduler.
  const config::Loaded loaded = config::read_text(zbv, "zbv.yaml");
  config::Plan p = plan_of(r.layout, 4, 8, 4096, 8);
  p.dualpipe_v = true;
  p.split = plan::StageSplit{};
  p.split->layers = {{3, 2, 1, 1}, {1, 0, 0, 0}};  // rank 0: the first 3 layers and the last one
  const std::string written = config::emit(config::EmitFormat::MindFormers, p, &loaded, "llama");
  const config::Loaded back = config::read_text(written, "back.yaml");
  EXPECT_EQ(back.values.at("dualpipe_v"), true) << written;
  ASSERT_TRUE(back.split) << written;
  EXPECT_EQ(back.split->layers, p.split->layers) << written;
  p.dualpipe_v = false;
  p.split.reset();
  const config::Loaded interleaved = config::read_text(config::emit(config::EmitFormat::MindFormers, p, &loaded, "llama"), "back.yaml");
  EXPECT_FALSE(interleaved.values.contains("dualpipe_v"));
}

// A predict / eval YAML is not a training job: sapp says what it prices instead.
TEST(MindFormers, APredictConfigIsPricedAsTrainingAndSaysSo) {
  auto warned = [](const std::string& mode) {
    const std::string yaml = "run_mode: '" + mode +
                             "'\nparallel_config:\n  data_parallel: 1\n  model_parallel: 1\nmodel:\n  model_config:\n    type: LlamaConfig\n"
                             "    hidden_size: 256\n    num_layers: 8\n    num_heads: 8\n    intermediate_size: 512\n    vocab_size: 1000\n"
                             "    seq_length: 4096\n";
    const config::Loaded l = config::read_text(yaml, "llama.yaml");
    return std::any_of(l.warnings.begin(), l.warnings.end(), [](const std::string& w) { return w.find("is not training") != std::string::npos; });
  };
  EXPECT_TRUE(warned("predict"));
  EXPECT_FALSE(warned("finetune"));
  EXPECT_FALSE(warned("train"));
}

// MindFormers' offset rule: 62 placed layers (61 + 1 MTP) on 16 stages, 62 // 16 = 3 plus the offsets
// [1]*15 + [-1]: [4]*15 + [2], the MTP layer on the last stage, so 1 body layer there.
TEST(MindFormers, OffsetAndRecomputeArrays) {
  config::Loaded l = config::read_file(source("examples/mindformers/deepseek-v3-1024.yaml"));
  ASSERT_TRUE(l.split);
  std::vector<long long> layers(15, 4);
  layers.push_back(1);
  EXPECT_EQ(l.split->layers, plan::ChunkCounts{layers});
  EXPECT_EQ(l.split->full, (plan::ChunkCounts{{3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 3, 2, 0}}));  // recompute_config.recompute as stated
}

struct RoundTrip {
  std::string file;
  config::EmitFormat emit;
  std::string hardware;
};
class WriteBack : public ::testing::TestWithParam<RoundTrip> {};

// Reading an emitted file back gives the same layout (degrees, batch, split), and the keys sapp does not own survive.
TEST_P(WriteBack, ReadsBackTheSameLayout) {
  const RoundTrip& t = GetParam();
  config::Loaded l = config::read_file(source(t.file));
  app::EstimateRequest r;
  config::fill(r, l, nlohmann::json{{"hardware", t.hardware}});
  report::EstimateReport rep = app::run_estimate(r);
  app::LoadedJob x = app::load(r.job);
  config::Plan p;
  p.layout = rep.layout;
  if (rep.layout.split) p.split = *rep.layout.split;
  p.devices = r.job.devices;
  p.global_batch = r.job.training.global_batch;
  p.seq = r.job.training.seq;
  p.num_layers = x.model.body_layers();
  p.model = x.model.spec;
  p.model_config = r.job.model_config;  // as emit_plan passes an inline model
  for (const config::Loaded* original : std::vector<const config::Loaded*>{&l, nullptr}) {
    if (original == nullptr && t.emit == config::EmitFormat::Torchtitan) continue;  // a torchtitan model is named by its flavour
    std::string text = config::emit(t.emit, p, original, r.job.model);
    config::Loaded back = config::read_text(text, "emitted", config::format_of(t.emit));
    app::EstimateRequest r2;
    nlohmann::json cli = {{"hardware", t.hardware}};
    if (!back.values.contains("devices")) cli["devices"] = r.job.devices;
    config::fill(r2, back, cli);
    report::EstimateReport rep2 = app::run_estimate(r2);
    SCOPED_TRACE(text);
    EXPECT_EQ(rep2.layout.describe(), rep.layout.describe());
    EXPECT_EQ(r2.job.training.global_batch, r.job.training.global_batch);
    EXPECT_EQ(r2.job.devices, r.job.devices);
    if (original) {
      // Comments and keys sapp does not own are kept.
      std::stringstream ss(l.text);
      for (std::string line; std::getline(ss, line);) {
        if (line.rfind("# ", 0) == 0) {
          EXPECT_NE(text.find(line), std::string::npos) << line;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, WriteBack,
                         ::testing::Values(RoundTrip{"examples/megatron/llama3-70b-h100x64.sh", config::EmitFormat::Megatron, "h100-sxm"},
                                           RoundTrip{"tests/configs/megatron-uneven.args", config::EmitFormat::Megatron, "h100-sxm"},
                                           RoundTrip{"tests/configs/mindspeed-llm-moe-a3.sh", config::EmitFormat::Megatron, "ascend-910c"},
                                           RoundTrip{"examples/torchtitan/llama3-8b.toml", config::EmitFormat::Torchtitan, "h100-sxm"},
                                           RoundTrip{"tests/configs/torchtitan-pp.toml", config::EmitFormat::Torchtitan, "h100-sxm"},
                                           RoundTrip{"examples/hyperparallel/qwen3-32b-train.yaml", config::EmitFormat::HyperParallel, "ascend-910b"},
                                           RoundTrip{"examples/mindformers/deepseek-v3-1024.yaml", config::EmitFormat::MindFormers, "ascend-910b"},
                                           RoundTrip{"examples/automodel/qwen3-30b-a3b-h100x8.yaml", config::EmitFormat::AutoModel, "h100-sxm"},
                                           RoundTrip{"tests/configs/automodel-deepseek-v3-pp.yaml", config::EmitFormat::AutoModel, "h100-sxm"}),
                         [](const auto& p) { return fmt::format("{}_{}", p.index, config::to_string(config::format_of(p.param.emit))); });

// A plan whose micro-batches differ from the file's: torchtitan's local_batch_size is one forward's batch per DP rank
// without PP (global_batch_size accumulates the rest), so a plan of 4 micro-batches of 1 reads back as 4 of 1, not
// as 1 of 4 (which was written, and did not fit). A model none of torchtitan's flavours states is refused, not
// written as llama3 8B.
TEST(Torchtitan, EmitKeepsTheMicroBatchAndNeverRenamesTheModel) {
  config::Loaded l = config::read_file(source("examples/torchtitan/llama3-8b.toml"));
  app::EstimateRequest r;
  config::fill(r, l, nlohmann::json{{"global_batch", 32}});
  report::EstimateReport rep = app::run_estimate(r);
  ASSERT_EQ(rep.layout.mbs, 1);
  ASSERT_EQ(rep.layout.micro_batches * rep.layout.dp, 32);
  config::Plan p;
  p.layout = rep.layout;
  p.devices = r.job.devices;
  p.global_batch = 32;
  p.seq = r.job.training.seq;
  p.model = app::load(r.job).model.spec;
  p.num_layers = p.model->num_layers;
  for (const config::Loaded* original : std::vector<const config::Loaded*>{&l, nullptr}) {
    config::Loaded back = config::read_text(config::emit(config::EmitFormat::Torchtitan, p, original, "torchtitan llama3 8B"), "t.toml");
    app::EstimateRequest r2;
    config::fill(r2, back, nlohmann::json::object());
    EXPECT_EQ(r2.layout.mbs, 1);
    EXPECT_EQ(r2.job.training.global_batch, 32);
  }
  p.layout.zero = 1;  // torchtitan has FSDP (ZeRO-3 or 2) or replication: a ZeRO-1 plan is refused, not written as FSDP
  EXPECT_THROW((void)config::emit(config::EmitFormat::Torchtitan, p, &l, "torchtitan llama3 8B"), Error);
  p.layout.zero = rep.layout.zero;
  p.model = test::bundled("qwen2.5-72b").spec;
  EXPECT_THROW((void)config::emit(config::EmitFormat::Torchtitan, p, nullptr, "qwen2.5-72b"), Error);
}

// torchtitan's loss reads the output projection's logits split by vocabulary over TP (loss_parallel, its default);
// disable_loss_parallel makes the projection Replicate() them (torchtitan models' parallelize.py: output_layouts
// Shard(-1) if loss_parallel else Replicate()), whole on every TP rank.
TEST(Torchtitan, DisableLossParallelGathersTheLogitsWhole) {
  std::string text = io::read_text(source("tests/configs/torchtitan-pp.toml"));
  auto whole = [&](const std::string& t) {
    app::EstimateRequest r;
    config::fill(r, config::read_text(t, "t.toml", config::Format::Torchtitan), nlohmann::json::object());
    return r.job.training.logits_whole_over_tp;
  };
  EXPECT_FALSE(whole(text));
  text.replace(text.find("[parallelism]\n"), 14, "[parallelism]\ndisable_loss_parallel = true\n");
  EXPECT_TRUE(whole(text));
}

// torchtitan compiles its loss with the model (components/loss.py since bbb1b616e, 2025-04; [compile] components):
// priced as a fused loss, no fp32 logits or log-softmax kept; eager without compile or with "loss" left out.
TEST(Torchtitan, ACompiledLossIsPricedFused) {
  const std::string text = io::read_text(source("examples/torchtitan/llama3-8b.toml"));
  ASSERT_NE(text.find("enable = false\ncomponents = [\"model\", \"loss\"]"), std::string::npos);
  auto fused = [](const std::string& t) {
    const config::Loaded l = config::read_text(t, "t.toml", config::Format::Torchtitan);
    app::EstimateRequest r;
    config::fill(r, l, nlohmann::json::object());
    return std::pair{r.job.training.loss_fused, app::run_estimate(r).memory.peak_bytes};
  };
  std::string compiled = text;
  compiled.replace(compiled.find("enable = false\ncomponents"), 14, "enable = true\n");
  std::string model_only = compiled;
  model_only.replace(model_only.find("[\"model\", \"loss\"]"), 17, "[\"model\"]");
  const auto [eager_fused, eager_peak] = fused(text);
  const auto [compiled_fused, compiled_peak] = fused(compiled);
  EXPECT_FALSE(eager_fused);
  EXPECT_TRUE(compiled_fused);
  EXPECT_FALSE(fused(model_only).first);
  // Llama 3 8B at local batch 1, seq 8192: 8 bytes per logit fewer (the fp32 log-softmax and its gradient).
  EXPECT_NEAR(eager_peak - compiled_peak, 8.0 * 8192 * 128256 * 1.05, 0.01 * 8.0 * 8192 * 128256);
}

// torch.distributed.pipelining's DualPipeV schedule (torchtitan's pipeline_parallel_schedule): two stages per rank
// in a V, priced as DualPipe-V.
TEST(Torchtitan, DualPipeVScheduleIsPricedAsDualPipeV) {
  std::string text = io::read_text(source("tests/configs/torchtitan-pp.toml"));
  text.replace(text.find("\"Interleaved1F1B\""), 17, "\"DualPipeV\"");
  app::EstimateRequest r;
  config::fill(r, config::read_text(text, "t.toml", config::Format::Torchtitan), nlohmann::json::object());
  EXPECT_TRUE(r.job.training.dualpipe_v);
  EXPECT_EQ(r.layout.vpp, 2);
  const report::EstimateReport rep = app::run_estimate(r);
  EXPECT_GT(rep.time.step_s, 0.0);
  // Written back: the schedule and the module names in V order read back as the same split.
  const config::Loaded l = config::read_text(text, "t.toml", config::Format::Torchtitan);
  config::Plan p = plan_of(rep.layout, r.job.devices, r.job.training.global_batch, r.job.training.seq, 36);
  p.dualpipe_v = true;
  p.split = plan::StageSplit{};
  p.split->layers = {{10, 8}, {7, 11}};  // rank 0: the first 10 layers and the last 7
  const std::string written = config::emit(config::EmitFormat::Torchtitan, p, &l, "torchtitan llama3 8B");
  const config::Loaded back = config::read_text(written, "back.toml", config::Format::Torchtitan);
  EXPECT_EQ(back.values.at("dualpipe_v"), true) << written;
  ASSERT_TRUE(back.split) << written;
  EXPECT_EQ(back.split->layers, p.split->layers) << written;
}

// torchtitan v0.2's converters are registered as quantize.linear.float8 / quantize.grouped_mm.float8 (and .mx)
// (torchtitan/components/quantization/float8.py and mx.py at v0.2.2): each prices FP8 like v0.1's float8, an
// unregistered name is refused as torchtitan refuses it, and --emit writes the v0.2 names (the experts' too).
TEST(Torchtitan, ConvertersByTheirRegisteredNames) {
  auto fp8 = [](const std::string& converters) {
    app::EstimateRequest r;
    const std::string text = "[model]\nname = \"llama3\"\nflavor = \"8B\"\nconverters = " + converters +
                             "\n[training]\nseq_len = 8192\n[parallelism]\ndata_parallel_shard_degree = 8\n";
    config::fill(r, config::read_text(text, "t.toml", config::Format::Torchtitan), nlohmann::json::object());
    return r.job.training.fp8;
  };
  EXPECT_TRUE(fp8("[\"quantize.linear.float8\"]"));
  EXPECT_TRUE(fp8("[\"float8\"]"));
  EXPECT_TRUE(fp8("[\"quantize.linear.mx\"]"));
  EXPECT_FALSE(fp8("[]"));
  EXPECT_THROW((void)fp8("[\"flaot8\"]"), Error);
  config::Plan p = plan_of(plan::Layout{}, 8, 8, 8192, 32);
  p.layout.dp = 8;
  p.layout.zero = 3;
  p.fp8 = true;
  p.model = test::bundled("llama3-8b").spec;
  const std::string written = config::emit(config::EmitFormat::Torchtitan, p, nullptr, "torchtitan llama3 8B");
  EXPECT_NE(written.find("converters = [\"quantize.linear.float8\"]"), std::string::npos) << written;
  EXPECT_TRUE(fp8(written.substr(written.find("converters = ") + 13, written.find(']', written.find("converters = ")) - written.find("converters = ") - 12)));
}

// v0.2.2's [debug] section (seed, deterministic, moe_force_load_balance: job_config.py Debug) is its own, not an
// unknown one; v0.1's training.compile is read as a v0.1 key; a model name without flavours is named as model.name.
TEST(Torchtitan, SchemaOfTheReleasesItReads) {
  const std::string text = "[model]\nname = \"llama3\"\nflavor = \"8B\"\n[training]\ncompile = true\n[debug]\nseed = 42\n";
  const config::Loaded l = config::read_text(text, "t.toml", config::Format::Torchtitan);
  EXPECT_TRUE(l.warnings.empty()) << l.warnings.front();
  EXPECT_TRUE(l.unused.empty()) << l.unused.front();
  try {
    (void)config::read_text("[model]\nname = \"deepseek_v2\"\n", "t.toml", config::Format::Torchtitan);
    ADD_FAILURE() << "an unbundled model was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("t.toml: model.name: 'deepseek_v2'"), std::string::npos) << e.what();
  }
}

// torchtitan's 2024 job TOML (9dec370's train_configs/llama3_8b.toml, the configuration of its published Llama 3
// benchmarks): degrees in [training] and [experimental], float8.enable_float8_linear, model.norm_type. Read as v0.2
// states them, with one warning; the eager RMSNorm ("rmsnorm") priced as eager ops unless torch.compile fuses it, and
// that era's SDPA as FlashAttention-2.
TEST(Torchtitan, ReadsThe2024SchemaAsItsBenchmarksRanIt) {
  const std::string text =
      "[model]\nname = \"llama3\"\nflavor = \"8B\"\nnorm_type = \"rmsnorm\"\n[training]\nbatch_size = 2\nseq_len = 8192\nwarmup_steps = 200\n"
      "data_parallel_replicate_degree = 1\ndata_parallel_shard_degree = -1\ntensor_parallel_degree = 2\ncompile = false\n"
      "[experimental]\ncontext_parallel_degree = 1\npipeline_parallel_degree = 1\n[activation_checkpoint]\nmode = 'selective'\n"
      "selective_ac_option = 'op'\n[float8]\nenable_float8_linear = true\n";
  const config::Loaded l = config::read_text(text, "t.toml", config::Format::Torchtitan);
  ASSERT_FALSE(l.warnings.empty());
  EXPECT_NE(l.warnings.front().find("training.tensor_parallel_degree as parallelism.tensor_parallel_degree"), std::string::npos) << l.warnings.front();
  app::EstimateRequest r;
  config::fill(r, l, nlohmann::json{{"devices", 8}});
  EXPECT_EQ(r.layout.tp, 2);
  EXPECT_EQ(r.layout.mbs, 2);
  EXPECT_TRUE(r.job.training.eager_norms);
  EXPECT_EQ(r.job.training.attention_kernel, plan::AttentionKernel::TorchSdpa);
  EXPECT_TRUE(r.job.training.fp8);  // enable_float8_linear: the float8 converter
  std::string compiled = text;
  compiled.replace(compiled.find("compile = false"), 15, "compile = true");
  app::EstimateRequest c;
  config::fill(c, config::read_text(compiled, "t.toml", config::Format::Torchtitan), nlohmann::json{{"devices", 8}});
  EXPECT_FALSE(c.job.training.eager_norms);
  EXPECT_FALSE(c.job.training.loss_fused);  // that torchtitan's loss stayed eager (compiled with the model since 2025-04)
  // Written back in place it would hold v0.2's [parallelism] beside the [training] degrees its torchtitan reads:
  // refused, naming the file.
  const report::EstimateReport rep = app::run_estimate(r);
  config::Plan p;
  p.layout = rep.layout;
  p.devices = 8;
  p.global_batch = 16;
  p.seq = 8192;
  try {
    (void)config::emit(config::EmitFormat::Torchtitan, p, &l, "torchtitan llama3 8B");
    ADD_FAILURE() << "a 2024-schema file was written in the v0.2 schema";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("t.toml states torchtitan's 2024 schema"), std::string::npos) << e.what();
  }
}

// The fsdp mesh is dp_shard x cp (torchtitan parallel_dims.py: "when cp is used, FSDP is also applied"): CP 2 with
// data_parallel_shard_degree 1 and replicas shards over the 2 CP ranks; with data_parallel_shard_degree -1 the shard
// group follows from the devices (64 / (replicate 4 x TP 8) = 2). training.dtype bfloat16 keeps the parameters,
// gradients and Adam moments in bf16 with no fp32 copy (job_config.py Training.dtype): 2 + 2 + 4 bytes. Without
// seq_len torchtitan trains at its default 2048 (Training.seq_len).
TEST(Torchtitan, ShardGroupsDtypesAndDefaultsAsTorchtitanRunsThem) {
  auto fill = [](const std::string& parallelism, const std::string& training, const nlohmann::json& cli) {
    app::EstimateRequest r;
    const std::string text = "[model]\nname = \"llama3\"\nflavor = \"8B\"\n[training]\nlocal_batch_size = 1\n" + training + "[parallelism]\n" + parallelism;
    config::fill(r, config::read_text(text, "t.toml", config::Format::Torchtitan), cli);
    return r;
  };
  app::EstimateRequest cp =
      fill("data_parallel_replicate_degree = 32\ndata_parallel_shard_degree = 1\ncontext_parallel_degree = 2\n", "seq_len = 8192\n", nlohmann::json::object());
  EXPECT_EQ(cp.layout.zero, 3);
  EXPECT_EQ(cp.layout.optimizer_shard, 2);
  // Ring attention as torchtitan ran it: K,V repeated to the query heads, gathered once per pass by default
  // (context_parallel_rotate_method "allgather"); "alltoall" passes a shard beside each step.
  EXPECT_TRUE(cp.job.training.cp_kv_gathered_once);
  EXPECT_TRUE(cp.job.training.cp_kv_repeated);
  EXPECT_FALSE(
      fill("data_parallel_shard_degree = 4\ncontext_parallel_degree = 2\ncontext_parallel_rotate_method = \"alltoall\"\n", "", nlohmann::json::object())
          .job.training.cp_kv_gathered_once);
  app::EstimateRequest hsdp = fill("data_parallel_replicate_degree = 4\ndata_parallel_shard_degree = -1\ntensor_parallel_degree = 8\n", "seq_len = 8192\n",
                                   nlohmann::json{{"devices", 64}});
  EXPECT_EQ(hsdp.layout.optimizer_shard, 2);
  EXPECT_EQ(app::run_estimate(hsdp).layout.dp, 8);
  app::EstimateRequest bf16 = fill("data_parallel_shard_degree = 8\n", "dtype = \"bfloat16\"\n", nlohmann::json::object());
  EXPECT_EQ(bf16.job.training.param_bytes + bf16.job.training.grad_bytes + bf16.job.training.optimizer_bytes, 8);
  EXPECT_EQ(bf16.job.training.seq, 2048);
  EXPECT_THROW((void)fill("data_parallel_shard_degree = 8\nfsdp_reshard_after_forward = \"sometimes\"\n", "", nlohmann::json::object()), Error);
  EXPECT_THROW(
      (void)fill("data_parallel_shard_degree = 4\ncontext_parallel_degree = 2\ncontext_parallel_rotate_method = \"ring\"\n", "", nlohmann::json::object()),
      Error);
}

// Pipeline schedules are torch's get_schedule_class names (an unknown one raises there); a single-stage schedule
// with more than one stage per rank is refused as torchtitan refuses it; GPipe is warned (priced as 1F1B); several
// gradient-accumulation steps under PP are several pipelines in torchtitan's train_step, warned.
TEST(Torchtitan, PipelineSchedulesAsTorchNamesThem) {
  auto read = [](const std::string& parallelism, long long global) {
    const std::string text = fmt::format(
        "[model]\nname = \"llama3\"\nflavor = \"8B\"\n[training]\nlocal_batch_size = 8\nglobal_batch_size = {}\n[parallelism]\n"
        "data_parallel_shard_degree = 16\npipeline_parallel_degree = 4\n{}",
        global, parallelism);
    return config::read_text(text, "t.toml", config::Format::Torchtitan);
  };
  EXPECT_THROW((void)read("pipeline_parallel_schedule = \"Bogus1F1B\"\n", 128), Error);
  EXPECT_THROW((void)read("pipeline_parallel_schedule = \"1F1B\"\npipeline_parallel_layers_per_stage = 4\n", 128), Error);
  auto mentions = [](const config::Loaded& l, const std::string& what) {
    return std::any_of(l.warnings.begin(), l.warnings.end(), [&](const std::string& w) { return w.find(what) != std::string::npos; });
  };
  EXPECT_TRUE(mentions(read("pipeline_parallel_schedule = \"GPipe\"\n", 128), "GPipe"));
  // Several gradient-accumulation steps under PP: one pipeline run each (the global batch over local x DP).
  EXPECT_FALSE(read("pipeline_parallel_schedule = \"interleaved1f1b\"\n", 128).values.contains("pipeline_runs"));
  EXPECT_EQ(read("", 512).values.at("pipeline_runs"), 4);
}

// torchtitan's train_step calls the pipeline schedule once per gradient-accumulation step (torchtitan v0.2.2
// train.py: for each accumulation micro-batch, forward_backward_step runs pp_schedule.step over local_batch_size /
// pipeline_parallel_microbatch_size micro-batches): 4 runs of 4 micro-batches each fill and drain the 4 stages, where
// one pipeline of 16 does it once. The bubble is that of a run times the runs, the DP reduce runs once per run, and a
// stage holds at most a run's micro-batches. --emit writes the local batch of one run and reads back the same runs.
TEST(Torchtitan, AccumulationUnderPipelineRunsOnePipelinePerStep) {
  auto text = [](long long local) {
    return fmt::format(
        "[model]\nname = \"llama3\"\nflavor = \"8B\"\n[training]\nlocal_batch_size = {}\nglobal_batch_size = 64\nseq_len = 8192\n"
        "[activation_checkpoint]\nmode = \"none\"\n[parallelism]\ndata_parallel_shard_degree = 4\npipeline_parallel_degree = 4\n"
        "pipeline_parallel_microbatch_size = 1\n",
        local);
  };
  const app::EstimateRequest runs = filled(text(4), "t.toml");
  const app::EstimateRequest one = filled(text(16), "t.toml");
  EXPECT_EQ(runs.job.training.pipeline_runs, 4);
  EXPECT_EQ(one.job.training.pipeline_runs, 1);
  const report::EstimateReport a = app::run_estimate(runs);
  const report::EstimateReport b = app::run_estimate(one);
  ASSERT_EQ(a.layout.micro_batches, 16);
  ASSERT_EQ(b.layout.micro_batches, 16);
  // The same micro-batches through the same stages: compute alike, the bubble four times one pipeline's.
  EXPECT_DOUBLE_EQ(a.time.breakdown.compute_s, b.time.breakdown.compute_s);
  EXPECT_NEAR(a.time.breakdown.bubble_s, 4 * b.time.breakdown.bubble_s, 1e-9 * a.time.step_s);
  EXPECT_GT(a.time.breakdown.dp_comm_s, b.time.breakdown.dp_comm_s);
  EXPECT_GT(a.time.step_s, b.time.step_s);
  // A run of 4 micro-batches fills the 4 stages as one of 16 does: the same activations in flight.
  EXPECT_DOUBLE_EQ(a.memory.peak_bytes, b.memory.peak_bytes);
  // 8 runs of 2 micro-batches: the first stage holds 2, not 4.
  const report::EstimateReport eight = app::run_estimate(filled(text(2), "t.toml"));
  EXPECT_LT(eight.memory.stages[0].layer_activations, b.memory.stages[0].layer_activations);

  config::Plan p = plan_of(a.layout, 16, 64, 8192, 32);
  if (a.layout.split) p.split = *a.layout.split;  // torchtitan's split (8, 9, 8, 7 with the embedding and head)
  p.pipeline_runs = 4;
  const config::Loaded original = config::read_text(text(4), "t.toml");
  const std::string written = config::emit(config::EmitFormat::Torchtitan, p, &original, "torchtitan llama3 8B");
  const app::EstimateRequest back = filled(written, "t.toml");
  EXPECT_EQ(back.job.training.pipeline_runs, 4) << written;
  EXPECT_DOUBLE_EQ(app::run_estimate(back).time.step_s, a.time.step_s);
}

// --devices beside a torchtitan file's degrees: the data-parallel degree follows the devices and, without a stated
// global_batch_size, so does the global batch (local_batch_size per data-parallel rank); a stated global batch the
// new DP cannot split is refused naming training.global_batch_size, not a --global-batch nobody gave.
TEST(Torchtitan, DevicesBesideTheFilesDegrees) {
  const std::string text =
      "[model]\nname = \"llama3\"\nflavor = \"8B\"\n[training]\nlocal_batch_size = 2\n[parallelism]\ndata_parallel_shard_degree = 8\n"
      "tensor_parallel_degree = 2\n";
  auto with_devices = [](const std::string& toml, const std::string& devices) {
    app::EstimateRequest r;
    config::fill(r, config::read_text(toml, "t.toml"), nlohmann::json{{"devices", devices}});
    return r;
  };
  EXPECT_EQ(with_devices(text, "16").job.training.global_batch, 16);  // the file's 8 x 2
  EXPECT_EQ(with_devices(text, "32").job.training.global_batch, 32);  // DP 16 x 2
  EXPECT_EQ(app::run_estimate(with_devices(text, "32")).layout.dp, 16);
  std::string stated = text;
  stated.replace(stated.find("local_batch_size = 2\n"), 21, "local_batch_size = 2\nglobal_batch_size = 16\n");
  try {
    (void)with_devices(stated, "32");
    ADD_FAILURE() << "a global batch of 16 over DP 16 x 2 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("t.toml: training.global_batch_size"), std::string::npos) << e.what();
  }
}

// torchtitan's default activation checkpointing (selective, every 2nd block a rank builds) over its 8/9/8/7 split
// of Llama 3 8B on PP 4 recomputes 4, 4, 4, 3 layers: --emit writes selective_ac_option 2, which reads back the same
// counts, with no note (a note only when every-N-th cannot state the plan's counts, e.g. 5 of a stage's 8).
TEST(Torchtitan, EveryNthBlockCheckpointRoundTrips) {
  const std::string text =
      "[model]\nname = \"llama3\"\nflavor = \"8B\"\n[training]\nlocal_batch_size = 16\nglobal_batch_size = 64\n[parallelism]\n"
      "data_parallel_shard_degree = 4\npipeline_parallel_degree = 4\npipeline_parallel_microbatch_size = 1\n";
  const config::Loaded original = config::read_text(text, "t.toml");
  ASSERT_TRUE(original.split.has_value());
  EXPECT_EQ(original.split->full, (plan::ChunkCounts{{4, 4, 4, 3}}));
  const report::EstimateReport rep = app::run_estimate(filled(text, "t.toml"));
  config::Plan p = plan_of(rep.layout, 16, 64, 8192, 32);
  p.split = *rep.layout.split;
  std::vector<std::string> notes;
  const std::string written = config::emit(config::EmitFormat::Torchtitan, p, &original, "torchtitan llama3 8B", &notes);
  EXPECT_TRUE(notes.empty()) << notes.front();
  EXPECT_EQ(config::read_text(written, "t.toml").split->full, original.split->full) << written;
  p.split->full = plan::ChunkCounts{{5, 4, 4, 3}};
  (void)config::emit(config::EmitFormat::Torchtitan, p, &original, "torchtitan llama3 8B", &notes);
  EXPECT_EQ(notes.size(), 1u);
}

// Async TP hides the TP collectives behind their GEMMs as userbuffers do; Float8 FSDP all-gathers the converted
// weights in one byte (quantize.linear.float8.enable_fsdp_float8_all_gather, the 405B preset's settings).
TEST(Torchtitan, AsyncTpAndFloat8AllGather) {
  const std::string text =
      "[model]\nname = \"llama3\"\nflavor = \"8B\"\nconverters = [\"quantize.linear.float8\"]\n[quantize.linear.float8]\n"
      "enable_fsdp_float8_all_gather = true\n[training]\nseq_len = 8192\n[parallelism]\ndata_parallel_shard_degree = 4\ntensor_parallel_degree = 2\n"
      "enable_async_tensor_parallel = true\n";
  const app::EstimateRequest r = filled(text, "t.toml", config::Format::Torchtitan);
  EXPECT_EQ(r.job.overlap.tp, cost::terms::kUserbuffersTpOverlap);
  EXPECT_EQ(r.job.training.gathered_param_bytes(), 1);
}

// torchtitan's TP always shards the sequence between blocks: a search that writes a torchtitan TOML ranks only SP
// layouts when TP > 1 (a TP layout without SP is one torchtitan cannot run).
TEST(Torchtitan, SearchForTorchtitanKeepsToSequenceParallelTp) {
  const std::string dir = test::temp_dir();
  auto r = test::run_sapp("search --from " + source("examples/torchtitan/llama3-8b.toml") + " -d 16 --tp 1,2,4 --pp 1 --cp 1 -k 20 --emit torchtitan -o " +
                          dir + "/s.toml -f json");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto candidates = nlohmann::json::parse(r.out).at("candidates");
  int with_tp = 0;
  for (const auto& c : candidates) {
    if (c.at("layout").at("tp").get<int>() == 1) continue;
    ++with_tp;
    EXPECT_TRUE(c.at("layout").at("sp").get<bool>()) << c.at("layout").dump();
  }
  EXPECT_GT(with_tp, 0);
}

// torchtitan's DDP takes no other dimension ("DDP has not supported > 1D parallelism", parallelize.py apply_ddp) and
// CP implies FSDP: a replicated plan beside TP is refused at --emit; its CP is ring attention whatever the rotate
// method (allgather or alltoall exchange K,V shards), so an all-to-all-of-heads plan is refused and a ring plan
// reads back as ring.
TEST(Torchtitan, EmitWritesOnlyWhatTorchtitanRuns) {
  config::Plan p = plan_of(plan::Layout{}, 8, 8, 8192, 32);
  p.layout.dp = 4;
  p.layout.tp = 2;
  p.layout.sp = true;
  p.layout.zero = 0;
  p.model = test::bundled("llama3-8b").spec;
  EXPECT_THROW((void)config::emit(config::EmitFormat::Torchtitan, p, nullptr, "torchtitan llama3 8B"), Error);
  p.layout.zero = 3;
  p.layout.dp = 2;
  p.layout.cp = 2;
  p.layout.cp_algo = plan::CpAlgo::AllToAll;
  EXPECT_THROW((void)config::emit(config::EmitFormat::Torchtitan, p, nullptr, "torchtitan llama3 8B"), Error);
  p.layout.cp_algo = plan::CpAlgo::Ring;
  const std::string written = config::emit(config::EmitFormat::Torchtitan, p, nullptr, "torchtitan llama3 8B");
  const app::EstimateRequest back = filled(written, "t.toml");
  EXPECT_EQ(back.layout.cp_algo, plan::CpAlgo::Ring) << written;
  EXPECT_EQ(back.layout.cp, 2);
  std::string shuffled = written;
  const std::size_t table = shuffled.find("[parallelism]\n");
  ASSERT_NE(table, std::string::npos) << written;
  shuffled.insert(table + 14, "context_parallel_rotate_method = \"alltoall\"\n");
  EXPECT_EQ(filled(shuffled, "t.toml").layout.cp_algo, plan::CpAlgo::Ring) << shuffled;
}

// HyperParallel's train YAML runs its trainer's fully_shard and AdamW (the hyperparallel profile; mindspore-ai/
// hyper-parallel fdd0a80 platform/torch/fully_shard/param.py): shards stored in the model's dtype (model_init_dtype,
// else model.torch_dtype, else fp32) and gathered in mix_precision.param_dtype; gradients kept as stored; two Adam
// moments zeros_like the gradient; optimizer.fp32_main_params adds an fp32 main copy of a narrower parameter with
// fp32 moments and main gradients. Bytes per parameter, state by state (the four cases by hand: bf16 model 2+2+4 = 8;
// fp32 shards gathered in bf16 4+4+8 = 16; fp32 init with fp32 main params 4+4+8 = 16, no second copy; bf16 model
// with fp32 main params 2+4+(4+8) = 18). The loss reads logits gathered whole over TP unless accelerator.loss_parallel;
// reshard_after_forward false keeps the gathered parameters (ZeRO-2); selective is the per-op policy.
TEST(HyperParallel, TrainYamlTakesItsTrainersStateDtypes) {
  const std::string base =
      "model:\n  pretrained_model_name_or_path: x\n  config_overrides: {model_type: llama, num_hidden_layers: 4, hidden_size: 256, "
      "num_attention_heads: 4, intermediate_size: 512, vocab_size: 1000}\n{}accelerator: {tp_size: 2, pp_size: 1{}}\n"
      "fsdp_config:\n  dp_shard_size: 4\n{}training: {global_batch_size: 8, micro_batch_size: 1}\n";
  struct Read {
    plan::Training training;
    plan::Layout layout;
    std::vector<std::string> warnings;
  };
  auto read = [&](const std::string& model_extra, const std::string& fsdp_extra, const std::string& top_extra = "", const std::string& accelerator_extra = "") {
    std::string text = base;
    text.replace(text.find("{}"), 2, model_extra);
    text.replace(text.find("{}"), 2, accelerator_extra);
    text.replace(text.find("{}"), 2, fsdp_extra);
    text += top_extra;
    app::EstimateRequest r;
    config::Loaded loaded = config::read_text(text, "train.yaml", config::Format::HyperParallel);
    config::fill(r, loaded, nlohmann::json::object());
    return Read{r.job.training, r.layout, loaded.warnings};
  };
  auto state = [](const plan::Training& t) { return std::array<double, 4>{t.param_bytes, t.grad_bytes, t.optimizer_bytes, t.gathered_param_bytes()}; };
  const std::string bf16_gather = "  mix_precision: {param_dtype: bfloat16}\n";
  EXPECT_EQ(state(read("  torch_dtype: bfloat16\n", "").training), (std::array<double, 4>{2, 2, 4, 2}));
  EXPECT_EQ(state(read("", bf16_gather).training), (std::array<double, 4>{4, 4, 8, 2}));
  EXPECT_EQ(state(read("", bf16_gather, "model_init_dtype: float32\noptimizer: {fp32_main_params: true}\n").training), (std::array<double, 4>{4, 4, 8, 2}));
  EXPECT_EQ(state(read("  torch_dtype: bfloat16\n", bf16_gather, "optimizer: {fp32_main_params: true}\n").training), (std::array<double, 4>{2, 4, 12, 2}));
  EXPECT_EQ(state(read("  torch_dtype: float32\n", bf16_gather, "model_init_dtype: bfloat16\n").training), (std::array<double, 4>{2, 2, 4, 2}));
  EXPECT_EQ(read("  torch_dtype: bfloat16\n", "", "optimizer: {_target_: hyper_parallel.components.optim.Muon}\n").training.optimizer_bytes, 2);
  Read automatic = read("  torch_dtype: auto\n", "");
  EXPECT_EQ(automatic.training.param_bytes, 4);
  ASSERT_EQ(automatic.warnings.size(), 1U);
  EXPECT_NE(automatic.warnings[0].find("model.torch_dtype"), std::string::npos);
  Read plain = read("", "");
  EXPECT_FALSE(plain.training.loss_fused);
  EXPECT_TRUE(plain.training.logits_whole_over_tp);
  EXPECT_TRUE(plain.training.optimizer_casts_per_parameter);
  EXPECT_EQ(plain.training.recompute_modules, cost::terms::recompute_switches({"torchtitan_op_sac"}));
  EXPECT_EQ(plain.layout.zero, 3);
  EXPECT_FALSE(read("", "", "", ", loss_parallel: true").training.logits_whole_over_tp);
  const Read kept = read("", "  reshard_after_forward: false\n" + bf16_gather);
  EXPECT_EQ(kept.layout.zero, 2);
  // Its fully_shard is FSDP2's design: under ZeRO-2 the fp32 weights stay sharded and the stage is held gathered in
  // bf16 (the hyperparallel profile's zero2_keeps_weights_sharded), not whole in fp32 as Megatron's ZeRO-2 keeps them.
  EXPECT_TRUE(kept.training.zero2_keeps_weights_sharded);
  EXPECT_TRUE(cost::terms::shards_weights(kept.training, kept.layout));
  // reshard_after_backward false keeps them from one micro-batch's backward to the next one's forward: ZeRO-2 with
  // several micro-batches (global batch 8 over DP 4 here), nothing kept with one.
  EXPECT_EQ(read("", "  reshard_after_backward: false\n").layout.zero, 2);
  std::string one_micro_batch = base;
  one_micro_batch.replace(one_micro_batch.find("global_batch_size: 8"), 20, "global_batch_size: 4");
  for (const char* placeholder : {"", "", "  reshard_after_backward: false\n"}) one_micro_batch.replace(one_micro_batch.find("{}"), 2, placeholder);
  const app::EstimateRequest single = filled(one_micro_batch, "train.yaml", config::Format::HyperParallel);
  EXPECT_EQ(single.layout.zero, 3);
  // The current trainer's examples state the sequence as dataset.data_transform.seq_len.
  std::string seq_len = base + "dataset:\n  data_transform: {seq_len: 2048}\n";
  for (int i = 0; i < 3; ++i) seq_len.replace(seq_len.find("{}"), 2, "");
  const app::EstimateRequest with_seq = filled(seq_len, "train.yaml", config::Format::HyperParallel);
  EXPECT_EQ(with_seq.job.training.seq, 2048);
}

// Logits gathered whole over TP (HyperParallel without loss_parallel) hold the whole vocabulary on the last stage:
// per micro-batch tokens x V x (2 + 4) bytes kept and 8 more in the loss backward, against 1/TP of them split, and
// the step pays the all-gather. By hand for the example's last stage below: 4096 tokens x 151936 x 14 B = 8.12 GiB
// whole, 1.02 GiB split over TP 8 (the loss_parallel backward keeps 16 B per local logit: 1.16 GiB).
TEST(HyperParallel, LogitsGatheredWholeOverTpCostTheirMemoryAndAGather) {
  auto estimate = [](bool loss_parallel) {
    app::EstimateRequest r;
    config::fill(r, config::read_file(source("examples/hyperparallel/qwen3-32b-train.yaml")), nlohmann::json{{"hardware", "ascend-910b"}});
    r.job.training.logits_whole_over_tp = !loss_parallel;
    return app::run_estimate(r);
  };
  report::EstimateReport whole = estimate(false);
  report::EstimateReport split = estimate(true);
  const double logits = 4096.0 * 151936.0;
  const double gib = 1073741824.0;
  const auto& w = whole.memory.stages.back();
  const auto& s = split.memory.stages.back();
  EXPECT_NEAR((w.head_activations + w.loss_backward) / gib, (logits * 14.0 + 4096.0 * 5120 * 2) / gib, 0.01);
  EXPECT_NEAR((s.head_activations + s.loss_backward) / gib, (logits / 8 * 6.0 + logits / 8 * 10.0 + 4096.0 * 5120 * 2) / gib, 0.01);
  EXPECT_GT(whole.time.breakdown.tp_comm_s, split.time.breakdown.tp_comm_s);
}

// The current trainer's AcceleratorConfig (mindspore-ai/hyper-parallel trainer/config/parallelism.py at 5421c36):
// pp_micro_batch_num (global batch = it x micro_batch_size x DP), pp_vpp, pp_layer_split (layers per stage),
// pp_schedule (gpipe is warned: priced as 1F1B); its TrainingConfig has no micro_batch_num and its resolver refuses
// unknown fields, so --emit writes the accelerator keys and leaves training.micro_batch_num out.
TEST(HyperParallel, TheTrainersPipelineKeysReadAndWriteBack) {
  const std::string text =
      "model:\n  pretrained_model_name_or_path: x\n  config_overrides: {model_type: llama, num_hidden_layers: 8, hidden_size: 256, "
      "num_attention_heads: 4, intermediate_size: 512, vocab_size: 1000}\n"
      "training: {global_batch_size: 8, micro_batch_size: 1}\n"
      "accelerator: {tp_size: 1, cp_size: 2, ep_size: 1, pp_size: 2, pp_micro_batch_num: 4, pp_schedule: gpipe, pp_vpp: 1, pp_layer_split: [3, 5]}\n"
      "fsdp_config: {dp_shard_size: 4}\n"
      "dataloader: {get_batch: {cp_algorithm: ulysses}}\n";
  config::Loaded loaded = config::read_text(text, "train.yaml", config::Format::HyperParallel);
  app::EstimateRequest r;
  config::fill(r, loaded, nlohmann::json::object());
  EXPECT_EQ(r.job.devices, 8);
  EXPECT_EQ(r.job.training.global_batch, 8);
  EXPECT_EQ(app::run_estimate(r).layout.micro_batches, 4);
  EXPECT_EQ(r.layout.cp_algo, plan::CpAlgo::AllToAll);
  ASSERT_TRUE(r.split.has_value());
  EXPECT_EQ(r.split->layers, (plan::ChunkCounts{{3, 5}}));
  ASSERT_EQ(loaded.warnings.size(), 1U);
  EXPECT_NE(loaded.warnings[0].find("accelerator.pp_schedule"), std::string::npos) << loaded.warnings[0];
  std::string inconsistent = text;
  inconsistent.replace(inconsistent.find("pp_micro_batch_num: 4"), 21, "pp_micro_batch_num: 3");
  EXPECT_THROW((void)config::read_text(inconsistent, "train.yaml", config::Format::HyperParallel), Error);
  std::string bad_split = text;
  bad_split.replace(bad_split.find("[3, 5]"), 6, "[3, 6]");
  EXPECT_THROW((void)config::read_text(bad_split, "train.yaml", config::Format::HyperParallel), Error);

  config::Plan p;
  p.layout = r.layout;
  p.layout.dp = 2;
  p.layout.pp = 2;
  p.layout.cp = 2;
  p.layout.vpp = 1;
  p.devices = 8;
  p.global_batch = 8;
  p.seq = 4096;
  p.num_layers = 8;
  p.model_config = loaded.model_config;
  p.split = plan::StageSplit{{{5, 3}}, {}, {}};
  const std::string written = config::emit(config::EmitFormat::HyperParallel, p, &loaded, "x");
  EXPECT_EQ(written.find(" micro_batch_num:"), std::string::npos) << written;  // training has no such field
  EXPECT_NE(written.find("pp_micro_batch_num: 4"), std::string::npos) << written;
  EXPECT_NE(written.find("pp_layer_split: [5, 3]"), std::string::npos) << written;
  const app::EstimateRequest back = filled(written, "train.yaml", config::Format::HyperParallel);
  ASSERT_TRUE(back.split.has_value());
  EXPECT_EQ(back.split->layers, (plan::ChunkCounts{{5, 3}}));
  EXPECT_EQ(app::run_estimate(back).layout.micro_batches, 4);
  // The CP algorithm goes back as read: the file's ulysses split stays all-to-all, a ring plan takes it out.
  EXPECT_EQ(back.layout.cp_algo, plan::CpAlgo::AllToAll);
  config::Plan ring = p;
  ring.layout.cp_algo = plan::CpAlgo::Ring;
  EXPECT_EQ(filled(config::emit(config::EmitFormat::HyperParallel, ring, &loaded, "x"), "train.yaml", config::Format::HyperParallel).layout.cp_algo,
            plan::CpAlgo::Ring);
  // A fresh file for an interleaved plan states pp_vpp and pp_micro_batch_num, not the keys the trainer refuses.
  p.layout.vpp = 2;
  p.split.reset();
  const std::string fresh = config::emit(config::EmitFormat::HyperParallel, p, nullptr, "llama3-8b");
  EXPECT_NE(fresh.find("pp_vpp: 2"), std::string::npos) << fresh;
  EXPECT_EQ(fresh.find("pp_interleave_num"), std::string::npos) << fresh;
  EXPECT_EQ(fresh.find(" micro_batch_num:"), std::string::npos) << fresh;
}

// A fresh AutoModel or HyperParallel file loads its checkpoint by name: a bundled model is named by the HuggingFace id
// its data file was taken from (`_source`), which the trainers' from_pretrained loads and the readers map back to
// it; it had been named by sapp's own catalog name ("llama3-8b"), which no hub holds. A model whose source is no
// HuggingFace repository (GPT-3 175B, from its paper) keeps its name.
TEST(Emit, FreshFilesNameBundledModelsByTheirHuggingFaceId) {
  EXPECT_EQ(model::hf_id_of_bundled("llama3-8b", test::data_dir()), "meta-llama/Meta-Llama-3-8B");
  EXPECT_EQ(model::hf_id_of_bundled("nemotron-3-nano-30b-a3b", test::data_dir()), "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16");
  EXPECT_FALSE(model::hf_id_of_bundled("gpt3-175b", test::data_dir()));
  EXPECT_FALSE(model::hf_id_of_bundled("meta-llama/Meta-Llama-3-8B", test::data_dir()));
  for (const auto format : {config::EmitFormat::AutoModel, config::EmitFormat::HyperParallel}) {
    const std::string text = config::emit(format, bundled_plan("llama3-8b", 8, 64, 4096, 3), nullptr, "llama3-8b");
    EXPECT_NE(text.find("pretrained_model_name_or_path: meta-llama/Meta-Llama-3-8B\n"), std::string::npos) << text;
    EXPECT_EQ(filled(text, "back.yaml").job.model, "llama3-8b");
  }
  const std::string gpt3 = config::emit(config::EmitFormat::AutoModel, bundled_plan("gpt3-175b", 8, 64, 2048, 3), nullptr, "gpt3-175b");
  EXPECT_NE(gpt3.find("pretrained_model_name_or_path: gpt3-175b\n"), std::string::npos) << gpt3;
}

// The trainer's mesh folds CP into the FSDP dimensions (hyper_parallel/distributed/mesh.py build_meshs:
// dp_replicate x dp_shard = DP x CP; world = that x TP x PP): TP 2, CP 2 and dp_shard 4 run on 8 devices with DP 2
// (examples/training_demo/train_parallel_online.yaml: "8 devices with TP=2, CP=2"), sharded over those 4. TP 2,
// CP 4 and dp_shard 2 (qwen3_moe_tp_ep_cp/train_tp2_ep2_cp4_hybrid.yaml, "world=8, TP=2, CP=4 => DP=1") leave
// dp_replicate to the world size: --devices 8 gives DP 1 with the parameters sharded over 2 and replicated over 2.
TEST(HyperParallel, TheMeshFoldsContextParallelIntoTheShards) {
  auto fill = [](const std::string& acc, const std::string& shard, const nlohmann::json& cli) {
    const std::string text = "model:\n  pretrained_model_name_or_path: llama3-8b\naccelerator: {" + acc + "}\nfsdp_config: {dp_shard_size: " + shard +
                             "}\ntraining: {global_batch_size: 8, micro_batch_size: 1}\n";
    app::EstimateRequest r;
    config::fill(r, config::read_text(text, "train.yaml", config::Format::HyperParallel), cli);
    return r;
  };
  app::EstimateRequest online = fill("tp_size: 2, cp_size: 2", "4", nlohmann::json::object());
  EXPECT_EQ(online.job.devices, 8);
  EXPECT_EQ(app::run_estimate(online).layout.dp, 2);
  EXPECT_EQ(online.layout.optimizer_shard, 0);                                               // the whole DP x CP group
  EXPECT_THROW((void)fill("tp_size: 2, cp_size: 4", "2", nlohmann::json::object()), Error);  // asks for --devices
  app::EstimateRequest hybrid = fill("tp_size: 2, cp_size: 4", "2", nlohmann::json{{"devices", 8}});
  report::EstimateReport rep = app::run_estimate(hybrid);
  EXPECT_EQ(rep.layout.dp, 1);
  EXPECT_EQ(rep.layout.zero_group(), 2);
}

// The HuggingFace ids that framework configs name resolve to the bundled configs (by the id's last component as the
// data file's name, or by its `_source` / `_hf_ids`): each read through a trainer YAML names that model.
TEST(HyperParallel, HuggingFaceIdsOfBundledModelsResolve) {
  const std::vector<std::pair<std::string, std::string>> ids = {{"meta-llama/Llama-3.2-1B", "llama-3.2-1b"},
                                                                {"meta-llama/Llama-3.2-1B-Instruct", "llama-3.2-1b"},
                                                                {"openai/gpt-oss-20b", "gpt-oss-20b"},
                                                                {"Qwen/Qwen2.5-7B", "qwen2.5-7b"},
                                                                {"Qwen/Qwen2.5-7B-Instruct", "qwen2.5-7b"},
                                                                {"Qwen/Qwen3-32B", "qwen3-32b"},
                                                                {"Qwen/Qwen3-0.6B", "qwen3-0.6b"},
                                                                {"Qwen/Qwen3-0.6B-Base", "qwen3-0.6b"},
                                                                {"Qwen/Qwen3-4B", "qwen3-4b"},
                                                                {"Qwen/Qwen3-4B-Base", "qwen3-4b"},
                                                                {"moonshotai/Moonlight-16B-A3B", "moonlight-16b-a3b"},
                                                                {"moonshotai/Moonlight-16B-A3B-Instruct", "moonlight-16b-a3b"},
                                                                {"microsoft/phi-4", "phi-4"},
                                                                {"mistralai/Mistral-Nemo-Base-2407", "mistral-nemo-base-2407"},
                                                                {"mistralai/Mistral-Nemo-Instruct-2407", "mistral-nemo-base-2407"}};
  for (const auto& [id, name] : ids) {
    const std::string text = "model:\n  pretrained_model_name_or_path: " + id +
                             "\naccelerator: {tp_size: 1}\nfsdp_config: {dp_shard_size: 8}\ntraining: {global_batch_size: 8, micro_batch_size: 1}\n";
    const app::EstimateRequest r = filled(text, "train.yaml", config::Format::HyperParallel);
    EXPECT_EQ(r.job.model, name) << id;
  }
}

// A named model with some of its fields stated (model.config_overrides.num_hidden_layers: a cropped model, as the
// trainer's examples shorten a model for a smoke run) is that model with those fields laid over it; the name may be
// model.config_path or model.name, underscores for dashes; a file naming no model says which keys would.
TEST(HyperParallel, ANamedModelTakesTheFieldsStatedOverIt) {
  const std::string text =
      "model:\n  pretrained_model_name_or_path: meta-llama/Llama-3.1-8B\n  config_overrides: {num_hidden_layers: 4}\n"
      "accelerator: {tp_size: 2}\nfsdp_config: {dp_shard_size: 4}\ntraining: {global_batch_size: 8, micro_batch_size: 1}\n";
  const app::EstimateRequest r = filled(text, "train.yaml", config::Format::HyperParallel);
  ASSERT_TRUE(r.job.model_config.is_object());
  EXPECT_EQ(r.job.model_config.at("num_hidden_layers"), 4);
  EXPECT_EQ(r.job.model_config.at("hidden_size"), 4096);  // Llama 3.1 8B's config.json
  EXPECT_EQ(r.job.model_config.at("vocab_size"), 128256);
  // By hand: 4 x (2 x 4096^2 + 2 x 4096 x 1024 + 3 x 4096 x 14336 + 2 x 4096) + 2 x 128256 x 4096 = 1.9231e9.
  EXPECT_NEAR(app::run_estimate(r).subject.params.total, 1.9231e9, 1e6);
  EXPECT_EQ(r.job.devices, 8);

  const std::string underscored =
      "model: {config_path: qwen3_30b_a3b}\naccelerator: {ep_size: 8}\nfsdp_config: {dp_shard_size: 8}\n"
      "training: {global_batch_size: 8, micro_batch_size: 1}\n";
  const app::EstimateRequest q = filled(underscored, "train.yaml", config::Format::HyperParallel);
  EXPECT_EQ(q.job.model, "qwen3-30b-a3b");

  const std::string nameless = "model: {_target_: x.Y}\nfsdp_config: {dp_shard_size: 8}\ntraining: {global_batch_size: 8}\n";
  app::EstimateRequest n;
  try {
    config::fill(n, config::read_text(nameless, "nameless.yaml", config::Format::HyperParallel), nlohmann::json::object());
    ADD_FAILURE() << "a file naming no model was accepted";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("nameless.yaml"), std::string::npos) << what;
    EXPECT_NE(what.find("model.pretrained_model_name_or_path"), std::string::npos) << what;
  }
  EXPECT_NO_THROW(config::fill(n, config::read_text(nameless, "nameless.yaml", config::Format::HyperParallel), nlohmann::json{{"model", "llama3-8b"}}));
}

// Where the file leaves the world size to the launch: dp_shard -1 (the ranks the others leave), or a dp_shard x TP
// that cannot hold EP x expert TP with dp_replicate unstated (it then follows from the world size). Both ask for
// --devices, naming the keys; with it, DP follows.
TEST(HyperParallel, AWorldSizeLeftToTheLaunchAsksForDevices) {
  auto fill = [](const std::string& text, const nlohmann::json& cli) {
    app::EstimateRequest r;
    config::fill(r, config::read_text(text, "train.yaml", config::Format::HyperParallel), cli);
    return r;
  };
  const std::string auto_shard =
      "model: {pretrained_model_name_or_path: llama3-8b}\ntrain:\n  accelerator: {tp_degree: 2, dp_shard: -1}\n  global_batch_size: 16\n"
      "  micro_batch_size: 1\n";
  // The message filling `text` without --devices gives (empty: accepted).
  auto refusal = [&](const std::string& text) {
    try {
      (void)fill(text, nlohmann::json::object());
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(refusal(auto_shard).find("train.accelerator.dp_shard -1"), std::string::npos) << refusal(auto_shard);
  app::EstimateRequest shard = fill(auto_shard, nlohmann::json{{"devices", 16}});
  EXPECT_EQ(app::run_estimate(shard).layout.dp, 8);
  EXPECT_EQ(shard.layout.zero, 3);  // MindSpore's parallel optimizer over the ranks the world leaves
  EXPECT_THROW((void)config::read_text("model: {pretrained_model_name_or_path: llama3-8b}\ntrain: {accelerator: {dp_shard: 0}}\n", "train.yaml",
                                       config::Format::HyperParallel),
               Error);

  const std::string experts =
      "model: {pretrained_model_name_or_path: qwen3-30b-a3b}\naccelerator: {ep_size: 8}\nfsdp_config: {dp_shard_size: 1}\n"
      "training: {global_batch_size: 8, micro_batch_size: 1}\n";
  const std::string why = refusal(experts);
  EXPECT_NE(why.find("accelerator.ep_size"), std::string::npos) << why;
  EXPECT_NE(why.find("--devices"), std::string::npos) << why;
  EXPECT_EQ(app::run_estimate(fill(experts, nlohmann::json{{"devices", 8}})).layout.dp, 8);
}

// The three-tier examples state the legacy layout's degrees by their short names (train.accelerator.tp, pp, ...) and
// the pipeline's micro-batches as train.accelerator.pp_micro_batch_num; --emit writes back the keys the file uses.
TEST(HyperParallel, TheLegacyShortDegreeNamesReadAndWriteBack) {
  const std::string text =
      "model: {pretrained_model_name_or_path: llama3-8b}\ntrain:\n  backend: torch\n  accelerator: {tp: 2, pp: 2, dp_shard: 2, pp_micro_batch_num: 4}\n"
      "  global_batch_size: 8\n  micro_batch_size: 1\n";
  config::Loaded loaded = config::read_text(text, "train.yaml", config::Format::HyperParallel);
  app::EstimateRequest r;
  config::fill(r, loaded, nlohmann::json::object());
  EXPECT_EQ(r.job.devices, 8);
  EXPECT_EQ(r.layout.tp, 2);
  EXPECT_EQ(r.layout.pp, 2);
  EXPECT_EQ(app::run_estimate(r).layout.micro_batches, 4);
  config::Plan p = plan_of(r.layout, 8, 8, 4096, 32);
  p.layout.dp = 1;
  p.layout.tp = 4;
  p.layout.zero = 0;
  const std::string written = config::emit(config::EmitFormat::HyperParallel, p, &loaded, "llama3-8b");
  EXPECT_EQ(written.find("tp_degree"), std::string::npos) << written;
  EXPECT_EQ(written.find("micro_batch_num: 8"), written.find("pp_micro_batch_num: 8") + 3) << written;
  const app::EstimateRequest back = filled(written, "train.yaml", config::Format::HyperParallel);
  EXPECT_EQ(back.layout.tp, 4);
  EXPECT_EQ(back.job.devices, 8);
}

// HyperParallel's training-skeleton schema (examples/training_skeleton/train.yaml) states dp_shard_size under
// accelerator and the batch in step_scheduler (local_batch_size per data-parallel rank and forward).
TEST(HyperParallel, TheSkeletonSchemaStatesShardAndBatchElsewhere) {
  const std::string text =
      "model:\n  pretrained_model_name_or_path: llama3-8b\nstep_scheduler: {local_batch_size: 2, global_batch_size: 16}\n"
      "training: {seed: 42}\naccelerator: {dp_shard_size: 2, dp_replicate_size: 1, tp_size: 2, cp_size: 1, pp_size: 1, ep_size: 1}\n"
      "data_transform: {seq_len: 2048}\n";
  const app::EstimateRequest r = filled(text, "train.yaml", config::Format::HyperParallel);
  EXPECT_EQ(r.job.devices, 4);
  EXPECT_EQ(r.layout.zero, 3);
  EXPECT_EQ(r.layout.mbs, 2);
  EXPECT_EQ(r.job.training.global_batch, 16);
  EXPECT_EQ(r.job.training.seq, 2048);
  // It shares AutoModel's step_scheduler but has its own accelerator section: detected as HyperParallel.
  EXPECT_EQ(config::read_text(text, "train.yaml").format, config::Format::HyperParallel);
}

// FSDP reduces the gradients in mix_precision.reduce_dtype, unset: in the dtype the backward produced them, the
// gathered one (hyper_parallel/core/fully_shard/hsdp_grad_hook.py casts only when it is set). fp32 shards gathered in
// bf16 send bf16 gradients: the reduce-scatter moves half the bytes, the all-gathers (bf16, before the forward and
// again before the backward: ZeRO-3) the same, so with nothing overlapped the DP time is 2 + 2 x 2 against 4 + 2 x 2
// units of ring traffic.
TEST(HyperParallel, GradientsAreReducedInTheReduceDtype) {
  auto dp_seconds = [](const std::string& reduce) {
    const std::string text =
        "model: {pretrained_model_name_or_path: llama3-8b}\nmodel_init_dtype: float32\nfsdp_config:\n  dp_shard_size: 8\n"
        "  mix_precision: {param_dtype: bfloat16" +
        reduce + "}\ntraining: {global_batch_size: 8, micro_batch_size: 1}\n";
    app::EstimateRequest r;
    config::fill(r, config::read_text(text, "train.yaml", config::Format::HyperParallel), nlohmann::json{{"overlap_dp", 0}});
    return std::make_pair(r.job.training.reduced_gradient_bytes(), app::run_estimate(r).time.breakdown.dp_comm_s);
  };
  const auto [bf16_bytes, bf16_s] = dp_seconds("");
  const auto [fp32_bytes, fp32_s] = dp_seconds(", reduce_dtype: float32");
  EXPECT_EQ(bf16_bytes, 2);
  EXPECT_EQ(fp32_bytes, 4);
  EXPECT_NEAR(fp32_s / bf16_s, 8.0 / 6.0, 0.02);
}

// A search YAML's list or auto handed to estimate names the key and says which command searches.
TEST(ReferenceSearch, ASearchSpaceGivenToEstimateSaysToSearch) {
  const std::string text =
      "cluster: {num_nodes: 2, cards_per_node: 8, device_type: A2}\nmodel: {hidden_size: 4096, num_hidden_layers: 32, num_attention_heads: 32, "
      "intermediate_size: 14336, vocab_size: 128256, seq_length: 4096}\nparallelism: {tp: 2, pp: [1, 2]}\nconstraint: {global_batch_size: 64}\n";
  app::EstimateRequest r;
  try {
    config::fill(r, config::read_text(text, "search.yaml"), nlohmann::json::object());
    ADD_FAILURE() << "a list was priced as one layout";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("search.yaml: parallelism.pp"), std::string::npos) << what;
    EXPECT_NE(what.find("sapp search --from search.yaml"), std::string::npos) << what;
  }
}

// A legacy `train:` layout whose train.backend is torch runs HyperParallel's PyTorch trainer (examples such as
// qwen3_5_35b_a3b_base/train.yaml): its fully_shard over dp_shard in the hyperparallel profile, gathering in
// train.mixed_precision.param_dtype; without the backend the legacy layout stays MindSpore's.
TEST(HyperParallel, ALegacyLayoutOnTheTorchBackendIsFullyShard) {
  const std::string text =
      "model: {name: qwen3_5_moe, weights_path: /w}\ndata: {max_seq_len: 4096}\n"
      "train:\n  global_batch_size: 8\n  micro_batch_size: 1\n  backend: torch\n  accelerator: {dp_shard: 4}\n"
      "  mixed_precision: {enabled: true, param_dtype: bfloat16}\n  gradient_checkpointing: {activation_checkpoint: none}\n";
  app::EstimateRequest r;
  config::fill(r, config::read_text(text, "train.yaml", config::Format::HyperParallel), nlohmann::json{{"model", "qwen3-30b-a3b"}});
  EXPECT_EQ(r.layout.zero, 3);
  EXPECT_FALSE(r.job.training.zero3_gathers_once_per_step);  // not MindSpore's parallel optimizer
  EXPECT_EQ(r.job.training.gathered_param_bytes(), 2);
  EXPECT_EQ(r.job.training.optimizer_bytes, 8);
  std::string mindspore = text;
  mindspore.replace(mindspore.find("  backend: torch\n"), 17, "");
  app::EstimateRequest m;
  config::fill(m, config::read_text(mindspore, "train.yaml", config::Format::HyperParallel), nlohmann::json{{"model", "qwen3-30b-a3b"}});
  EXPECT_TRUE(m.job.training.zero3_gathers_once_per_step);
}

// HyperParallel's current train YAML has FSDP (ZeRO-3; ZeRO-2 with reshard_after_forward false) or replication, and
// sequence parallelism with TP (accelerator.sequence_parallel, the trainer's AcceleratorConfig): a ZeRO-1 plan is
// refused at --emit, naming what to search instead, and a search that writes there keeps to what it can state. A
// named model (bundled, or a config.json) is written by name, so nothing of it is lost (MLA and sliding-window fields
// were), and its split reads back.
TEST(HyperParallel, EmitStatesOnlyWhatTheFormatHolds) {
  config::Plan p;
  p.layout.dp = 4;
  p.layout.tp = 2;
  p.layout.sp = true;
  p.layout.zero = 1;
  p.devices = 8;
  p.global_batch = 8;
  p.seq = 4096;
  p.num_layers = 32;
  try {
    (void)config::emit(config::EmitFormat::HyperParallel, p, nullptr, "llama3-8b");
    ADD_FAILURE() << "ZeRO-1 written";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--zero"), std::string::npos) << e.what();
  }
  auto e = config::expressible(config::EmitFormat::HyperParallel, nullptr);
  EXPECT_EQ(e.zero, (std::vector<int>{0, 2, 3}));
  EXPECT_EQ(e.sp, (std::vector<bool>{false, true}));
  p.layout.zero = 3;
  app::EstimateRequest with_sp;
  config::fill(with_sp, config::read_text(config::emit(config::EmitFormat::HyperParallel, p, nullptr, "llama3-8b"), "h.yaml", config::Format::HyperParallel),
               nlohmann::json::object());
  EXPECT_TRUE(with_sp.layout.sp);
  EXPECT_EQ(with_sp.layout.tp, 2);
  p.layout.sp = false;
  // ZeRO-2 is FSDP keeping the gathered parameters (reshard_after_forward false), and reads back as ZeRO-2; a
  // ZeRO-3 plan written over it turns the key back.
  p.layout.zero = 2;
  const std::string zero2 = config::emit(config::EmitFormat::HyperParallel, p, nullptr, "llama3-8b");
  EXPECT_NE(zero2.find("reshard_after_forward: false"), std::string::npos) << zero2;
  app::EstimateRequest kept;
  config::Loaded zero2_read = config::read_text(zero2, "h.yaml", config::Format::HyperParallel);
  config::fill(kept, zero2_read, nlohmann::json::object());
  EXPECT_EQ(kept.layout.zero, 2);
  p.layout.zero = 3;
  const std::string zero3 = config::emit(config::EmitFormat::HyperParallel, p, &zero2_read, "llama3-8b");
  EXPECT_NE(zero3.find("reshard_after_forward: true"), std::string::npos) << zero3;
  p.layout.pp = 2;
  p.layout.dp = 2;
  p.layout.micro_batches = 4;
  p.split = plan::StageSplit{{{15, 17}}, {}, {}};
  config::Loaded back = config::read_text(config::emit(config::EmitFormat::HyperParallel, p, nullptr, "llama3-8b"), "h.yaml", config::Format::HyperParallel);
  app::EstimateRequest r;
  config::fill(r, back, nlohmann::json::object());
  EXPECT_EQ(r.job.model, "llama3-8b");
  ASSERT_TRUE(r.split.has_value());
  EXPECT_EQ(r.split->layers, (plan::ChunkCounts{{15, 17}}));
}

// Megatron states one recompute count for every chunk: a plan whose stages recompute different counts is written with
// the most, and said (it read back 9-12 % slower than planned, silently); a plan without recompute also drops
// MindSpeed's --recompute-activation-function (it was kept and read back as selective).
namespace {

// An 8-layer Megatron script on PP 2 (with `extra` flags) and a plan of its layout, for the recompute write-back.
std::pair<config::Loaded, config::Plan> megatron_pp2(const std::string& extra) {
  const std::string script =
      "torchrun pretrain_gpt.py --num-layers 8 --hidden-size 256 --num-attention-heads 8 --vocab-size 1000 --swiglu --seq-length 1024 "
      "--micro-batch-size 1 --global-batch-size 8 --pipeline-model-parallel-size 2" +
      extra + "\n";
  config::Plan p;
  p.layout.pp = 2;
  p.layout.dp = 1;
  p.layout.micro_batches = 8;
  p.devices = 2;
  p.global_batch = 8;
  p.seq = 1024;
  p.num_layers = 8;
  return {config::read_text(script, "m.sh", config::Format::Megatron), p};
}

}  // namespace

// Long shell text is read by scanning, not by std::regex, which matches by recursion, one stack frame per character:
// a MODEL_ARGS of a few thousand characters overflowed the stack under the sanitizers (fuzz_megatron found it). Here
// 3000 continuation lines (about 50 kB joined), a 20 kB layout that is no layout (refused, not crashed on), a
// variable reference of 20 kB and a script of one 300 kB word.
TEST(Megatron, LongShellLinesAreReadWithoutDeepRecursion) {
  std::string args = "MODEL_ARGS=\"--hidden-size 64 --num-attention-heads 4 --vocab-size 100 \\\n";
  for (int i = 0; i < 3000; ++i) args += "    --num-layers 4 \\\n";
  args += "\"\ntorchrun --nproc_per_node 8 pretrain_gpt.py $MODEL_ARGS\n";
  const app::EstimateRequest r = filled("#!/bin/bash\n" + args, "long.sh");
  ASSERT_TRUE(r.job.model_config.is_object());
  EXPECT_EQ(r.job.model_config.at("num_hidden_layers"), 4);
  const std::string base =
      "torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 4 --hidden-size 64 --num-attention-heads 4 --vocab-size 100 "
      "--pipeline-model-parallel-size 2 ";
  auto error_of = [&](const std::string& text) {
    try {
      (void)filled(text, "long.sh");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string layout = error_of(base + "--pipeline-model-parallel-layout \"(" + std::string(20000, 't') + "\"\n");
  EXPECT_NE(layout.find("--pipeline-model-parallel-layout"), std::string::npos) << layout.substr(0, 300);
  const std::string variable = error_of(base + "--ffn-hidden-size ${" + std::string(20000, 'H') + "}\n");
  EXPECT_NE(variable.find("--ffn-hidden-size"), std::string::npos) << variable.substr(0, 300);
  // Format detection scans as well: a 300 kB word crashed sapp's release build.
  const std::string word = error_of("#!/bin/bash\n" + std::string(300000, 'a') + ".yaml\n");
  EXPECT_NE(word.find("is a shell script without Megatron-LM's model flags"), std::string::npos) << word.substr(0, 300);
}

TEST(Megatron, EmitSaysWhatItCannotStateOfThePlansRecompute) {
  auto [l, p] = megatron_pp2(" --recompute-activation-function");
  p.split = plan::StageSplit{{{4, 4}}, {{2, 0}}, {}};
  std::vector<std::string> notes;
  std::string text = config::emit(config::EmitFormat::Megatron, p, &l, "m", &notes);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("written as 2"), std::string::npos) << notes[0];
  EXPECT_NE(text.find("--recompute-num-layers 2"), std::string::npos) << text;
  EXPECT_EQ(text.find("--recompute-activation-function"), std::string::npos) << text;
  p.split.reset();
  notes.clear();
  text = config::emit(config::EmitFormat::Megatron, p, &l, "m", &notes);
  EXPECT_TRUE(notes.empty());
  EXPECT_EQ(text.find("--recompute"), std::string::npos) << text;
}

// What Megatron can state is written without a note: each chunk recomputing min(n, its layers) is
// --recompute-num-layers n (block method; a chunk of fewer layers recomputes them all), and every layer selective is
// the selective granularity (it was written as no recompute, with a note).
TEST(Megatron, EmitWritesABlockCountAndAllSelectiveExactly) {
  auto [l, p] = megatron_pp2("");
  p.split = plan::StageSplit{{{6, 2}}, {{3, 2}}, {}};  // n = 3: the 2-layer stage recomputes both
  std::vector<std::string> notes;
  std::string text = config::emit(config::EmitFormat::Megatron, p, &l, "m", &notes);
  EXPECT_TRUE(notes.empty()) << notes.front();
  EXPECT_NE(text.find("--recompute-num-layers 3"), std::string::npos) << text;
  const config::Loaded back = config::read_text(text, "back.sh", config::Format::Megatron);  // no launch: the split alone
  ASSERT_TRUE(back.split.has_value());
  EXPECT_EQ(back.split->layers, (plan::ChunkCounts{{6, 2}}));
  EXPECT_EQ(back.split->full, (plan::ChunkCounts{{3, 2}}));
  p.split = plan::StageSplit{{{4, 4}}, {}, {{4, 4}}};
  notes.clear();
  text = config::emit(config::EmitFormat::Megatron, p, &l, "m", &notes);
  EXPECT_TRUE(notes.empty()) << notes.front();
  EXPECT_NE(text.find("--recompute-granularity selective"), std::string::npos) << text;
}

// The Megatron output is a valid argument list for core_v0.14.0: every flag is one its arguments.py defines.
TEST(Megatron, EmittedFlagsAreMegatronFlags) {
  config::Loaded l = config::read_file(source("tests/configs/megatron-uneven.args"));
  app::EstimateRequest r;
  config::fill(r, l, nlohmann::json::object());
  report::EstimateReport rep = app::run_estimate(r);
  config::Plan p;
  p.layout = rep.layout;
  if (rep.layout.split) p.split = *rep.layout.split;
  p.devices = r.job.devices;
  p.global_batch = r.job.training.global_batch;
  p.seq = r.job.training.seq;
  p.model = app::load(r.job).model.spec;
  p.num_layers = p.model->num_layers;
  for (const config::Loaded* original : std::vector<const config::Loaded*>{&l, nullptr}) {
    std::string text = config::emit(config::EmitFormat::Megatron, p, original, "m");
    std::stringstream ss(text);
    const auto& known = config::megatron_flags();
    for (std::string w; ss >> w;) {
      bool torchrun = w == "--nproc_per_node" || w == "--nnodes";  // the launcher's, not Megatron's
      if (w.rfind("--", 0) == 0 && w.find_first_of("=") == std::string::npos && !torchrun) {
        EXPECT_NE(std::find(known.begin(), known.end(), w), known.end()) << w << " in\n" << text;
      }
    }
  }
  EXPECT_EQ(config::megatron_flags().size(), 514u);  // the 514 option strings of core_v0.14.0's arguments.py
  // With the 123 core_v0.17.0's arguments.py adds and the 43 more of the dev branch at 1d9edcf8c7 (its DeepSeek-V3
  // GB200 launch script states --cuda-graph-impl), which a script may state without being warned of a misspelling.
  const auto& later = config::megatron_flags(true);
  EXPECT_EQ(later.size(), 514u + 123u + 43u);
  EXPECT_NE(std::find(later.begin(), later.end(), "--hybrid-layer-pattern"), later.end());
  EXPECT_NE(std::find(later.begin(), later.end(), "--cuda-graph-impl"), later.end());
  EXPECT_EQ(std::find(config::megatron_flags().begin(), config::megatron_flags().end(), "--hybrid-layer-pattern"), config::megatron_flags().end());
}

// Megatron's first/last-stage counts: 30 layers, PP 4, first 6, last 6: the middle stages hold (30 - 12) / 2 = 9.
// The overlap a script switches on is priced: --tp-comm-overlap hides the TP collectives as the NeMo and
// Megatron-Bridge recipes' tp_comm_overlap does (cost::terms::kUserbuffersTpOverlap), and the EP all-to-all hides
// behind another micro-batch's compute with Megatron-Core's --overlap-moe-expert-parallel-comm or MindSpeed's
// --moe-fb-overlap (kOverlappedEpAllToAll); without EP there is nothing to hide. The flags are no longer "unused".
TEST(Megatron, OverlapFlagsThatTheScriptStates) {
  const std::string moe =
      "torchrun pretrain_gpt.py --num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 --micro-batch-size 1 "
      "--global-batch-size 16 --vocab-size 32000 --num-experts 8 --moe-router-topk 2 --tensor-model-parallel-size 2 ";
  auto read = [&](const std::string& flags) {
    config::Loaded l = config::read_text(moe + flags + "\n", "run.sh", config::Format::Megatron);
    app::EstimateRequest r;
    config::fill(r, l, nlohmann::json{{"devices", 8}});
    return std::make_pair(r.job.overlap, l.unused);
  };
  const auto [plain, plain_unused] = read("--expert-model-parallel-size 4");
  const auto [tp, tp_unused] = read("--expert-model-parallel-size 4 --tp-comm-overlap --overlap-grad-reduce");
  EXPECT_EQ(plain.tp, 0);  // Megatron-LM's tp_comm_overlap is off unless stated
  EXPECT_EQ(tp.tp, cost::terms::kUserbuffersTpOverlap);
  // MindSpeed's --use-ascend-coc pipelines each TP GEMM with its collective in --coc-parallel-num pieces (default 1:
  // nothing hidden); 4 pieces hide 3 of 4; its fused kernel is priced as userbuffers.
  EXPECT_EQ(read("--use-ascend-coc").first.tp, 0);
  const auto [coc, coc_unused] = read("--use-ascend-coc --coc-parallel-num 4");
  EXPECT_DOUBLE_EQ(coc.tp, 0.75);
  EXPECT_TRUE(coc_unused.empty()) << coc_unused.front();
  EXPECT_EQ(read("--use-ascend-coc --coc-fused-kernel").first.tp, cost::terms::kUserbuffersTpOverlap);
  EXPECT_TRUE(tp_unused.empty()) << tp_unused.front();
  EXPECT_EQ(plain.ep, 0);
  EXPECT_EQ(read("--expert-model-parallel-size 4 --moe-fb-overlap").first.ep, cost::terms::kOverlappedEpAllToAll);
  EXPECT_EQ(read("--expert-model-parallel-size 4 --overlap-moe-expert-parallel-comm").first.ep, cost::terms::kOverlappedEpAllToAll);
  EXPECT_EQ(read("--moe-fb-overlap").first.ep, 0);  // EP 1: no all-to-all
  // Without --overlap-grad-reduce or --overlap-param-gather (both off in Megatron-LM's arguments.py) the DP
  // collectives are exposed; either keeps the profile's overlap.
  EXPECT_EQ(plain.dp, 0);
  EXPECT_GT(tp.dp, 0);
}

// Megatron-LM's arguments.py gives the experts --ffn-hidden-size when --moe-ffn-hidden-size is not stated: read so,
// and said for fine-grained experts (MindSpeed-LLM's examples/mindspore/deepseek2_lite/pretrain_deepseek2_lite_16b_8p_ms.sh states
// --num-experts 64 and --ffn-hidden-size 10944 without it: a 16B model read as 116B).
TEST(Megatron, ExpertsWithoutTheirWidthTakeTheDenseWidthAndSaySo) {
  const std::string script =
      "torchrun pretrain_gpt.py --num-layers 4 --hidden-size 1024 --ffn-hidden-size 4096 --num-attention-heads 16 --seq-length 2048 "
      "--micro-batch-size 1 --global-batch-size 16 --vocab-size 32000 --num-experts 64 --moe-router-topk 6 ";
  auto read = [&](const std::string& flags) { return config::read_text(script + flags + "\n", "run.sh", config::Format::Megatron); };
  auto says = [](const config::Loaded& l) {
    return std::any_of(l.warnings.begin(), l.warnings.end(), [](const std::string& w) { return w.find("--moe-ffn-hidden-size") != std::string::npos; });
  };
  const config::Loaded bare = read("");
  EXPECT_TRUE(says(bare));
  EXPECT_FALSE(bare.model_config.contains("moe_intermediate_size"));  // the family's default: the dense width
  const config::Loaded stated = read("--moe-ffn-hidden-size 512");
  EXPECT_FALSE(says(stated));
  EXPECT_EQ(stated.model_config.at("moe_intermediate_size"), 512);
  // Few experts as wide as the dense FFN (Mixtral's 8) are what such scripts mean: nothing said.
  EXPECT_FALSE(
      says(config::read_text("torchrun pretrain_gpt.py --num-layers 4 --hidden-size 1024 --ffn-hidden-size 4096 --num-attention-heads 16 --seq-length 2048 "
                             "--micro-batch-size 1 --global-batch-size 16 --vocab-size 32000 --num-experts 8 --moe-router-topk 2\n",
                             "run.sh", config::Format::Megatron)));
}

// Fine-tuning scripts whose samples do not run at --seq-length (MindSpeed-LLM's --no-pad-to-seq-lengths, Megatron's
// --variable-seq-lengths: each micro-batch padded to its longest sample) are priced at --seq-length, and say so.
TEST(Megatron, SamplesShorterThanTheSequenceAreSaidToBePricedAtIt) {
  auto warned = [](const std::string& flag) {
    const config::Loaded l = config::read_text(
        "torchrun pretrain_gpt.py --num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 4096 --micro-batch-size 1 "
        "--global-batch-size 16 --vocab-size 32000 " +
            flag + "\n",
        "run.sh", config::Format::Megatron);
    const bool unused = std::find(l.unused.begin(), l.unused.end(), flag) != l.unused.end();
    return !unused && std::any_of(l.warnings.begin(), l.warnings.end(), [&](const std::string& w) { return w.find(flag) != std::string::npos; });
  };
  EXPECT_TRUE(warned("--variable-seq-lengths"));
  EXPECT_TRUE(warned("--no-pad-to-seq-lengths"));
}

// A script that launches generation or evaluation (MindSpeed-LLM's examples/mcore/*/generate_*.sh run inference.py
// with --max-new-tokens) is priced as training of its model and layout, and says so; a training script does not.
TEST(Megatron, InferenceScriptsAreSaidToBePricedAsTraining) {
  const std::string flags =
      " --num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 --micro-batch-size 1 --global-batch-size 16 "
      "--vocab-size 32000";
  auto says = [&](const std::string& launch) {
    const config::Loaded l = config::read_text(launch + flags + "\n", "run.sh", config::Format::Megatron);
    return std::any_of(l.warnings.begin(), l.warnings.end(), [](const std::string& w) { return w.find("is not training") != std::string::npos; });
  };
  EXPECT_TRUE(says("torchrun $DISTRIBUTED_ARGS inference.py --max-new-tokens 256"));
  EXPECT_TRUE(says("torchrun evaluation.py"));
  EXPECT_TRUE(says("torchrun examples/multimodal/run_text_generation.py"));
  EXPECT_TRUE(says("python tools/run.py --max-new-tokens 64"));
  EXPECT_FALSE(says("torchrun pretrain_gpt.py"));
  EXPECT_FALSE(says("torchrun posttrain_gpt.py"));
}

TEST(Megatron, FirstAndLastStageLayers) {
  config::Loaded l = config::read_file(source("tests/configs/megatron-uneven.args"));
  ASSERT_TRUE(l.split);
  EXPECT_EQ(l.split->layers, (plan::ChunkCounts{{6, 9, 9, 6}}));
  EXPECT_EQ(l.split->full, (plan::ChunkCounts{{2, 2, 2, 2}}));  // --recompute-method block --recompute-num-layers 2
}

// A launch script whose processes are fewer than its own TP x PP (Megatron-LM's examples default to one node) is
// refused naming the keys the devices came from and what fixes it; --devices prices it.
TEST(Megatron, TooFewDevicesForItsOwnDegreesNameTheScriptsKeys) {
  const std::string dir = sapp::test::temp_dir();
  sapp::test::write_file(dir + "/run.sh",
                         "torchrun --nproc_per_node 8 --nnodes 1 pretrain_gpt.py --tensor-model-parallel-size 8 --pipeline-model-parallel-size 2 "
                         "--num-layers 32 --hidden-size 4096 --num-attention-heads 32 --vocab-size 32000 --seq-length 4096 --micro-batch-size 1 "
                         "--global-batch-size 64\n");
  auto refused = sapp::test::run_sapp("estimate --from " + dir + "/run.sh -H h100-sxm");
  EXPECT_EQ(refused.status, 1);
  EXPECT_NE(refused.err.find("run.sh: --nproc_per_node x --nnodes: 8 devices are not a multiple of TP x PP x CP = 8 x 2 x 1 = 16; give --devices"),
            std::string::npos)
      << refused.err;
  EXPECT_EQ(sapp::test::run_sapp("estimate --from " + dir + "/run.sh -H h100-sxm --devices 16").status, 0);
}

// The same for its expert parallelism (Megatron-LM's examples/mixtral/train_mixtral_8x7b_distributed.sh: one node by
// default, PP 4, EP 8: two ranks per stage to carve eight expert ranks from), and a launch that states no device count
// at all (an sbatch script whose #SBATCH lines are placeholders) says so by file instead of "--devices is required".
TEST(Megatron, DevicesTooFewForItsExpertsOrNotStatedNameTheScript) {
  const std::string dir = sapp::test::temp_dir();
  const std::string model =
      "--num-layers 8 --hidden-size 1024 --num-attention-heads 16 --ffn-hidden-size 3584 --swiglu --num-experts 8 --moe-router-topk 2 "
      "--vocab-size 32000 --seq-length 4096 --micro-batch-size 1 --global-batch-size 256\n";
  // The script is refused (exit 1) saying `message`, and priced once --devices gives the count.
  auto refused_then_priced = [&](const std::string& name, const std::string& launch, const std::string& message, int devices) {
    sapp::test::write_file(dir + "/" + name, launch + model);
    auto refused = sapp::test::run_sapp("estimate --from " + dir + "/" + name + " -H h100-sxm");
    EXPECT_EQ(refused.status, 1) << name;
    EXPECT_NE(refused.err.find(name + ": " + message), std::string::npos) << refused.err;
    EXPECT_EQ(sapp::test::run_sapp(fmt::format("estimate --from {}/{} -H h100-sxm --devices {}", dir, name, devices)).status, 0) << name;
  };
  refused_then_priced("moe.sh",
                      "GPUS_PER_NODE=8\nNNODES=${SLURM_NNODES:-\"1\"}\ntorchrun --nproc_per_node $GPUS_PER_NODE --nnodes $NNODES pretrain_gpt.py "
                      "--pipeline-model-parallel-size 4 --expert-model-parallel-size 8 ",
                      "--nproc_per_node x --nnodes: 8 devices over PP 4 leave 2 ranks per stage, not a multiple of EP 8 x expert TP 1; give --devices", 32);
  refused_then_priced("sbatch.sh", "#SBATCH --nodes=your_own_num_nodes\nsrun python pretrain_gpt.py ",
                      "the launch states no device count (no torchrun --nproc_per_node, msrun --worker_num or WORLD_SIZE): give --devices", 8);
  refused_then_priced("slurm.sh", "WORLD_SIZE=$SLURM_NTASKS\npython pretrain_gpt.py ",
                      "the launch's WORLD_SIZE '${SLURM_NTASKS}' comes from what the file does not set: give --devices", 8);
}

// A --framework on the command line applies its profile, but dtypes the file states stay: a Megatron script
// without --bf16 / --fp16 trains fp32 weights (4 B) with Adam moments only (8 B) under any framework.
TEST(Megatron, CommandLineFrameworkKeepsTheDtypesTheFileStates) {
  std::string dir = sapp::test::temp_dir();
  sapp::test::write_file(dir + "/run.sh",
                         "torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 2 --num-layers 32 --hidden-size 4096 "
                         "--num-attention-heads 32 --ffn-hidden-size 14336 --swiglu --vocab-size 128256 --seq-length 4096 --micro-batch-size 1 "
                         "--global-batch-size 64\n");
  config::Loaded l = config::read_file(dir + "/run.sh");
  for (const char* framework : {"megatron", "nemo", "torchtitan"}) {
    app::EstimateRequest r;
    config::fill(r, l, nlohmann::json{{"framework", framework}});
    EXPECT_EQ(r.job.training.param_bytes, 4) << framework;
    EXPECT_EQ(r.job.training.optimizer_bytes, 8) << framework;
  }
  app::EstimateRequest plain;
  config::fill(plain, l, nlohmann::json::object());
  EXPECT_EQ(plain.job.training.param_bytes, 4);
}

// Megatron-LM's gradient buffer dtype (arguments.py validate_args, DDP grad_dtype): fp32 under --bf16 unless
// --grad-reduce-in-bf16; under --fp16 the parameters' fp16 unless --accumulate-allreduce-grads-in-fp32.
TEST(Megatron, GradientBytesFollowTheReductionFlags) {
  std::string dir = sapp::test::temp_dir();
  const std::string base =
      "torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 2 --num-layers 32 --hidden-size 4096 "
      "--num-attention-heads 32 --ffn-hidden-size 14336 --swiglu --vocab-size 128256 --seq-length 4096 --micro-batch-size 1 "
      "--global-batch-size 64 --use-distributed-optimizer ";
  // Bytes per gradient as read, and the gradient buffer per parameter element a rank holds (no ZeRO-2 here).
  auto grad_bytes = [&](const std::string& flags) {
    sapp::test::write_file(dir + "/run.sh", base + flags + "\n");
    app::EstimateRequest r;
    config::fill(r, config::read_file(dir + "/run.sh"), nlohmann::json::object());
    const report::EstimateReport rep = app::run_estimate(r);
    const cost::StageMemory& s = rep.memory.stages.at(0);
    return std::pair{r.job.training.grad_bytes, s.grads / (s.param_elements + s.expert_param_elements)};
  };
  EXPECT_EQ(grad_bytes("--bf16"), std::pair(4.0, 4.0));
  EXPECT_EQ(grad_bytes("--bf16 --grad-reduce-in-bf16"), std::pair(2.0, 2.0));
  EXPECT_EQ(grad_bytes("--fp16"), std::pair(2.0, 2.0));
  EXPECT_EQ(grad_bytes("--fp16 --accumulate-allreduce-grads-in-fp32"), std::pair(4.0, 4.0));
  // Transformer Engine's precision-aware optimizer (arguments.py --use-precision-aware-optimizer): the master copy
  // and the two moments in their stated dtypes (Megatron-MoE-ModelZoo's DeepSeek-V3 recipes: bf16 moments, 4 + 2 + 2),
  // the main gradients in --main-grads-dtype.
  auto optimizer_bytes = [&](const std::string& flags) {
    sapp::test::write_file(dir + "/run.sh", base + "--bf16 " + flags + "\n");
    app::EstimateRequest r;
    config::fill(r, config::read_file(dir + "/run.sh"), nlohmann::json::object());
    return std::pair{r.job.training.optimizer_bytes, r.job.training.grad_bytes};
  };
  EXPECT_EQ(optimizer_bytes(""), std::pair(12.0, 4.0));
  EXPECT_EQ(optimizer_bytes("--use-precision-aware-optimizer"), std::pair(12.0, 4.0));
  EXPECT_EQ(optimizer_bytes("--use-precision-aware-optimizer --exp-avg-dtype bf16 --exp-avg-sq-dtype bf16"), std::pair(8.0, 4.0));
  EXPECT_EQ(optimizer_bytes("--use-precision-aware-optimizer --exp-avg-dtype fp8 --exp-avg-sq-dtype bf16 --main-grads-dtype bf16"), std::pair(7.0, 2.0));
  // MindSpeed-LLM's O2 (docs/en/pytorch/features/mcore/o2.md: --o2-optimizer saves 4N/DP, --o2-gradient 2N) and
  // MindSpeed's --reuse-fp32-param (2 bytes of the master copy).
  EXPECT_EQ(optimizer_bytes("--o2-optimizer --o2-gradient"), std::pair(8.0, 2.0));
  EXPECT_EQ(optimizer_bytes("--o2-optimizer --reuse-fp32-param"), std::pair(6.0, 4.0));
  // --fp8-param-gather: the weights kept in FP8, no Transformer Engine weight cache beside them; the script's
  // framework profile (megatron, no such default) does not reset what the script states.
  auto param_gather = [&](const std::string& flags) {
    sapp::test::write_file(dir + "/run.sh", base + "--bf16 --fp8-format hybrid " + flags + "\n");
    app::EstimateRequest r;
    config::fill(r, config::read_file(dir + "/run.sh"), nlohmann::json::object());
    return std::pair{r.job.training.fp8, r.job.training.fp8_param_gather};
  };
  EXPECT_EQ(param_gather(""), std::pair(true, false));
  EXPECT_EQ(param_gather("--fp8-param-gather"), std::pair(true, true));
}

// Megatron-Core's MoE switches a script states: the DeepEP / HybridEP dispatcher (flex with its backend, or
// core_v0.14's --moe-enable-deepep; the default allgather and alltoall send every routed copy), and the shared
// experts overlapped with the dispatch (--moe-shared-expert-overlap).
TEST(Megatron, MoeDispatcherAndSharedExpertOverlap) {
  const std::string moe =
      "torchrun pretrain_gpt.py --num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 --micro-batch-size 1 "
      "--global-batch-size 16 --vocab-size 32000 --num-experts 8 --moe-router-topk 2 --moe-shared-expert-intermediate-size 1024 "
      "--expert-model-parallel-size 4 ";
  auto read = [&](const std::string& flags) {
    app::EstimateRequest r;
    config::fill(r, config::read_text(moe + flags + "\n", "run.sh", config::Format::Megatron), nlohmann::json{{"devices", 8}});
    return r.job.training;
  };
  EXPECT_FALSE(read("").ep_dedup_per_node);
  EXPECT_FALSE(read("--moe-token-dispatcher-type alltoall").ep_dedup_per_node);
  EXPECT_TRUE(read("--moe-token-dispatcher-type flex --moe-flex-dispatcher-backend hybridep").ep_dedup_per_node);
  EXPECT_TRUE(read("--moe-token-dispatcher-type flex").ep_dedup_per_node);  // the backend's default: deepep
  EXPECT_TRUE(read("--moe-enable-deepep").ep_dedup_per_node);
  EXPECT_FALSE(read("").shared_expert_overlap);
  EXPECT_TRUE(read("--moe-shared-expert-overlap").shared_expert_overlap);
  // Token dropping: a capacity factor pads each expert's input to capacity only with
  // --moe-pad-expert-input-to-capacity; without it no expert runs above its mean tokens more than the cap allows.
  EXPECT_EQ(read("--moe-expert-capacity-factor 1.25").capacity_factor, 1);
  EXPECT_EQ(read("--moe-expert-capacity-factor 1.25 --moe-pad-expert-input-to-capacity").capacity_factor, 1.25);
  EXPECT_THROW((void)read("--moe-expert-capacity-factor lots"), Error);
  EXPECT_THROW((void)read("--attention-dropout abc"), Error);
}

// --account-for-embedding/loss-in-pipeline-split: arguments.py adds a layer for each before dividing --num-layers
// by PP and --num-layers-per-virtual-pipeline-stage (Megatron-MoE-ModelZoo's Qwen3-235B-A22B on H100: 94 + 2 = 96
// layers, PP 8, 3 per virtual stage: VPP 4), and the split counts them.
TEST(Megatron, AccountForEmbeddingAndLossInTheSplit) {
  const std::string base =
      "torchrun pretrain_gpt.py --num-layers 94 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 --micro-batch-size 1 "
      "--global-batch-size 64 --vocab-size 32000 --pipeline-model-parallel-size 8 --num-layers-per-virtual-pipeline-stage 3 ";
  EXPECT_THROW((void)config::read_text(base + "\n", "run.sh", config::Format::Megatron), Error);  // 94 / 8 / 3 does not divide
  config::Loaded l =
      config::read_text(base + "--account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split\n", "run.sh", config::Format::Megatron);
  EXPECT_EQ(l.values.at("vpp"), 4);
  EXPECT_EQ(l.values.at("split_counts_embedding_and_loss"), true);
  EXPECT_TRUE(l.unused.empty()) << l.unused.front();
}

// MindSpeed's --schedules-method dualpipev: DualPipe-V over 2 x PP chunks of --num-layers, the second chunks back up
// the ranks, so MindSpeed-LLM's DeepSeek-V3 A3 script's no-op layers 61-63 (of 64, PP 8) empty the last chunk, which
// sits on rank 0 beside the first.
TEST(Megatron, DualpipevPlacesTheSecondChunksInAV) {
  const std::string base =
      "torchrun pretrain_gpt.py --num-layers 64 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 --micro-batch-size 1 "
      "--global-batch-size 64 --vocab-size 32000 --pipeline-model-parallel-size 8 --schedules-method dualpipev --noop-layers 61,62,63\n";
  config::Loaded l = config::read_text(base, "run.sh", config::Format::Megatron);
  EXPECT_EQ(l.values.at("vpp"), 2);
  EXPECT_EQ(l.values.at("dualpipe_v"), true);
  ASSERT_TRUE(l.split);
  EXPECT_EQ(l.split->layers, (plan::ChunkCounts{{4, 4, 4, 4, 4, 4, 4, 4}, {1, 4, 4, 4, 4, 4, 4, 4}}));
  EXPECT_THROW((void)config::read_text(base.substr(0, base.size() - 1) + " --schedules-method zerobubble\n", "run.sh", config::Format::Megatron), Error);
}

// A DualPipe-V plan written back: MindSpeed's --schedules-method dualpipev with the split as whole chunks and
// --noop-layers (Megatron), torch's DualPipeV with module names in V order (torchtitan); each reads back the same.
TEST(Megatron, ADualPipeVPlanReadsBackTheSameSplit) {
  const std::string script =
      "torchrun pretrain_gpt.py --num-layers 64 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 --micro-batch-size 1 "
      "--global-batch-size 64 --vocab-size 32000 --pipeline-model-parallel-size 8 --schedules-method dualpipev --noop-layers 61,62,63\n";
  const config::Loaded l = config::read_text(script, "run.sh", config::Format::Megatron);
  plan::Layout layout;
  layout.pp = 8;
  layout.vpp = 2;
  layout.micro_batches = 64;
  config::Plan p = plan_of(layout, 8, 64, 2048, 61);
  p.dualpipe_v = true;
  p.split = *l.split;
  p.split->layers[0][3] = 3;  // one layer moved from rank 3's first chunk to rank 0's last
  p.split->layers[1][0] = 2;
  const std::string written = config::emit(config::EmitFormat::Megatron, p, &l, "run");
  const config::Loaded back = config::read_text(written, "back.sh", config::Format::Megatron);
  EXPECT_EQ(back.values.at("dualpipe_v"), true) << written;
  ASSERT_TRUE(back.split) << written;
  EXPECT_EQ(back.split->layers, p.split->layers) << written;
  p.dualpipe_v = false;  // an interleaved plan drops the schedule
  p.split.reset();
  p.num_layers = 64;
  EXPECT_EQ(config::emit(config::EmitFormat::Megatron, p, &l, "run").find("dualpipev"), std::string::npos);
}

// MindSpeed counts --first-k-dense-replace and --moe-layer-freq over --num-layers' positions, --noop-layers among them.
// Read: placeholders inside the dense prefix make fewer dense layers. Written: a DualPipe-V plan whose placeholders
// fall before the last dense layer moves the boundary (or restates the pattern over the positions), so the model read
// back has the same dense layers and the same split.
TEST(Megatron, PlaceholderLayersKeepTheDenseFirstLayers) {
  const std::string moe =
      "torchrun pretrain_gpt.py --num-layers 64 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 --micro-batch-size 1 "
      "--global-batch-size 64 --vocab-size 32000 --num-experts 8 --moe-ffn-hidden-size 256 --moe-router-topk 2 --pipeline-model-parallel-size 8 "
      "--schedules-method dualpipev --noop-layers 61,62,63 ";
  const config::Loaded dense3 = config::read_text(moe + "--first-k-dense-replace 3\n", "run.sh", config::Format::Megatron);
  EXPECT_EQ(dense3.model_config.at("first_k_dense_replace"), 3);
  const config::Loaded hole =
      config::read_text(moe.substr(0, moe.find("--noop-layers")) + "--noop-layers 1,62,63 --first-k-dense-replace 3\n", "run.sh", config::Format::Megatron);
  EXPECT_EQ(hole.model_config.at("first_k_dense_replace"), 2);  // position 1 is a placeholder
  const config::Loaded freq = config::read_text(moe.substr(0, moe.find("--noop-layers")) + "--noop-layers 1,62,63 --moe-layer-freq \"([0]*3+[1]*61)\"\n",
                                                "run.sh", config::Format::Megatron);
  EXPECT_EQ(freq.model_config.at("first_k_dense_replace"), 2);

  for (const std::string& flag : {std::string("--first-k-dense-replace 3"), std::string("--moe-layer-freq \"([0]*3+[1]*61)\"")}) {
    SCOPED_TRACE(flag);
    const config::Loaded l = config::read_text(moe + flag + "\n", "run.sh", config::Format::Megatron);
    plan::Layout layout;
    layout.pp = 8;
    layout.vpp = 2;
    layout.micro_batches = 64;
    config::Plan p = plan_of(layout, 8, 64, 2048, 61);
    p.model = inline_model(l.model_config, "run.sh").spec;
    p.dualpipe_v = true;
    p.split = *l.split;
    p.split->layers[0][0] = 2;  // rank 0's first chunk holds two of the three dense layers, four positions wide
    p.split->layers[1][0] = 3;
    const std::string written = config::emit(config::EmitFormat::Megatron, p, &l, "run");
    const config::Loaded back = config::read_text(written, "back.sh", config::Format::Megatron);
    ASSERT_TRUE(back.split) << written;
    EXPECT_EQ(back.split->layers, p.split->layers) << written;
    EXPECT_EQ(back.model_config.at("num_hidden_layers"), 61) << written;
    EXPECT_EQ(back.model_config.at("first_k_dense_replace"), 3) << written;
  }
}

// A flag written after a fallback anchor (the script states no --micro-batch-size): it goes after that flag and its
// value, measured by that flag's own name. A one-line script ending in --num-layers crashed the writer
// (std::out_of_range from the position of the missing anchor's length).
TEST(Megatron, FlagsWithoutTheirAnchorGoAfterTheFallbackFlagsValue) {
  const std::string script =
      "torchrun pretrain_gpt.py --bf16 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 --vocab-size 32000 "
      "--num-layers 16\n";
  const config::Loaded l = config::read_text(script, "run.sh", config::Format::Megatron);
  plan::Layout layout;
  layout.tp = 2;
  layout.sp = true;
  layout.dp = 4;
  layout.mbs = 2;
  layout.micro_batches = 8;
  const std::string written = config::emit(config::EmitFormat::Megatron, plan_of(layout, 8, 64, 2048, 16), &l, "run");
  EXPECT_EQ(std::count(written.begin(), written.end(), '\n'), 1) << written;  // still one command
  const config::Loaded back = config::read_text(written, "back.sh", config::Format::Megatron);
  EXPECT_EQ(back.values.at("tp"), 2) << written;
  EXPECT_EQ(back.values.at("mbs"), 2) << written;
  EXPECT_EQ(back.values.at("sp"), true) << written;
  EXPECT_EQ(back.model_config.at("num_hidden_layers"), 16) << written;
}

// A MoE plan runs what sapp priced: Megatron-Core's grouped GEMM over the local experts (SequentialMLP without
// --moe-grouped-gemm) and the dispatcher of the estimate (alltoall; DeepEP as core_v0.14.0 states it), not the
// allgather dispatcher Megatron defaults to. A script that states neither is read with a warning for each.
TEST(Megatron, MoePlansStateTheGroupedGemmAndTheDispatcherPriced) {
  config::Plan p = bundled_plan("qwen3-30b-a3b", 64, 512, 4096, 1, 8);
  std::string written = config::emit(config::EmitFormat::Megatron, p, nullptr, "qwen3-30b-a3b");
  EXPECT_NE(written.find("--moe-grouped-gemm"), std::string::npos) << written;
  EXPECT_NE(written.find("--moe-token-dispatcher-type alltoall"), std::string::npos) << written;
  config::Loaded back = config::read_text(written, "back.sh", config::Format::Megatron);
  EXPECT_FALSE(back.values.contains("moe_dispatcher")) << written;
  EXPECT_TRUE(back.warnings.empty()) << back.warnings.front();
  p.moe_deepep = true;
  written = config::emit(config::EmitFormat::Megatron, p, nullptr, "qwen3-30b-a3b");
  EXPECT_NE(written.find("--moe-token-dispatcher-type flex"), std::string::npos) << written;
  EXPECT_NE(written.find("--moe-enable-deepep"), std::string::npos) << written;
  back = config::read_text(written, "back.sh", config::Format::Megatron);
  EXPECT_EQ(back.values.at("moe_dispatcher"), "deepep") << written;
  // A dense model states neither.
  written = config::emit(config::EmitFormat::Megatron, bundled_plan("llama3-8b", 8, 64, 4096), nullptr, "llama3-8b");
  EXPECT_EQ(written.find("--moe-"), std::string::npos) << written;

  const std::string bare =
      "torchrun pretrain_gpt.py --bf16 --hidden-size 2048 --num-attention-heads 32 --seq-length 4096 --vocab-size 151936 --num-layers 48 "
      "--swiglu --disable-bias-linear --num-experts 128 --moe-router-topk 8 --moe-ffn-hidden-size 768 --expert-model-parallel-size 8\n";
  const config::Loaded l = config::read_text(bare, "bare.sh", config::Format::Megatron);
  auto warned = [&](const std::string& what) {
    return std::any_of(l.warnings.begin(), l.warnings.end(), [&](const std::string& w) { return w.find(what) != std::string::npos; });
  };
  EXPECT_TRUE(warned("without --moe-grouped-gemm"));
  EXPECT_TRUE(warned("allgather (Megatron's default)"));
}

// --stage-layers and --stage-recompute on the command line price the split; the even split is the default.
TEST(StageSplit, CommandLineSplitChangesThePeakStage) {
  app::EstimateRequest even;
  app::apply(even, nlohmann::json{{"model", "llama3-8b"}, {"devices", 8}, {"global_batch", 64}, {"pp", 4}}, app::Source::CommandLine);
  app::EstimateRequest uneven = even;
  app::apply(uneven, nlohmann::json{{"stage_layers", "5,9,9,9"}, {"stage_recompute", "full=0,0,0,9"}}, app::Source::CommandLine);
  auto a = app::run_estimate(even);
  auto b = app::run_estimate(uneven);
  EXPECT_EQ(a.memory.stages[0].layers, 8);
  EXPECT_EQ(b.memory.stages[0].layers, 5);
  EXPECT_EQ(b.memory.stages[3].layers, 9);
  EXPECT_LT(b.memory.stages[0].activations, a.memory.stages[0].activations);
  EXPECT_GT(b.time.breakdown.recompute_s + b.time.step_s, 0);
  app::EstimateRequest bad = even;
  app::apply(bad, nlohmann::json{{"stage_layers", "5,9,9,8"}}, app::Source::CommandLine);
  EXPECT_THROW(app::run_estimate(bad), Error);
}

struct Bad {
  std::string name;
  std::string text;
  std::string expected;  // a substring of the one error
};
class BadInput : public ::testing::TestWithParam<Bad> {};

TEST_P(BadInput, OneClearError) {
  const Bad& b = GetParam();
  try {
    config::Loaded l = config::read_text(b.text, "bad.cfg");
    app::EstimateRequest r;
    config::fill(r, l, nlohmann::json{{"devices", 64}, {"global_batch", 64}});
    (void)app::run_estimate(r);
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(b.expected), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("bad.cfg"), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Readers, BadInput,
    ::testing::Values(
        Bad{"unknown_format", "foo: 1\nbar: 2\n", "is none of the config formats"}, Bad{"not_a_mapping", "- 1\n- 2\n", "a mapping was expected"},
        Bad{"megatron_bad_degree", "--num-layers 4 --hidden-size 64 --num-attention-heads 4 --vocab-size 100 --tensor-model-parallel-size x\n",
            "--tensor-model-parallel-size: 'x' is not a whole number"},
        Bad{"megatron_no_vocab", "--num-layers 4 --hidden-size 64 --num-attention-heads 4 --tokenizer-type HuggingFaceTokenizer\n", "--vocab-size"},
        Bad{"megatron_layout_count",
            "--num-layers 4 --hidden-size 64 --num-attention-heads 4 --vocab-size 100 --pipeline-model-parallel-size 2 --pipeline-model-parallel-layout "
            "Et|tL\n",
            "places 2 transformer layers, but --num-layers is 4"},
        Bad{"megatron_unset_variable", "--num-layers 4 --hidden-size $H --num-attention-heads 4 --vocab-size 100\n", "--hidden-size"},
        Bad{"megatron_checkpoint_conversion",
            "python examples/mcore/deepseek3/convert_ckpt_deepseek3.py --target-tensor-parallel-size 2 --num-layers 64 --load-dir a --save-dir b\n",
            "launches examples/mcore/deepseek3/convert_ckpt_deepseek3.py, a checkpoint conversion, not training"},
        Bad{"megatron_data_preprocessing",
            "python ./preprocess_data.py --input a.parquet --tokenizer-type PretrainedFromHF --seq-length 32768 --output-prefix b --workers 4\n",
            "launches ./preprocess_data.py, a data preprocessing step, not training"},
        Bad{"mindformers_offset_sum",
            "parallel_config:\n  pipeline_stage: 2\nmodel:\n  model_config:\n    hidden_size: 64\n    num_layers: 5\n    num_heads: 4\n    "
            "intermediate_size: 128\n    offset: [1, 1]\n",
            "model.model_config.offset: [1,1] sums to 2, but MindFormers needs the offsets to sum to num_layers % (pipeline_stage x pp_interleave_num) = 5 % "
            "(2 "
            "x 1) = 1"},
        Bad{"mindformers_recompute_shape",
            "parallel_config:\n  pipeline_stage: 2\nrecompute_config:\n  recompute: [1, 1, 1]\nmodel:\n  model_config:\n    hidden_size: 64\n    num_layers: "
            "4\n    num_heads: 4\n    intermediate_size: 128\n",
            "recompute_config.recompute: [1,1,1] has 3 entries, but pipeline_stage is 2"},
        Bad{"mindformers_no_hidden", "parallel_config:\n  pipeline_stage: 2\nmodel:\n  model_config:\n    num_layers: 4\n", "model.model_config.hidden_size"},
        Bad{"hyperparallel_batch",
            "accelerator:\n  tp_size: 2\nfsdp_config:\n  dp_shard_size: 4\ntraining:\n  global_batch_size: 64\n  micro_batch_size: 1\n  micro_batch_num: "
            "4\nmodel:\n  pretrained_model_name_or_path: llama3-8b\n",
            "training.global_batch_size = 64 but training.micro_batch_num x training.micro_batch_size x DP = 4 x 1 x 4 = 16"},
        Bad{"torchtitan_unknown_key", "[model]\nname = \"llama3\"\nflavor = \"8B\"\n[parallelism]\ntensor_parallel_degre = 2\n",
            "parallelism.tensor_parallel_degre: is not a key torchtitan (v0.2) defines"},
        Bad{"torchtitan_bad_flavour", "[model]\nname = \"llama3\"\nflavor = \"9B\"\n", "'9B' is not a bundled llama3 flavour"},
        Bad{"torchtitan_syntax", "[model]\nname = \n", "is not valid TOML"},
        Bad{"search_partition",
            "model:\n  hidden_size: 64\n  num_hidden_layers: 4\n  num_attention_heads: 4\n  intermediate_size: 128\n  vocab_size: 100\npp_config:\n  "
            "pp_degree: 2\n  stage_partition_mode: manual\n  stage_partition: [[0, 1], [3]]\n",
            "pp_config.stage_partition: stage 1 lists 3"}),
    [](const auto& p) { return p.param.name; });

// A HuggingFace config's misspelt key is a warning naming it, never silence.
TEST(HuggingFace, MisspeltKeyIsNamed) {
  config::Loaded l = config::read_text(
      R"({"model_type": "llama", "hidden_size": 64, "hidden_sise": 128, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100})",
      "cfg.json");
  EXPECT_EQ(l.format, config::Format::HuggingFace);
  ASSERT_EQ(l.warnings.size(), 1u);
  EXPECT_NE(l.warnings[0].find("hidden_sise"), std::string::npos);
}

// The reference planner's search YAML: int, list or auto per dimension, constraint, recompute, cluster.
TEST(ReferenceSearch, DimensionsAndConstraint) {
  config::Loaded l = config::read_file(source("tests/configs/reference-search.yaml"));
  EXPECT_EQ(l.format, config::Format::ReferenceSearch);
  app::SearchRequest r;
  config::fill(r, l, nlohmann::json{{"threads", 1}});
  EXPECT_EQ(r.job.devices, 32);  // 4 nodes x 8 cards
  EXPECT_EQ(r.job.training.global_batch, 128);
  EXPECT_DOUBLE_EQ(r.job.memory_limit_gib, 60);
  EXPECT_EQ(r.space.tp, (std::vector<int>{1, 2, 4, 8}));
  EXPECT_EQ(r.space.ep, (std::vector<int>{1}));
  EXPECT_FALSE(r.space.cp.has_value() && r.space.cp->size() > 2);
  EXPECT_EQ(r.space.recompute, std::vector<plan::Recompute>{plan::Recompute::Selective});
  report::SearchReport rep = app::run_search(r);
  EXPECT_GT(rep.evaluated, 0);
}

// The reference planner's own search examples (mindspore-ai/hyper-parallel auto_parallel/examples at 4bc5f7a and
// 3ae53bc) read and search: device type A2, expert TP 0 (the reference's unset), an MLA model without
// qk_nope_head_dim (taken as v_head_dim, as its parser takes it), fp32 parameters (param_init_type), capacity factor
// 1.5, the older names seq_len and moe_inter_dim, and pipeline_schedule 1F1B (no interleaving searched). They are
// priced in HyperParallel's runtime profile, as the reference prices them.
TEST(ReferenceSearch, TheReferencesOwnExamplesRead) {
  const std::string deepseek =
      "model: {name: deepseek, num_hidden_layers: 61, hidden_size: 7168, intermediate_size: 18432, num_attention_heads: 128,\n"
      "  num_key_value_heads: 128, vocab_size: 159744, max_position_embeddings: 4096, local_batch_size: 1, kv_lora_rank: 512,\n"
      "  q_lora_rank: 1536, qk_rope_head_dim: 64, v_head_dim: 128, num_experts: 256, num_experts_per_tok: 8, num_shared_experts: 1,\n"
      "  moe_intermediate_size: 2048, first_k_dense_replace: 3, mtp_depth: 1, capacity_factor: 1.5, param_init_type: float32,\n"
      "  compute_dtype: bfloat16, softmax_compute_type: float32, use_flash_attention: true, moe_enabled: true}\n"
      "cluster: {num_nodes: 64, cards_per_node: 8, device_type: A2, device_memory_gb: 58.0}\n"
      "parallelism: {dp: [8, 16, 32], tp: [2, 4, 8], pp: [4, 8, 16], cp: 1, ep: [4, 8, 16], etp: 0, micro_batch_num: [8, 16]}\n"
      "constraint: {global_batch_size: 1024, memory_limit_gb: 58.0}\nrecompute: full\n"
      "pp_config: {stage_partition_mode: uniform, pipeline_schedule: 1F1B}\n";
  config::Loaded l = config::read_text(deepseek, "search.yaml", config::Format::ReferenceSearch);
  app::SearchRequest r;
  config::fill(r, l, nlohmann::json{{"threads", 1}});
  EXPECT_EQ(r.job.devices, 512);
  EXPECT_EQ(r.job.hardware, "ascend-910b");
  EXPECT_EQ(r.job.training.param_bytes, 4);
  EXPECT_EQ(r.job.training.optimizer_bytes, 8);
  EXPECT_DOUBLE_EQ(r.job.training.capacity_factor, 1.5);
  EXPECT_FALSE(r.job.training.loss_fused);  // the hyperparallel profile
  EXPECT_EQ(r.space.vpp, (std::vector<int>{1}));
  EXPECT_EQ(r.space.dp, (std::vector<int>{8, 16, 32}));  // a filter, as the reference post-filters its results
  EXPECT_FALSE(r.space.micro_batches.has_value());       // its micro_batch_num leaves accumulation over: not sapp's count
  EXPECT_TRUE(std::any_of(l.warnings.begin(), l.warnings.end(), [](const std::string& w) { return w.find("qk_nope_head_dim") != std::string::npos; }));
  report::SearchReport rep = app::run_search(r);
  ASSERT_FALSE(rep.rows.empty());
  EXPECT_EQ(rep.rows[0].candidate.layout.vpp, 1);
  for (const auto& row : rep.rows) EXPECT_TRUE(row.candidate.layout.dp == 8 || row.candidate.layout.dp == 16 || row.candidate.layout.dp == 32);

  const std::string mixtral =
      "model: {name: mixtral-8x7b-moe, n_layers: 32, dim: 4096, inter_dim: 14336, n_heads: 32, n_kv_heads: 8, vocab_size: 32000,\n"
      "  seq_len: 32768, local_batch_size: 1, num_experts: 8, num_experts_per_tok: 2, moe_inter_dim: 14336}\n"
      "cluster: {num_nodes: 8, cards_per_node: 8, device_memory_gb: 64.0, device_type: ascend}\n"
      "parallelism: {tp: [1, 2, 4, 8], pp: [1, 2, 4], cp: 1, ep: [1, 2, 4, 8], etp: 1}\n"
      "constraint: {global_batch_size: 256, memory_limit_gb: 60.0}\nrecompute: full\n";
  config::Loaded m = config::read_text(mixtral, "search.yaml", config::Format::ReferenceSearch);
  EXPECT_TRUE(m.unused.empty()) << m.unused.front();
  app::SearchRequest rm;
  config::fill(rm, m, nlohmann::json{{"threads", 1}});
  EXPECT_EQ(rm.job.training.seq, 32768);
  EXPECT_TRUE(rm.job.training.flash_attention);
  std::string eager = mixtral;
  eager.replace(eager.find("seq_len: 32768"), 14, "seq_len: 4096, use_flash_attention: false");
  app::SearchRequest re;
  config::fill(re, config::read_text(eager, "search.yaml", config::Format::ReferenceSearch), nlohmann::json{{"threads", 1}});
  EXPECT_FALSE(re.job.training.flash_attention);
  EXPECT_EQ(m.model_config.at("moe_intermediate_size"), 14336);

  // A search that inherits a train YAML keeps that file's framework and training-state dtypes.
  const std::string dir = test::temp_dir();
  test::write_file(dir + "/train.yaml",
                   "model:\n  pretrained_model_name_or_path: llama3-8b\n  torch_dtype: bfloat16\naccelerator: {tp_size: 1, pp_size: 1}\n"
                   "fsdp_config: {dp_shard_size: 8}\ntraining: {global_batch_size: 8, micro_batch_size: 1}\n");
  test::write_file(dir + "/search.yaml", "train_yaml: train.yaml\nparallelism: {tp: [1, 2]}\n");
  app::SearchRequest inherited;
  config::fill(inherited, config::read_file(dir + "/search.yaml"), nlohmann::json{{"threads", 1}});
  EXPECT_EQ(inherited.job.training.param_bytes, 2);
  EXPECT_EQ(inherited.job.training.optimizer_bytes, 4);
}

}  // namespace
}  // namespace sapp

namespace sapp {
namespace {

double total_params(const std::string& args) {
  auto r = test::run_sapp("estimate " + args + " -f json");
  EXPECT_TRUE(r.status == 0 || r.status == 3) << args << "\n" << r.err;  // 3: does not fit (the counts still print)
  if (r.status != 0 && r.status != 3) return -1;
  return nlohmann::json::parse(r.out)["params"]["total"].get<double>();
}

}  // namespace

// torchtitan's Llama 4 and gpt-oss flavours (torchtitan v0.2.2 models/llama4, models/gpt_oss) price as the
// HuggingFace configs of the same models: 17bx128e is Llama 4 Maverick (its HF config's 400.7 B) and 120b is
// gpt-oss-120b (116.83 B, the model card's table 1).
TEST(TorchtitanFlavours, Llama4AndGptOssMatchTheirHuggingFaceConfigs) {
  std::string dir = test::temp_dir();
  test::write_file(dir + "/l4.toml",
                   "[model]\nname = \"llama4\"\nflavor = \"17bx128e\"\n[training]\nlocal_batch_size = 1\n[parallelism]\ndata_parallel_shard_degree = 8\n");
  test::write_file(dir + "/oss.toml",
                   "[model]\nname = \"gpt_oss\"\nflavor = \"120b\"\n[training]\nlocal_batch_size = 1\n[parallelism]\ndata_parallel_shard_degree = 8\n");
  EXPECT_NEAR(total_params("--from " + dir + "/l4.toml"), total_params("-m llama4-maverick -d 8 -b 8"), 1e6);
  EXPECT_NEAR(total_params("--from " + dir + "/oss.toml"), total_params("-m gpt-oss-120b -d 8 -b 8"), 1e6);
}

// The file's stage split has its PP x VPP shape: a --pp (or --vpp) on the command line replaces it with the even split
// of the new degrees, with a note, instead of failing on the shape.
TEST(ConfigOverrides, NewPipelineDegreesReplaceTheFilesSplit) {
  config::Loaded l = config::read_file(source("tests/configs/torchtitan-pp.toml"));
  ASSERT_TRUE(l.split.has_value());
  app::EstimateRequest r;
  auto notes = config::fill(r, l, nlohmann::json{{"pp", 4}, {"devices", 16}});
  EXPECT_FALSE(r.split.has_value());
  EXPECT_EQ(r.layout.pp, 4);
  bool said = false;
  for (const auto& n : notes) said = said || n.find("overrides the stage split") != std::string::npos;
  EXPECT_TRUE(said);
  EXPECT_GT(app::run_estimate(r).time.step_s, 0);
}

// Without EP torchtitan shards the experts over the TP mesh (apply_moe_ep_tp: experts_mesh = tp_mesh, TensorParallel,
// when ep_mesh is None): expert TP = TP. With EP the file's expert_tensor_parallel_degree holds.
TEST(TorchtitanFlavours, ExpertsAreTensorParallelWithoutEp) {
  std::string dir = test::temp_dir();
  test::write_file(dir + "/tp.toml",
                   "[model]\nname = \"llama4\"\nflavor = \"17bx16e\"\n[training]\nlocal_batch_size = 1\n[parallelism]\n"
                   "data_parallel_shard_degree = 2\ntensor_parallel_degree = 4\n");
  test::write_file(dir + "/ep.toml",
                   "[model]\nname = \"llama4\"\nflavor = \"17bx16e\"\n[training]\nlocal_batch_size = 1\n[parallelism]\n"
                   "data_parallel_shard_degree = 2\ntensor_parallel_degree = 4\nexpert_parallel_degree = 2\n"
                   "expert_tensor_parallel_degree = 1\n");
  auto etp = [&](const std::string& file) {
    app::EstimateRequest r;
    config::fill(r, config::read_file(dir + "/" + file), nlohmann::json::object());
    return r.layout.etp;
  };
  EXPECT_EQ(etp("tp.toml"), 4);
  EXPECT_EQ(etp("ep.toml"), 1);
}

// data_parallel_shard_degree = -1 (torchtitan's default: the devices the other degrees leave) takes its degree
// from --devices: the global batch is local_batch_size x devices / (TP x PP x CP); devices that are not a whole
// number of such ranks are refused, naming the keys. Sections a newer torchtitan or an experiment adds, outside
// what changes the estimate, are listed in a warning and not read; a misspelt key where it would change the
// estimate is still refused (BadInputCorpus torchtitan_unknown_key).
// torchtitan's flex / varlen flavours are their base flavours with another attention kernel and block-causal masks
// (models/llama3/__init__.py at v0.2.2: 8B_flex is 8B with attn_type flex): the same model, warned; the iRoPE ones
// (llama4 17bx16e_irope) add chunked attention on three layers of four (every_n_layers_nope 4,
// fixed_attn_block_size 8192), so at a sequence of 32768 their attention costs less than the base flavour's.
TEST(TorchtitanFlavours, AttentionVariantsAreTheirBaseFlavours) {
  auto read = [](const std::string& name, const std::string& flavour) {
    return config::read_text("[model]\nname = \"" + name + "\"\nflavor = \"" + flavour + "\"\n[training]\nseq_len = 32768\n", "t.toml",
                             config::Format::Torchtitan);
  };
  config::Loaded flex = read("llama3", "8B_flex");
  config::Loaded base = read("llama3", "8B");
  nlohmann::json flex_model = flex.model_config, base_model = base.model_config;
  flex_model.erase("_source");
  flex_model.erase("name");
  base_model.erase("_source");
  base_model.erase("name");
  EXPECT_EQ(flex_model, base_model);
  ASSERT_FALSE(flex.warnings.empty());
  EXPECT_NE(flex.warnings.front().find("block-causal"), std::string::npos) << flex.warnings.front();
  auto step = [](const config::Loaded& l) {
    app::EstimateRequest r;
    config::fill(r, l, nlohmann::json{{"devices", 64}, {"hardware", "h100-sxm"}, {"tp", 8}});
    return app::run_estimate(r).time.breakdown.compute_s;
  };
  EXPECT_LT(step(read("llama4", "17bx16e_irope")), step(read("llama4", "17bx16e")));
}

// The transformers_modeling_backend experiment trains the HuggingFace model its [hf_transformers] section names
// (experiments/transformers_modeling_backend/configs/full.toml at v0.2.2): a bundled model by its id; an id sapp
// does not bundle is refused naming that key (its layer count shapes the split, so --model cannot stand in).
TEST(TorchtitanFlavours, TheTransformersBackendNamesAHuggingFaceModel) {
  const std::string text =
      "[model]\nname = \"transformers_modeling_backend\"\nflavor = \"full\"\n[hf_transformers]\nmodel = \"ID\"\n"
      "[training]\nseq_len = 4096\n[parallelism]\ndata_parallel_shard_degree = 8\n";
  auto with_id = [&](const std::string& id) {
    std::string t = text;
    t.replace(t.find("ID"), 2, id);
    return config::read_text(t, "full.toml", config::Format::Torchtitan);
  };
  const config::Loaded qwen = with_id("Qwen/Qwen3-8B");
  EXPECT_EQ(qwen.values.at("model"), "qwen3-8b");
  EXPECT_TRUE(qwen.warnings.empty()) << qwen.warnings.front();  // [hf_transformers] is read, not "not defined"
  try {
    (void)with_id("Qwen/Qwen3-4B-Instruct-2507");
    ADD_FAILURE() << "an unbundled id was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("full.toml: hf_transformers.model"), std::string::npos) << e.what();
  }
}

TEST(TorchtitanFlavours, ShardDegreeFromTheDevicesAndUnknownSectionsWarn) {
  std::string dir = test::temp_dir();
  test::write_file(dir + "/t.toml",
                   "[model]\nname = \"llama3\"\nflavor = \"8B\"\n[training]\nlocal_batch_size = 2\nseq_len = 4096\n[parallelism]\n"
                   "data_parallel_shard_degree = -1\ntensor_parallel_degree = 2\n[fault_tolerance]\nnum_fragments = 2\n[hf_transformers]\nmodel = \"x\"\n");
  auto r = test::run_sapp("estimate --from " + dir + "/t.toml -d 64 -f json");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["layout"]["dp"].get<int>(), 32);
  EXPECT_EQ(j["layout"]["micro_batches"].get<int>() * j["layout"]["micro_batch_size"].get<int>() * 32, 64);  // 2 per rank x 32 ranks
  EXPECT_NE(r.err.find("fault_tolerance.num_fragments"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("[hf_transformers]"), std::string::npos) << r.err;
  // Each named once: in the warning about keys torchtitan v0.2.2 does not define, not again among the unused keys.
  EXPECT_EQ(r.err.find("fault_tolerance.num_fragments"), r.err.rfind("fault_tolerance.num_fragments")) << r.err;
  EXPECT_EQ(r.err.find("hf_transformers.model"), std::string::npos) << r.err;
  auto odd = test::run_sapp("estimate --from " + dir + "/t.toml -d 63");
  EXPECT_NE(odd.status, 0);
  EXPECT_NE(odd.err.find("data_parallel_shard_degree -1"), std::string::npos) << odd.err;
}

}  // namespace sapp

namespace sapp {

// A Megatron script that leaves the vocabulary to its tokenizer: GPT-2's BPE files give 50,257 tokens (Radford et
// al. 2019 §2.2), a HuggingFace tokenizer named by a bundled model's id gives that model's embedding rows; either
// padded as Megatron pads (a multiple of --make-vocab-size-divisible-by x TP), with a warning saying so. A
// tokenizer sapp cannot size is refused, naming --vocab-size, unless --model names the model.
// A script that converts a checkpoint and then trains (a program named for training after the conversion) is read
// as the training it launches; one that only converts is refused (the BadInput case megatron_checkpoint_conversion).
TEST(MegatronScript, AConversionBeforeTrainingIsReadAsTheTraining) {
  config::Loaded both = config::read_text(
      "python tools/checkpoint/convert.py --load-dir a --save-dir b --target-tensor-parallel-size 2\n"
      "torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 4 --hidden-size 1024 --num-attention-heads 16 --vocab-size 32000 --seq-length 2048 "
      "--micro-batch-size 1 --global-batch-size 8 --tensor-model-parallel-size 2\n",
      "both.sh", config::Format::Megatron);
  EXPECT_EQ(both.values.at("tp").get<int>(), 2);
  EXPECT_EQ(both.values.at("devices").get<long long>(), 8);
}

// Megatron-Core's hybrid stacks (Nemotron-H: Mamba 'M', attention '*', MLP '-', MoE 'E', each a layer of its own) are
// read as the nemotron_h family (they were refused before it came); a pattern with symbols sapp does not read is
// refused, naming the flag and the pattern, and a --model on the command line still prices the file's layout.
TEST(MegatronScript, HybridLayerStacksAreReadAsNemotronH) {
  const std::string flags =
      " --hidden-size 1024 --num-attention-heads 16 --vocab-size 32000 --seq-length 2048 --micro-batch-size 1 --global-batch-size 8 "
      "--num-experts 8 --moe-ffn-hidden-size 512 --moe-router-topk 2\n";
  config::Loaded hybrid = config::read_text("torchrun --nproc_per_node 8 pretrain_mamba.py --num-layers 4 --hybrid-override-pattern M*ME" + flags, "hybrid.sh",
                                            config::Format::Megatron);
  EXPECT_TRUE(hybrid.model_error.empty()) << hybrid.model_error;
  app::EstimateRequest r;
  config::fill(r, hybrid, nlohmann::json::object());
  EXPECT_EQ(app::load(r.job).model.spec.model_type, "nemotron_h");
  config::Loaded marked = config::read_text("torchrun --nproc_per_node 8 pretrain_mamba.py --num-layers 4 --hybrid-override-pattern M*GE" + flags, "hybrid.sh",
                                            config::Format::Megatron);
  EXPECT_NE(marked.model_error.find("--hybrid-override-pattern: 'M*GE' states symbols"), std::string::npos) << marked.model_error;
  app::EstimateRequest refused;
  EXPECT_THROW(config::fill(refused, marked, nlohmann::json::object()), Error);
  app::EstimateRequest named;
  config::fill(named, marked, nlohmann::json{{"model", "llama3-8b"}});
  EXPECT_EQ(named.job.model, "llama3-8b");
}

TEST(MegatronTokenizer, VocabularyFromKnownTokenizers) {
  const std::string model =
      "--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 --micro-batch-size 1 --global-batch-size 8 --attention-dropout 0 "
      "--hidden-dropout 0 ";
  config::Loaded gpt2 = config::read_text("torchrun pretrain_gpt.py " + model + "--tensor-model-parallel-size 8 --vocab-file v.json --merge-file m.txt\n",
                                          "gpt2.sh", config::Format::Megatron);
  EXPECT_EQ(gpt2.model_config.at("vocab_size").get<long long>(), 51200);  // 50257 -> a multiple of 128 x 8
  ASSERT_FALSE(gpt2.warnings.empty());
  EXPECT_NE(gpt2.warnings.back().find("GPT-2's BPE"), std::string::npos) << gpt2.warnings.back();
  config::Loaded hf =
      config::read_text("torchrun pretrain_gpt.py " + model +
                            "--tokenizer-type HuggingFaceTokenizer --tokenizer-model meta-llama/Meta-Llama-3-8B --tensor-model-parallel-size 2\n",
                        "hf.sh", config::Format::Megatron);
  EXPECT_EQ(hf.model_config.at("vocab_size").get<long long>(), 128256);  // llama3-8b.json: 128256 = 501 x 256
  // An id a bundled file lists among the ids of its architecture (kimi-k2.json's _hf_ids): Kimi K2's 163840 rows.
  config::Loaded kimi =
      config::read_text("torchrun pretrain_gpt.py " + model +
                            "--tokenizer-type HuggingFaceTokenizer --tokenizer-model moonshotai/Kimi-K2-Instruct-0905 --tensor-model-parallel-size 2\n",
                        "kimi.sh", config::Format::Megatron);
  EXPECT_EQ(kimi.model_config.at("vocab_size").get<long long>(), 163840);  // 163840 = 640 x 256
  // Llama2Tokenizer: a SentencePiece model taken as Llama 2's 32000 tokens (Megatron-LM's Mixtral example points it
  // at Mixtral's, also 32000), said in a warning.
  config::Loaded llama2 = config::read_text("torchrun pretrain_gpt.py " + model + "--tokenizer-type Llama2Tokenizer --tokenizer-model ${TOKENIZER}\n", "l2.sh",
                                            config::Format::Megatron);
  EXPECT_EQ(llama2.model_config.at("vocab_size").get<long long>(), 32000);
  // Unknown: refused when the file's model is priced, not when --model replaces it.
  config::Loaded sp = config::read_text("torchrun pretrain_gpt.py " + model + "--tokenizer-type SentencePieceTokenizer --tokenizer-model ${TOKENIZER}\n",
                                        "sp.sh", config::Format::Megatron);
  EXPECT_NE(sp.model_error.find("--vocab-size"), std::string::npos) << sp.model_error;
  app::EstimateRequest r;
  EXPECT_THROW(config::fill(r, sp, nlohmann::json{{"devices", 8}}), Error);
  app::EstimateRequest named;
  config::fill(named, sp, nlohmann::json{{"devices", 8}, {"model", "llama2-7b"}});
  EXPECT_EQ(named.job.model, "llama2-7b");
}

}  // namespace sapp

namespace sapp {

// Shell arithmetic as launch scripts write it: bare names inside $(( )), blanks inside it, and a value sapp
// cannot evaluate ($RANDOM, $?) in a variable no flag it reads needs (Megatron-LM's examples/mimo and
// detxoify_lm scripts).
// Shell forms real launch scripts use (a QA pass over Megatron-LM, MindSpeed-LLM and Megatron-MoE-ModelZoo scripts):
// a string of flags expanded unquoted splits into words (ARGS="--a 1 --b 2" ... ${ARGS}), a double-quoted string may
// span lines (VAR=" \ ... "), statements share a line after ';', and if / elif / else read the branch whose test holds
// (sc21's MODEL_SIZE cases; the Llama 3 8B example's DTYPE branch), an unevaluated test reading every branch, said.
TEST(MegatronShell, StringsStatementsAndBranches) {
  const std::string model =
      "--num-attention-heads 16 --vocab-size 32000 --seq-length 1024 --micro-batch-size 1 --global-batch-size 8 --attention-dropout 0.0 --hidden-dropout 0.0";
  auto read = [](const std::string& text) { return config::read_text(text, "run.sh", config::Format::Megatron); };
  const config::Loaded one_line =
      read("ARGS=\"--num-layers 4 --hidden-size 1024 --tensor-model-parallel-size 2\"\ntorchrun --nproc_per_node 8 pretrain_gpt.py ${ARGS} " + model + "\n");
  EXPECT_EQ(one_line.values.at("tp"), 2);
  EXPECT_EQ(one_line.values.at("devices"), 8);
  // A node count from a list of hosts (MindSpeed-LLM's MindSpore scripts: NNODES=${#IPs[@]}, then
  // WORLD_SIZE=$((NPUS_PER_NODE*$NNODES)) for msrun's --worker_num: refused as an unset variable before).
  const config::Loaded hosts = read(
      "IPs=('IP1' 'IP2')\nNPUS=8\nNNODES=${#IPs[@]}\nWORLD=$((NPUS*$NNODES))\nmsrun --worker_num $WORLD --local_worker_num $NPUS pretrain_gpt.py "
      "--num-layers 4 --hidden-size 1024 " +
      model + "\n");
  EXPECT_EQ(hosts.values.at("devices"), 16);
  const config::Loaded spanning =
      read("A=\" \\\n    --num-layers 4 \\\n    --hidden-size 1024\n\"\ntorchrun --nproc_per_node 8 pretrain_gpt.py $A " + model + "\n");
  EXPECT_TRUE(spanning.model_config.is_object()) << spanning.values.dump();
  EXPECT_EQ(spanning.model_config.value("num_hidden_layers", 0), 4) << spanning.model_config.dump();
  const config::Loaded semicolons = read(
      "TP=2; PP=2; L=4\ntorchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size $TP --pipeline-model-parallel-size $PP "
      "--num-layers $L --hidden-size 1024 " +
      model + "\n");
  EXPECT_EQ(semicolons.values.at("tp"), 2);
  EXPECT_EQ(semicolons.values.at("pp"), 2);
  auto branch = [&](const std::string& size) {
    return read("MODEL_SIZE=" + size +
                "\nif [ ${MODEL_SIZE} == \"small\" ]; then\n  TP=1\nelif [[ \"$MODEL_SIZE\" == \"large\" ]]; then\n  TP=4\nelse\n  TP=2\nfi\n"
                "torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size $TP --num-layers 4 --hidden-size 1024 " +
                model + "\n");
  };
  EXPECT_EQ(branch("small").values.at("tp"), 1);
  EXPECT_EQ(branch("large").values.at("tp"), 4);
  EXPECT_EQ(branch("medium").values.at("tp"), 2);
  EXPECT_TRUE(branch("small").warnings.empty()) << branch("small").warnings.front();
  // A test on something sapp cannot know (a file on the launch machine): both branches read, the last one winning.
  const config::Loaded unknown = read(
      "if [ -f /data/ok ]; then\n  TP=1\nelse\n  TP=2\nfi\n"
      "torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size $TP --num-layers 4 --hidden-size 1024 " +
      model + "\n");
  EXPECT_EQ(unknown.values.at("tp"), 2);
  ASSERT_FALSE(unknown.warnings.empty());
  EXPECT_NE(unknown.warnings.front().find("TP set in an if/elif branch"), std::string::npos) << unknown.warnings.front();
}

TEST(MegatronShell, ArithmeticWithBareNamesAndUnknownValues) {
  config::Loaded l = config::read_text(
      "MBS=2\nN=4\nGBS=$((MBS * N * 2))\nMASTER_PORT=$(($RANDOM + 1024))\nOK=$((1-$?))\n"
      "torchrun --master-port $MASTER_PORT pretrain_gpt.py --num-layers 4 --hidden-size 1024 --num-attention-heads 16 --vocab-size 32000 "
      "--seq-length 2048 --micro-batch-size $MBS --global-batch-size $GBS\n",
      "arith.sh", config::Format::Megatron);
  EXPECT_EQ(l.values.at("global_batch").get<long long>(), 16);
  EXPECT_EQ(l.values.at("mbs").get<long long>(), 2);
}

}  // namespace sapp

namespace sapp {

// MindSpeed-LLM launch scripts as its examples/mcore/*.sh write them (Ascend/MindSpeed-LLM, commit c77308a): the
// Ascend runtime variables they export choose the device (16 NPUs per node: A3), --moe-layer-freq -1 means every
// layer (Python's i % -1 == 0) and --first-k-dense-replace makes the first k dense, --num-layer-list is the uneven
// stage split.
// MindSpeed-LLM's Gemma 2 script (examples/mcore/gemma2/pretrain_gemma2_27b_ptd.sh shape): --gelu-tanh makes the MLP
// gated (mindspeed_llm/core/transformer/mlp.py sets gated_linear_unit), --interleave-sliding-window alternates windowed
// and full layers: Gemma 2's stack, four norms per layer, tied embeddings. Without the window, --geglu is Gemma's.
// The gated MLP was read as GPT's two matrices (Gemma-2-27B: 19.4 B instead of 27.2 B).
TEST(MindSpeedLlm, GatedGeluIsGemma) {
  const std::string launch =
      "torchrun pretrain_gpt.py --num-layers 2 --hidden-size 64 --num-attention-heads 4 --kv-channels 32 --group-query-attention "
      "--num-query-groups 2 --ffn-hidden-size 96 --vocab-size 1000 --disable-bias-linear --normalization RMSNorm ";
  auto params = [&](const std::string& extra) {
    config::Loaded l = config::read_text(launch + extra + "\n", "g.sh", config::Format::Megatron);
    auto m = inline_model(l.model_config, "g.sh");
    return std::pair{l.model_config.at("model_type").get<std::string>(), m.params().total};
  };
  double h = 64, a = 4, kv = 2, dh = 32, f = 96, v = 1000;
  double attention = h * a * dh + 2 * h * kv * dh + a * dh * h;
  auto [type2, p2] = params("--gelu-tanh --post-norm --interleave-sliding-window 16");
  EXPECT_EQ(type2, "gemma2");
  EXPECT_DOUBLE_EQ(p2, 2 * (attention + 3 * h * f + 4 * h) + v * h + h);
  auto [type1, p1] = params("--geglu");
  EXPECT_EQ(type1, "gemma");
  EXPECT_DOUBLE_EQ(p1, 2 * (attention + 3 * h * f + 2 * h) + v * h + h);
}

// MindSpeed-LLM's Qwen3-Next script (examples/mcore/qwen3_next/pretrain_qwen3_next_80b_16K_A3_ptd.sh, its model flags):
// the same model as the published config.json (data/models/qwen3-next-80b-a3b.json, whose count is tested against
// Qwen's 80 B / 3 B), 36 of its 48 layers gated DeltaNet. It was priced as 48 full-attention layers.
TEST(MindSpeedLlm, Qwen3NextIsTheHybridOfItsConfig) {
  const std::string script =
      "torchrun pretrain_gpt.py --num-experts 512 --moe-router-topk 10 --n-shared-experts 1 --shared-expert-gate --moe-ffn-hidden-size 512 "
      "--moe-layer-freq 1 --qk-layernorm --full-attention-interval 4 --mamba-d-conv 4 --mamba-expand 1 --kv-channels 256 --linear-key-head-dim 128 "
      "--linear-num-key-heads 16 --linear-num-value-heads 32 --linear-value-head-dim 128 --partial-rotary-factor 0.25 --num-layers 48 "
      "--hidden-size 2048 --ffn-hidden-size 5120 --num-attention-heads 16 --padded-vocab-size 151936 --untie-embeddings-and-output-weights "
      "--disable-bias-linear --swiglu --group-query-attention --num-query-groups 2\n";
  config::Loaded l = config::read_text(script, "next.sh", config::Format::Megatron);
  EXPECT_EQ(l.model_config.at("model_type"), "qwen3_next");
  auto from_script = inline_model(l.model_config, "next.sh");
  auto published = test::bundled("qwen3-next-80b-a3b");
  EXPECT_DOUBLE_EQ(from_script.params().total, published.params().total);
  EXPECT_DOUBLE_EQ(from_script.params().active, published.params().active);
  try {
    (void)config::read_text("torchrun pretrain_gpt.py --num-layers 4 --hidden-size 64 --num-attention-heads 4 --vocab-size 100 --full-attention-interval 4\n",
                            "half.sh", config::Format::Megatron);
    ADD_FAILURE() << "a hybrid without its linear attention's dimensions was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("half.sh: --full-attention-interval"), std::string::npos) << e.what();
  }
}

// Megatron-Core's own gated DeltaNet flags (core_v0.17.0: --experimental-attention-variant gated_delta_net,
// --linear-attention-freq N, the --linear-* dimensions at the dataclass's defaults where unstated): Qwen3-Next's
// dimensions read as the same model as its config.json; a list pattern and a missing interval are refused by flag.
TEST(Megatron, GatedDeltaNetVariantIsQwen3Next) {
  const std::string model =
      "torchrun pretrain_gpt.py --num-experts 512 --moe-router-topk 10 --n-shared-experts 1 --moe-ffn-hidden-size 512 --qk-layernorm --kv-channels 256 "
      "--num-layers 48 --hidden-size 2048 --ffn-hidden-size 5120 --num-attention-heads 16 --padded-vocab-size 151936 "
      "--untie-embeddings-and-output-weights --disable-bias-linear --swiglu --group-query-attention --num-query-groups 2 "
      "--experimental-attention-variant gated_delta_net ";
  const config::Loaded l = config::read_text(model + "--linear-attention-freq 4 --linear-num-value-heads 32\n", "next.sh", config::Format::Megatron);
  ASSERT_EQ(l.model_config.at("model_type"), "qwen3_next");
  EXPECT_EQ(l.model_config.at("full_attention_interval"), 4);
  EXPECT_EQ(l.model_config.at("linear_conv_kernel_dim"), 4);  // the dataclass's default
  EXPECT_DOUBLE_EQ(inline_model(l.model_config, "next.sh").params().total, test::bundled("qwen3-next-80b-a3b").params().total);
  test::expect_error([&] { (void)config::read_text(model + "--linear-attention-freq \"([1]*3+[0])*12\"\n", "next.sh", config::Format::Megatron); },
                     "next.sh: --linear-attention-freq", "list pattern");
  test::expect_error([&] { (void)config::read_text(model + "\n", "next.sh", config::Format::Megatron); }, "needs --linear-attention-freq", "no interval");
}

// GPT-OSS in Megatron-Core's flags (Megatron-LM examples/gptoss/02_train.sh: --softmax-type learnable, --window-size
// 127,0, --window-attn-skip-freq 2, --quick-geglu) with gpt-oss-120b's dimensions: the same model as its published
// config.json (data/models/gpt-oss-120b.json: windowed layers 0, 2, 4, ..., 128 keys). It was priced as Mixtral.
TEST(Megatron, GptOssFlagsAreTheGptOssFamily) {
  const std::string script =
      "torchrun pretrain_gpt.py --num-layers 36 --hidden-size 2880 --ffn-hidden-size 2880 --num-attention-heads 64 --group-query-attention "
      "--num-query-groups 8 --kv-channels 64 --num-experts 128 --moe-router-topk 4 --moe-ffn-hidden-size 2880 --vocab-size 201088 "
      "--untie-embeddings-and-output-weights --add-qkv-bias --softmax-type learnable --window-size 127,0 --window-attn-skip-freq 2 --quick-geglu "
      "--glu-linear-offset 1.0 --swiglu\n";
  config::Loaded l = config::read_text(script, "oss.sh", config::Format::Megatron);
  ASSERT_EQ(l.model_config.at("model_type"), "gpt_oss");
  EXPECT_EQ(l.model_config.at("sliding_window"), 128);
  EXPECT_EQ(l.model_config.at("layer_types").at(0), "sliding_attention");
  EXPECT_EQ(l.model_config.at("layer_types").at(1), "full_attention");
  auto from_flags = inline_model(l.model_config, "oss.sh");
  auto published = test::bundled("gpt-oss-120b");
  EXPECT_DOUBLE_EQ(from_flags.params().total, published.params().total);
  for (const auto& w : l.warnings) EXPECT_EQ(w.find("--softmax-type"), std::string::npos) << w;  // read, so not "undefined"
  // Megatron-Core's is_layer_window_attention (transformer/utils.py at core_v0.17.1): without --window-attn-skip-freq
  // every layer is windowed (sapp had read every layer as full attention); a list states each layer (1: windowed).
  auto types = [&](const std::string& from, const std::string& to) {
    std::string text = script;
    text.replace(text.find(from), from.size(), to);
    return config::read_text(text, "oss.sh", config::Format::Megatron).model_config.at("layer_types");
  };
  const nlohmann::json all = types("--window-attn-skip-freq 2 ", "");
  EXPECT_EQ(std::count(all.begin(), all.end(), "sliding_attention"), 36) << all.dump();
  const nlohmann::json listed = types("--window-attn-skip-freq 2", "--window-attn-skip-freq ([1,1,0]*12)");
  EXPECT_EQ(listed.at(1), "sliding_attention");
  EXPECT_EQ(listed.at(2), "full_attention");
  EXPECT_EQ(std::count(listed.begin(), listed.end(), "full_attention"), 12) << listed.dump();
}

// MindSpeed-LLM's FSDP2 trainer (Ascend/MindSpeed-LLM c77308a1, train_fsdp2.py), read from its launch script and the
// YAML it names from the checkout's root, the launch line's --section.key winning (utils/arguments.py): the mesh
// (fsdp_size = world, TP 1, experts over ep x ep_fsdp), the batch per_device x accumulation x world / cp, the
// sequence data.cutoff_len, whole-layer recompute, ZeRO-3 (reshard_after_forward), the fp32 master weights of its
// float32 model (the mindspeed_fsdp2 profile), eager norms unless a registered non-qwen3 model fuses them, a chunked
// loss under pre-training; the model from its local folder's name. Refused by name: a mesh its code refuses.
TEST(MindSpeedLlm, Fsdp2LaunchAndYamlAreReadAsItsTrainerRunsThem) {
  const std::string dir = test::temp_dir();
  std::filesystem::create_directories(dir + "/examples/fsdp2/qwen3_moe");
  test::write_file(dir + "/examples/fsdp2/qwen3_moe/run.yaml",
                   "model:\n  model_id: qwen3_moe\n  tokenizer_name_or_path: None\ndata:\n  cutoff_len: 4096\nparallel:\n  fsdp_modules:\n"
                   "    - model.layers.{*}\n  recompute: True\n  reduce_dtype: bf16\n  cp_size: 1\ntraining:\n  stage: pt\n"
                   "  per_device_train_batch_size: 2\n");
  const std::string launch =
      "NPUS_PER_NODE=16\nNNODES=2\ntorchrun --nproc_per_node $NPUS_PER_NODE --nnodes $NNODES train_fsdp2.py examples/fsdp2/qwen3_moe/run.yaml \\\n"
      "    --model.model_name_or_path /home/data/Qwen3-30B-A3B/ --parallel.fsdp_size 32 --parallel.ep_size 4 --parallel.ep_fsdp_size 8 \\\n"
      "    --training.per_device_train_batch_size 1 --training.gradient_accumulation_steps 2 --optimization.use_fused_rmsnorm \\\n"
      "    --optimization.moe_grouped_gemm True --optimization.chunk_loss_size 1024\n";
  test::write_file(dir + "/examples/fsdp2/qwen3_moe/run.sh", launch);
  EXPECT_EQ(config::detect(launch, "run.sh"), config::Format::Megatron);
  const config::Loaded l = config::read_file(dir + "/examples/fsdp2/qwen3_moe/run.sh");
  EXPECT_EQ(l.dialect, "MindSpeed-LLM FSDP2 (train_fsdp2.py)");
  const nlohmann::json& v = l.values;
  EXPECT_EQ(v.at("framework"), "mindspeed_fsdp2");
  EXPECT_EQ(v.at("devices").get<long long>(), 32);
  EXPECT_EQ(v.at("hardware"), "ascend-910c");
  EXPECT_EQ(v.at("model"), "qwen3-30b-a3b");
  EXPECT_EQ(v.at("ep").get<long long>(), 4);
  EXPECT_EQ(v.at("mbs").get<long long>(), 1);     // the launch line wins over the YAML's 2
  ASSERT_TRUE(l.batch_from_devices.has_value());  // per device x accumulation x world / cp, once the world is known
  EXPECT_EQ(l.batch_from_devices->per_rank * 32 / l.batch_from_devices->model_ranks, 1 * 2 * 32);
  EXPECT_EQ(v.at("seq").get<long long>(), 4096);
  EXPECT_EQ(v.at("zero").get<int>(), 3);
  EXPECT_EQ(v.at("recompute"), "full");
  EXPECT_EQ(v.at("reduce_bytes").get<int>(), 2);
  EXPECT_TRUE(v.at("loss_chunked").get<bool>());
  EXPECT_FALSE(v.contains("eager_norms"));  // qwen3_moe's registered class applies the fused norm
  app::EstimateRequest r;
  config::fill(r, l, nlohmann::json::object());
  EXPECT_EQ(r.job.training.param_bytes, 4);  // the float32 model's shards are the master copy
  EXPECT_EQ(r.job.training.optimizer_bytes, 8);
  EXPECT_EQ(app::run_estimate(r).layout.expert_zero_group(), 8);
  // Dense qwen3's patch never applies the fused norm (qwen3.py register_patches reads the wrong object); without a
  // model_id no model class patches anything.
  std::string dense = launch;
  dense.replace(dense.find("Qwen3-30B-A3B"), 13, "Qwen3-8B-hf");  // a converted checkpoint's folder: "-hf" dropped
  dense.replace(dense.find(" --parallel.ep_size 4 --parallel.ep_fsdp_size 8"), 47, "");
  test::write_file(dir + "/examples/fsdp2/qwen3_moe/dense.sh", dense);
  test::write_file(dir + "/examples/fsdp2/qwen3_moe/run.yaml",
                   "model:\n  model_id: qwen3\ndata:\n  cutoff_len: 2048\nparallel:\n  cp_size: 2\n  cp_type: ring\n  reshard_after_forward: false\n");
  const config::Loaded d = config::read_file(dir + "/examples/fsdp2/qwen3_moe/dense.sh");
  EXPECT_EQ(d.values.at("model"), "qwen3-8b");
  EXPECT_TRUE(d.values.at("eager_norms").get<bool>());
  EXPECT_EQ(d.values.at("cp").get<long long>(), 2);
  EXPECT_EQ(d.values.at("cp_algo"), "ring");
  EXPECT_EQ(d.values.at("zero").get<int>(), 2);
  EXPECT_EQ(d.values.at("recompute"), "off");
  EXPECT_EQ(d.batch_from_devices->per_rank * 32 / d.batch_from_devices->model_ranks, 1 * 2 * 16);
  EXPECT_FALSE(d.values.contains("loss_chunked"));  // stage sft (the default): no chunked loss
  // Refused by name: fsdp_size below the world, TP, experts not covering the world, a YAML that is not found.
  auto refused = [&](const std::string& from, const std::string& to, const std::string& says) {
    std::string text = launch;
    text.replace(text.find(from), from.size(), to);
    test::write_file(dir + "/examples/fsdp2/qwen3_moe/bad.sh", text);
    test::expect_error([&] { (void)config::read_file(dir + "/examples/fsdp2/qwen3_moe/bad.sh"); }, says, to);
  };
  refused("--parallel.fsdp_size 32", "--parallel.fsdp_size 16", "--parallel.fsdp_size: 16 is not the world size 32");
  refused("--parallel.fsdp_size 32", "--parallel.fsdp_size 32 --parallel.tp_size 2", "--parallel.tp_size: 2: MindSpeed-LLM's FSDP2 mesh");
  refused("--parallel.ep_fsdp_size 8", "--parallel.ep_fsdp_size 2", "--parallel.ep_fsdp_size: 2 x ep_size 4 is not the world size 32");
  refused("examples/fsdp2/qwen3_moe/run.yaml", "examples/fsdp2/qwen3_moe/missing.yaml", "its YAML examples/fsdp2/qwen3_moe/missing.yaml is found neither");
  // --emit mindspeed-fsdp2 edits the launch's flags to the plan the search found within what its trainer runs (TP 1,
  // no pipeline, whole-layer recompute or none), and the edited launch reads back as that plan.
  const auto searched = test::run_sapp("search --from " + dir +
                                       "/examples/fsdp2/qwen3_moe/run.sh --ep auto --cp auto --recompute auto --tp auto "
                                       "--pp auto --zero auto -f json --emit mindspeed-fsdp2 -o " +
                                       dir + "/examples/fsdp2/qwen3_moe/best.sh");
  ASSERT_EQ(searched.status, 0) << searched.err;
  const nlohmann::json best = nlohmann::json::parse(searched.out).at("candidates").at(0);
  EXPECT_EQ(best.at("layout").at("tp"), 1);
  EXPECT_EQ(best.at("layout").at("pp"), 1);
  EXPECT_NE(best.at("layout").at("recompute"), "selective");
  const config::Loaded back = config::read_file(dir + "/examples/fsdp2/qwen3_moe/best.sh");
  EXPECT_EQ(back.dialect, config::kMindSpeedFsdp2Dialect);
  EXPECT_EQ(back.values.at("ep"), best.at("layout").at("ep"));
  EXPECT_EQ(back.values.at("cp"), best.at("layout").at("cp"));
  EXPECT_EQ(back.values.at("mbs"), best.at("layout").at("micro_batch_size"));
  EXPECT_EQ(back.values.at("zero"), best.at("layout").at("zero"));
  EXPECT_EQ(back.values.at("recompute"), best.at("layout").at("recompute"));
  EXPECT_EQ(back.batch_from_devices->per_rank * 32 / back.batch_from_devices->model_ranks, 1 * 2 * 32 / 2);  // the YAML above states cp_size 2
  const auto again = test::run_sapp("estimate --from " + dir + "/examples/fsdp2/qwen3_moe/best.sh -f json");
  ASSERT_EQ(again.status, 0) << again.err;
  EXPECT_DOUBLE_EQ(nlohmann::json::parse(again.out).at("step_time_s").get<double>(), best.at("step_time_s").get<double>());
  // Without the launch to edit it is refused before the search (its YAML holds what sapp does not write).
  const auto no_file = test::run_sapp("search --model qwen3-8b -d 8 -b 8 --emit mindspeed-fsdp2 -o " + dir + "/x.sh");
  EXPECT_EQ(no_file.status, 2);
  EXPECT_NE(no_file.err.find("--emit mindspeed-fsdp2 edits the MindSpeed-LLM FSDP2 launch given with --from"), std::string::npos) << no_file.err;
  // --emit megatron never edits the launch in place: it writes a new Megatron script.
  const auto emitted = test::run_sapp("estimate --from " + dir + "/examples/fsdp2/qwen3_moe/run.sh --emit megatron -o " + dir + "/plan.sh");
  ASSERT_EQ(emitted.status, 0) << emitted.err;
  const std::string written = io::read_text(dir + "/plan.sh");
  EXPECT_EQ(written.find("train_fsdp2.py"), std::string::npos) << written;
  EXPECT_NE(written.find("--num-layers 48"), std::string::npos) << written;
  EXPECT_NE(emitted.err.find("read as MindSpeed-LLM FSDP2 (train_fsdp2.py)"), std::string::npos) << emitted.err;
}

TEST(MindSpeedLlm, AscendDeviceMoePatternAndUnevenStages) {
  const std::string head =
      "export HCCL_CONNECT_TIMEOUT=3600\nexport PYTORCH_NPU_ALLOC_CONF=expandable_segments:True\nNPUS_PER_NODE=16\nPER_NODE=$NPUS_PER_NODE\nNNODES=2\n";
  const std::string launch =
      "torchrun --nproc_per_node $PER_NODE --nnodes $NNODES pretrain_gpt.py --num-layers 8 --hidden-size 1024 --num-attention-heads 16 "
      "--vocab-size 32000 --seq-length 2048 --micro-batch-size 1 --global-batch-size 32 --tensor-model-parallel-size 2 "
      "--pipeline-model-parallel-size 2 --num-experts 8 --moe-ffn-hidden-size 512 --moe-router-topk 2 --ffn-hidden-size 2048 --swiglu ";
  config::Loaded a3 =
      config::read_text(head + launch + "--moe-layer-freq -1 --first-k-dense-replace 3 --num-layer-list 3,5\n", "a3.sh", config::Format::Megatron);
  EXPECT_EQ(a3.values.at("hardware").get<std::string>(), "ascend-910c");
  EXPECT_EQ(a3.values.at("devices").get<long long>(), 32);
  // Without --use-flash-attn MindSpeed runs Megatron-Core's unfused attention (its forward wrapper calls the fused
  // NPU kernel only with the flag): priced so, and said; with the flag, fused.
  EXPECT_TRUE(a3.values.at("no_flash_attention").get<bool>());
  EXPECT_TRUE(std::any_of(a3.warnings.begin(), a3.warnings.end(), [](const std::string& w) { return w.find("no --use-flash-attn") != std::string::npos; }));
  const config::Loaded fused = config::read_text(head + launch + "--use-flash-attn\n", "fa.sh", config::Format::Megatron);
  EXPECT_FALSE(fused.values.contains("no_flash_attention"));
  EXPECT_EQ(a3.model_config.at("first_k_dense_replace").get<long long>(), 3);
  ASSERT_TRUE(a3.split.has_value());
  EXPECT_EQ(a3.split->layers, (std::vector<std::vector<long long>>{{3, 5}}));
  // -1 alone: every layer MoE; 8 NPUs per node: A2; no Ascend variable: the device is left to the command line.
  config::Loaded a2 = config::read_text("export HCCL_BUFFSIZE=400\nPER_NODE=8\nNNODES=1\n" + launch + "--moe-layer-freq -1 --first-k-dense-replace -1\n",
                                        "a2.sh", config::Format::Megatron);
  EXPECT_EQ(a2.values.at("hardware").get<std::string>(), "ascend-910b");
  EXPECT_FALSE(a2.model_config.contains("first_k_dense_replace"));
  config::Loaded gpu = config::read_text("PER_NODE=8\nNNODES=1\n" + launch + "\n", "gpu.sh", config::Format::Megatron);
  EXPECT_FALSE(gpu.values.contains("hardware"));
  EXPECT_FALSE(gpu.values.contains("no_flash_attention"));  // Transformer Engine's attention is fused without the flag
  // Memory features: the fp32 master copy reused (10 optimizer bytes per parameter), the MLP activation recomputed
  // (selective, its activation switches), and Megatron-Core's named modules under selective.
  config::Loaded mem = config::read_text(head + launch + "--bf16 --reuse-fp32-param --recompute-activation-function\n", "mem.sh", config::Format::Megatron);
  EXPECT_EQ(mem.values.at("optimizer_bytes").get<int>(), 10);
  EXPECT_EQ(mem.values.at("recompute").get<std::string>(), "selective");
  EXPECT_EQ(mem.values.at("recompute_modules"), (nlohmann::json{"dense_act", "act"}));
  config::Loaded named =
      config::read_text(head + launch + "--recompute-granularity selective --recompute-modules core_attn mlp\n", "named.sh", config::Format::Megatron);
  EXPECT_EQ(named.values.at("recompute_modules"), (nlohmann::json{"core_attn", "mlp"}));
  app::EstimateRequest priced;
  config::fill(priced, mem, nlohmann::json::object());
  EXPECT_EQ(priced.job.training.optimizer_bytes, 10);
  EXPECT_EQ(priced.job.training.recompute_modules, (std::vector<std::string>{"dense_act", "act"}));
  // Experts split over the TP group (EP x TP, no expert TP), the optimizer state swapped out but for two of 16 portions.
  config::Loaded extend =
      config::read_text(head + launch + "--bf16 --use-distributed-optimizer --moe-tp-extend-ep --swap-optimizer\n", "extend.sh", config::Format::Megatron);
  EXPECT_EQ(extend.values.at("ep").get<long long>(), 2);
  EXPECT_EQ(extend.values.at("etp").get<long long>(), 1);
  EXPECT_DOUBLE_EQ(extend.values.at("optimizer_bytes").get<double>(), 1.5);
  // LoRA fine-tuning: the adapters' rank.
  config::Loaded lora =
      config::read_text(head + launch + "--lora-r 16 --lora-alpha 32 --lora-target-modules linear_qkv linear_proj\n", "lora.sh", config::Format::Megatron);
  EXPECT_EQ(lora.values.at("lora_rank").get<long long>(), 16);
  // Placeholder layers (--noop-layers 6,7 of 8, PP 2): the model has 6, the last stage 2; MindSpore's msrun launcher
  // (16 workers, 16 per node: A3) and MindSpeed-LLM's deprecated --moe-intermediate-size.
  const std::string msrun = "export HCCL_BUFFSIZE=400\nmsrun --worker_num 16 --local_worker_num 16 --join=False pretrain_gpt.py ";
  std::string ms_launch = launch.substr(launch.find("pretrain_gpt.py ") + 16);
  ms_launch.replace(ms_launch.find("--moe-ffn-hidden-size"), 21, "--moe-intermediate-size");
  config::Loaded ms = config::read_text(msrun + ms_launch + "--noop-layers 6,7\n", "ms.sh", config::Format::Megatron);
  EXPECT_EQ(ms.values.at("devices").get<long long>(), 16);
  EXPECT_EQ(ms.values.at("hardware").get<std::string>(), "ascend-910c");
  EXPECT_EQ(ms.model_config.at("num_hidden_layers").get<long long>(), 6);
  EXPECT_EQ(ms.model_config.at("moe_intermediate_size").get<long long>(), 512);
  ASSERT_TRUE(ms.split.has_value());
  EXPECT_EQ(ms.split->layers, (std::vector<std::vector<long long>>{{4, 2}}));
  // Refused by name: a list that does not sum to --num-layers, stages with unequal chunk counts under VPP, a dense
  // count that --moe-layer-freq contradicts, a period sapp does not price.
  auto refused = [&](const std::string& flags, const std::string& key) {
    try {
      config::read_text(head + launch + flags + "\n", "bad.sh", config::Format::Megatron);
      ADD_FAILURE() << flags << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  };
  refused("--num-layer-list 3,4", "--num-layer-list");
  refused("--num-layer-list 2,6 --num-layers-per-virtual-pipeline-stage 2", "same number of chunks");
  refused("--moe-layer-freq ([0]*2+[1]*6) --first-k-dense-replace 3", "--first-k-dense-replace");
  refused("--moe-layer-freq ([0]*2+[1]*5)", "states 7 layers");
  refused("--moe-layer-freq [0,2]*4", "other than 0 or 1");
  refused("--moe-layer-freq ([0,1]*4", "')' expected");
  refused("--moe-layer-freq 0", "--moe-layer-freq");
  refused("--moe-layer-freq [0]*8", "no layer MoE");
  // Megatron-Core's other forms (gpt_layer_specs.py get_moe_layer_pattern): an int N makes layer i MoE when
  // i % N == 0; a list expression states every layer.
  auto moe_layers = [&](const std::string& freq) {
    const config::Loaded loaded = config::read_text(head + launch + "--moe-layer-freq " + freq + "\n", "freq.sh", config::Format::Megatron);
    return loaded.model_config.value("moe_layers", std::vector<long long>{});
  };
  EXPECT_EQ(moe_layers("2"), (std::vector<long long>{0, 2, 4, 6}));
  EXPECT_EQ(moe_layers("([0,1]*4)"), (std::vector<long long>{1, 3, 5, 7}));
  EXPECT_EQ(moe_layers("'[1]+2*([0]+[1])+[1,0,1]'"), (std::vector<long long>{0, 2, 4, 5, 7}));
  refused("--noop-layers 7,8", "--noop-layers");
  refused("--noop-layers 3,3", "--noop-layers");
}

}  // namespace sapp

namespace sapp {
namespace {

// A model one of AutoModel's builders defines from its own fields (examples/llm_pretrain/nanogpt_pretrain.yaml:
// model._target_ build_gpt2_model with GPT-2's n_embd, n_layer, ...; sapp had listed them unused and asked for
// --model). GPT-2 small as Transformers builds it (modeling_gpt2.py: wte, wpe, per block two LayerNorms, c_attn
// 768 x 2304, c_proj 768 x 768, c_fc 768 x 3072, c_proj 3072 x 768, all with biases; ln_f; the head tied to wte):
// 38,597,376 + 786,432 + 12 x 7,087,872 + 1,536 = 124,439,808 weights, counted here by hand. A model section with
// neither an id nor a size is refused by key.
TEST(AutoModel, ABuildersOwnFieldsDefineTheModel) {
  const std::string yaml =
      "step_scheduler: {global_batch_size: 64, local_batch_size: 8}\ndataset: {seq_len: 1024}\ndistributed: {dp_size: 8}\nmodel:\n"
      "  _target_: nemo_automodel.components.models.gpt2.build_gpt2_model\n  vocab_size: 50257\n  n_positions: 1024\n  n_embd: 768\n  n_layer: 12\n"
      "  n_head: 12\n";
  const config::Loaded l = config::read_text(yaml, "gpt2.yaml", config::Format::AutoModel);
  ASSERT_TRUE(l.model_config.is_object());
  EXPECT_EQ(l.model_config.at("model_type"), "gpt2");
  EXPECT_DOUBLE_EQ(inline_model(l.model_config, "gpt2.yaml").params().total, 124439808.0);
  for (const auto& key : l.unused) EXPECT_EQ(key.rfind("model.", 0), std::string::npos) << key;
  test::expect_error(
      [] {
        (void)config::read_text("step_scheduler: {global_batch_size: 64}\nmodel:\n  _target_: some.Builder\n  layers: 4\n", "m.yaml",
                                config::Format::AutoModel);
      },
      "m.yaml: model: names no model sapp reads", "a model section without an id or a size");
}

// NeMo AutoModel recipes that train with a second model or another objective (examples/llm_kd, examples/speculative,
// examples/dllm_sft, examples/retrieval at Automodel 36044ad) are refused by name: priced as the trained model alone
// they were silently too fast and too small (the KD student without its teacher's forward, weights and logits). The
// recipe may be a class name or a `_target_` mapping; a YAML whose comments show a launch command with Megatron-like
// flags is still read as YAML.
TEST(AutoModel, RecipesWithASecondModelOrObjectiveAreRefusedByName) {
  const std::string base =
      "step_scheduler: {global_batch_size: 64, local_batch_size: 2}\ndistributed: {strategy: fsdp2}\n"
      "model: {pretrained_model_name_or_path: meta-llama/Llama-3.1-8B}\ndataset: {seq_len: 4096}\n";
  auto read = [&](const std::string& extra) { return config::read_text(extra + base, "r.yaml"); };
  test::expect_error([&] { (void)read("recipe: KnowledgeDistillationRecipeForNextTokenPrediction\n"); },
                     "r.yaml: recipe: 'KnowledgeDistillationRecipeForNextTokenPrediction' is not a recipe sapp prices", "distillation");
  test::expect_error([&] { (void)read("teacher_model: {pretrained_model_name_or_path: meta-llama/Llama-3.1-70B}\n"); },
                     "r.yaml: teacher_model: knowledge distillation runs the teacher's forward", "a teacher under any recipe");
  test::expect_error([&] { (void)read("recipe: {_target_: nemo_automodel.recipes.llm.train_eagle3.TrainEagle3Recipe}\n"); },
                     "recipe: 'nemo_automodel.recipes.llm.train_eagle3.TrainEagle3Recipe' is not a recipe sapp prices", "speculative drafter");
  test::expect_error([&] { (void)read("recipe: TrainBiEncoderRecipe\n"); }, "'TrainBiEncoderRecipe' is not a recipe sapp prices", "retrieval");
  EXPECT_EQ(read("recipe: {_target_: nemo_automodel.recipes.llm.train_ft.TrainFinetuneRecipeForNextTokenPrediction}\n").format, config::Format::AutoModel);
  const config::Loaded cls = read("recipe: TrainFinetuneRecipeForSequenceClassification\n");
  ASSERT_FALSE(cls.warnings.empty());
  EXPECT_NE(cls.warnings.back().find("priced as next-token prediction"), std::string::npos) << cls.warnings.back();
  // Detected from the recipe key alone, and Megatron-like flags on comment lines do not make it a launch script.
  const std::string commented =
      "# run: python -m pkg.precompute --seq-length 4096 --num-layers 5\nrecipe: TrainDSparkRecipe\nrecipe_args: {seq_length: 4096}\n";
  EXPECT_EQ(config::detect(commented, "d.yaml"), config::Format::AutoModel);
  test::expect_error([&] { (void)config::read_text(commented, "d.yaml"); }, "d.yaml: recipe: 'TrainDSparkRecipe' is not a recipe sapp prices", "drafter");
}

// NeMo AutoModel, as its recipes resolve a YAML (Automodel 36044ad): 61 layers at layers_per_stage 2 make
// ceil(61 / 2) = 31 virtual stages, rounded down to 28 over pp_size 4 (7 per rank); generate_hf_model_split gives
// the first 61 mod 28 = 5 stages 3 layers and the rest 2; stage s sits on rank s mod 4. The pipeline runs
// local_batch_size / pp_microbatch_size = 4 micro-batches. Unset model.torch_dtype resolves to bf16 and torch.optim
// keeps Adam's moments in it (docs/guides/mixed-precision-training.mdx): 2 + 2 + 4 bytes; TE's FusedAdam keeps fp32
// moments (8).
// NeMo AutoModel's FSDP2 as its code runs it (Automodel 36044ad): an EP model's MoE parallelizer keeps the gathered
// parameters to the backward (MoEParallelizerConfig.reshard_after_forward False: ZeRO-2) unless the recipe says
// otherwise; defer_fsdp_grad_sync (default true) skips the gradient sync of all but a step's last micro-batch
// (gradients accumulated unsharded, one reduce-scatter per step); under PP every layer stays gathered
// (parallelizer.py, pp_enabled) and torch pipelining syncs on the last backward (the automodel profile); a pipeline
// whose dp_size the launch decides runs global / (local x DP) times per step once --devices says DP.
// The loss as the recipe states it: MaskedCrossEntropy (the recipes' default, components/loss/masked_ce.py) upcasts
// the logits to fp32 for F.cross_entropy unless fp32_upcast is false; TEParallelCrossEntropy is fused;
// FusedLinearCrossEntropy never holds the logits.
TEST(AutoModel, TheLossIsReadAsTheRecipeStatesIt) {
  const std::string base =
      "step_scheduler:\n  global_batch_size: 64\n  local_batch_size: 2\ndistributed:\n  strategy: fsdp2\n  dp_size: 8\nmodel:\n"
      "  pretrained_model_name_or_path: meta-llama/Llama-3.1-8B\ndataset:\n  seq_len: 4096\n";
  auto read = [&](const std::string& loss) {
    app::EstimateRequest r;
    config::fill(r, config::read_text(base + loss, "recipe.yaml"), nlohmann::json::object());
    return std::pair{r.job.training.loss_fused, r.job.training.loss_chunked};
  };
  EXPECT_EQ(read(""), std::pair(false, false));
  EXPECT_EQ(read("loss_fn:\n  _target_: nemo_automodel.components.loss.masked_ce.MaskedCrossEntropy\n  fp32_upcast: false\n"), std::pair(true, false));
  EXPECT_EQ(read("loss_fn:\n  _target_: nemo_automodel.components.loss.te_parallel_ce.TEParallelCrossEntropy\n"), std::pair(true, false));
  EXPECT_EQ(read("loss_fn:\n  _target_: nemo_automodel.components.loss.linear_ce.FusedLinearCrossEntropy\n").second, true);
}

// The 2025 benchmark recipes (examples/benchmark/configs/*_te_deepep.yaml at 8d9bfb90e) state DeepEP as
// model.backend.enable_deepep and route with the benchmark's fake_balanced_gate (each token's experts consecutive):
// both are read, and the gate is said to be a benchmark setting.
TEST(AutoModel, TheBenchmarkGateAndEnableDeepepAreRead) {
  const std::string base =
      "step_scheduler:\n  global_batch_size: 512\n  local_batch_size: 4\ndistributed:\n  strategy: fsdp2\n  dp_size: 8\n  ep_size: 8\nmodel:\n  config:\n    "
      "pretrained_model_name_or_path: "
      "Qwen/Qwen3-30B-A3B\n  backend:\n    attn: te\n";
  auto read = [&](const std::string& backend) {
    const config::Loaded l = config::read_text(base + backend + "dataset:\n  seq_len: 4096\n", "recipe.yaml");
    EXPECT_TRUE(l.unused.empty()) << l.unused.front();
    app::EstimateRequest r;
    config::fill(r, l, nlohmann::json::object());
    return std::pair{r.job.training, l.warnings};
  };
  const auto [plain, plain_warnings] = read("");
  EXPECT_FALSE(plain.ep_dedup_per_node);
  EXPECT_FALSE(plain.moe_contiguous_routing);
  const auto [bench, bench_warnings] = read("    enable_deepep: true\n    fake_balanced_gate: true\n");
  EXPECT_TRUE(bench.ep_dedup_per_node);
  EXPECT_TRUE(bench.moe_contiguous_routing);
  bool said = false;
  for (const auto& w : bench_warnings) said = said || w.find("fake_balanced_gate") != std::string::npos;
  EXPECT_TRUE(said);
  EXPECT_FALSE(read("    enable_deepep: false\n    fake_balanced_gate: false\n").first.moe_contiguous_routing);
}

// The 2025 recipes (examples/benchmark/configs/kimi_k2_te_deepep.yaml at 89e3a9fdd) state the pipeline as a top-level
// autopipeline section and activation checkpointing under parallelizer; both are read by those names (nothing left
// unused), the model by its HuggingFace id, and the interleave AutoModel's split of that era would have made is said.
TEST(AutoModel, The2025SchemaIsRead) {
  const std::string text =
      "step_scheduler: {global_batch_size: 512, local_batch_size: 8}\n"
      "distributed: {_target_: nemo_automodel.components.distributed.fsdp2.FSDP2Manager, tp_size: 1, cp_size: 1, pp_size: 8, "
      "dp_replicate_size: 1, ep_size: 32, sequence_parallel: false}\n"
      "autopipeline: {_target_: nemo_automodel.components.distributed.pipelining.AutoPipeline, pp_schedule: interleaved1f1b, "
      "pp_microbatch_size: 1, round_virtual_stages_to_pp_multiple: down, scale_grads_in_schedule: false, patch_inner_model: false, "
      "patch_causal_lm_model: false, layers_per_stage: 2}\n"
      "parallelizer: {_target_: nemo_automodel.components.moe.parallelizer.parallelize_model, activation_checkpointing: true}\n"
      "model:\n  config: {pretrained_model_name_or_path: moonshotai/Kimi-K2-Base}\n"
      "  backend: {attn: te, enable_deepep: true, fake_balanced_gate: true}\n"
      "dataset: {seq_len: 4096}\n";
  const config::Loaded l = config::read_text(text, "kimi.yaml");
  EXPECT_TRUE(l.unused.empty()) << l.unused.front();
  app::EstimateRequest r;
  config::fill(r, l, nlohmann::json{{"devices", 256}});
  const auto rep = app::run_estimate(r);
  EXPECT_EQ(rep.layout.pp, 8);
  EXPECT_EQ(rep.layout.vpp, 3);  // ceil(61 / 2) = 31 virtual stages, rounded down to 24
  EXPECT_EQ(rep.layout.recompute, plan::Recompute::Full);
  EXPECT_EQ(rep.layout.mbs, 1);
  EXPECT_TRUE(r.job.training.moe_contiguous_routing);
  bool said = false;
  for (const auto& w : l.warnings) said = said || (w.find("autopipeline.layers_per_stage") != std::string::npos && w.find("--vpp 4") != std::string::npos);
  EXPECT_TRUE(said);
  // Written back under the same sections, not today's distributed.pipeline / distributed.activation_checkpointing.
  config::Plan p;
  p.layout = rep.layout;
  p.layout.vpp = 4;
  p.layout.recompute = plan::Recompute::Off;
  p.devices = 256;
  p.global_batch = 512;
  p.seq = 4096;
  p.num_layers = 61;
  p.pipeline_runs = 2;
  const std::string written = config::emit(config::EmitFormat::AutoModel, p, &l, "kimi-k2");
  EXPECT_EQ(written.find("activation_checkpointing: true"), std::string::npos) << written;
  const config::Loaded back = config::read_text(written, "back.yaml");
  EXPECT_EQ(back.values.at("vpp"), 4) << written;
  EXPECT_EQ(back.values.at("recompute"), "off") << written;
  EXPECT_EQ(written.find("  pipeline:"), std::string::npos) << written;
}

// AutoModel's two FP8 routes: a top-level fp8 section swaps torchao's Float8Linear in for the nn.Linear layers
// (components/quantization/fp8.py; the GEMM inputs saved in BF16, the weights gathered in float8 with
// enable_fsdp_float8_all_gather), model.backend.te_fp8 runs its own models' Transformer Engine layers under TE's
// autocast (TEFp8Config). Both keys are read, nothing is left unused.
TEST(AutoModel, ItsTwoFp8RoutesAreRead) {
  const std::string base =
      "step_scheduler:\n  global_batch_size: 64\n  local_batch_size: 2\ndistributed:\n  strategy: fsdp2\n  dp_size: 8\nmodel:\n"
      "  pretrained_model_name_or_path: meta-llama/Llama-3.1-8B\ndataset:\n  seq_len: 4096\n";
  auto read = [&](const std::string& text) {
    const config::Loaded l = config::read_text(text, "recipe.yaml");
    EXPECT_TRUE(l.unused.empty()) << l.unused.front();
    app::EstimateRequest r;
    config::fill(r, l, nlohmann::json::object());
    return r.job.training;
  };
  const plan::Training plain = read(base);
  EXPECT_FALSE(plain.fp8);
  const plan::Training torchao = read(base +
                                      "fp8:\n  enabled: true\n  recipe_name: tensorwise\n  enable_fsdp_float8_all_gather: true\n"
                                      "  precompute_float8_dynamic_scale_for_fsdp: true\n  filter_fqns: [lm_head]\n");
  EXPECT_TRUE(torchao.fp8);
  EXPECT_FALSE(torchao.fp8_transformer_engine);
  EXPECT_EQ(torchao.gather_bytes, 1);
  EXPECT_EQ(read(base + "fp8:\n  enabled: true\n").gather_bytes, plain.gather_bytes);
  EXPECT_FALSE(read(base + "fp8:\n  enabled: false\n").fp8);
  std::string te = base;
  te.replace(te.find("dataset:"), 8, "  backend:\n    te_fp8:\n      recipe: current\ndataset:");
  const plan::Training transformer_engine = read(te);
  EXPECT_TRUE(transformer_engine.fp8);
  EXPECT_TRUE(transformer_engine.fp8_transformer_engine);
}

TEST(AutoModel, FsdpAsAutoModelRunsIt) {
  const std::string base = R"(step_scheduler:
  global_batch_size: 64
  local_batch_size: 2
distributed:
  strategy: fsdp2
  dp_size: 8
model:
  pretrained_model_name_or_path: meta-llama/Llama-3.1-8B
dataset:
  seq_len: 4096
)";
  auto with = [&](const std::string& from, const std::string& to) {
    std::string text = base;
    text.replace(text.find(from), from.size(), to);
    return filled(text, "am.yaml");
  };
  const app::EstimateRequest deferred = filled(base, "am.yaml");
  const app::EstimateRequest synced = with("  dp_size: 8\n", "  dp_size: 8\n  defer_fsdp_grad_sync: false\n");
  EXPECT_TRUE(deferred.job.training.defer_grad_sync);
  EXPECT_FALSE(synced.job.training.defer_grad_sync);
  const report::EstimateReport d = app::run_estimate(deferred), s = app::run_estimate(synced);
  ASSERT_EQ(d.layout.micro_batches, 4);
  // The unsharded fp32 gradients of the whole model (8.03 B x 4 B, about 30 GiB) beside the shards; no per
  // micro-batch reduce-scatters.
  EXPECT_GT(d.memory.peak_bytes - s.memory.peak_bytes, 25.0 * 1073741824.0);
  EXPECT_LT(d.time.breakdown.dp_comm_s, s.time.breakdown.dp_comm_s);

  // FusedLinearCrossEntropy (loss/linear_ce.py, Cut Cross-Entropy) never holds the logits: Llama 3.1's 128256-row
  // vocabulary at 2 x 4096 tokens, 6 bytes each (bf16 and fp32 copies), is about 5.9 GiB less on the last stage.
  const app::EstimateRequest chunked = with("dataset:\n", "loss_fn:\n  _target_: nemo_automodel.components.loss.linear_ce.FusedLinearCrossEntropy\ndataset:\n");
  EXPECT_TRUE(chunked.job.training.loss_chunked);
  const report::EstimateReport c = app::run_estimate(chunked);
  EXPECT_NEAR(d.memory.stages.back().head_activations - c.memory.stages.back().head_activations, 2 * 4096 * 128256 * 6.0, 1e6);
  EXPECT_GT(c.time.breakdown.compute_s, d.time.breakdown.compute_s);  // the logits once more in the backward

  const std::string moe = R"(step_scheduler:
  global_batch_size: 64
  local_batch_size: 8
distributed:
  strategy: fsdp2
  dp_size: 8
  ep_size: 8
model:
  pretrained_model_name_or_path: Qwen/Qwen3-30B-A3B
dataset:
  seq_len: 4096
)";
  EXPECT_EQ(filled(moe, "am.yaml").layout.zero, 2);
  std::string resharded = moe;
  resharded.replace(resharded.find("  ep_size: 8\n"), 13, "  ep_size: 8\n  moe:\n    reshard_after_forward: true\n");
  EXPECT_EQ(filled(resharded, "am.yaml").layout.zero, 3);

  const std::string pipeline = R"(step_scheduler:
  global_batch_size: 64
  local_batch_size: 8
distributed:
  strategy: fsdp2
  dp_size: none
  pp_size: 2
  pipeline:
    pp_microbatch_size: 1
model:
  pretrained_model_name_or_path: meta-llama/Llama-3.1-8B
dataset:
  seq_len: 4096
)";
  app::EstimateRequest runs;
  config::fill(runs, config::read_text(pipeline, "am.yaml"), nlohmann::json{{"devices", 16}});
  EXPECT_EQ(runs.job.training.pipeline_runs, 1);  // 64 / (8 x DP 8)
  app::EstimateRequest two;
  config::fill(two, config::read_text(pipeline, "am.yaml"), nlohmann::json{{"devices", 8}});
  EXPECT_EQ(two.job.training.pipeline_runs, 2);  // 64 / (8 x DP 4)
  EXPECT_TRUE(two.job.training.zero3_gathers_once_with_pp);
  // HSDP with dp_size left to the launch: 8 devices, 2 replicas, each sharded over 4 (mesh_utils.py infers dp_size 8).
  std::string hsdp = base;
  hsdp.replace(hsdp.find("  dp_size: 8\n"), 13, "  dp_size: none\n  dp_replicate_size: 2\n");
  app::EstimateRequest replicas;
  config::fill(replicas, config::read_text(hsdp, "am.yaml"), nlohmann::json{{"devices", 8}});
  EXPECT_EQ(replicas.layout.optimizer_shard, 4);
}

// AutoModel's own Llama (build_llama_model, components/models/llama/model.py at 507bfb751) runs Transformers' eager
// LlamaRMSNorm and attn_implementation flash_attention_2 unless the config names one: eager norms and FlashAttention-2's
// rate (--attention-kernel torch_sdpa); a from_pretrained model keeps the fused defaults; flash_attention_3 is fused.
TEST(AutoModel, ItsOwnLlamaRunsEagerNormsAndFlashAttention2) {
  const std::string base = R"(step_scheduler:
  global_batch_size: 16
  local_batch_size: 2
distributed:
  dp_size: 8
model:
  _target_: nemo_automodel.components.models.llama.model.build_llama_model
  pretrained_model_name_or_path: meta-llama/Llama-3.1-8B
dataset:
  seq_len: 4096
)";
  app::EstimateRequest own;
  config::fill(own, config::read_text(base, "am.yaml"), nlohmann::json::object());
  EXPECT_TRUE(own.job.training.eager_norms);
  EXPECT_EQ(own.job.training.attention_kernel, plan::AttentionKernel::TorchSdpa);
  std::string pretrained = base;
  pretrained.replace(pretrained.find("nemo_automodel.components.models.llama.model.build_llama_model"), 62,
                     "nemo_automodel.NeMoAutoModelForCausalLM.from_pretrained");
  app::EstimateRequest hf;
  config::fill(hf, config::read_text(pretrained, "am.yaml"), nlohmann::json::object());
  EXPECT_FALSE(hf.job.training.eager_norms);
  EXPECT_EQ(hf.job.training.attention_kernel, plan::AttentionKernel::Auto);
  std::string fa3 = base;
  fa3.replace(fa3.find("dataset:"), 8, "  attn_implementation: flash_attention_3\ndataset:");
  app::EstimateRequest three;
  config::fill(three, config::read_text(fa3, "am.yaml"), nlohmann::json::object());
  EXPECT_EQ(three.job.training.attention_kernel, plan::AttentionKernel::Auto);
}

// AutoModel's benchmark recipes state the device their MFU is taken against (benchmark.peak_tflops: 989 on its H100
// recipes, 2500 / 5000 on the GB200 ones, examples/llm_benchmark at 36044ad3d): priced on another device, fill() says
// which bundled devices have that peak; on the device, or on one with that FP8 peak, nothing is said.
TEST(AutoModel, APeakTflopsOfAnotherDeviceIsSaid) {
  const std::string recipe = R"(benchmark:
  peak_tflops: 2500  # GB200 BF16 dense peak TFLOPs
  num_nodes: 2
step_scheduler:
  global_batch_size: 64
  local_batch_size: 2
distributed:
  dp_size: 8
model:
  pretrained_model_name_or_path: meta-llama/Llama-3.1-8B
dataset:
  seq_len: 4096
)";
  const config::Loaded l = config::read_text(recipe, "gb200.yaml");
  ASSERT_TRUE(l.stated_peak_tflops.has_value());
  EXPECT_DOUBLE_EQ(*l.stated_peak_tflops, 2500.0);
  auto notes_for = [&](const config::Loaded& loaded, const std::string& hardware) {
    app::EstimateRequest r;
    nlohmann::json command_line = nlohmann::json::object();
    if (!hardware.empty()) command_line["hardware"] = hardware;
    return fmt::format("{}", fmt::join(config::fill(r, loaded, command_line), "\n"));
  };
  const std::string on_h100 = notes_for(l, "");
  EXPECT_NE(on_h100.find("gb200.yaml: benchmark.peak_tflops 2500 TFLOP/s is not h100-sxm's dense BF16 (989) or FP8 (1979) peak: the file was written "
                         "for another device (gb200, gb300 state it); priced on h100-sxm (give -H)"),
            std::string::npos)
      << on_h100;
  EXPECT_EQ(notes_for(l, "gb200"), "");
  std::string fp8 = recipe;
  fp8.replace(fp8.find("2500"), 4, "5000");
  EXPECT_EQ(notes_for(config::read_text(fp8, "gb200.yaml"), "gb300"), "");  // GB300's FP8 peak
  std::string h100 = recipe;
  h100.replace(h100.find("2500"), 4, "989");
  EXPECT_EQ(notes_for(config::read_text(h100, "h100.yaml"), ""), "");
}

// AutoModel's CP without Transformer Engine's attention is PyTorch's, its K,V all-gathered once per pass
// (components/distributed/cp_utils.py at 2013a4dd6: cp_rotate_method "allgather"); with TE's it is TE's ring.
TEST(AutoModel, ContextParallelOutsideTransformerEngineGathersKv) {
  auto gathered = [](const std::string& attn) {
    const std::string recipe =
        "step_scheduler:\n  global_batch_size: 64\n  local_batch_size: 1\ndistributed:\n  dp_size: 8\n  cp_size: 2\n"
        "model:\n  pretrained_model_name_or_path: meta-llama/Llama-3.1-8B\n  backend:\n    attn: " +
        attn + "\ndataset:\n  seq_len: 8192\n";
    return filled(recipe, "cp.yaml").job.training.cp_kv_gathered_once;
  };
  EXPECT_TRUE(gathered("sdpa"));
  EXPECT_FALSE(gathered("te"));
}

TEST(AutoModel, ReadsTheLayoutAsItsRecipesResolveIt) {
  config::Loaded l = config::read_file(source("tests/configs/automodel-deepseek-v3-pp.yaml"));
  EXPECT_EQ(l.format, config::Format::AutoModel);
  app::EstimateRequest r;
  config::fill(r, l, nlohmann::json::object());
  EXPECT_EQ(r.job.model, "deepseek-v3");
  EXPECT_EQ(r.job.devices, 256);
  EXPECT_EQ(r.layout.pp, 4);
  EXPECT_EQ(r.layout.vpp, 7);
  EXPECT_EQ(r.layout.ep, 64);
  EXPECT_EQ(r.layout.mbs, 1);
  // The MoE parallelizer's reshard_after_forward default False: ZeRO-2 as FSDP2 runs it (under PP the same price as
  // ZeRO-3, the stage kept gathered for the step).
  EXPECT_EQ(r.layout.zero, 2);
  ASSERT_TRUE(l.split);
  plan::ChunkCounts expected(7, std::vector<long long>(4, 2));
  expected[0] = {3, 3, 3, 3};
  expected[1][0] = 3;
  EXPECT_EQ(l.split->layers, expected);
  EXPECT_EQ(r.job.training.param_bytes, 2);
  EXPECT_EQ(r.job.training.grad_bytes, 2);
  EXPECT_EQ(r.job.training.optimizer_bytes, 4);
  EXPECT_TRUE(r.job.training.ep_dedup_per_node);  // hybridep: DeepEP's node-deduplicated dispatch
  EXPECT_EQ(r.job.training.pipeline_runs, 1);
  // 1024 / (local 4 x dp 64) = 4 accumulation steps: the pipeline schedule runs once per step (train_ft.py).
  std::string four = l.text;
  four.replace(four.find("global_batch_size: 256"), 22, "global_batch_size: 1024");
  EXPECT_EQ(config::read_text(four, "am.yaml").values.at("pipeline_runs"), 4);

  const std::string base = R"(step_scheduler:
  global_batch_size: 64
  local_batch_size: 2
distributed:
  dp_size: 8
  dp_replicate_size: 2
  tp_size: 2
  sequence_parallel: true
  activation_checkpointing: selective
model:
  pretrained_model_name_or_path: meta-llama/Llama-3.1-8B
  torch_dtype: float32
dataset:
  seq_len: 8192
optimizer:
  _target_: transformer_engine.pytorch.optimizers.FusedAdam
)";
  config::Loaded b = config::read_text(base, "am.yaml");
  app::EstimateRequest rb;
  config::fill(rb, b, nlohmann::json::object());
  EXPECT_EQ(rb.job.model, "llama3-8b");  // a HuggingFace id the bundled file lists
  EXPECT_EQ(rb.job.devices, 16);
  EXPECT_TRUE(rb.layout.sp);
  EXPECT_EQ(rb.layout.optimizer_shard, 4);  // HSDP: sharded within dp_shard 8 / 2
  EXPECT_EQ(std::string(plan::to_string(rb.layout.recompute)), "selective");
  EXPECT_EQ(rb.job.training.param_bytes, 4);
  EXPECT_EQ(rb.job.training.optimizer_bytes, 8);
  EXPECT_EQ(rb.job.training.global_batch, 64);
  // AutoModel's own refusals: a global batch that is no multiple of local x dp, a pipeline of fewer micro-batches
  // than stages; and a strategy it does not have.
  auto refused = [&](const std::string& from, const std::string& to, const std::string& key) {
    std::string text = base;
    text.replace(text.find(from), from.size(), to);
    try {
      (void)config::read_text(text, "am.yaml");
      ADD_FAILURE() << to;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  };
  refused("global_batch_size: 64", "global_batch_size: 60", "step_scheduler.global_batch_size");
  // Its mesh's refusals (mesh_utils.py): DDP beside TP, replicas as many as the data-parallel ranks.
  refused("  tp_size: 2\n", "  strategy: ddp\n  tp_size: 2\n", "distributed.tp_size");
  refused("dp_replicate_size: 2", "dp_replicate_size: 8", "distributed.dp_replicate_size");
  // dp_size none (AutoModel's loader reads the string as None): the launch decides, so --devices must say it; the
  // global batch is then per rank x the devices' data-parallel ranks.
  std::string launched = base;
  launched.replace(launched.find("dp_size: 8\n  dp_replicate_size: 2\n"), 33, "dp_size: none\n");
  launched.replace(launched.find("  global_batch_size: 64\n"), 24, "");
  config::Loaded lc = config::read_text(launched, "am.yaml");
  app::EstimateRequest rc;
  EXPECT_THROW(config::fill(rc, lc, nlohmann::json::object()), Error);
  // A benchmark section names nodes: the error gives the device counts of 8-GPU nodes and of 4-GPU GB200 trays.
  try {
    app::EstimateRequest rn;
    config::fill(rn, config::read_text(launched + "benchmark: {num_nodes: 2}\n", "am.yaml"), nlohmann::json::object());
    ADD_FAILURE() << "no --devices asked for";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--devices 16 with 8 per H100 / B200 node, 8 with 4 per GB200 tray"), std::string::npos) << e.what();
  }
  config::fill(rc, lc, nlohmann::json{{"devices", 32}});
  EXPECT_EQ(rc.job.training.global_batch, 2 * 16);  // local 2 x (32 / TP 2)
  // A model defined inline (from_config with a Transformers config class): its family from the class's module.
  const std::string proxy = R"(step_scheduler: {global_batch_size: 16, local_batch_size: 2}
distributed: {dp_size: 8, ep_size: 4}
model:
  _target_: nemo_automodel.NeMoAutoModelForCausalLM.from_config
  config:
    _target_: transformers.models.qwen3_moe.configuration_qwen3_moe.Qwen3MoeConfig
    vocab_size: 151936
    hidden_size: 2048
    moe_intermediate_size: 1024
    intermediate_size: 1024
    num_hidden_layers: 2
    num_attention_heads: 8
    num_key_value_heads: 4
    num_experts: 4
    num_experts_per_tok: 2
dataset: {seq_len: 256}
)";
  config::Loaded lp = config::read_text(proxy, "proxy.yaml");
  app::EstimateRequest rp;
  config::fill(rp, lp, nlohmann::json::object());
  EXPECT_EQ(rp.job.model_config.at("model_type"), "qwen3_moe");
  EXPECT_EQ(inline_model(rp.job.model_config, "proxy.yaml").spec.num_experts, 4);
  EXPECT_GT(app::run_estimate(rp).time.step_s, 0);
  refused("tp_size: 2", "tp_size: 1\n  pp_size: 4", "step_scheduler.local_batch_size");
  refused("dp_size: 8", "dp_size: 8\n  strategy: zero", "distributed.strategy");
}

// The plan an estimate prices, as --emit writes it: the request's layout as estimated, its devices, batch and sequence.
config::Plan plan_of(const app::EstimateRequest& r, long long layers) {
  config::Plan p;
  p.layout = app::run_estimate(r).layout;
  p.devices = r.job.devices;
  p.global_batch = r.job.training.global_batch;
  p.seq = r.job.training.seq;
  p.num_layers = layers;
  return p;
}

TEST(Megatron, AnFp8PlanPricedWithFp8WeightsWritesFp8ParamGather) {
  // A plan priced without Transformer Engine's FP8 weight cache (fp8_param_gather, e.g. the nemo profile) must run
  // with --fp8-param-gather, which Megatron takes with the distributed optimizer only.
  config::Loaded l = config::read_file(source("examples/megatron/llama3-70b-h100x64.sh"));
  app::EstimateRequest r;
  config::fill(r, l, nlohmann::json{{"hardware", "h100-sxm"}});
  config::Plan p = plan_of(r, 80);
  p.fp8 = true;
  p.fp8_param_gather = true;
  p.layout.zero = 1;
  EXPECT_NE(config::emit(config::EmitFormat::Megatron, p, &l, r.job.model).find("--fp8-param-gather"), std::string::npos);
  p.layout.zero = 0;
  EXPECT_EQ(config::emit(config::EmitFormat::Megatron, p, &l, r.job.model).find("--fp8-param-gather"), std::string::npos);
  p.layout.zero = 1;
  p.fp8_param_gather = false;
  EXPECT_EQ(config::emit(config::EmitFormat::Megatron, p, &l, r.job.model).find("--fp8-param-gather"), std::string::npos);
}

// NVFP4 (Megatron-LM arguments.py: --fp4-format e2m1, --fp4-recipe nvfp4, --fp4-param-gather): read as NVFP4 GEMMs
// with Transformer Engine's low-precision machinery, written back as the same flags (without --fp8-format: Megatron
// takes one of the two), and refused by a format sapp writes no NVFP4 key for.
TEST(Megatron, Nvfp4FlagsAreReadAndWritten) {
  const std::string dir = test::temp_dir();
  const std::string text = config::read_file(source("examples/megatron/llama3-70b-h100x64.sh")).text;
  const std::size_t at = text.find("--use-mcore-models");
  ASSERT_NE(at, std::string::npos);
  auto with = [&](const std::string& name, const std::string& flags) {
    std::string t = text;
    t.insert(at, flags + " ");
    test::write_file(dir + "/" + name, t);
    return config::read_file(dir + "/" + name);
  };
  const config::Loaded l = with("fp8.sh", "--fp8-format hybrid");
  const config::Loaded nv = with("nvfp4.sh", "--fp4-format e2m1 --fp4-recipe nvfp4 --fp4-param-gather");
  app::EstimateRequest r;
  config::fill(r, nv, nlohmann::json{{"hardware", "gb200"}});
  EXPECT_TRUE(r.job.training.fp4);
  EXPECT_TRUE(r.job.training.fp8);
  EXPECT_TRUE(r.job.training.fp8_param_gather);
  config::Plan p = plan_of(r, 80);
  p.fp8 = true;
  p.fp4 = true;
  const std::string written = config::emit(config::EmitFormat::Megatron, p, &l, r.job.model);  // edits the FP8 script
  EXPECT_NE(written.find("--fp4-format e2m1"), std::string::npos) << written;
  EXPECT_NE(written.find("--fp4-recipe nvfp4"), std::string::npos) << written;
  EXPECT_EQ(written.find("--fp8-format"), std::string::npos) << written;
  EXPECT_THROW(config::check_training_expressible(config::EmitFormat::Torchtitan, nullptr, false, 1, true, true), Error);
  // What sapp prices in NVFP4 though the script keeps it in BF16 is said, not refused.
  const config::Loaded custom = with("custom.sh", "--fp4-format e2m1 --fp4-recipe custom --te-precision-config-file te.yaml");
  const std::string said = fmt::format("{}", fmt::join(custom.warnings, "\n"));
  EXPECT_NE(said.find("--fp4-recipe custom"), std::string::npos) << said;
  EXPECT_NE(said.find("--te-precision-config-file"), std::string::npos) << said;
}

}  // namespace
}  // namespace sapp

// DeepSeek Sparse Attention in a Megatron script (Megatron-Core's --experimental-attention-variant dsa with
// --dsa-indexer-*; MindSpeed-LLM's --index-* spelling): read as DeepSeek-V3.2's family with its indexer, refused when
// a dimension is missing, and written back by --emit megatron (a DSA model must not be written as dense attention).
TEST(Megatron, SparseAttentionIndexerReadAndWritten) {
  const std::string mla =
      "torchrun pretrain_gpt.py --num-layers 4 --hidden-size 1024 --ffn-hidden-size 4096 --num-attention-heads 16 --seq-length 4096 "
      "--micro-batch-size 1 --global-batch-size 16 --vocab-size 32000 --multi-latent-attention --kv-lora-rank 128 --q-lora-rank 256 "
      "--qk-head-dim 64 --qk-pos-emb-head-dim 32 --v-head-dim 64 ";
  auto read = [&](const std::string& flags) { return config::read_text(mla + flags + "\n", "run.sh", config::Format::Megatron); };
  const config::Loaded core =
      read("--experimental-attention-variant dsa --dsa-indexer-n-heads 8 --dsa-indexer-head-dim 64 --dsa-indexer-topk 512 --dsa-indexer-use-sparse-loss");
  EXPECT_EQ(core.model_config.at("model_type"), "deepseek_v32");
  EXPECT_EQ(core.model_config.at("index_n_heads"), 8);
  EXPECT_EQ(core.model_config.at("index_head_dim"), 64);
  EXPECT_EQ(core.model_config.at("index_topk"), 512);
  auto says_dense_loss = [](const config::Loaded& l) {
    return std::any_of(l.warnings.begin(), l.warnings.end(), [](const std::string& w) { return w.find("--dsa-indexer-use-sparse-loss") != std::string::npos; });
  };
  EXPECT_FALSE(says_dense_loss(core));
  EXPECT_TRUE(says_dense_loss(read("--experimental-attention-variant dsa --dsa-indexer-n-heads 8 --dsa-indexer-head-dim 64 --dsa-indexer-topk 512")));
  EXPECT_TRUE(std::find(core.unused.begin(), core.unused.end(), "--dsa-indexer-topk") == core.unused.end());
  const config::Loaded mindspeed = read("--index-n-heads 8 --index-head-dim 64 --index-topk 512 --indexer-loss-coeff 0.01");
  EXPECT_EQ(mindspeed.model_config.at("model_type"), "deepseek_v32");
  EXPECT_EQ(mindspeed.model_config.at("index_topk"), 512);
  EXPECT_EQ(read("").model_config.at("model_type"), "deepseek_v3");
  // MindSpeed-LLM's --enable-dsa-indexer with its defaults for the sizes left out (dsa_indexer_feature.py at c77308a1:
  // 64 heads of 128, top-2048), as its DeepSeek-V3.2 and GLM-5 scripts state it (they were refused).
  const config::Loaded enabled = read("--enable-dsa-indexer --index-topk 1024 --indexer-loss-coeff 1.0");
  EXPECT_EQ(enabled.model_config.at("model_type"), "deepseek_v32");
  EXPECT_EQ(enabled.model_config.at("index_n_heads"), 64);
  EXPECT_EQ(enabled.model_config.at("index_head_dim"), 128);
  EXPECT_EQ(enabled.model_config.at("index_topk"), 1024);
  for (const std::string flags :
       {"--experimental-attention-variant dsa --dsa-indexer-n-heads 8 --dsa-indexer-head-dim 64", "--experimental-attention-variant gated_delta_net"}) {
    try {
      (void)read(flags);
      ADD_FAILURE() << "accepted: " << flags;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("run.sh"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(flags.find("gated") != std::string::npos ? "gated_delta_net" : "--dsa-indexer-topk"), std::string::npos) << e.what();
    }
  }
  const config::Plan p = bundled_plan("deepseek-v3.2", 64, 64, 4096);
  const std::string text = config::emit(config::EmitFormat::Megatron, p, nullptr, "deepseek-v3.2");
  for (const char* line : {"--experimental-attention-variant dsa", "--dsa-indexer-n-heads 64", "--dsa-indexer-head-dim 128", "--dsa-indexer-topk 2048",
                           "--dsa-indexer-use-sparse-loss"})
    EXPECT_NE(text.find(line), std::string::npos) << line << " not in\n" << text;
  const config::Loaded back = config::read_text(text, "back.sh", config::Format::Megatron);
  EXPECT_EQ(back.model_config.at("model_type"), "deepseek_v32");
  EXPECT_EQ(back.model_config.at("index_topk"), 2048);
}

// A new MindFormers file written for a bundled MoE model reads back with the same parameters (its shared experts
// were left out: DeepSeek-V3 read back 2.6 B short), DeepSeek-V3.2's indexer included; torchtitan has no flavour for
// DeepSeek-V3.2 (no DeepSeek Sparse Attention), which is refused rather than written as DeepSeek-V3's.
TEST(Emit, NewFilesKeepTheModelsParameters) {
  const auto& cat = test::catalog();
  for (const char* name : {"deepseek-v3", "deepseek-v3.2", "qwen3-30b-a3b", "mixtral-8x7b"}) {
    const std::string text = config::emit(config::EmitFormat::MindFormers, bundled_plan(name, 64, 64, 4096, 3), nullptr, name);
    const config::Loaded back = config::read_text(text, "back.yaml", config::Format::MindFormers);
    const model::Model read = model::resolve(model::model_from_json(back.model_config, "back.yaml"), cat.records, cat.profiles);
    EXPECT_DOUBLE_EQ(read.params().total, test::bundled(name).params().total) << name << "\n" << text;
  }
  // Megatron: the MLP's activation as the model runs it (squared ReLU for Nemotron's relu2, GPT-3's plain GeLU; every
  // model had been written --swiglu, a gated MLP with more weights than Nemotron-4 340B or GPT-3 have).
  for (const char* name : {"nemotron-3-8b", "nemotron-4-340b", "llama3-8b", "qwen3-30b-a3b"}) {
    const std::string text = config::emit(config::EmitFormat::Megatron, bundled_plan(name, 64, 64, 4096), nullptr, name);
    const config::Loaded back = config::read_text(text, "back.sh", config::Format::Megatron);
    const model::Model read = model::resolve(model::model_from_json(back.model_config, "back.sh"), cat.records, cat.profiles);
    EXPECT_NEAR(read.params().total, test::bundled(name).params().total, 1e-3 * test::bundled(name).params().total) << name << "\n" << text;
  }
  try {
    (void)config::emit(config::EmitFormat::Torchtitan, bundled_plan("deepseek-v3.2", 64, 64, 4096, 3), nullptr, "deepseek-v3.2");
    ADD_FAILURE() << "DeepSeek-V3.2 written as a torchtitan flavour";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("none of torchtitan's bundled flavours"), std::string::npos) << e.what();
  }
}

// Megatron-Core's hybrid stack (pretrain_mamba.py): --hybrid-override-pattern with the --mamba-* dimensions read as
// the nemotron_h family (Megatron-Core's MambaMixer defaults where a flag is missing), written back by --emit megatron
// with --squared-relu (no longer --swiglu for a relu2 model) and read back with the same parameters; MindFormers
// refuses to write it, and a Gated DeltaNet model is refused by --emit megatron (core_v0.14.0 has no flag for it).
// Megatron-Core's hybrid stack (MambaStack, core_v0.14.0 to core_v0.16.x: _select_layers_for_pipeline_parallel)
// gives each stage num_layers // PP layers, asserts that no virtual pipeline is set and reads no split flag: a script
// stating one is refused by flag, and --emit megatron refuses a plan it cannot state and writes no layout for an even one.
// A pretrain_mamba.py launch over PP 2 without its pattern (the hybrid tests add it).
constexpr const char* kHybridScriptPp2 =
    "torchrun pretrain_mamba.py --hidden-size 1024 --ffn-hidden-size 2048 --num-attention-heads 16 --seq-length 4096 --micro-batch-size 1 "
    "--global-batch-size 64 --vocab-size 32000 --squared-relu --is-hybrid-model --mamba-num-heads 32 --disable-bias-linear "
    "--pipeline-model-parallel-size 2 ";

TEST(Megatron, HybridStackPipelineIsEvenWithoutVirtualStages) {
  const std::string head = std::string(kHybridScriptPp2) + "--hybrid-override-pattern M*M-M*M- ";
  const config::Loaded even = config::read_text(head + "--num-layers 8\n", "run.sh", config::Format::Megatron);
  EXPECT_EQ(even.values.at("pp"), 2);
  for (const auto& [extra, flag] :
       std::vector<std::pair<std::string, std::string>>{{"--num-layers 8 --num-virtual-stages-per-pipeline-rank 2", "--num-virtual-stages-per-pipeline-rank"},
                                                        {"--num-layers 8 --pipeline-model-parallel-layout \"E,t*3|t*5,L\"", "--pipeline-model-parallel-layout"},
                                                        {"--num-layers 8 --decoder-first-pipeline-num-layers 3", "--decoder-first-pipeline-num-layers"}}) {
    try {
      (void)config::read_text(head + extra + "\n", "run.sh", config::Format::Megatron);
      ADD_FAILURE() << extra << " read for a hybrid stack";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("run.sh: " + flag), std::string::npos) << e.what();
    }
  }

  config::Plan p = bundled_plan("nemotron-3-nano-30b-a3b", 64, 512, 8192, 1, 8);
  p.layout.dp = 16;
  p.layout.pp = 4;
  const std::string text = config::emit(config::EmitFormat::Megatron, p, nullptr, "nano");
  EXPECT_NE(text.find("--pipeline-model-parallel-size 4"), std::string::npos) << text;
  EXPECT_EQ(text.find("--pipeline-model-parallel-layout"), std::string::npos) << text;
  config::Plan interleaved = p;
  interleaved.layout.vpp = 2;
  config::Plan uneven = p;
  uneven.split = plan::StageSplit{};
  uneven.split->layers = {{14, 13, 13, 12}};
  config::Plan eight = p;
  eight.layout.dp = 8;
  eight.layout.pp = 8;
  for (const auto& [plan, why] : std::vector<std::pair<config::Plan, std::string>>{
           {interleaved, "runs no virtual pipeline"}, {uneven, "the split 14,13,13,12 is uneven"}, {eight, "52 layers over PP 8"}}) {
    try {
      (void)config::emit(config::EmitFormat::Megatron, plan, nullptr, "nano");
      ADD_FAILURE() << why << ": written";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  }
}

// From core_v0.17 (megatron/core/ssm/mamba_hybrid_layer_allocation.py, arguments.py) --hybrid-layer-pattern states a
// hybrid stack's pipeline layout as '|' cuts: PP x VPP segments, segment v x PP + r on rank r's chunk v, VPP derived
// from the count; no virtual-pipeline or split flag beside it, --decoder-first/last-pipeline-num-layers only without
// cuts, the layer count taken from the pattern. Such a file is read with its split, a search writing it keeps
// interleaved and uneven hybrid layouts, and --emit megatron writes the plan's split as the pattern's cuts (the quoted
// value replaced, nothing of it left behind), read back to the same split.
TEST(Megatron, HybridLayerPatternCutsAreThePipelineLayout) {
  const std::string head = kHybridScriptPp2;
  const config::Loaded cut = config::read_text(head + "--num-layers 20 --hybrid-layer-pattern \"M*M-|M*M-M|*M-|M*M-M*\"\n", "run.sh", config::Format::Megatron);
  EXPECT_TRUE(cut.model_error.empty()) << cut.model_error;
  EXPECT_TRUE(cut.hybrid_pipeline_cuts);
  EXPECT_EQ(cut.model_config.at("hybrid_override_pattern"), "M*M-M*M-M*M-M*M-M*");
  EXPECT_EQ(cut.model_config.at("num_hidden_layers"), 18);  // the pattern's count, not --num-layers 20 (warned)
  EXPECT_FALSE(cut.warnings.empty());
  EXPECT_EQ(cut.values.at("vpp"), 2);
  ASSERT_TRUE(cut.split);
  EXPECT_EQ(cut.split->layers, (std::vector<std::vector<long long>>{{4, 5}, {3, 6}}));
  EXPECT_FALSE(config::expressible(config::EmitFormat::Megatron, &cut).hybrid_even_pipeline);

  const config::Loaded uneven =
      config::read_text(head + "--hybrid-layer-pattern M*M-M*M- --decoder-first-pipeline-num-layers 3\n", "run.sh", config::Format::Megatron);
  ASSERT_TRUE(uneven.split);
  EXPECT_EQ(uneven.split->layers, (std::vector<std::vector<long long>>{{3, 5}}));
  const config::Loaded older = config::read_text(head + "--num-layers 8 --hybrid-override-pattern M*M-M*M-\n", "run.sh", config::Format::Megatron);
  EXPECT_FALSE(older.hybrid_pipeline_cuts);
  EXPECT_TRUE(config::expressible(config::EmitFormat::Megatron, &older).hybrid_even_pipeline);
  const config::Loaded mtp = config::read_text(head + "--hybrid-layer-pattern \"M*M-|M*M-/MM\"\n", "run.sh", config::Format::Megatron);
  EXPECT_NE(mtp.model_error.find("multi-token prediction"), std::string::npos) << mtp.model_error;

  for (const auto& [extra, why] : std::vector<std::pair<std::string, std::string>>{
           {"--hybrid-layer-pattern \"M*M-|M*M-|M*\"", "3 pipeline segments do not divide over PP 2"},
           {"--hybrid-layer-pattern \"M*M-|M*M-\" --num-virtual-stages-per-pipeline-rank 1", "--num-virtual-stages-per-pipeline-rank: Megatron-Core"},
           {"--hybrid-layer-pattern \"M*M-|M*M-\" --decoder-first-pipeline-num-layers 3", "--decoder-first-pipeline-num-layers: the '|' cuts"},
           {"--hybrid-layer-pattern M*M-M*M-M --num-layers 9", "9 layers do not divide over PP 2"},
           {"--hybrid-layer-pattern M*M- --hybrid-override-pattern M*M-", "are both stated"}}) {
    test::expect_error([&, extra = extra] { (void)config::read_text(head + extra + "\n", "run.sh", config::Format::Megatron); }, why, extra);
  }

  config::Plan p = plan_of(plan::Layout{}, 8, 64, 4096, 0);
  p.layout.dp = 4;
  p.layout.pp = 2;
  p.layout.vpp = 2;
  p.model = inline_model(cut.model_config, "run.sh").spec;
  p.num_layers = 18;
  p.split = plan::StageSplit{};
  p.split->layers = {{4, 5}, {5, 4}};
  const std::string text = config::emit(config::EmitFormat::Megatron, p, &cut, "h");
  EXPECT_NE(text.find("--hybrid-layer-pattern \"M*M-|M*M-M|*M-M*|M-M*\""), std::string::npos) << text;
  EXPECT_EQ(text.find("M*M-|M*M-M|*M-|M*M-M*"), std::string::npos) << text;  // the file's own cuts are gone
  EXPECT_EQ(text.find("--num-virtual-stages-per-pipeline-rank"), std::string::npos) << text;
  const config::Loaded back = config::read_text(text, "back.sh", config::Format::Megatron);
  ASSERT_TRUE(back.split);
  EXPECT_EQ(back.split->layers, p.split->layers);
  EXPECT_EQ(back.values.at("vpp"), 2);
  config::Plan v_shape = p;
  v_shape.dualpipe_v = true;
  test::expect_error([&] { (void)config::emit(config::EmitFormat::Megatron, v_shape, &cut, "h"); }, "runs no DualPipe-V", "DualPipe-V");
  // Without a core_v0.17 file to edit, the plan is written for MambaStack before it: refused.
  test::expect_error([&] { (void)config::emit(config::EmitFormat::Megatron, p, nullptr, "h"); }, "runs no virtual pipeline", "no file to edit");
}

// A quoted value of a flag the plan rewrites (--pipeline-model-parallel-layout "Et*3|t*5L", or a quoted variable:
// "$TP") is replaced whole, a variable's plain assignment edited: the old value was left behind as a stray argument,
// which Megatron-LM's argparse refuses. Other quoted expansions ("$DATA" of a flag sapp does not write) stay.
TEST(Megatron, QuotedLayoutIsReplacedWhole) {
  const std::string script =
      "TP=4\ntorchrun pretrain_gpt.py --num-layers 8 --hidden-size 1024 --ffn-hidden-size 2048 --num-attention-heads 16 --seq-length 4096 "
      "--micro-batch-size 1 --global-batch-size 64 --vocab-size 32000 --swiglu --pipeline-model-parallel-size 2 --pipeline-model-parallel-layout "
      "\"Et*3|t*5L\" --bf16 --data-path \"$DATA\" --tensor-model-parallel-size \"$TP\"\n";
  const config::Loaded original = config::read_text(script, "run.sh", config::Format::Megatron);
  config::Plan p = plan_of(plan::Layout{}, 8, 64, 4096, 0);
  p.layout.dp = 4;
  p.layout.pp = 2;
  p.model = inline_model(original.model_config, "run.sh").spec;
  p.num_layers = 8;
  p.split = plan::StageSplit{};
  p.split->layers = {{4, 4}};
  const std::string text = config::emit(config::EmitFormat::Megatron, p, &original, "g");
  EXPECT_EQ(text.find("Et*3|t*5L"), std::string::npos) << text;
  EXPECT_NE(text.find("--pipeline-model-parallel-layout \"E,t*4|t*4,L\""), std::string::npos) << text;
  EXPECT_NE(text.find("--data-path \"$DATA\""), std::string::npos) << text;
  EXPECT_NE(text.find("TP=1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("--tensor-model-parallel-size \"$TP\" --"), std::string::npos) << text;  // no second value
}

TEST(Megatron, HybridMambaStackReadAndWritten) {
  const std::string script =
      "torchrun pretrain_mamba.py --num-layers 4 --hidden-size 1024 --ffn-hidden-size 2048 --num-attention-heads 16 --group-query-attention "
      "--num-query-groups 2 --seq-length 4096 --micro-batch-size 1 --global-batch-size 16 --vocab-size 32000 --squared-relu --is-hybrid-model "
      "--hybrid-override-pattern M*M- --mamba-num-heads 32 --mamba-head-dim 64 --disable-bias-linear\n";
  const config::Loaded l = config::read_text(script, "run.sh", config::Format::Megatron);
  EXPECT_EQ(l.model_config.at("model_type"), "nemotron_h");
  EXPECT_EQ(l.model_config.at("hybrid_override_pattern"), "M*M-");
  EXPECT_EQ(l.model_config.at("mamba_num_heads"), 32);
  EXPECT_EQ(l.model_config.at("n_groups"), 8);          // --mamba-num-groups' default
  EXPECT_EQ(l.model_config.at("ssm_state_size"), 128);  // --mamba-state-dim's default
  EXPECT_TRUE(l.model_error.empty()) << l.model_error;
  const config::Loaded odd = config::read_text(
      "torchrun pretrain_mamba.py --num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 4096 --micro-batch-size 1 "
      "--global-batch-size 16 --vocab-size 32000 --hybrid-override-pattern M*G-\n",
      "run.sh", config::Format::Megatron);
  EXPECT_NE(odd.model_error.find("--hybrid-override-pattern"), std::string::npos) << odd.model_error;

  const auto& cat = test::catalog();
  config::Plan p = bundled_plan("nemotron-3-nano-30b-a3b", 16, 64, 8192, 1, 8);
  std::vector<std::string> notes;
  const std::string text = config::emit(config::EmitFormat::Megatron, p, nullptr, "nano", &notes);
  for (const char* line : {"pretrain_mamba.py", "--squared-relu", "--is-hybrid-model", "--mamba-num-heads 64", "--mamba-state-dim 128"})
    EXPECT_NE(text.find(line), std::string::npos) << line << " not in\n" << text;
  EXPECT_EQ(text.find("--swiglu"), std::string::npos) << text;
  const config::Loaded back = config::read_text(text, "back.sh", config::Format::Megatron);
  const model::Model read = model::resolve(model::model_from_json(back.model_config, "back.sh"), cat.records, cat.profiles);
  EXPECT_DOUBLE_EQ(read.params().total, test::bundled("nemotron-3-nano-30b-a3b").params().total);
  for (const auto format : {config::EmitFormat::MindFormers, config::EmitFormat::Torchtitan}) {
    try {
      (void)config::emit(format, p, nullptr, "nano");
      ADD_FAILURE() << "a hybrid Mamba stack written for a framework that cannot state it";
    } catch (const Error&) {
    }
  }
  // Gated DeltaNet in Megatron-Core's own flags (core_v0.17.0), with a note that they are newer than core_v0.14.0;
  // read back as the same model. (It was refused: core_v0.14.0 states no flag for it.)
  std::vector<std::string> next_notes;
  const std::string next =
      config::emit(config::EmitFormat::Megatron, bundled_plan("qwen3-next-80b-a3b", 16, 64, 8192, 1, 8), nullptr, "qwen3-next", &next_notes);
  EXPECT_NE(next.find("--experimental-attention-variant gated_delta_net"), std::string::npos) << next;
  EXPECT_NE(next.find("--linear-attention-freq 4"), std::string::npos) << next;
  EXPECT_TRUE(std::any_of(next_notes.begin(), next_notes.end(), [](const std::string& n) { return n.find("gated_delta_net") != std::string::npos; }));
  const config::Loaded next_back = config::read_text(next, "next.sh", config::Format::Megatron);
  EXPECT_DOUBLE_EQ(inline_model(next_back.model_config, "next.sh").params().total, test::bundled("qwen3-next-80b-a3b").params().total);
}

namespace sapp {
namespace {

// Megatron-Bridge's ConfigContainer YAML (the run_config.yaml a run writes beside its checkpoints): its model section
// is Megatron-Core's TransformerConfig, read as the Megatron-LM arguments its fields are; values name their field,
// and so do errors. The example states Llama 3 8B inline: priced as the bundled model with the same layout and
// precision stated as options.
TEST(MegatronBridge, RunConfigIsReadAsTheMegatronArgumentsItsFieldsAre) {
  const std::string file = source("examples/megatron-bridge/llama3-8b-run_config.yaml");
  const std::string text = io::read_text(file);
  EXPECT_EQ(config::detect(text, file), config::Format::Megatron);
  const config::Loaded l = config::read_file(file);
  EXPECT_EQ(l.dialect, config::kMegatronBridgeDialect);
  EXPECT_EQ(config::read_as(l), config::kMegatronBridgeDialect);
  const nlohmann::json& v = l.values;
  EXPECT_EQ(v.at("framework"), "megatron_bridge");
  EXPECT_EQ(v.at("cp").get<long long>(), 2);
  EXPECT_EQ(v.at("global_batch").get<long long>(), 128);
  EXPECT_EQ(v.at("seq").get<long long>(), 8192);
  EXPECT_EQ(v.at("zero").get<int>(), 1);
  EXPECT_TRUE(v.at("fp8").get<bool>());
  EXPECT_TRUE(v.at("fp8_param_gather").get<bool>());
  EXPECT_EQ(l.origin.at("cp"), "model.context_parallel_size");
  EXPECT_EQ(l.origin.at("global_batch"), "train.global_batch_size");
  EXPECT_EQ(l.origin.at("grad_bytes"), "mixed_precision.grad_reduce_in_fp32");
  app::EstimateRequest r;
  config::fill(r, l, nlohmann::json{{"devices", 8}});
  EXPECT_EQ(r.job.training.gradient_bytes(), 2);
  const report::EstimateReport from_yaml = app::run_estimate(r);
  app::EstimateRequest o;
  config::fill(o,
               config::read_text("model: llama3-8b\nframework: megatron_bridge\ndevices: 8\nglobal_batch: 128\nseq: 8192\ncp: 2\nmbs: 1\nzero: 1\n"
                                 "fp8: true\nfp8_param_gather: true\ngrad_bytes: 2\n",
                                 "options.yaml"),
               nlohmann::json::object());
  const report::EstimateReport from_options = app::run_estimate(o);
  EXPECT_DOUBLE_EQ(from_yaml.time.step_s, from_options.time.step_s);
  EXPECT_DOUBLE_EQ(from_yaml.memory.peak_bytes, from_options.memory.peak_bytes);
  EXPECT_DOUBLE_EQ(from_yaml.subject.params.total, from_options.subject.params.total);
  // A preset by name (mixed_precision.py): MXFP8 gathers FP8 weights, and every preset reduces gradients in fp32.
  auto edited = [&text](const std::string& from, const std::string& to) {
    std::string t = text;
    const std::size_t at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) t.replace(at, from.size(), to);
    return t;
  };
  const std::string mp_block = text.substr(text.find("mixed_precision:"), text.find("model:") - text.find("mixed_precision:"));
  const config::Loaded preset = config::read_text(edited(mp_block, "mixed_precision: bf16_with_mxfp8_mixed\n"), "preset.yaml");
  EXPECT_TRUE(preset.values.at("fp8").get<bool>());
  EXPECT_TRUE(preset.values.at("fp8_param_gather").get<bool>());
  EXPECT_EQ(preset.values.at("grad_bytes").get<int>(), 4);  // the preset's, laid over ddp.grad_reduce_in_fp32: false
  // Current scaling gathers FP8 weights too (mixed_precision.py sets fp8_param_gather True); the sub-channel ones do not.
  EXPECT_TRUE(
      config::read_text(edited(mp_block, "mixed_precision: bf16_with_fp8_current_scaling_mixed\n"), "cs.yaml").values.at("fp8_param_gather").get<bool>());
  EXPECT_FALSE(
      config::read_text(edited(mp_block, "mixed_precision: bf16_with_fp8_subchannel_scaling_mixed\n"), "sub.yaml").values.at("fp8_param_gather").get<bool>());
  const config::Loaded bf16 = config::read_text(edited(mp_block, "mixed_precision: bf16_mixed\n"), "bf16.yaml");
  EXPECT_FALSE(bf16.values.value("fp8", false));
  EXPECT_EQ(bf16.values.at("grad_bytes").get<int>(), 4);
  // Errors name the field, the file and the value.
  test::expect_error([&] { (void)config::read_text(edited("num_layers: 32", "num_layers: abc"), "bad.yaml"); }, "bad.yaml: model.num_layers: 'abc'");
  test::expect_error([&] { (void)config::read_text(edited("recompute_granularity: null", "recompute_granularity: fulll"), "bad.yaml"); },
                     "bad.yaml: model.recompute_granularity: 'fulll'");
  test::expect_error([&] { (void)config::read_text(edited(mp_block, "mixed_precision: int8_mixed\n"), "bad.yaml"); },
                     "bad.yaml: mixed_precision: 'int8_mixed'");
  test::expect_error(
      [&] {
        app::EstimateRequest odd;
        config::fill(odd, config::read_text(edited("micro_batch_size: 1", "micro_batch_size: 3"), "bad.yaml"), nlohmann::json{{"devices", 8}});
      },
      "bad.yaml: train.global_batch_size (with 8 devices): 128 is not a multiple of DP x micro-batch size = 4 x 3");
  test::expect_error(
      [&] {
        app::EstimateRequest none;
        config::fill(none, l, nlohmann::json::object());
      },
      "states no device count (its launch does): give --devices");
}

// A dump's shape (tests/configs/megatron-bridge-dump.yaml): every field a dense model's dump repeats (moe_*, mamba_*,
// softmax_type vanilla) is harmless, the tied embedding and grouped-query attention are Llama 3.2 1B's, and the
// sequence trained is the dataset's when the model's stayed at the provider's maximum (said).
TEST(MegatronBridge, ADumpOfADenseModelIsThatModel) {
  const config::Loaded l = config::read_file(source("tests/configs/megatron-bridge-dump.yaml"));
  EXPECT_DOUBLE_EQ(inline_model(l.model_config, "dump").params().total, test::bundled("llama-3.2-1b").params().total);
  EXPECT_EQ(l.values.at("seq").get<long long>(), 1024);
  EXPECT_EQ(l.origin.at("seq"), "dataset.sequence_length");
  EXPECT_TRUE(std::any_of(l.warnings.begin(), l.warnings.end(), [](const std::string& w) {
    return w.find("model.seq_length 131072 differs from dataset.sequence_length 1024") != std::string::npos;
  }));
  EXPECT_NE(std::find(l.unused.begin(), l.unused.end(), "model.moe_router_topk"), l.unused.end());
  EXPECT_EQ(l.values.at("grad_bytes").get<int>(), 4);
  EXPECT_FALSE(l.values.value("fp8", false));  // mixed_precision.fp8: null (and so no FP8 weights to gather)
  app::EstimateRequest r;
  config::fill(r, l, nlohmann::json{{"devices", 8}});
  EXPECT_EQ(r.layout.zero, 1);
  EXPECT_FALSE(r.job.training.fp8);
}

// Megatron-Core's pipeline layout as Megatron-Bridge's DeepSeek recipes state it, a list of stages of layer names, is its
// string; a layout object as a dump writes it is left out, as Megatron-Bridge's own loader leaves it, and said.
TEST(MegatronBridge, APipelineLayoutAsAListOfStagesIsItsString) {
  const std::string text = io::read_text(source("tests/configs/megatron-bridge-deepseek-v3.yaml"));
  const std::string stated = "pipeline_model_parallel_layout: \"Et*4|(t*4|)*14tmL\"";
  ASSERT_NE(text.find(stated), std::string::npos);
  std::string stages = "[[embedding, decoder, decoder, decoder, decoder]";
  for (int i = 0; i < 14; ++i) stages += ", [decoder, decoder, decoder, decoder]";
  stages += ", [decoder, mtp, loss]]";
  std::string listed = text;
  listed.replace(listed.find(stated), stated.size(), "pipeline_model_parallel_layout: " + stages);
  const config::Loaded from_string = config::read_text(text, "string.yaml");
  const config::Loaded from_list = config::read_text(listed, "list.yaml");
  ASSERT_TRUE(from_string.split.has_value());
  ASSERT_TRUE(from_list.split.has_value());
  EXPECT_EQ(from_list.split->layers, from_string.split->layers);
  EXPECT_EQ(from_list.origin.at("vpp"), from_string.origin.at("vpp"));
  std::string bad = listed;
  bad.replace(bad.find("mtp, loss"), 9, "mtp, head");
  test::expect_error([&] { (void)config::read_text(bad, "bad.yaml"); }, "bad.yaml: model.pipeline_model_parallel_layout: '\"head\"' is not a layer");
  std::string object = text;
  object.replace(object.find(stated), stated.size(), "pipeline_model_parallel_layout:\n    pipeline_model_parallel_size: 8");
  const config::Loaded dropped = config::read_text(object, "object.yaml");
  EXPECT_FALSE(dropped.split.has_value());
  EXPECT_TRUE(std::any_of(dropped.warnings.begin(), dropped.warnings.end(),
                          [](const std::string& w) { return w.find("model.pipeline_model_parallel_layout: a layout object") != std::string::npos; }));
}

// --emit megatron-bridge edits the YAML's layout fields as the Megatron writer states the plan, keeping its model,
// precision and everything else; the edited file reads back as the plan.
TEST(MegatronBridge, EmitEditsTheLayoutFieldsAndReadsBack) {
  const std::string file = source("examples/megatron-bridge/llama3-8b-run_config.yaml");
  const config::Loaded original = config::read_file(file);
  plan::Layout layout;
  layout.dp = 2;
  layout.tp = 2;
  layout.sp = true;
  layout.pp = 2;
  layout.vpp = 2;
  layout.cp = 2;
  layout.mbs = 1;
  layout.micro_batches = 64;
  layout.zero = 1;
  layout.recompute = plan::Recompute::Selective;
  config::Plan p = plan_of(layout, 16, 128, 8192, 32);
  p.fp8 = true;
  p.dp_overlap = true;
  std::vector<std::string> notes;
  const std::string written = config::emit(config::EmitFormat::MegatronBridge, p, &original, "llama3-8b", &notes);
  EXPECT_NE(written.find("_target_: megatron.bridge.models.llama.llama_provider.Llama3ModelProvider8B"), std::string::npos);  // the rest kept
  EXPECT_NE(written.find("# checkpoint), cut to the sections sapp reads"), std::string::npos);                                // comments too
  EXPECT_TRUE(std::any_of(notes.begin(), notes.end(), [](const std::string& n) { return n.find("runs on 16 devices") != std::string::npos; }));
  const config::Loaded back = config::read_text(written, "back.yaml");
  app::EstimateRequest r;
  config::fill(r, back, nlohmann::json{{"devices", 16}});
  EXPECT_EQ(r.layout.tp, 2);
  EXPECT_TRUE(r.layout.sp);
  EXPECT_EQ(r.layout.pp, 2);
  EXPECT_EQ(r.layout.vpp, 2);
  EXPECT_EQ(r.layout.cp, 2);
  EXPECT_EQ(r.layout.zero, 1);
  EXPECT_EQ(r.layout.recompute, plan::Recompute::Selective);
  EXPECT_EQ(r.job.training.global_batch, 128);
  EXPECT_TRUE(r.job.training.fp8);
  // A plan the file's model is kept for; without a Megatron-Bridge file to edit, refused by name.
  test::expect_error([&] { (void)config::emit(config::EmitFormat::MegatronBridge, p, nullptr, "llama3-8b"); },
                     "edits the Megatron-Bridge YAML given with --from");
  const auto cli = test::run_sapp("estimate --model llama3-8b --devices 8 --emit megatron-bridge -o /dev/null");
  EXPECT_EQ(cli.status, 2) << cli.err;
  EXPECT_NE(cli.err.find("give --from that file"), std::string::npos) << cli.err;
}

// A recipe's override YAML (Megatron-Bridge's examples: model / train / dataset sections over a Python recipe): the
// layout it states is read, the model must come from the command line, and what it leaves to its recipe is said.
TEST(MegatronBridge, OverrideYamlNeedsTheModelAndSaysWhatItLeavesToItsRecipe) {
  const std::string text =
      "dataset:\n  seq_length: 4096\ntrain:\n  global_batch_size: 64\n  micro_batch_size: 2\nrng:\n  seed: 1234\nmodel:\n  seq_length: 4096\n"
      "  tensor_model_parallel_size: 2\n  pipeline_model_parallel_size: 1\n";
  EXPECT_EQ(config::detect(text, "override.yaml"), config::Format::Megatron);
  const config::Loaded l = config::read_text(text, "override.yaml");
  EXPECT_EQ(l.values.at("tp").get<long long>(), 2);
  EXPECT_EQ(l.origin.at("tp"), "model.tensor_model_parallel_size");
  EXPECT_TRUE(std::any_of(l.warnings.begin(), l.warnings.end(), [](const std::string& w) { return w.find("a recipe's override YAML") != std::string::npos; }));
  test::expect_error(
      [&] {
        app::EstimateRequest r;
        config::fill(r, l, nlohmann::json{{"devices", 8}});
      },
      "override.yaml: states no model");
  // Knowledge distillation (a teacher beside the student) is refused by name; a vision-language model's keys and a
  // LoRA section are read as such.
  test::expect_error([&] { (void)config::read_text(text + "  teacher:\n    tensor_model_parallel_size: 2\n", "kd.yaml"); },
                     "kd.yaml: model.teacher: knowledge distillation");
  const config::Loaded vl = config::read_text(text + "  freeze_vision_model: false\npeft:\n  _target_: megatron.bridge.peft.lora.LoRA\n  dim: 16\n", "vl.yaml");
  EXPECT_TRUE(std::any_of(vl.warnings.begin(), vl.warnings.end(),
                          [](const std::string& w) { return w.find("model.freeze_vision_model: a vision-language") != std::string::npos; }));
  EXPECT_EQ(vl.values.at("lora_rank").get<long long>(), 16);
  EXPECT_EQ(vl.origin.at("lora_rank"), "peft.dim");
  app::EstimateRequest r;
  config::fill(r, l, nlohmann::json{{"devices", 8}, {"model", "llama3-8b"}});
  EXPECT_EQ(r.layout.tp, 2);
  EXPECT_EQ(r.layout.mbs, 2);
  EXPECT_EQ(r.job.training.global_batch, 64);
  EXPECT_GT(app::run_estimate(r).time.step_s, 0);
}

}  // namespace
}  // namespace sapp

namespace sapp {
namespace {

// torchrun's processes per node x nodes, each within the flag limit, may not overflow: refused by name (it was a signed
// overflow, undefined behaviour, in both launch readers).
TEST(Megatron, ATorchrunWorldBeyondTheLimitIsRefused) {
  for (const char* trainer : {"pretrain_gpt.py --num-layers 2 --hidden-size 64 --num-attention-heads 4", "train_fsdp2.py"}) {
    const std::string script = std::string("torchrun --nproc_per_node 1099511627776 --nnodes 1099511627776 ") + trainer + "\n";
    test::expect_error([&] { (void)config::read_text(script, "huge.sh", config::Format::Megatron); }, "huge.sh: --nnodes: 1099511627776 nodes x", trainer);
  }
}

}  // namespace
}  // namespace sapp
