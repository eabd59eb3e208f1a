#include "engine/config/config_enums.h"

#include <array>

namespace mantissa {

namespace {

constexpr std::array kDatasets{
    EnumEntry<DatasetKind>{DatasetKind::FashionMnist, "fashion-mnist", "Fashion-MNIST",
                           "28x28 clothing images in 10 classes (Debian package dataset-fashion-mnist)."},
    EnumEntry<DatasetKind>{DatasetKind::Mnist, "mnist", "MNIST",
                           "28x28 handwritten digits (its four IDX files, downloaded by hand)."},
    EnumEntry<DatasetKind>{DatasetKind::Synthetic, "synthetic", "synthetic",
                           "Noisy samples around random class prototypes, any shape; needs no files."},
    EnumEntry<DatasetKind>{DatasetKind::Text, "text", "text",
                           "Byte-level text for language models: a file or a directory of text files "
                           "(default: Debian's fortunes), cut into windows of data.context bytes."},
};

constexpr std::array kOptimizers{
    EnumEntry<OptimizerKind>{OptimizerKind::Sgd, "sgd", "SGD",
                             "Stochastic gradient descent with optional (Nesterov) momentum."},
    EnumEntry<OptimizerKind>{OptimizerKind::Adam, "adam", "Adam",
                             "Per-weight step sizes from running moments of the gradient."},
    EnumEntry<OptimizerKind>{OptimizerKind::AdamW, "adamw", "AdamW", "Adam with decoupled weight decay."},
};

constexpr std::array kSchedules{
    EnumEntry<ScheduleKind>{ScheduleKind::Constant, "constant", "constant", "The learning rate stays optimizer.lr."},
    EnumEntry<ScheduleKind>{ScheduleKind::Step, "step", "step", "Multiplied by gamma at each milestone epoch."},
    EnumEntry<ScheduleKind>{ScheduleKind::Cosine, "cosine", "cosine", "Cosine decay from optimizer.lr to min_lr."},
    EnumEntry<ScheduleKind>{ScheduleKind::OneCycle, "one-cycle", "one-cycle",
                            "Rises to max_lr over pct_start of the steps, then anneals."},
};

constexpr std::array kSwitches{
    EnumEntry<AutoSwitch>{AutoSwitch::Auto, "auto", "auto", "On on GPUs, off on the CPU."},
    EnumEntry<AutoSwitch>{AutoSwitch::On, "on", "on", "On everywhere, the CPU included (to test the path)."},
    EnumEntry<AutoSwitch>{AutoSwitch::Off, "off", "off", "Off everywhere."},
};

constexpr std::array kAllReduceTypes{
    EnumEntry<AllReduceType>{AllReduceType::Fp32, "fp32", "fp32",
                             "Gradients summed across ranks in fp32, after each rank unscaled its own."},
    EnumEntry<AllReduceType>{AllReduceType::Compute, "compute", "compute dtype",
                             "Gradients summed in their own 16-bit type, every partial sum rounded to it, "
                             "before unscaling: half the bytes, and fp16's real overflow and flush."},
};

constexpr std::array kReductionOrders{
    EnumEntry<ReductionOrder>{ReductionOrder::SumThenDivide, "sum-then-divide", "sum, then divide by N",
                              "Sum the ranks' gradients, then divide by N: a 16-bit sum can overflow."},
    EnumEntry<ReductionOrder>{ReductionOrder::DivideThenSum, "divide-then-sum", "divide by N, then sum",
                              "Divide each rank's gradient by N, then sum: small 16-bit values can flush."},
    EnumEntry<ReductionOrder>{ReductionOrder::SqrtSplit, "sqrt-split", "divide by sqrt(N) before and after",
                              "Divide by sqrt(N) before the sum and again after it: half the risk of each."},
};

constexpr std::array kBatchNormSyncs{
    EnumEntry<BatchNormSync>{BatchNormSync::PerRank, "per-rank", "per rank",
                             "Each rank normalises with its own slice's statistics: no communication, "
                             "but statistics of a batch N times smaller."},
    EnumEntry<BatchNormSync>{BatchNormSync::Synchronised, "synchronised", "synchronised",
                             "Every batch-norm layer sums its statistics across ranks: the global "
                             "batch's mean and variance, at an all-reduce per layer and pass."},
};

} // namespace

template <>
std::span<const EnumEntry<BatchNormSync>> enumEntries<BatchNormSync>()
{
    return kBatchNormSyncs;
}

template <>
std::span<const EnumEntry<AllReduceType>> enumEntries<AllReduceType>()
{
    return kAllReduceTypes;
}

template <>
std::span<const EnumEntry<ReductionOrder>> enumEntries<ReductionOrder>()
{
    return kReductionOrders;
}

template <>
std::span<const EnumEntry<DatasetKind>> enumEntries<DatasetKind>()
{
    return kDatasets;
}

template <>
std::span<const EnumEntry<OptimizerKind>> enumEntries<OptimizerKind>()
{
    return kOptimizers;
}

template <>
std::span<const EnumEntry<ScheduleKind>> enumEntries<ScheduleKind>()
{
    return kSchedules;
}

template <>
std::span<const EnumEntry<AutoSwitch>> enumEntries<AutoSwitch>()
{
    return kSwitches;
}

} // namespace mantissa
