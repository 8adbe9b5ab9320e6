// core/units: every physical quantity and count the data files state, with its unit and plausible range, in one
// table; and the one check that refuses a value outside its range, naming the value in its unit and the likely
// slip ("did you mean 989.4e12?" for a peak stated in TFLOP/s).
//
// The ranges are wide on purpose: they refuse a value stated in the wrong unit or a typo of several orders of
// magnitude, never a real device or model. Sources for the bounds: the largest devices and models published
// (B200 at 2.25e15 dense BF16 FLOP/s, 192 GB HBM at 8e12 B/s; NVLink 5 at 9e11 B/s per direction; 400 Gb/s NICs at
// 5e10 B/s; DeepSeek-V3 hidden size 7168 with 256 experts; vocabularies of 2.6e5), each bound a few orders beyond.
#pragma once

#include <array>
#include <string>
#include <string_view>

namespace sapp::units {

inline constexpr double kGiB = 1073741824.0;  // bytes in a GiB (2^30)

// How a value outside the range is most likely meant.
enum class Hint {
  None,
  Exponent,    // stated with its SI prefix dropped: try value x 10^e for each of `exponents` ("did you mean 450e9?")
  Gibibytes,   // a size stated in GiB where bytes are expected ("did you mean 80 GiB = 85899345920?")
  BytesAsGib,  // a size in bytes where GiB are expected
  Percent,     // a fraction stated in percent ("did you mean 0.8 (80%)?")
  BytesAsMb,   // a size in bytes where MB are expected
};

struct Quantity {
  std::string_view what;  // what the value is, for the message: "a peak rate", "a hidden size"
  std::string_view unit;  // "FLOP/s", "bytes", "B/s", "s", "MB", "" for a plain count
  double low = 0;
  double high = 0;
  bool low_open = false;   // low itself is refused (an efficiency of 0)
  bool high_open = false;  // high itself is refused (a dropout of 1)
  bool whole = false;      // a count: only whole numbers
  Hint hint = Hint::None;
  std::array<int, 3> exponents{};  // for Hint::Exponent, tried in order; 0 ends the list
};

// ---- hardware YAML (data/hardware/*.yaml)
inline constexpr Quantity kPeakFlops{"a peak compute rate", "FLOP/s", 1e12, 1e18, false, false, false, Hint::Exponent, {12, 15, 9}};
inline constexpr Quantity kMemoryBytes{"a device memory", "bytes", 1073741824.0, 1125899906842624.0, false, false, false, Hint::Gibibytes, {}};
inline constexpr Quantity kMemoryGib{"a device memory", "GiB", 1, 1048576, false, false, false, Hint::BytesAsGib, {}};
inline constexpr Quantity kComputeUnits{"a count of streaming multiprocessors", "", 1, 1e4, false, false, true, Hint::None, {}};
inline constexpr Quantity kHbmBandwidth{"a memory bandwidth", "B/s", 1e10, 1e15, false, false, false, Hint::Exponent, {12, 9, 0}};
inline constexpr Quantity kLinkBandwidth{"a per-device link bandwidth", "B/s", 1e8, 1e13, false, false, false, Hint::Exponent, {9, 12, 6}};
inline constexpr Quantity kLatency{"a link latency", "s", 0, 1e-3, false, false, false, Hint::Exponent, {-6, -9, -3}};
inline constexpr Quantity kEfficiency{"an efficiency", "fraction", 0, 1, true, false, false, Hint::Percent, {}};
inline constexpr Quantity kHalfRows{"a GEMM row count", "rows", 0, 1e7, false, false, false, Hint::None, {}};
inline constexpr Quantity kHalfKeys{"an attention key count per query", "keys", 0, 1e7, false, false, false, Hint::None, {}};
inline constexpr Quantity kExpertWidth{"an expert FFN width", "elements", 0, 1e7, false, false, false, Hint::None, {}};
inline constexpr Quantity kLevelDevices{"a device count per unit", "devices", 0, 1e8, false, false, true, Hint::None, {}};

// ---- model configs (HF config.json or YAML with the same keys)
inline constexpr Quantity kHiddenSize{"a hidden size", "", 1, 1e6, false, false, true, Hint::None, {}};
inline constexpr Quantity kLayers{"a layer count", "", 1, 1e5, false, false, true, Hint::None, {}};
inline constexpr Quantity kLayerIndex{"a layer count", "", 0, 1e5, false, false, true, Hint::None, {}};
inline constexpr Quantity kHeads{"a head count", "", 1, 1e5, false, false, true, Hint::None, {}};
inline constexpr Quantity kHeadDim{"a head dimension", "", 1, 1e5, false, false, true, Hint::None, {}};
inline constexpr Quantity kVocab{"a vocabulary size", "", 1, 1e8, false, false, true, Hint::None, {}};
inline constexpr Quantity kFfnWidth{"an FFN width", "", 1, 1e7, false, false, true, Hint::None, {}};
inline constexpr Quantity kRank{"a low-rank width", "", 1, 1e6, false, false, true, Hint::None, {}};
inline constexpr Quantity kPositions{"a token count", "tokens", 1, 1e9, false, false, true, Hint::None, {}};
inline constexpr Quantity kExperts{"an expert count", "", 1, 1e6, false, false, true, Hint::None, {}};
inline constexpr Quantity kSharedExperts{"an expert count", "", 0, 1e6, false, false, true, Hint::None, {}};
inline constexpr Quantity kKernel{"a kernel or patch size", "", 1, 1e4, false, false, true, Hint::None, {}};
inline constexpr Quantity kImageSize{"an image size", "pixels", 1, 1e5, false, false, true, Hint::None, {}};
inline constexpr Quantity kChannels{"a channel count", "", 1, 1e4, false, false, true, Hint::None, {}};
inline constexpr Quantity kVisualTokens{"a token count", "tokens", 1, 1e8, false, false, true, Hint::None, {}};
inline constexpr Quantity kProbability{"a probability", "", 0, 1, false, true, false, Hint::Percent, {}};
inline constexpr Quantity kMlpRatio{"a width ratio", "", 0, 1e3, true, false, false, Hint::None, {}};
inline constexpr Quantity kSparseStep{"a layer step", "", 1, 1e5, false, false, true, Hint::None, {}};

// ---- op profiles (data/op_profiles/*.yaml); the op records hold expressions, checked by the expression language
inline constexpr Quantity kOpCount{"an op count per layer", "", 0, 1e4, false, false, true, Hint::None, {}};
inline constexpr Quantity kFact{"a model fact (0 or 1, or a probability)", "", 0, 1, false, false, false, Hint::None, {}};

// ---- pipeline balancer: layers JSON, manual strategies, measured peaks
inline constexpr Quantity kLayerTime{"a layer time (the measurement's unit, ms in the reference)", "", 0, 1e9, false, false, false, Hint::None, {}};
inline constexpr Quantity kMegabytes{"a memory", "MB", 0, 1e7, false, false, false, Hint::BytesAsMb, {}};
inline constexpr Quantity kPeakMegabytes{"a measured peak memory", "MB", 0, 1e7, false, false, false, Hint::BytesAsMb, {}};
inline constexpr Quantity kBackwardCoef{"a backward coefficient", "", 0, 100, false, false, false, Hint::None, {}};
inline constexpr Quantity kBodyLayers{"a layer count", "", 1, 1e5, false, false, true, Hint::None, {}};
inline constexpr Quantity kStageLayers{"a layer count per stage", "", 0, 1e5, false, false, true, Hint::None, {}};
inline constexpr Quantity kOffset{"a layer offset", "", -1e5, 1e5, false, false, true, Hint::None, {}};
inline constexpr Quantity kStages{"a pipeline stage count", "", 1, 1e4, false, false, true, Hint::None, {}};
inline constexpr Quantity kChunks{"a chunk count", "", 1, 1e3, false, false, true, Hint::None, {}};

// ---- measured runs (sapp calibrate --runs), search YAML, and job sizes (the command-line options use the same limits)
inline constexpr Quantity kDevices{"a device count", "devices", 1, 1e8, false, false, true, Hint::None, {}};
inline constexpr Quantity kGlobalBatch{"a global batch", "sequences", 1, 1e9, false, false, true, Hint::None, {}};
inline constexpr Quantity kSequence{"a sequence length", "tokens", 1, 1e9, false, false, true, Hint::None, {}};
inline constexpr Quantity kDegree{"a parallel degree", "", 1, 1e6, false, false, true, Hint::None, {}};
inline constexpr Quantity kShardGroup{"a shard group size (0: all of DP x CP)", "", 0, 1e8, false, false, true, Hint::None, {}};
inline constexpr Quantity kMicroBatches{"a micro-batch count", "", 1, 1e6, false, false, true, Hint::None, {}};
inline constexpr Quantity kZeroStage{"a ZeRO stage", "", 0, 3, false, false, true, Hint::None, {}};
inline constexpr Quantity kBytesPerElement{"a size per element", "bytes", 0.125, 64, false, false, false, Hint::None, {}};
inline constexpr Quantity kStepTime{"a step time", "s", 1e-6, 1e7, false, false, false, Hint::Exponent, {-3, -6, 0}};
inline constexpr Quantity kTokenRate{"a throughput", "tokens/s", 1e-3, 1e9, false, false, false, Hint::None, {}};
inline constexpr Quantity kOverlap{"an overlap", "fraction", 0, 1, false, false, false, Hint::Percent, {}};
// A published measurement of validation/runs.yaml in its row's metric (a step time, a throughput, TFLOP/s).
inline constexpr Quantity kPublishedValue{"a published measurement", "", 1e-6, 1e12, true, false, false, Hint::None, {}};

// True when `value` lies in the range of `q` (and is whole if `q` counts).
bool within(double value, const Quantity& q);
// Refuses `value` outside the range of `q`: "where: 989.4 is 989 FLOP/s; expected FLOP/s between 1e12 and 1e18
// (did you mean 989.4e12?)". `where` is "file: key"; `raw` is the value as the file wrote it, when known (a whole
// number beyond 2^53 prints exactly). Returns `value`.
double check(double value, const Quantity& q, const std::string& where, const std::string& raw = "");
// The hint alone ("" when none fits), e.g. "did you mean 450e9?".
std::string hint(double value, const Quantity& q);
// `value` in its unit with an SI prefix ("989 FLOP/s", "80 bytes", "3 us"), three significant digits.
std::string in_unit(double value, std::string_view unit);
// A number as people write it in these files: whole numbers exactly up to 1e15, else the shortest of %g with a
// compact exponent ("1e12", "3.5e-06" becomes "3.5e-6").
std::string number(double value);

}  // namespace sapp::units
