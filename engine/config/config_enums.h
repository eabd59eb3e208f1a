#pragma once
// The config fields that pick one of a few choices, outside precision (whose enums live with
// the precision policy): their values and, in config_enums.cpp, their tables of keys, display
// names and descriptions (engine/util/enum_table.h), which the parser, the CLI, the UI's combo
// boxes and docs/config.md all follow.
#include "engine/util/enum_table.h"

#include <cstdint>

namespace mantissa {

enum class DatasetKind : std::uint8_t { FashionMnist, Mnist, Synthetic, Text }; // data.dataset
enum class OptimizerKind : std::uint8_t { Sgd, Adam, AdamW };                   // optimizer.type
enum class ScheduleKind : std::uint8_t { Constant, Step, Cosine, OneCycle };    // schedule.type
// training.graphs and training.run_ahead: Auto turns the feature on where it pays (on GPUs).
enum class AutoSwitch : std::uint8_t { Auto, On, Off };
// distributed.allreduce_dtype: the type the gradients are summed across ranks in.
enum class AllReduceType : std::uint8_t { Fp32, Compute };
// distributed.reduction: where the average's division by the world size N happens, which is
// where a 16-bit all-reduce overflows (sum first) or flushes (divide first).
enum class ReductionOrder : std::uint8_t { SumThenDivide, DivideThenSum, SqrtSplit };
// distributed.batch_norm: whose batch a batch-norm layer's statistics are taken over in
// training, this rank's slice or the global batch (docs/distributed.md).
enum class BatchNormSync : std::uint8_t { PerRank, Synchronised };

template <>
std::span<const EnumEntry<DatasetKind>> enumEntries<DatasetKind>();
template <>
std::span<const EnumEntry<OptimizerKind>> enumEntries<OptimizerKind>();
template <>
std::span<const EnumEntry<ScheduleKind>> enumEntries<ScheduleKind>();
template <>
std::span<const EnumEntry<AutoSwitch>> enumEntries<AutoSwitch>();
template <>
std::span<const EnumEntry<AllReduceType>> enumEntries<AllReduceType>();
template <>
std::span<const EnumEntry<ReductionOrder>> enumEntries<ReductionOrder>();
template <>
std::span<const EnumEntry<BatchNormSync>> enumEntries<BatchNormSync>();

} // namespace mantissa
