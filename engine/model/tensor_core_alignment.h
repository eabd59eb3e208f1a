#pragma once
// Tensor-core alignment advice: which GEMM and convolution extents of a run are not multiples
// of 8, for the layers that compute in fp16 or bf16, and whether the batch size is. The layer
// table, `mantissa-cli train` and `show`, and the report's model section all show these words.
//
// The rule (NVIDIA, Deep Learning Performance Guide: "Matrix Multiplication Background",
// "Optimizing Fully-Connected Layers", "Optimizing Convolutional Layers"): fp16 and bf16
// tensor cores are used fully when every GEMM dimension is a multiple of 8 elements (16 bytes);
// cuBLAS 11 and cuDNN 7.6.3 on still use them otherwise, but pad or pick slower kernels. A
// linear layer's GEMMs have the batch as M (forward, input gradient) or K (weight gradient),
// and its in and out features as the others; a convolution's implicit GEMM has the input and
// output channels (and channels x kernel area as K). fp32 runs get no advice: true fp32 does not
// use tensor cores at all, and TF32 (training.tf32) asks only multiples of 4.
//
// A GEMM a sub-16-bit recipe quantises wants its own multiple (alignmentRule): per-tensor FP8
// runs on FP8 tensor cores only where M, N and K are multiples of kFp8GemmMultiple
// (cuda_options.h, cuBLASLt's rule); a block format scales blocks of recipeBlockSize along K, so
// a K that is not a multiple leaves a partial block (NVFP4 refuses one). gemmLayerAlignment
// judges a compiled layer by the format it runs in.
//
// In the engine, not the UI, so that every front end gives the same verdict (issue 15).
// Here in model/ rather than precision/: it reads the model's shapes (ModelReport), and
// model/ already depends on precision/, not the other way round.
#include "engine/config/run_config.h"
#include "engine/model/model_validation.h"
#include "engine/precision/gemm_recipe.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace mantissa {

class Layer;

// The tile a 16-bit tensor-core GEMM wants every dimension to be a multiple of: 16 bytes of
// 2-byte elements.
inline constexpr std::int64_t kTensorCoreMultiple = 8;

// Whether a layer computing in `compute` runs its GEMMs on tensor cores that want aligned
// extents: fp16 and bf16 do; fp32 gets no advice.
bool wantsTensorCoreAlignment(DType compute);

// What a GEMM's extents should be multiples of under the format it runs in, and why.
struct AlignmentRule {
    std::int64_t multiple = 0; // 0: no rule (fp32)
    // Only the widths the recipe's blocks run along (Layer::blockedWidths: K of the forward and
    // data-gradient GEMMs), not every extent.
    bool alongK = false;
    std::string format; // "fp16/bf16", "fp8-hybrid", "mxfp8"
    std::string why;    // "fp16/bf16 tensor cores work on tiles of 8, so this layer's GEMMs pad or ..."
    std::string gain;   // what the suggested extents give: "would use them fully"
};

// The rule for a GEMM whose operands `recipes` quantise (the first role quantised decides), or
// that multiplies in `compute` where none does.
AlignmentRule alignmentRule(DType compute, const OperandRecipes& recipes = {});

// One extent that is not a multiple of the rule's (8 for fp16/bf16), and the nearest that are.
struct MisalignedExtent {
    std::string name; // "in features", "body 0 (conv2d): in channels", "batch size"
    std::int64_t value = 0;
    std::int64_t below = 0;         // the next multiple down; 0 when value is below the multiple
    std::int64_t above = 0;         // the next multiple up
    std::string suggestion() const; // "96 or 104", or "8" when there is none below
};

enum class AlignmentVerdict : std::uint8_t {
    NoGemm,  // no matrix multiply or convolution in this layer
    Fp32,    // computes in fp32: no 16-bit tensor cores, no advice
    Aligned, // every extent is a multiple of 8
    Misaligned,
};

// One top-level layer's verdict.
struct LayerAlignment {
    int layer = 0; // index in ModelSpec::layers
    LayerKind type = LayerKind::Linear;
    DType compute = DType::F32;
    AlignmentRule rule;
    std::vector<std::pair<std::string, std::int64_t>> extents; // every extent checked
    std::vector<MisalignedExtent> misaligned;
    AlignmentVerdict verdict = AlignmentVerdict::NoGemm;

    // "yes", "no", "fp32" or "" (no GEMM): the layer table's cell.
    std::string verdictText() const;
    // Why, in a sentence: the layer table's tooltip and the advice lines' tail.
    std::string reason() const;
};

struct TensorCoreAdvice {
    std::vector<LayerAlignment> layers;    // one per layer of the model report
    std::optional<MisalignedExtent> batch; // set when some layer runs 16-bit GEMMs and the batch is not a multiple of 8

    // One line per misaligned 16-bit layer ("layer 5 (linear), fp16: out features = 10 is not
    // a multiple of 8: ...") and one for the batch; empty when there is nothing to advise
    // (every extent aligned, or the run computes in fp32).
    std::vector<std::string> messages() const;
};

// The verdict on one layer that computes in `compute`, from its validated report.
LayerAlignment layerAlignment(const LayerReport& layer, DType compute);
// The verdict on a layer of a compiled model that runs GEMMs itself (Layer::runsGemms), under
// the format its policy gave it: its compute type, or the recipe that quantises its operands.
LayerAlignment gemmLayerAlignment(const Layer& layer);
// The verdict on a batch size for a run that has 16-bit GEMMs; nullopt when it is aligned.
std::optional<MisalignedExtent> misalignedBatch(std::int64_t batchSize);
// "batch size 100 is not a multiple of 8: ...": the batch advice as the training panel and the
// advice lines say it.
std::string batchAdvice(const MisalignedExtent& batch);

// The whole run's advice: each layer's compute dtype from the precision policy (the layer's
// override or the mode's), then its extents and the batch size. A residual block is judged by
// its own dtype; its body's extents are listed with it.
TensorCoreAdvice tensorCoreAdvice(const RunConfig& config, const ModelReport& report);
TensorCoreAdvice tensorCoreAdvice(const RunConfig& config); // validates the model itself

} // namespace mantissa
