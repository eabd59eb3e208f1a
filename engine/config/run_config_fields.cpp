// The run config's fields, one row each (config_field.h): where it lives, its label, unit,
// description, legal range and command-line option. The order is docs/config.md's.
#include "engine/config/field_value_types.h"
#include "engine/config/run_config.h"
#include "engine/precision/gemm_recipe.h"

#include <array>
#include <limits>

namespace mantissa {

namespace {

constexpr double kMaxCount = 1e9; // counts of samples and steps: far beyond any run here

bool isTextRun(const RunConfig& c) { return c.data.dataset == DatasetKind::Text; }

bool isFilesRun(const RunConfig& c) { return c.data.dataset == DatasetKind::Files; }

// A recipe run writes its whole recipe object; another run only when it set an option, so that
// the configs stored before the recipes existed are written again byte for byte.
bool hasRecipe(const RunConfig& c) { return runQuantisesGemms(c) || c.recipe != RecipeOptions{}; }

// A single-process run writes no distributed section, as before it existed.
bool isDistributed(const RunConfig& c) { return c.distributed != DistributedSpec{}; }

using R = RunConfig;

const std::array kRunFields{
    row<&R::name>({.path = "name",
                   .label = "Name",
                   .description = "The run's name prefix in the database; a file's stem or the preset's name."}),
    row<&R::description>({.path = "description",
                          .label = "Description",
                          .description = "Free text shown in the run browser and reports.",
                          .write = WriteRule::UnlessDefault}),

    row<&R::model, &ModelSpec::input>(
        {.path = "model.input",
         .label = "Input shape",
         .description = "Per-sample shape: [channels, height, width], [features], or [tokens] of token ids.",
         .minimum = 1,
         .maximum = 1 << 24}),
    row<&R::model, &ModelSpec::classes>(
        {.path = "model.classes",
         .label = "Classes",
         .description = "Values the last layer produces (per token for a language model: the vocabulary).",
         .minimum = 1,
         .maximum = 1 << 24}),
    row<&R::model, &ModelSpec::onnx>(
        {.path = "model.onnx",
         .label = "ONNX model",
         .description = "An ONNX model file to train instead of model.layers; model.input and model.classes "
                        "must be its input's per-sample shape and its output's last dimension.",
         .write = WriteRule::UnlessDefault}),
    row<&R::model, &ModelSpec::precisionOverrides>(
        {.path = "model.precision_overrides",
         .label = "Per-layer formats",
         .description = "Formats of single layers or ONNX nodes at any depth: a full layer name "
                        "(\"2.transformer.mlp.up\") or node name, or a pattern with * and ?, to a format as a "
                        "layer's precision takes (a key, or {\"inputs\", \"weights\", \"gradients\"}).",
         .option = "precision-overrides",
         .write = WriteRule::UnlessDefault}),

    row<&R::data, &DataSpec::dataset>(
        {.path = "data.dataset", .label = "Dataset", .description = "What the model trains on."}),
    row<&R::data, &DataSpec::directory>(
        {.path = "data.directory",
         .label = "Directory",
         .description = "The IDX files' folder (default: MANTISSA_DATA_DIR, else Debian's); for text, a file or "
                        "folder.",
         .option = "data-dir"}),
    row<&R::data, &DataSpec::validationSplit>(
        {.path = "data.validation_split",
         .label = "Validation fraction",
         .description = "The fraction of the training set held out for validation (seeded).",
         .minimum = 0,
         .maximum = 0.9}),
    row<&R::data, &DataSpec::normalize>(
        {.path = "data.normalize",
         .label = "Normalise",
         .description = "Subtract the training set's mean and divide by its standard deviation."}),
    row<&R::data, &DataSpec::limitTrain>({.path = "data.limit_train",
                                          .label = "Training samples (0 = all)",
                                          .unit = "samples",
                                          .description = "Use only the first N training samples; 0: all.",
                                          .minimum = 0,
                                          .maximum = kMaxCount,
                                          .option = "limit-train"}),
    row<&R::data, &DataSpec::limitTest>({.path = "data.limit_test",
                                         .label = "Test samples (0 = all)",
                                         .unit = "samples",
                                         .description = "Use only the first N test samples; 0: all.",
                                         .minimum = 0,
                                         .maximum = kMaxCount,
                                         .option = "limit-test"}),
    row<&R::data, &DataSpec::syntheticTrain>({.path = "data.synthetic_train",
                                              .label = "Synthetic training samples",
                                              .unit = "samples",
                                              .description = "The synthetic dataset's training set size.",
                                              .minimum = 1,
                                              .maximum = kMaxCount}),
    row<&R::data, &DataSpec::syntheticTest>({.path = "data.synthetic_test",
                                             .label = "Synthetic test samples",
                                             .unit = "samples",
                                             .description = "The synthetic dataset's test set size.",
                                             .minimum = 1,
                                             .maximum = kMaxCount}),
    row<&R::data, &DataSpec::syntheticShape>({.path = "data.synthetic_shape",
                                              .label = "Synthetic sample shape",
                                              .description = "The synthetic samples' shape; it must match model.input.",
                                              .minimum = 1,
                                              .maximum = 1 << 24}),
    row<&R::data, &DataSpec::syntheticClasses>(
        {.path = "data.synthetic_classes",
         .label = "Synthetic classes",
         .description = "The synthetic dataset's classes; it must match model.classes.",
         .minimum = 1,
         .maximum = 1 << 24}),
    row<&R::data, &DataSpec::syntheticNoise>(
        {.path = "data.synthetic_noise",
         .label = "Synthetic noise",
         .description = "The noise's std around each class prototype (prototypes have std 1): larger is harder.",
         .minimum = 0,
         .maximum = 1000}),
    row<&R::data, &DataSpec::context>({.path = "data.context",
                                       .label = "Context",
                                       .unit = "bytes",
                                       .description = "Text only: bytes per window, the sequence length a model sees.",
                                       .minimum = 1,
                                       .maximum = 1 << 20,
                                       .option = "context",
                                       .applies = isTextRun}),
    row<&R::data, &DataSpec::path>({.path = "data.path",
                                    .label = "Path",
                                    .description = "Your files: an image folder, a table, .npy or .npz arrays or an "
                                                   "IDX folder (--data PATH).",
                                    .applies = isFilesRun}),
    row<&R::data, &DataSpec::format>({.path = "data.format",
                                      .label = "Format",
                                      .description = "How data.path is read; auto: by its extension or contents.",
                                      .option = "data-format",
                                      .applies = isFilesRun}),
    row<&R::data, &DataSpec::testSplit>(
        {.path = "data.test_split",
         .label = "Test fraction",
         .description = "Held out as the test set (the same samples for every seed) when the files have none.",
         .minimum = 0.01,
         .maximum = 0.9,
         .applies = isFilesRun}),
    row<&R::data, &DataSpec::imageSize>({.path = "data.image_size",
                                         .label = "Image size",
                                         .description = "Images: [height, width] every image is brought to; empty: "
                                                        "the first image's size.",
                                         .minimum = 1,
                                         .maximum = 1 << 14,
                                         .applies = isFilesRun}),
    row<&R::data, &DataSpec::imageFit>({.path = "data.image_fit",
                                        .label = "Image fit",
                                        .description = "Images of another size: stretched, or scaled and centre-"
                                                       "cropped.",
                                        .applies = isFilesRun}),
    row<&R::data, &DataSpec::skipBadImages>(
        {.path = "data.skip_bad_images",
         .label = "Skip bad images",
         .description = "Skip (and count) images that cannot be decoded instead of stopping at the first.",
         .applies = isFilesRun}),
    row<&R::data, &DataSpec::header>({.path = "data.header",
                                      .label = "Header row",
                                      .description = "Tables: whether the first row names the columns.",
                                      .applies = isFilesRun}),
    row<&R::data, &DataSpec::labelColumn>({.path = "data.label_column",
                                           .label = "Label column (0 = last)",
                                           .description = "Tables: the label's column, counted from 1; 0: the last.",
                                           .minimum = 0,
                                           .maximum = 1 << 20,
                                           .applies = isFilesRun}),
    row<&R::data, &DataSpec::perChannel>(
        {.path = "data.per_channel",
         .label = "Normalise per channel",
         .description = "Your files: data.normalize takes each channel (images) or feature's own mean and std; "
                        "off: one for all values.",
         .write = WriteRule::UnlessDefault,
         .applies = isFilesRun}),
    row<&R::data, &DataSpec::task>({.path = "data.task",
                                    .label = "Task",
                                    .description = "Classification (cross-entropy, accuracy) or regression (mean "
                                                   "squared error, RMSE); auto: by the labels' type.",
                                    .option = "task",
                                    .write = WriteRule::UnlessDefault,
                                    .applies = isFilesRun}),
    row<&R::data, &DataSpec::targets>({.path = "data.targets",
                                       .label = "Target columns",
                                       .description = "Regression tables: the target columns, from data.label_column "
                                                      "on (0 there: the last ones).",
                                       .minimum = 1,
                                       .maximum = 1 << 20,
                                       .write = WriteRule::UnlessDefault,
                                       .applies = isFilesRun}),
    row<&R::data, &DataSpec::augmentCrop>(
        {.path = "data.augment_crop",
         .label = "Random crop padding (0 = off)",
         .unit = "pixels",
         .description = "Training images: pad by N pixels and crop back at a random place (seeded); 0: off.",
         .minimum = 0,
         .maximum = 1024,
         .write = WriteRule::UnlessDefault}),
    row<&R::data, &DataSpec::augmentFlip>(
        {.path = "data.augment_flip",
         .label = "Random horizontal flip",
         .description = "Training images: mirror left-right with probability 1/2 (seeded).",
         .write = WriteRule::UnlessDefault}),
    row<&R::data, &DataSpec::cache>({.path = "data.cache",
                                     .label = "Decoded-data cache",
                                     .description =
                                         "Your files: keep the decoded tensors in $XDG_CACHE_HOME/mantissa/data (else "
                                         "~/.cache/mantissa/data) so that later loads read them instead of decoding.",
                                     .write = WriteRule::UnlessDefault,
                                     .applies = isFilesRun}),
    row<&R::data, &DataSpec::cacheLimit>({.path = "data.cache_limit",
                                          .label = "Cache size limit",
                                          .unit = "MiB",
                                          .description = "The decoded-data cache's size: the least recently used "
                                                         "copies go to make room; a larger source is not cached.",
                                          .minimum = 1,
                                          .maximum = 1 << 24,
                                          .write = WriteRule::UnlessDefault,
                                          .applies = isFilesRun}),

    row<&R::optimizer, &OptimizerSpec::type>(
        {.path = "optimizer.type", .label = "Type", .description = "The optimizer."}),
    row<&R::optimizer, &OptimizerSpec::lr>({.path = "optimizer.lr",
                                            .label = "Learning rate",
                                            .description = "The base learning rate.",
                                            .minimum = 0,
                                            .maximum = 1e30}),
    row<&R::optimizer, &OptimizerSpec::momentum>({.path = "optimizer.momentum",
                                                  .label = "Momentum",
                                                  .description = "SGD only.",
                                                  .minimum = 0,
                                                  .maximum = 0.9999}),
    row<&R::optimizer, &OptimizerSpec::nesterov>(
        {.path = "optimizer.nesterov", .label = "Nesterov", .description = "SGD only: Nesterov momentum."}),
    row<&R::optimizer, &OptimizerSpec::weightDecay>(
        {.path = "optimizer.weight_decay",
         .label = "Weight decay",
         .description = "L2 for SGD and Adam, decoupled for AdamW; not applied to biases and norms.",
         .minimum = 0,
         .maximum = 1}),
    row<&R::optimizer, &OptimizerSpec::beta1>(
        {.path = "optimizer.beta1", .label = "β1", .description = "Adam and AdamW.", .minimum = 0, .maximum = 0.9999}),
    row<&R::optimizer, &OptimizerSpec::beta2>({.path = "optimizer.beta2",
                                               .label = "β2",
                                               .description = "Adam and AdamW.",
                                               .minimum = 0,
                                               .maximum = 0.999999}),
    row<&R::optimizer, &OptimizerSpec::epsilon>(
        {.path = "optimizer.epsilon", .label = "ε", .description = "Adam and AdamW.", .minimum = 1e-12, .maximum = 1}),
    row<&R::optimizer, &OptimizerSpec::gradClipNorm>(
        {.path = "optimizer.grad_clip_norm",
         .label = "Clip gradient norm (0 = off)",
         .description = "Clip the gradients' global L2 norm to this, after unscaling; 0: off.",
         .minimum = 0,
         .maximum = 1e30}),

    row<&R::schedule, &ScheduleSpec::type>(
        {.path = "schedule.type", .label = "Type", .description = "The learning-rate schedule."}),
    row<&R::schedule, &ScheduleSpec::milestones>({.path = "schedule.milestones",
                                                  .label = "Milestones",
                                                  .unit = "epochs",
                                                  .description = "step: the epochs at which lr is multiplied by gamma.",
                                                  .minimum = 1,
                                                  .maximum = 1e6}),
    row<&R::schedule, &ScheduleSpec::gamma>({.path = "schedule.gamma",
                                             .label = "γ at each milestone",
                                             .description = "step: the factor at each milestone.",
                                             .minimum = 1e-6,
                                             .maximum = 1}),
    row<&R::schedule, &ScheduleSpec::warmupSteps>({.path = "schedule.warmup_steps",
                                                   .label = "Warm-up steps",
                                                   .unit = "steps",
                                                   .description = "A linear warm-up from 0; it combines with any type.",
                                                   .minimum = 0,
                                                   .maximum = 1e7}),
    row<&R::schedule, &ScheduleSpec::minLr>({.path = "schedule.min_lr",
                                             .label = "Cosine floor",
                                             .description = "cosine: the floor.",
                                             .minimum = 0,
                                             .maximum = 100}),
    row<&R::schedule, &ScheduleSpec::maxLr>({.path = "schedule.max_lr",
                                             .label = "One-cycle peak (0 = 10× lr)",
                                             .description = "one-cycle: the peak learning rate; 0: 10 times lr.",
                                             .minimum = 0,
                                             .maximum = 100}),
    row<&R::schedule, &ScheduleSpec::pctStart>({.path = "schedule.pct_start",
                                                .label = "One-cycle rising fraction",
                                                .description = "one-cycle: the fraction of the steps spent rising.",
                                                .minimum = 0.01,
                                                .maximum = 0.99}),

    row<&R::precision>({.path = "precision.mode",
                        .label = "Mode",
                        .description = "The precision mode: where each tensor lives and how each GEMM rounds.",
                        .option = "precision"}),
    row<&R::update, &UpdatePrecision::masters>(
        {.path = "precision.master_weights",
         .label = "Master weights",
         .description = "The weights the optimizer updates; auto: fp32, or the weights themselves in pure fp16 "
                        "and bf16.",
         .write = WriteRule::UnlessDefault}),
    row<&R::update, &UpdatePrecision::state>(
        {.path = "precision.optimizer_state",
         .label = "Optimizer state",
         .description = "Momentum and Adam's moments; auto: the master weights' dtype.",
         .write = WriteRule::UnlessDefault}),
    row<&R::lossScale, &LossScaleSpec::type>({.path = "precision.loss_scale.type",
                                              .label = "Type",
                                              .description = "Loss scaling; auto: dynamic for mixed-fp16, else none."}),
    row<&R::lossScale, &LossScaleSpec::value>({.path = "precision.loss_scale.value",
                                               .label = "Static value",
                                               .description = "static: the scale.",
                                               .minimum = 1.0 / 65536,
                                               .maximum = 1e9}),
    row<&R::lossScale, &LossScaleSpec::initial>({.path = "precision.loss_scale.initial",
                                                 .label = "Initial scale",
                                                 .description = "dynamic: the starting scale.",
                                                 .minimum = 1.0 / 65536,
                                                 .maximum = 1e9}),
    row<&R::lossScale, &LossScaleSpec::growthFactor>(
        {.path = "precision.loss_scale.growth_factor",
         .label = "Growth factor",
         .description = "dynamic: the factor after growth_interval finite steps.",
         .minimum = 1,
         .maximum = 16}),
    row<&R::lossScale, &LossScaleSpec::backoffFactor>({.path = "precision.loss_scale.backoff_factor",
                                                       .label = "Backoff factor",
                                                       .description = "dynamic: the factor on an overflow.",
                                                       .minimum = 0.01,
                                                       .maximum = 1}),
    row<&R::lossScale, &LossScaleSpec::growthInterval>(
        {.path = "precision.loss_scale.growth_interval",
         .label = "Growth interval",
         .unit = "steps",
         .description = "dynamic: finite steps before the scale grows (at most 2^24: GPUs count in fp32).",
         .minimum = 1,
         .maximum = double(kMaxLossScaleCount)}),
    row<&R::lossScale, &LossScaleSpec::hysteresis>(
        {.path = "precision.loss_scale.hysteresis",
         .label = "Hysteresis (overflows)",
         .description = "dynamic: consecutive overflows before backing off (PyTorch 1, DeepSpeed 2).",
         .minimum = 1,
         .maximum = double(kMaxLossScaleCount)}),
    row<&R::lossScale, &LossScaleSpec::minScale>({.path = "precision.loss_scale.min",
                                                  .label = "Minimum scale",
                                                  .description = "dynamic: the scale's lower bound.",
                                                  .minimum = 1e-10,
                                                  .maximum = 1e9}),
    row<&R::lossScale, &LossScaleSpec::maxScale>({.path = "precision.loss_scale.max",
                                                  .label = "Maximum scale",
                                                  .description = "dynamic: the scale's upper bound.",
                                                  .minimum = 1e-10,
                                                  .maximum = 1e12}),
    row<&R::recipe, &RecipeOptions::scaleRule>({.path = "precision.recipe.scale_rule",
                                                .label = "Scale rule",
                                                .description = "MX recipes: how a block's E8M0 scale is rounded.",
                                                .applies = hasRecipe}),
    row<&R::recipe, &RecipeOptions::amaxHistory>(
        {.path = "precision.recipe.amax_history",
         .label = "Amax history",
         .unit = "steps",
         .description = "fp8-delayed: the steps of amax each tensor's scale looks back over.",
         .minimum = 1,
         .maximum = kMaxAmaxHistory,
         .applies = hasRecipe}),
    row<&R::recipe, &RecipeOptions::stochasticRounding>(
        {.path = "precision.recipe.stochastic_rounding",
         .label = "Stochastic rounding",
         .description = "Gradients rounded stochastically, seeded by training.seed; auto: nvfp4 only.",
         .applies = hasRecipe}),
    row<&R::recipe, &RecipeOptions::keepFirstLast>(
        {.path = "precision.recipe.keep_first_last",
         .label = "Keep first and last GEMMs",
         .description = "The first and last GEMMs, at any depth, in bf16 unquantised; auto: the 4-bit recipes.",
         .applies = hasRecipe}),
    row<&R::recipe, &RecipeOptions::weightBlocks2d>(
        {.path = "precision.recipe.weight_blocks_2d",
         .label = "Weights in 16×16 tiles",
         .description = "nvfp4: weights scaled per 16x16 tile instead of 1x16 blocks; auto: on.",
         .applies = hasRecipe}),
    row<&R::recipe, &RecipeOptions::hadamardWgrad>(
        {.path = "precision.recipe.hadamard_wgrad",
         .label = "Hadamard transform (wgrad)",
         .description = "A 16x16 random Hadamard transform of the weight-gradient GEMM's inputs; auto: nvfp4.",
         .applies = hasRecipe}),
    row<&R::recipe, &RecipeOptions::powerOfTwoScales>(
        {.path = "precision.recipe.power_of_two_scales",
         .label = "Power-of-two tile scales",
         .description = "fp8-block: tile scales rounded down to powers of two; auto: convolutions only.",
         .applies = hasRecipe}),
    row<&R::recipe, &RecipeOptions::attention>(
        {.path = "precision.recipe.attention",
         .label = "Attention products",
         .description = "Attention's two batched products quantise their inputs too; auto: off.",
         .write = WriteRule::UnlessDefault,
         .applies = hasRecipe}),
    row<&R::recipe, &RecipeOptions::passes>(
        {.path = "precision.recipe.passes",
         .label = "Quantised GEMMs",
         .description = "all: the forward and both backward GEMMs; backward: the data- and weight-gradient "
                        "GEMMs only, the forward in bf16.",
         .write = WriteRule::UnlessDefault,
         .applies = hasRecipe}),

    row<&R::training, &TrainingSpec::batchSize>(
        {.path = "training.batch_size",
         .label = "Batch size",
         .unit = "samples",
         .description = "Samples per step; in fp16 and bf16, multiples of 8 suit tensor cores.",
         .minimum = 1,
         .maximum = 65536,
         .option = "batch-size"}),
    row<&R::training, &TrainingSpec::epochs>({.path = "training.epochs",
                                              .label = "Epochs",
                                              .description = "Passes over the training set.",
                                              .minimum = 0,
                                              .maximum = 100000,
                                              .option = "epochs"}),
    row<&R::training, &TrainingSpec::maxSteps>({.path = "training.max_steps",
                                                .label = "Max steps (0 = no limit)",
                                                .unit = "steps",
                                                .description = "Stop after this many optimizer steps; 0: no limit.",
                                                .minimum = 0,
                                                .maximum = kMaxCount,
                                                .option = "max-steps"}),
    row<&R::training, &TrainingSpec::seed>({.path = "training.seed",
                                            .label = "Seed",
                                            .description = "Seeds the initial weights, the data order and dropout.",
                                            .minimum = 0,
                                            .maximum = static_cast<double>(std::numeric_limits<std::int64_t>::max()),
                                            .option = "seed"}),
    row<&R::training, &TrainingSpec::device>({.path = "training.device",
                                              .label = "Device",
                                              .description = "auto, cpu, cuda or cuda:N.",
                                              .option = "device"}),
    row<&R::training, &TrainingSpec::threads>(
        {.path = "training.threads",
         .label = "CPU threads (0 = automatic)",
         .description = "CPU threads; 0: OMP_NUM_THREADS where set, else every core.",
         .minimum = 0,
         .maximum = 1024,
         .option = "threads"}),
    row<&R::training, &TrainingSpec::cpuKernels>(
        {.path = "training.cpu_kernels",
         .label = "CPU kernels",
         .description = "CPU only: the kernels of 16-bit GEMMs and convolutions; auto: native where the CPU has "
                        "them.",
         .option = "cpu-kernels"}),
    row<&R::training, &TrainingSpec::tf32>(
        {.path = "training.tf32",
         .label = "TF32",
         .description = "GPU only: fp32 GEMMs and convolutions on TF32 tensor cores."}),
    row<&R::training, &TrainingSpec::cudnnWorkspaceMiB>(
        {.path = "training.cudnn_workspace_mib",
         .label = "cuDNN workspace",
         .unit = "MiB",
         .description = "GPU only: the scratch memory a cuDNN convolution algorithm may use.",
         .minimum = 0,
         .maximum = 65536}),
    row<&R::training, &TrainingSpec::fp8Gemm>(
        {.path = "training.fp8_gemm",
         .label = "FP8 GEMMs",
         .description = "GPU only: the per-tensor FP8 recipes' GEMMs on FP8 tensor cores or emulated.",
         .write = WriteRule::UnlessDefault}),
    row<&R::training, &TrainingSpec::graphs>(
        {.path = "training.graphs",
         .label = "Step graphs",
         .description = "Capture the step once and replay it: auto on GPUs (CUDA graphs); on also on the CPU."}),
    row<&R::training, &TrainingSpec::runAhead>(
        {.path = "training.run_ahead",
         .label = "Run ahead",
         .description = "Queue each step before reading the previous one's record: auto on GPUs."}),
    row<&R::training, &TrainingSpec::evalBatchSize>({.path = "training.eval_batch_size",
                                                     .label = "Evaluation batch size",
                                                     .unit = "samples",
                                                     .description = "The batch size of evaluation.",
                                                     .minimum = 1,
                                                     .maximum = 1e6}),
    row<&R::training, &TrainingSpec::checkpointEveryEpochs>(
        {.path = "training.checkpoint_every_epochs",
         .label = "Checkpoint every N epochs (0 = at the end only)",
         .unit = "epochs",
         .description = "A recorded run saves a checkpoint at its end and, with N > 0, every Nth epoch.",
         .minimum = 0,
         .maximum = 1e6}),
    row<&R::training, &TrainingSpec::saveStateEvery>(
        {.path = "training.save_state_every",
         .label = "Save training state every N steps (0 = never)",
         .unit = "steps",
         .description = "A recorded run saves its full training state every N steps: the steps a fork can start "
                        "from (mantissa-cli fork).",
         .minimum = 0,
         .maximum = 1e9,
         .option = "save-state-every",
         .write = WriteRule::UnlessDefault}),
    row<&R::training, &TrainingSpec::initFrom>(
        {.path = "training.init_from",
         .label = "Start from checkpoint",
         .description = "A checkpoint whose weights replace the initial ones; empty: fresh weights."}),

    row<&R::numerics, &NumericsSpec::every>(
        {.path = "numerics.every",
         .label = "Statistics every N steps (0 = off)",
         .unit = "steps",
         .description = "The numerics lens: per-layer statistics every N steps; 0: off.",
         .minimum = 0,
         .maximum = kMaxNumericsEvery,
         .option = "numerics-every"}),
    row<&R::numerics, &NumericsSpec::shadowEvery>(
        {.path = "numerics.shadow_every",
         .label = "Shadow fp32 comparison every N steps (0 = off)",
         .unit = "steps",
         .description = "Every N steps, each layer's output and gradients against the same step in fp32; 0: off.",
         .minimum = 0,
         .maximum = kMaxShadowEvery,
         .option = "shadow-every",
         .write = WriteRule::UnlessDefault}),
    row<&R::numerics, &NumericsSpec::scaledGradients>(
        {.path = "numerics.scaled_gradients",
         .label = "Scaled gradients",
         .description = "Gradient statistics of the loss-scaled values instead of the unscaled."}),

    row<&R::distributed, &DistributedSpec::worldSize>(
        {.path = "distributed.world_size",
         .label = "World size (0 = as launched)",
         .unit = "ranks",
         .description = "The ranks the run needs; 0: as many as the launch gives.",
         .minimum = 0,
         .maximum = 65536,
         .applies = isDistributed}),
    row<&R::distributed, &DistributedSpec::allReduceType>(
        {.path = "distributed.allreduce_dtype",
         .label = "All-reduce type",
         .description = "The type gradients are summed across ranks in.",
         .option = "allreduce-dtype",
         .applies = isDistributed}),
    row<&R::distributed, &DistributedSpec::reduction>({.path = "distributed.reduction",
                                                       .label = "Reduction order",
                                                       .description = "Where the average divides by the world size.",
                                                       .option = "reduction",
                                                       .applies = isDistributed}),
    row<&R::distributed, &DistributedSpec::batchNorm>(
        {.path = "distributed.batch_norm",
         .label = "Batch-norm statistics",
         .description = "Batch-norm statistics of each rank's slice or of the global batch.",
         .option = "batch-norm",
         .applies = isDistributed}),
};

} // namespace

std::span<const RunField> runConfigFields() { return kRunFields; }

const RunField* findRunConfigField(std::string_view path)
{
    for (const RunField& field : kRunFields)
        if (field.path == path)
            return &field;
    return nullptr;
}

const RunField& runConfigField(std::string_view path)
{
    if (const RunField* field = findRunConfigField(path))
        return *field;
    assertionFailed("config field missing from runConfigFields", __FILE__, __LINE__);
}

} // namespace mantissa
