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
    EnumEntry<DatasetKind>{DatasetKind::Files, "files", "your files",
                           "Your own data at data.path: an image folder, a CSV or TSV table, NumPy .npy or .npz "
                           "arrays or IDX files (data.format)."},
};

constexpr std::array kDataFormats{
    EnumEntry<DataFormat>{DataFormat::Auto, "auto", "auto",
                          "By the extension (.csv, .tsv, .npy, .npz, .idx, .txt) or, for a folder, its contents."},
    EnumEntry<DataFormat>{DataFormat::ImageFolder, "image-folder", "image folder",
                          "PNG and JPEG images in one subfolder per class (or train/ and test/ holding those)."},
    EnumEntry<DataFormat>{DataFormat::ImageCsv, "image-csv", "images listed in a CSV",
                          "A CSV of image file names (relative to its folder) and labels (class indices or names)."},
    EnumEntry<DataFormat>{DataFormat::Csv, "csv", "CSV table",
                          "Comma-separated numeric features and a label column (data.label_column)."},
    EnumEntry<DataFormat>{DataFormat::Tsv, "tsv", "TSV table",
                          "Tab-separated numeric features and a label column (data.label_column)."},
    EnumEntry<DataFormat>{DataFormat::Npy, "npy", "NumPy .npy",
                          "x.npy and y.npy side by side (x_test.npy and y_test.npy too when there)."},
    EnumEntry<DataFormat>{DataFormat::Npz, "npz", "NumPy .npz",
                          "A .npz archive holding x and y (x_test and y_test too when there)."},
    EnumEntry<DataFormat>{DataFormat::Idx, "idx", "IDX files",
                          "MNIST-format files of any shape: train-images and train-labels (t10k- or test- too)."},
    EnumEntry<DataFormat>{DataFormat::Text, "text", "text",
                          "A text file or folder for byte-level language models (the text dataset)."},
};

constexpr std::array kImageFits{
    EnumEntry<ImageFit>{ImageFit::Resize, "resize", "resize",
                        "Stretched to data.image_size (bilinear), whatever its aspect ratio."},
    EnumEntry<ImageFit>{ImageFit::Crop, "crop", "centre crop",
                        "Scaled (bilinear) until it covers data.image_size, keeping its aspect ratio, then the "
                        "centre cut out."},
};

constexpr std::array kTableHeaders{
    EnumEntry<TableHeader>{TableHeader::Auto, "auto", "auto",
                           "A first row with a cell that is not a number is a header."},
    EnumEntry<TableHeader>{TableHeader::Yes, "yes", "yes", "The first row names the columns."},
    EnumEntry<TableHeader>{TableHeader::No, "no", "no", "Every row is data."},
};

constexpr std::array kDataTasks{
    EnumEntry<DataTask>{DataTask::Auto, "auto", "auto",
                        "Regression for NumPy float or multi-column targets, else classification."},
    EnumEntry<DataTask>{DataTask::Classification, "classification", "classification",
                        "Class indices from 0; softmax cross-entropy; accuracy."},
    EnumEntry<DataTask>{DataTask::Regression, "regression", "regression",
                        "Real-valued targets; mean squared error; RMSE."},
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
std::span<const EnumEntry<DataFormat>> enumEntries<DataFormat>()
{
    return kDataFormats;
}

template <>
std::span<const EnumEntry<ImageFit>> enumEntries<ImageFit>()
{
    return kImageFits;
}

template <>
std::span<const EnumEntry<TableHeader>> enumEntries<TableHeader>()
{
    return kTableHeaders;
}

template <>
std::span<const EnumEntry<DataTask>> enumEntries<DataTask>()
{
    return kDataTasks;
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
