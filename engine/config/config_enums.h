#pragma once
// The config fields that pick one of a few choices, outside precision (whose enums live with
// the precision policy): their values and, in config_enums.cpp, their tables of keys, display
// names and descriptions (engine/util/enum_table.h), which the parser, the CLI, the UI's combo
// boxes and docs/config.md all follow.
#include "engine/util/enum_table.h"

#include <cstdint>

namespace mantissa {

enum class DatasetKind : std::uint8_t { FashionMnist, Mnist, Synthetic, Text, Files }; // data.dataset
// data.format: how the files at data.path are read; auto goes by the extension or the folder's contents.
enum class DataFormat : std::uint8_t { Auto, ImageFolder, ImageCsv, Csv, Tsv, Npy, Npz, Idx, Text };
// data.image_fit: how an image of another size is brought to data.image_size.
enum class ImageFit : std::uint8_t { Resize, Crop };
// data.header: whether a table's first row names its columns.
enum class TableHeader : std::uint8_t { Auto, Yes, No };
// data.task: what a model learns from your files; auto goes by the labels' type (docs/data.md).
enum class DataTask : std::uint8_t { Auto, Classification, Regression };
enum class OptimizerKind : std::uint8_t { Sgd, Adam, AdamW };                // optimizer.type
enum class ScheduleKind : std::uint8_t { Constant, Step, Cosine, OneCycle }; // schedule.type
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
std::span<const EnumEntry<DataFormat>> enumEntries<DataFormat>();
template <>
std::span<const EnumEntry<ImageFit>> enumEntries<ImageFit>();
template <>
std::span<const EnumEntry<TableHeader>> enumEntries<TableHeader>();
template <>
std::span<const EnumEntry<DataTask>> enumEntries<DataTask>();
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
