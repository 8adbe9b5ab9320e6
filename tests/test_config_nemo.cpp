// NeMo 1.x's GPT training YAML (NeMo Framework Launcher's conf/training): read as the Megatron-LM arguments its
// fields are, its OmegaConf interpolations resolved, and written back by --emit nemo. Expected values are the
// example's own stated values (examples/nemo/llama3-70b-h100x128.yaml).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "app/app.hpp"
#include "config/config.hpp"
#include "core/files.hpp"
#include "helpers.hpp"
#include "model/model_spec.hpp"

namespace sapp {
namespace {

std::string nemo_example() { return std::string(SAPP_SOURCE_DIR) + "/examples/nemo/llama3-70b-h100x128.yaml"; }

// The example with each `from` replaced by its `to` (which must be in it).
std::string nemo_edited(std::initializer_list<std::pair<std::string, std::string>> edits) {
  std::string t = io::read_text(nemo_example());
  for (const auto& [from, to] : edits) {
    const std::size_t at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) t.replace(at, from.size(), to);
  }
  return t;
}
std::string nemo_edited(const std::string& from, const std::string& to) { return nemo_edited({{from, to}}); }

// The parameters of the model a config defines inline, as sapp prices it.
double inline_params(const nlohmann::json& model_config) {
  const auto& cat = test::catalog();
  return model::resolve(model::model_from_json(model_config, "inline"), cat.records, cat.profiles).params().total;
}

// Its fields are Megatron-LM's arguments: priced as the same launch stated as a Megatron script, with the world of
// trainer.num_nodes x trainer.devices, NeMo's profile, and fp32 gradients (optim.grad_sync_dtype unset).
TEST(Nemo, LauncherYamlIsReadAsTheMegatronLaunchItsFieldsAre) {
  const std::string text = io::read_text(nemo_example());
  EXPECT_EQ(config::detect(text, "nemo.yaml"), config::Format::Megatron);
  const config::Loaded l = config::read_file(nemo_example());
  EXPECT_EQ(l.dialect, config::kNemoDialect);
  const nlohmann::json& v = l.values;
  EXPECT_EQ(v.at("framework"), "nemo");
  EXPECT_EQ(v.at("devices").get<long long>(), 128);
  EXPECT_EQ(v.at("tp").get<long long>(), 4);
  EXPECT_EQ(v.at("pp").get<long long>(), 4);
  EXPECT_EQ(v.at("vpp").get<long long>(), 10);
  EXPECT_EQ(v.at("cp").get<long long>(), 2);
  EXPECT_EQ(v.at("global_batch").get<long long>(), 256);
  EXPECT_EQ(v.at("seq").get<long long>(), 8192);
  EXPECT_EQ(v.at("zero").get<int>(), 1);
  EXPECT_EQ(v.at("grad_bytes").get<int>(), 4);
  EXPECT_EQ(l.origin.at("tp"), "model.tensor_model_parallel_size");
  EXPECT_EQ(l.origin.at("global_batch"), "model.global_batch_size");
  EXPECT_EQ(l.origin.at("seq"), "model.data.seq_length");  // ${training.model.encoder_seq_length}, resolved
  const std::string script =
      "torchrun --nproc_per_node 8 --nnodes 16 pretrain_gpt.py --bf16 --normalization RMSNorm --swiglu --position-embedding-type rope "
      "--group-query-attention --num-query-groups 8 --seq-length 8192 --tokenizer-type HuggingFaceTokenizer --tokenizer-model "
      "meta-llama/Meta-Llama-3.1-70B --use-distributed-optimizer --num-layers 80 --hidden-size 8192 --ffn-hidden-size 28672 "
      "--num-attention-heads 64 --make-vocab-size-divisible-by 128 --hidden-dropout 0.0 --attention-dropout 0.0 --disable-bias-linear "
      "--untie-embeddings-and-output-weights --tensor-model-parallel-size 4 --pipeline-model-parallel-size 4 "
      "--num-virtual-stages-per-pipeline-rank 10 --context-parallel-size 2 --sequence-parallel --tp-comm-overlap --micro-batch-size 1 "
      "--global-batch-size 256 --overlap-grad-reduce --overlap-param-gather";
  app::EstimateRequest from_yaml;
  config::fill(from_yaml, l, nlohmann::json::object());
  app::EstimateRequest from_script;
  config::fill(from_script, config::read_text(script, "launch.sh"), nlohmann::json{{"framework", "nemo"}, {"grad_bytes", 4}});
  const report::EstimateReport a = app::run_estimate(from_yaml);
  const report::EstimateReport b = app::run_estimate(from_script);
  EXPECT_DOUBLE_EQ(a.time.step_s, b.time.step_s);
  EXPECT_DOUBLE_EQ(a.memory.peak_bytes, b.memory.peak_bytes);
  EXPECT_DOUBLE_EQ(a.subject.params.total, b.subject.params.total);
  EXPECT_EQ(from_yaml.job.training.gradient_bytes(), 4);
}

// NeMo's precision, optimizer and sharding keys: bf16 gradient sync, AMP without megatron_amp_O2 (fp32 weights, their
// own Adam master), PyTorch FSDP, FP8 with its format, NeMo's optimizer without sharding.
TEST(Nemo, PrecisionOptimizerAndShardingAsNemoBuildsThem) {
  const config::Loaded bf16 = config::read_text(nemo_edited("    lr: 0.00015\n", "    lr: 0.00015\n    grad_sync_dtype: bf16\n"), "bf16.yaml");
  EXPECT_EQ(bf16.values.at("grad_bytes").get<int>(), 2);
  EXPECT_EQ(bf16.origin.at("grad_bytes"), "model.optim.grad_sync_dtype");
  const config::Loaded amp = config::read_text(nemo_edited("megatron_amp_O2: true", "megatron_amp_O2: false"), "amp.yaml");
  EXPECT_EQ(amp.values.at("param_bytes").get<int>(), 4);
  EXPECT_EQ(amp.values.at("optimizer_bytes").get<int>(), 8);
  const config::Loaded fsdp =
      config::read_text(nemo_edited("  sequence_parallel: true\n", "  sequence_parallel: true\n  fsdp: true\n  fsdp_sharding_strategy: grad\n"), "fsdp.yaml");
  EXPECT_EQ(fsdp.values.at("zero").get<int>(), 2);
  const config::Loaded fp8 =
      config::read_text(nemo_edited("  fp8: false\n  fp8_hybrid: false\n", "  fp8: true\n  fp8_hybrid: true\n  fp8_params: true\n"), "fp8.yaml");
  EXPECT_TRUE(fp8.values.at("fp8").get<bool>());
  EXPECT_TRUE(fp8.values.at("fp8_param_gather").get<bool>());
  const config::Loaded plain = config::read_text(nemo_edited("name: mcore_distributed_optim", "name: fused_adam"), "plain.yaml");
  EXPECT_EQ(plain.values.at("zero").get<int>(), 0);
  // A layernorm1p GPT with GeLU and biases (NeMo's GPT-3 configs) is priced with its biases and without the gate.
  const config::Loaded gpt = config::read_text(
      nemo_edited({{"normalization: rmsnorm", "normalization: layernorm1p"}, {"activation: fast-swiglu", "activation: gelu"}, {"bias: false", "bias: true"}}),
      "gpt.yaml");
  EXPECT_EQ(gpt.model_config.at("model_type"), "gpt3");  // biases on every linear layer
  const config::Loaded stated = config::read_file(nemo_example());
  // Two FFN matrices instead of three: 80 x 8192 x 28672 weights fewer, less the biases.
  const double fewer = inline_params(stated.model_config) - inline_params(gpt.model_config);
  EXPECT_GT(fewer, 0.99 * 80 * 8192.0 * 28672);
  EXPECT_LT(fewer, 80 * 8192.0 * 28672);
}

// OmegaConf interpolations NeMo's configs use are resolved (a sibling, a path from the root with or without the
// launcher's `training.` prefix, NeMo's multiply resolver); one sapp does not resolve is named with its field.
TEST(Nemo, InterpolationsAreResolvedOrNamed) {
  const config::Loaded l = config::read_text(nemo_edited("ffn_hidden_size: 28672", "ffn_hidden_size: ${multiply:3584, ${.num_query_groups}}"), "mul.yaml");
  const config::Loaded stated = config::read_file(nemo_example());
  EXPECT_EQ(l.model_config.at("intermediate_size"), stated.model_config.at("intermediate_size"));
  const config::Loaded rooted = config::read_text(nemo_edited("num_layers: 80", "num_layers: ${model.pipeline_model_parallel_size}"), "rooted.yaml");
  EXPECT_EQ(rooted.model_config.at("num_hidden_layers").get<long long>(), 4);
  test::expect_error([&] { (void)config::read_text(nemo_edited("num_layers: 80", "num_layers: ${oc.env:LAYERS}"), "env.yaml"); },
                     "env.yaml: model.num_layers: '${oc.env:LAYERS}' is an OmegaConf interpolation sapp does not resolve");
}

// Errors name the file, the field and the value, as NeMo would refuse them.
TEST(Nemo, BadFieldsAreNamed) {
  test::expect_error([&] { (void)config::read_text(nemo_edited("  fp8: false\n", "  fp8: true\n"), "fp8.yaml"); },
                     "fp8.yaml: model.fp8: true without model.fp8_e4m3 or model.fp8_hybrid");
  test::expect_error([&] { (void)config::read_text(nemo_edited("normalization: rmsnorm", "normalization: scalenorm"), "norm.yaml"); },
                     "norm.yaml: model.normalization: 'scalenorm'");
  test::expect_error([&] { (void)config::read_text(nemo_edited("activation: fast-swiglu", "activation: mish"), "act.yaml"); },
                     "act.yaml: model.activation: 'mish'");
  test::expect_error([&] { (void)config::read_text(nemo_edited("precision: bf16", "precision: int8"), "prec.yaml"); }, "prec.yaml: trainer.precision: 'int8'");
  test::expect_error([&] { (void)config::read_text(nemo_edited("num_layers: 80", "num_layers: many"), "layers.yaml"); },
                     "layers.yaml: model.num_layers: 'many'");
  // trainer.devices -1 (every GPU of the node): the launch's count, asked for.
  const config::Loaded all = config::read_text(nemo_edited("devices: 8", "devices: -1"), "all.yaml");
  test::expect_error(
      [&] {
        app::EstimateRequest r;
        config::fill(r, all, nlohmann::json::object());
      },
      "give --devices");
}

// NeMo's other model classes and tools share its trainer / model shape: each is refused by what it is, never priced as
// a GPT; NeMo's Mamba configs are Megatron-Core's hybrid stacks when they state the pattern.
TEST(Nemo, OtherModelClassesAreRefusedByWhatTheyAre) {
  test::expect_error(
      [&] { (void)config::read_text(nemo_edited("  mcore_gpt: true\n", "  mcore_gpt: true\n  pipeline_model_parallel_split_rank: 0\n"), "t5.yaml"); },
      "t5.yaml: model.pipeline_model_parallel_split_rank: an encoder-decoder model");
  test::expect_error([&] { (void)config::read_text(nemo_edited("  mcore_gpt: true\n", "  mcore_gpt: true\n  hyena:\n    order: 2\n"), "hyena.yaml"); },
                     "hyena.yaml: model.hyena: Hyena operators");
  test::expect_error([&] { (void)config::read_text("name: megatron_bert\n" + io::read_text(nemo_example()), "bert.yaml"); },
                     "bert.yaml: name: 'megatron_bert' is BERT");
  test::expect_error([&] { (void)config::read_text("prune:\n  ffn_hidden_size: 512\n" + io::read_text(nemo_example()), "prune.yaml"); },
                     "prune.yaml: prune: a NeMo model pruning config, not a training one");
  test::expect_error(
      [&] {
        (void)config::read_text(nemo_edited("  mcore_gpt: true\n", "  mcore_gpt: true\n  kd_teacher_restore_from_path: /ckpt/teacher.nemo\n"), "kd.yaml");
      },
      "kd.yaml: model.kd_teacher_restore_from_path: knowledge distillation");
  test::expect_error([&] { (void)config::read_text("name: megatron_mamba\n" + io::read_text(nemo_example()), "mamba.yaml"); },
                     "mamba.yaml: model.hybrid_override_pattern: is not stated");
  const std::string pattern = std::string(40, 'M') + std::string(40, '*');
  const config::Loaded hybrid =
      config::read_text("name: megatron_mamba\n" + nemo_edited({{"  mcore_gpt: true\n", "  mcore_gpt: true\n  hybrid_override_pattern: " + pattern + "\n"},
                                                                {"virtual_pipeline_model_parallel_size: 10", "virtual_pipeline_model_parallel_size: null"}}),
                        "hybrid.yaml");
  EXPECT_EQ(hybrid.model_config.at("model_type"), "nemotron_h");
}

// --emit nemo edits the layout fields of the file given with --from (its model, tokenizer and data kept), and the
// edited file reads back as the plan; a split NeMo cannot state is refused by name, as is a plan without a file.
TEST(Nemo, EmitEditsTheLayoutFieldsAndReadsBack) {
  const config::Loaded original = config::read_file(nemo_example());
  plan::Layout layout;
  layout.dp = 8;
  layout.tp = 8;
  layout.sp = true;
  layout.pp = 2;
  layout.vpp = 1;
  layout.cp = 1;
  layout.mbs = 1;
  layout.micro_batches = 32;
  layout.zero = 1;
  layout.recompute = plan::Recompute::Full;
  config::Plan p;
  p.layout = layout;
  p.devices = 128;
  p.global_batch = 256;
  p.seq = 8192;
  p.num_layers = 80;
  p.split = plan::StageSplit{};
  p.split->layers = {{38, 42}};
  std::vector<std::string> notes;
  const std::string written = config::emit(config::EmitFormat::Nemo, p, &original, "llama3-70b", &notes);
  EXPECT_NE(written.find("type: meta-llama/Meta-Llama-3.1-70B"), std::string::npos);  // the rest kept
  EXPECT_NE(written.find("# consumed_samples = global_step * global_batch_size"), std::string::npos);
  const config::Loaded back = config::read_text(written, "back.yaml");
  app::EstimateRequest r;
  config::fill(r, back, nlohmann::json::object());
  EXPECT_EQ(r.job.devices, 128);
  EXPECT_EQ(r.layout.tp, 8);
  EXPECT_EQ(r.layout.pp, 2);
  EXPECT_EQ(r.layout.vpp, 1);
  EXPECT_EQ(r.layout.cp, 1);
  EXPECT_EQ(r.layout.recompute, plan::Recompute::Full);
  ASSERT_TRUE(back.split.has_value());
  EXPECT_EQ(back.split->layers, p.split->layers);
  p.layout.pp = 4;
  p.layout.vpp = 2;
  p.split->layers = {{9, 10, 10, 10}, {10, 10, 10, 11}};
  test::expect_error([&] { (void)config::emit(config::EmitFormat::Nemo, p, &original, "llama3-70b"); },
                     "NeMo 1.x states a pipeline split only as num_layers_in_first_pipeline_stage");
  test::expect_error([&] { (void)config::emit(config::EmitFormat::Nemo, p, nullptr, "llama3-70b"); }, "edits the NeMo 1.x YAML given with --from");
  // Through the CLI: a search that writes NeMo keeps to what it can state.
  const std::string out = ::testing::TempDir() + "/nemo-plan.yaml";
  const auto cli = test::run_sapp("search --from " + nemo_example() + " --tp 4,8 --pp 2,4 --vpp 1 --cp 1 --zero 0,1,3 --emit nemo -o " + out + " -q");
  EXPECT_EQ(cli.status, 0) << cli.err;
  EXPECT_NE(cli.err.find("--emit nemo: the search keeps to what it can write"), std::string::npos) << cli.err;
  const config::Loaded searched = config::read_file(out);
  EXPECT_EQ(searched.dialect, config::kNemoDialect);
}

}  // namespace
}  // namespace sapp
