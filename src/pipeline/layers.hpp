// balance/layers: pipeline-balancing layer descriptors, read from the reference's layers JSON as is.
//
// `layers_description`: HEAD, BODY (one or more kinds, in model order) and TAIL entries with `nb_layer` (required),
// `time` (forward time of one layer for one micro-batch), optional `forward_time`, `memory_parameter` (MB),
// and per recompute kind an activation memory (MB per micro-batch) and optionally a backward time or a
// backward coefficient. A kind is considered for a layer iff its memory key is present and not null. Times as the
// reference's loader: B0 = 2 x time; a kind's backward is its explicit time key when present and non-zero
// (backward_time for no recompute, select_rec_time, select_comm_time, both_comm_select_time, recompute_time),
// else (1 + coef) x B0 with the kind's coef key (backward_coef, select_rec_coef, ...) or the default 0 / 0.04 /
// 0.125 / 0.165 / 0.5. So an explicit backward_time sets the no-recompute backward only, and 0 means unset.
// HEAD and TAIL use the no-recompute rule. All times are in the file's own unit (printed as "time units").
#pragma once

#include <array>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace sapp::balance {

enum class Rc { None = 0, Selective = 1, Comm = 2, Both = 3, Full = 4 };
constexpr int kRcKinds = 5;
const char* to_string(Rc r);
Rc parse_rc(const std::string& text, const std::string& where);

struct BodyType {
  std::string name;
  long long count = 0;
  double forward = 0;                                  // per layer, per micro-batch
  std::array<double, kRcKinds> backward{};             // per kind (valid where considered)
  double param_mb = 0;                                 // static memory per layer
  std::array<std::optional<double>, kRcKinds> act_mb;  // activation MB per micro-batch, per considered kind
  // One layer of this type rebuilt in its backward, per kind, MB (the estimator's recompute working set: the layer's
  // activations less what its kind keeps): a stage holds the largest among the types and kinds it holds. Zero when
  // not stated (a layers file states none; Problem::rebuild_mb then applies to every type).
  std::array<double, kRcKinds> rebuild_mb{};
};

struct LayerSet {
  std::string file;
  double head_forward = 0, head_backward = 0, head_mb = 0;
  double tail_forward = 0, tail_backward = 0, tail_mb = 0;
  // The head's and tail's activation per micro-batch in flight (HEAD / TAIL memory_activation, an extension of the
  // reference, whose head and tail memory is static): held with the first chunk's (the last chunk's) activations,
  // so a stage's peak counts them as often as the schedule holds that chunk.
  double head_act_mb = 0, tail_act_mb = 0;
  // What every stage holds whatever its layers (communication buffers, the allocator reserve, one layer rebuilt in
  // its backward), MB: the file's top-level constant_memory_mb, which `sapp plan --emit-layers` writes (an extension
  // of the reference, whose stages hold their layers only); `sapp balance --constant-memory` adds to it.
  double constant_mb = 0;
  std::vector<BodyType> bodies;  // model order
  std::vector<Rc> kinds;         // recompute kinds every BODY considers (all must agree)
  [[nodiscard]] long long body_layers() const;
  [[nodiscard]] bool has_memory() const { return !kinds.empty(); }
};

LayerSet layers_from_json(const nlohmann::json& tree, const std::string& file);
LayerSet read_layers(const std::string& path);

}  // namespace sapp::balance
