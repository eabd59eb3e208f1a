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

template <>
std::span<const EnumEntry<DatasetKind>> enumEntries<DatasetKind>();
template <>
std::span<const EnumEntry<OptimizerKind>> enumEntries<OptimizerKind>();
template <>
std::span<const EnumEntry<ScheduleKind>> enumEntries<ScheduleKind>();
template <>
std::span<const EnumEntry<AutoSwitch>> enumEntries<AutoSwitch>();

} // namespace mantissa
