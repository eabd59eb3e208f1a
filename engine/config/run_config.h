#pragma once
// The run config: model + data + optimizer + schedule + precision + training settings.
// One JSON file drives the GUI, the CLI and the tests; docs/config.md documents every field.
#include "engine/backend/backend.h"
#include "engine/backend/cpu_options.h"
#include "engine/backend/cuda_options.h"
#include "engine/config/config_enums.h"
#include "engine/config/layer_kind.h"
#include "engine/precision/loss_scale_spec.h"
#include "engine/precision/precision_policy.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mantissa {

struct LayerSpec {
    LayerKind type = LayerKind::Linear;
    std::int64_t units = 0;                 // linear
    std::int64_t inputs = 0;                // linear: expected input features (0 = inferred); catches shape drift
    std::int64_t filters = 0;               // conv2d
    std::int64_t kernel = 3;                // conv2d, pools
    std::int64_t stride = 0;                // conv2d, pools; 0 = the layer's default: 1 for conv2d, the kernel
                                            // for pools (non-overlapping windows, as PyTorch and Keras do)
    std::int64_t padding = 0;               // conv2d, pools
    bool bias = true;                       // linear, conv2d
    std::optional<Activation> activation;   // optional fused activation after linear/conv2d ("none": nullopt)
    float rate = 0.5f;                      // dropout probability
    float epsilon = 1e-5f, momentum = 0.1f; // batchnorm
    std::string init;                       // "" (He/Xavier by activation) | "normal:STD" | "uniform:A"
    LayerFormat precision;                  // auto: every role follows the run's mode (or the enclosing layer's)
    std::vector<LayerSpec> body;            // residual: the layers of the residual branch
    ShortcutKind shortcut = ShortcutKind::Identity; // residual
    // Transformer layers (docs/config.md). "units" is also the width of an embedding and the
    // hidden width of an MLP (0 in a transformer block: four times the block's width), and
    // "kernel" the patch size of a patch embedding.
    std::int64_t vocabulary = 0;                            // token_embedding
    std::int64_t heads = 1;                                 // attention, transformer
    std::int64_t length = 0;                                // positional_embedding; 0 = the sequence length
    bool causal = false;                                    // attention, transformer
    NormKind norm = NormKind::LayerNorm;                    // transformer
    InternalPrecision softmax = InternalPrecision::Fp32;    // attention, transformer
    InternalPrecision statistics = InternalPrecision::Fp32; // layernorm, rmsnorm, transformer
    float attentionDropout = 0;                             // attention, transformer
    bool tied = false;                                      // linear: the token embedding's table as weight
};

struct ModelSpec {
    std::vector<std::int64_t> input{1, 28, 28}; // per-sample shape (C, H, W) or (features)
    std::int64_t classes = 10;
    std::vector<LayerSpec> layers;
    // An ONNX model file trained instead of `layers` (docs/onnx.md); "" = the layer list. Its
    // graph's input must be `input` and its output's last dimension `classes`.
    std::string onnx;
    // model.precision_overrides: a layer's full name ("2.transformer.mlp.up") or an ONNX node's
    // name, or a pattern with * and ? matching several, to its format (as a layer's "precision").
    PrecisionOverrides precisionOverrides;
};

struct DataSpec {
    DatasetKind dataset = DatasetKind::FashionMnist;
    // "" = default (MANTISSA_DATA_DIR or the Debian path); for text, the text file or directory
    std::string directory;
    float validationSplit = 0;                                // fraction of the training set held out
    bool normalize = true;                                    // subtract the mean, divide by the std of the train set
    std::int64_t limitTrain = 0, limitTest = 0;               // 0 = all; smaller for quick runs and tests
    std::int64_t syntheticTrain = 8192, syntheticTest = 1024; // synthetic dataset sizes
    // Synthetic data has no files to take its shape from, so the spec carries it; the defaults
    // match ModelSpec's so a default model trains on it. It must agree with model.input/classes.
    std::vector<std::int64_t> syntheticShape{1, 28, 28}; // per-sample shape
    std::int64_t syntheticClasses = 10;
    float syntheticNoise = 1.0f; // std of the noise around each class prototype (prototypes have std 1)
    std::int64_t context = 128;  // text: bytes per window (the sequence length a model sees)
    // Your own files (dataset "files"): where they are and how they are read (docs/data.md).
    std::string path; // a file or folder
    DataFormat format = DataFormat::Auto;
    float testSplit = 0.2f;              // held out as the test set when the source has none of its own
    std::vector<std::int64_t> imageSize; // [height, width]; empty: the first image's size
    ImageFit imageFit = ImageFit::Resize;
    bool skipBadImages = false; // skip (and count) images that cannot be decoded instead of stopping
    TableHeader header = TableHeader::Auto;
    std::int64_t labelColumn = 0; // tables: the label's column, counted from 1; 0: the last column
    DataTask task = DataTask::Auto;
    // Your files: normalise each channel (images) or feature (tables, arrays) on its own rather
    // than every value with one mean and std (the built-in sets keep the latter).
    bool perChannel = true;
    std::int64_t targets = 1; // regression tables: how many target columns, from labelColumn on
    // Training images only (engine/data/augmentation.h): off by default.
    std::int64_t augmentCrop = 0; // pad by N pixels, crop back at a random place; 0: off
    bool augmentFlip = false;     // mirror left-right with probability 1/2
    // Your files: keep the decoded tensors in the decoded-data cache (engine/data/data_cache.h)
    // so that later loads read them instead of decoding; at most cacheLimit MiB of copies.
    bool cache = true;
    std::int64_t cacheLimit = 8192;
};

struct OptimizerSpec {
    OptimizerKind type = OptimizerKind::Sgd;
    float lr = 0.05f;
    float momentum = 0.9f;
    bool nesterov = false;
    float weightDecay = 0;
    float beta1 = 0.9f, beta2 = 0.999f, epsilon = 1e-8f;
    float gradClipNorm = 0; // 0 = no clipping; applied to unscaled gradients
};

struct ScheduleSpec {
    ScheduleKind type = ScheduleKind::Constant;
    std::vector<int> milestones; // step: epochs at which lr *= gamma
    float gamma = 0.1f;
    std::int64_t warmupSteps = 0; // linear warm-up from 0, combines with any type
    float minLr = 0;              // cosine floor
    float maxLr = 0;              // one-cycle peak (0 = 10x lr)
    float pctStart = 0.3f;        // one-cycle: fraction of steps spent rising
};

struct TrainingSpec {
    std::int64_t batchSize = 128;
    int epochs = 1;
    std::int64_t maxSteps = 0; // 0 = no limit
    std::uint64_t seed = 42;
    std::string device = "auto"; // auto | cpu | cuda | cuda:N
    int threads = 0;             // CPU threads, 0 = OMP_NUM_THREADS where set, else all cores
    // CPU: native 16-bit kernels where the CPU has them, or the emulated oracle (cpu_options.h).
    CpuKernels cpuKernels = CpuKernels::Auto;
    bool tf32 = false;           // GPU: fp32 GEMMs and convolutions on TF32 tensor cores
    int cudnnWorkspaceMiB = 256; // GPU: scratch memory a convolution algorithm may use
    // GPU: the per-tensor FP8 recipes' GEMMs on FP8 tensor cores or emulated (cuda_options.h).
    Fp8Gemm fp8Gemm = Fp8Gemm::Auto;
    // Capture the training step once and replay it: auto (on GPUs, as CUDA graphs), on (also
    // on the CPU, as an op tape: it tests the graph path but holds every temporary at once), off.
    AutoSwitch graphs = AutoSwitch::Auto;
    // Queue each step before reading the previous one's record, so the GPU never waits for
    // the host: auto (on GPUs), on (also on the CPU, to test it), off.
    AutoSwitch runAhead = AutoSwitch::Auto;
    std::int64_t evalBatchSize = 1000;
    // A recorded run saves a checkpoint at its end (finished or stopped) and, when this is N > 0,
    // after every Nth epoch as well (storage/run_recorder.h).
    int checkpointEveryEpochs = 0;
    // A recorded run also saves its full training state every N steps (0 = never), between two
    // steps: the states a fork starts from (mantissa-cli fork, storage/run_recorder.h).
    std::int64_t saveStateEvery = 0;
    // A checkpoint file whose weights replace the initial ones (the optimizer and the loss
    // scaler start fresh): fine-tuning an fp32 model in mixed fp16, say. Empty: fresh weights.
    std::string initFrom;
};

// The numerics lens: per-layer statistics every `every` steps (engine/lens).
// numerics.every's largest value, in steps.
inline constexpr int kMaxNumericsEvery = 1000;

// numerics.shadow_every's largest value, in steps.
inline constexpr int kMaxShadowEvery = 1000;

struct NumericsSpec {
    int every = 0; // 0 = off, else 1..kMaxNumericsEvery
    // The shadow error track (engine/lens/shadow_model.h): every N steps the step is compared,
    // layer by layer, with the same step in fp32. 0 = off, else 1..kMaxShadowEvery.
    int shadowEvery = 0;
    bool scaledGradients = false; // gradient histograms of the scaled values instead of the unscaled
};

// Data-parallel training across processes (docs/distributed.md): how gradients are averaged
// over the ranks of an MPI launch. A single process ignores it, unless world_size asks for ranks.
struct DistributedSpec {
    // 0: as many ranks as the launch gives. N > 0: exactly N (a stored N-rank run records its
    // world size here, so re-running its config asks for the same launch).
    int worldSize = 0;
    AllReduceType allReduceType = AllReduceType::Fp32;
    ReductionOrder reduction = ReductionOrder::SumThenDivide;
    BatchNormSync batchNorm = BatchNormSync::PerRank;
    bool operator==(const DistributedSpec&) const = default;
};

struct RunConfig {
    std::string name; // preset name or file stem
    std::string description;
    ModelSpec model;
    DataSpec data;
    OptimizerSpec optimizer;
    ScheduleSpec schedule;
    PrecisionMode precision = PrecisionMode::Fp32;
    LossScaleSpec lossScale;
    RecipeOptions recipe;   // precision.recipe: options of the sub-16-bit recipes (gemm_recipe.h)
    UpdatePrecision update; // precision.master_weights and optimizer_state (master_weights.h)
    TrainingSpec training;
    NumericsSpec numerics;
    DistributedSpec distributed;
};

// Parses JSON text; `origin` (a file path or preset name) prefixes every error message.
// Throws ConfigError naming the field at fault.
RunConfig parseRunConfig(const std::string& json, const std::string& origin);
RunConfig loadRunConfigFile(const std::string& path);
// The rules a config must follow beyond its JSON's types (each field's range, the recipe's
// options): throws ConfigError naming the field, prefixed by `origin`. parseRunConfig applies
// it; a front end that edits a RunConfig asks it too, rather than restating the rules.
void validateRunConfig(const RunConfig& config, const std::string& origin);
std::string runConfigToJson(const RunConfig& config, int indent = 2);

// Whether any GEMM of the run is quantised by a recipe: the mode's, or a format a layer's
// "precision" or model.precision_overrides states for some role.
bool runQuantisesGemms(const RunConfig& config);

} // namespace mantissa
