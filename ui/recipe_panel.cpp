#include "ui/recipe_panel.h"

#include "engine/model/model.h"
#include "engine/precision/precision_policy.h"
#include "ui/config_document.h"
#include "ui/recipe_format_table_model.h"

#include <QFormLayout>
#include <QGroupBox>
#include <QHeaderView>
#include <QLabel>
#include <QSpinBox>
#include <QTableView>
#include <QVBoxLayout>

#include <nlohmann/json.hpp>

namespace mantissa::ui {

namespace {

// The field's one line (its row in the engine's table) stays first; the panel adds why a user
// would change it.
void explainMore(QWidget* widget, const QString& explanation)
{
    widget->setToolTip(widget->toolTip() + QStringLiteral("\n\n") + explanation);
}

QString yesNo(bool on) { return on ? RecipePanel::tr("on") : RecipePanel::tr("off"); }

bool usesScheme(GemmRecipe recipe, const RecipeOptions& options, ScalingScheme scheme)
{
    return operandFormat(recipe, GemmOperand::Activation, options).format.scheme == scheme;
}

} // namespace

std::string modelJson(const RunConfig& config)
{
    return nlohmann::json::parse(runConfigToJson(config))["model"].dump();
}

RecipePanel::RecipePanel(ConfigDocument* document, QWidget* parent) : ConfigForm(document, parent)
{
    auto* box = new QGroupBox(tr("Recipe"));
    auto* form = new QFormLayout(box);
    m_scaleRule = addField<QComboBox>(form, "precision.recipe.scale_rule");
    explainMore(m_scaleRule, tr("MX recipes: how a block's power-of-two (E8M0) scale follows from its largest "
                                "value. floor is the OCP MX rule and can clip that value (957 becomes 896 in "
                                "MXFP8); ceil and rceil never clip but lose a little range at the bottom."));
    m_amaxHistory = addField<QSpinBox>(form, "precision.recipe.amax_history");
    explainMore(m_amaxHistory, tr("fp8-delayed: how many steps of each tensor's amax the scale looks back over "
                                  "(Transformer Engine's amax_history_len); the scale uses the largest. Short "
                                  "histories follow a growing tensor sooner, long ones clip less after a spike."));
    m_stochastic = addField<QComboBox>(form, "precision.recipe.stochastic_rounding");
    explainMore(m_stochastic, tr("Round the gradients (the GEMM input dy) stochastically, seeded by "
                                 "training.seed so that a run repeats bit for bit: unbiased, so small updates "
                                 "survive on average. auto: on for nvfp4 only, as NVIDIA's recipe does."));
    m_keepFirstLast = addField<QComboBox>(form, "precision.recipe.keep_first_last");
    explainMore(m_keepFirstLast, tr("Compute the first and the last GEMM in the order the model runs them, at any "
                                    "depth, in bf16 without quantising (in a transformer: the first block's query, "
                                    "key and value projections, and the head): they are the most sensitive. auto: "
                                    "on for the 4-bit recipes (mxfp4, nvfp4). A layer's own precision override also "
                                    "leaves its GEMMs unquantised."));
    m_attention = addField<QComboBox>(form, "precision.recipe.attention");
    explainMore(m_attention, tr("Quantise the inputs of attention's two batched products too (the scores Q·Kᵀ and "
                                "the context P·V, each blocked along its own K). auto: off for every recipe, as "
                                "Transformer Engine keeps them in bf16 unless its FP8 attention is enabled."));
    m_passes = addField<QComboBox>(form, "precision.recipe.passes");
    explainMore(m_passes, tr("Which GEMMs the recipe quantises: all (the forward x·Wᵀ, the data gradient dy·W and "
                             "the weight gradient dyᵀ·x), or backward only, the forward multiplying the layer's "
                             "bf16 values as they are (Tseng et al.'s MXFP4 training, arXiv 2502.20586)."));
    m_weightBlocks2d = addField<QComboBox>(form, "precision.recipe.weight_blocks_2d");
    explainMore(m_weightBlocks2d, tr("nvfp4: one E4M3 scale per 16×16 tile of the weights instead of per 16 values "
                                     "along K, so that the forward and the data-gradient GEMMs read the same "
                                     "quantised weights. auto: on, as NVIDIA's recipe does."));
    m_hadamard = addField<QComboBox>(form, "precision.recipe.hadamard_wgrad");
    explainMore(m_hadamard, tr("Rotate both inputs of a linear layer's weight-gradient GEMM along the batch by a "
                               "16×16 random Hadamard transform before quantising: it cancels in the product and "
                               "spreads outliers over 16 values. Signs from training.seed. auto: on for nvfp4, as "
                               "NVIDIA's recipe does."));
    m_powerOfTwo = addField<QComboBox>(form, "precision.recipe.power_of_two_scales");
    explainMore(m_powerOfTwo, tr("fp8-block: round each tile's fp32 scale down to a power of two (DeepSeek-V3's "
                                 "option), so that a dequantised value is a bf16 number. auto: convolutions only, "
                                 "which multiply dequantised values: they then run on the native bf16 kernels."));
    m_note = new QLabel;
    m_note->setObjectName("precision.recipe.note");
    m_note->setWordWrap(true);
    form->addRow(m_note);
    m_coverage = new QLabel;
    m_coverage->setObjectName("precision.recipe.coverage");
    m_coverage->setWordWrap(true);
    m_coverage->setTextInteractionFlags(Qt::TextSelectableByMouse);
    form->addRow(m_coverage);

    m_model = new RecipeFormatTableModel(this);
    m_table = new QTableView;
    m_table->setObjectName("precision.recipe.formats");
    m_table->setModel(m_model);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setSelectionMode(QAbstractItemView::NoSelection);
    m_table->setWordWrap(false);
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    m_table->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    // Exactly as tall as its rows (fitTableHeight): the panel around it scrolls, not the table.
    m_table->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    m_table->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
    m_table->setToolTip(tr("The formats this recipe gives each GEMM operand and their ranges, beside the range "
                           "the tensors measured in a recorded run of this model"));
    m_measuredNote = new QLabel;
    m_measuredNote->setObjectName("precision.recipe.measured");
    m_measuredNote->setWordWrap(true);
    connect(m_measuredNote, &QLabel::linkActivated, this, [this] {
        if (m_measurement)
            emit numericsRequested(m_measurement->runId);
    });

    auto* formats = new QGroupBox(tr("Formats and measured ranges"));
    auto* formatsLayout = new QVBoxLayout(formats);
    formatsLayout->addWidget(m_table);
    formatsLayout->addWidget(m_measuredNote);

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(box);
    layout->addWidget(formats);
    reload();
}

void RecipePanel::setMeasurement(RecipeMeasurement measurement)
{
    m_measuredModel = modelJson(measurement.config);
    m_measurement = std::move(measurement);
    showMeasurement(document()->config());
}

void RecipePanel::load(const RunConfig& c)
{
    const GemmRecipe recipe = PrecisionPolicy(c.precision, c.recipe).recipe();
    setVisible(recipe != GemmRecipe::None);
    m_model->setRecipe(recipe, c.recipe);
    if (recipe == GemmRecipe::None)
        return;
    // An option the recipe does not read stays editable in the file but greyed here.
    m_scaleRule->setEnabled(usesScheme(recipe, c.recipe, ScalingScheme::Mx));
    m_amaxHistory->setEnabled(operandFormat(recipe, GemmOperand::Activation, c.recipe).delayed);
    m_weightBlocks2d->setEnabled(usesScheme(recipe, c.recipe, ScalingScheme::Nvfp4));
    m_powerOfTwo->setEnabled(usesScheme(recipe, c.recipe, ScalingScheme::Fp32Blocks));
    const bool stochastic =
        operandFormat(recipe, GemmOperand::Gradient, c.recipe).format.encoding.rounding == Rounding::Stochastic;
    QString note =
        tr("%1: gradients round stochastically: %2; first and last GEMMs in bf16: %3; weight-gradient "
           "inputs Hadamard-rotated: %4")
            .arg(QString::fromStdString(gemmRecipeName(recipe)), yesNo(stochastic),
                 yesNo(keepsFirstAndLastLayers(recipe, c.recipe)), yesNo(rotatesWeightGradient(recipe, c.recipe)));
    if (usesScheme(recipe, c.recipe, ScalingScheme::Nvfp4))
        note += tr("; weights in 16×16 tiles: %1")
                    .arg(yesNo(operandFormat(recipe, GemmOperand::Weight, c.recipe).format.blockRows > 1));
    if (usesScheme(recipe, c.recipe, ScalingScheme::Fp32Blocks)) {
        const auto rounds = [&c, recipe](bool gemmTakesBlockScales) {
            return withScaleRounding(operandFormat(recipe, GemmOperand::Activation, c.recipe), c.recipe,
                                     gemmTakesBlockScales)
                .format.powerOfTwoScales;
        };
        note += tr("; power-of-two tile scales: %1")
                    .arg(rounds(true)    ? tr("all layers")
                         : rounds(false) ? tr("convolutions")
                                         : tr("none"));
    }
    if (!quantisesPass(GemmPass::Forward, c.recipe))
        note += tr("; the forward GEMMs multiply bf16 values, the formats below are the backward GEMMs'");
    m_note->setText(note + QStringLiteral("."));
    showCoverage(c);
    showMeasurement(c);
    m_table->resizeRowsToContents();
    m_table->setFixedHeight(m_table->horizontalHeader()->sizeHint().height() + m_table->verticalHeader()->length() +
                            2 * m_table->frameWidth());
}

void RecipePanel::showCoverage(const RunConfig& c)
{
    // The engine's own walk over the model's GEMMs (gemm_coverage.h), as training will apply it.
    try {
        const GemmCoverage coverage = plannedGemmCoverage(c.model, c.precision, c.recipe);
        QString text = QString::fromStdString(coverage.summary()).toHtmlEscaped() + QStringLiteral(".");
        if (const std::optional<std::string> warning = coverage.warning())
            text += QStringLiteral("<br><span style=\"color:#b00020\"><b>%1</b> %2</span>")
                        .arg(tr("Warning:"), QString::fromStdString(*warning).toHtmlEscaped());
        m_coverage->setText(text);
    } catch (const ConfigError& e) {
        m_coverage->setText(
            QStringLiteral("<span style=\"color:#b00020\">%1</span>").arg(QString::fromUtf8(e.what()).toHtmlEscaped()));
    }
}

void RecipePanel::showMeasurement(const RunConfig& c)
{
    if (!m_measurement) {
        m_model->setMeasurement(std::nullopt, false);
        m_measuredNote->setText(
            c.numerics.every > 0
                ? tr("Measured ranges: not yet. The next run samples its tensors every %1 steps and fills them in.")
                      .arg(c.numerics.every)
                : tr("Measured ranges: not yet. They come from a run of this model that samples its statistics "
                     "(Training → Statistics every N steps); none has this session."));
        return;
    }
    const RecipeMeasurement& m = *m_measurement;
    if (m_measuredModel != modelJson(c)) {
        m_model->setMeasurement(std::nullopt, false);
        m_measuredNote->setText(tr("Measured ranges: not for this model. The last run that sampled its "
                                   "statistics, %1, trained another one; run this one with statistics to measure it.")
                                    .arg(m.runName.toHtmlEscaped()));
        return;
    }
    const bool sameRecipe = m.config.precision == c.precision && m.config.recipe == c.recipe;
    m_model->setMeasurement(m, sameRecipe);
    QString text = tr("Measured in %1 at step %2 (%3).")
                       .arg(m.runName.toHtmlEscaped())
                       .arg(m.step)
                       .arg(QString::fromStdString(precisionModeName(m.config.precision)));
    if (!sameRecipe)
        text += tr(" Clipping, flushing and SQNR need a run with this recipe and these options.");
    if (m.runId > 0)
        text += tr(" <a href=\"numerics\">Per layer: Numerics tab</a>");
    m_measuredNote->setText(text);
}

} // namespace mantissa::ui
