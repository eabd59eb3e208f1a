// Issue 17 in the GUI: the precision panel's recipe options (shown only for a recipe, each edit
// one undo step), its table of the recipe's formats with their ranges and, after a run that
// sampled its statistics, the tensors' measured range beside them; and Compare precisions over
// a chosen set of precisions, same seed, shown together.
#include "engine/backend/cpu/cpu_kernel_plan.h"
#include "engine/config/config_field.h"
#include "engine/config/presets.h"
#include "engine/precision/loss_scaler.h"
#include "storage/run_store.h"
#include "tests/ui/quick_config.h"
#include "ui/comparison_view.h"
#include "ui/config_document.h"
#include "ui/numerics_view.h"
#include "ui/plot_widget.h"
#include "ui/precision_panel.h"
#include "ui/recipe_format_table_model.h"
#include "ui/recipe_panel.h"
#include "ui/workbench.h"

#include <QAbstractItemModelTester>
#include <QAction>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QLabel>
#include <QLineEdit>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTabWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QUndoStack>
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>

using namespace mantissa;
using namespace mantissa::ui;
using mantissa::ui::test::quickConfig;

namespace {

void chooseByKey(QComboBox* combo, const char* key)
{
    const int index = combo->findData(QString::fromLatin1(key));
    QVERIFY2(index >= 0, key);
    combo->setCurrentIndex(index);
}

QString cell(const RecipeFormatTableModel* model, RecipeFormatTableModel::Row row, GemmOperand operand,
             int role = Qt::DisplayRole)
{
    return model->data(model->index(row, static_cast<int>(operand)), role).toString();
}

double value(const RecipeFormatTableModel* model, RecipeFormatTableModel::Row row, GemmOperand operand)
{
    return model->data(model->index(row, static_cast<int>(operand)), RecipeFormatTableModel::ValueRole).toDouble();
}

void setMode(Workbench& bench, PrecisionMode mode)
{
    RunConfig c = bench.document()->config();
    c.precision = mode;
    bench.document()->apply(c, "mode");
}

} // namespace

class PrecisionRecipeTest : public QObject {
    Q_OBJECT

private slots:
    // The panel says which GEMMs the recipe reaches, from the engine's own walk over the model,
    // and warns where it reaches none.
    void recipeCoverageIsStatedAndANothingQuantisedRecipeWarns()
    {
        Workbench bench;
        bench.loadPreset("char-gpt");
        auto* coverage = bench.findChild<QLabel*>("precision.recipe.coverage");
        QVERIFY(coverage);
        chooseByKey(bench.findChild<QComboBox*>("precision.mode"), "mxfp8");
        QCOMPARE(coverage->text(), QString("mxfp8: 25 of 25 GEMMs quantised."));
        chooseByKey(bench.findChild<QComboBox*>("precision.recipe.attention"), "on");
        QCOMPARE(coverage->text(), QString("mxfp8: 33 of 33 GEMMs quantised."));
        chooseByKey(bench.findChild<QComboBox*>("precision.mode"), "nvfp4");
        QVERIFY2(coverage->text().startsWith("nvfp4: 29 of 33 GEMMs quantised; kept unquantised: "
                                             "2.transformer.attention.query (keep_first_last: the first GEMM)"),
                 qPrintable(coverage->text()));
        QVERIFY(!coverage->text().contains("Warning"));

        // softmax's one linear layer is both the first and the last GEMM: nvfp4 keeps it.
        bench.loadPreset("softmax");
        chooseByKey(bench.findChild<QComboBox*>("precision.mode"), "nvfp4");
        QVERIFY2(coverage->text().contains("Warning:"), qPrintable(coverage->text()));
        QVERIFY2(coverage->text().contains("quantises none of this model&#39;s 1 GEMMs") ||
                     coverage->text().contains("quantises none of this model's 1 GEMMs"),
                 qPrintable(coverage->text()));
        // Quantised, its 10 logits are not whole blocks of 16: the panel says so before a run.
        chooseByKey(bench.findChild<QComboBox*>("precision.recipe.keep_first_last"), "off");
        QVERIFY2(coverage->text().contains("1.linear's out features (10) is not a multiple of 16"),
                 qPrintable(coverage->text()));
        chooseByKey(bench.findChild<QComboBox*>("precision.mode"), "mxfp4");
        QCOMPARE(coverage->text(), QString("mxfp4: 1 of 1 GEMMs quantised."));
    }

    // The precision panel's kernel note says what the mode's compute type runs on on this CPU,
    // in the engine's words (cpu_kernel_plan.h), and that training will refuse a native request
    // the CPU cannot serve; nothing for fp32 or a GPU run.
    void kernelNoteFollowsTheEnginesPlan()
    {
        Workbench bench;
        bench.loadPreset("mlp");
        auto* note = bench.findChild<QLabel*>("precision.kernel_note");
        QVERIFY(note);
        setMode(bench, PrecisionMode::Fp32);
        QCOMPARE(note->text(), QString());
        setMode(bench, PrecisionMode::MixedBf16);
        const cpu::CpuKernelPlan plan = cpu::planCpuKernels(CpuKernels::Auto);
        QCOMPARE(note->text(), QStringLiteral("On this CPU, bf16 runs %1").arg(QString::fromStdString(plan.bf16Path)));
        setMode(bench, PrecisionMode::MixedFp16);
        QCOMPARE(note->text(), QStringLiteral("On this CPU, fp16 runs %1").arg(QString::fromStdString(plan.fp16Path)));
        // fp16 products have no native kernel on any CPU yet: asking for one is refused by name.
        chooseByKey(bench.findChild<QComboBox*>("training.cpu_kernels"), "native");
        QVERIFY2(note->text().startsWith(QStringLiteral("<b>Training will refuse to start:</b> ")),
                 qPrintable(note->text()));
        RunConfig c = bench.document()->config();
        c.training.device = "cuda";
        bench.document()->apply(c, "device");
        QCOMPARE(note->text(), QString());
    }

    // The spin boxes offer exactly the ranges the engine accepts: their limits are the engine's
    // constants, not numbers typed again in the UI.
    void spinBoxesOfferTheEnginesRanges()
    {
        Workbench bench;
        bench.loadPreset("mlp");
        const auto maximum = [&](const char* name) {
            auto* spin = bench.findChild<QSpinBox*>(QString::fromLatin1(name));
            return spin ? std::optional<int>(spin->maximum()) : std::nullopt;
        };
        QCOMPARE(maximum("precision.loss_scale.growth_interval"), std::optional<int>(kMaxLossScaleCount));
        QCOMPARE(maximum("precision.loss_scale.hysteresis"), std::optional<int>(kMaxLossScaleCount));
        QCOMPARE(maximum("precision.recipe.amax_history"), std::optional<int>(kMaxAmaxHistory));
        QCOMPARE(maximum("numerics.every"), std::optional<int>(kMaxNumericsEvery));
        // One past each is what the engine refuses.
        LossScaleSpec spec;
        spec.type = LossScaleType::Dynamic;
        spec.growthInterval = kMaxLossScaleCount;
        LossScaler(spec, PrecisionMode::MixedFp16);
        spec.growthInterval = kMaxLossScaleCount + 1;
        QVERIFY_THROWS_EXCEPTION(ConfigError, LossScaler(spec, PrecisionMode::MixedFp16));
        RunConfig config = presetConfig("mlp");
        config.recipe.amaxHistory = kMaxAmaxHistory + 1;
        QVERIFY_THROWS_EXCEPTION(ConfigError, validateRunConfig(config, "test"));
    }

    // Every form widget made from a config field shows the engine's row: its limits (cut to
    // what a QSpinBox holds), its label's row, its choices; and an edit in the widget reaches
    // the document through the row.
    void formWidgetsFollowTheEnginesFieldTable()
    {
        Workbench bench;
        bench.loadPreset("mlp");
        int checked = 0;
        for (const RunField& field : runConfigFields()) {
            const QString name = QString::fromUtf8(field.path.data(), qsizetype(field.path.size()));
            QWidget* widget = bench.findChild<QWidget*>(name);
            if (!widget)
                continue; // not every field is in a form (model.input is the model editor's)
            ++checked;
            if (auto* spin = qobject_cast<QSpinBox*>(widget)) {
                QCOMPARE(spin->minimum(), int(std::max(field.minimum, double(std::numeric_limits<int>::min()))));
                QCOMPARE(spin->maximum(), int(std::min(field.maximum, double(std::numeric_limits<int>::max()))));
            } else if (auto* number = qobject_cast<QDoubleSpinBox*>(widget)) {
                // The spin box keeps its limits to its decimals: 2^-16 becomes 1.5258789e-05.
                const auto close = [](double shown, double row) {
                    return std::abs(shown - row) <= 1e-7 * std::abs(row);
                };
                QVERIFY2(close(number->minimum(), field.minimum), qPrintable(name));
                QVERIFY2(close(number->maximum(), field.maximum), qPrintable(name));
            } else if (auto* combo = qobject_cast<QComboBox*>(widget); combo && field.kind() == FieldKind::Choice) {
                QCOMPARE(std::size_t(combo->count()), field.choices().size());
                for (int i = 0; i < combo->count(); ++i)
                    QCOMPARE(combo->itemData(i).toString().toStdString(), std::string(field.choices()[i].key));
            }
            QVERIFY2(widget->toolTip().startsWith(
                         QString::fromUtf8(field.description.data(), qsizetype(field.description.size()))),
                     qPrintable(name));
        }
        // The forms show 54 of the run's fields (the rest are the model editor's, the data
        // split's and the GPU's): a field added to a form raises the count.
        QCOMPARE(checked, 54);
        // An edit reaches the config through the row: the batch-size spin box sets the field.
        auto* batch = bench.findChild<QSpinBox*>("training.batch_size");
        batch->setValue(96);
        QCOMPARE(bench.document()->config().training.batchSize, 96);
        auto* milestones = bench.findChild<QLineEdit*>("schedule.milestones");
        milestones->setText("3, 6");
        emit milestones->editingFinished();
        QCOMPARE(bench.document()->config().schedule.milestones, (std::vector<int>{3, 6}));
        // Text the row refuses leaves the config as it was and shows its value again.
        milestones->setText("three");
        emit milestones->editingFinished();
        QCOMPARE(bench.document()->config().schedule.milestones, (std::vector<int>{3, 6}));
        QCOMPARE(milestones->text(), QStringLiteral("3, 6"));
    }

    void recipeOptionsShowOnlyForRecipesAndEachEditIsOneUndoStep()
    {
        Workbench bench;
        bench.loadPreset("mlp");
        setMode(bench, PrecisionMode::MixedBf16);
        RecipePanel* recipe = bench.precisionPanel()->recipePanel();
        QVERIFY(recipe->isHidden());

        chooseByKey(bench.findChild<QComboBox*>("precision.mode"), "mxfp4");
        QCOMPARE(bench.document()->config().precision, PrecisionMode::Mxfp4);
        QVERIFY(!recipe->isHidden());
        auto* scaleRule = bench.findChild<QComboBox*>("precision.recipe.scale_rule");
        auto* history = bench.findChild<QSpinBox*>("precision.recipe.amax_history");
        auto* stochastic = bench.findChild<QComboBox*>("precision.recipe.stochastic_rounding");
        auto* keep = bench.findChild<QComboBox*>("precision.recipe.keep_first_last");
        auto* tiles = bench.findChild<QComboBox*>("precision.recipe.weight_blocks_2d");
        auto* hadamard = bench.findChild<QComboBox*>("precision.recipe.hadamard_wgrad");
        auto* powerOfTwo = bench.findChild<QComboBox*>("precision.recipe.power_of_two_scales");
        QVERIFY(scaleRule && history && stochastic && keep && tiles && hadamard && powerOfTwo);
        for (QWidget* w :
             std::initializer_list<QWidget*>{scaleRule, history, stochastic, keep, tiles, hadamard, powerOfTwo})
            QVERIFY2(!w->toolTip().isEmpty(), qPrintable(w->objectName()));
        // The scale rule is an MX option, the history a delayed-scaling one, the tiles NVFP4's;
        // the Hadamard transform applies to any recipe (auto: nvfp4 only).
        QVERIFY(scaleRule->isEnabled());
        QVERIFY(!history->isEnabled());
        QVERIFY(!tiles->isEnabled());
        QVERIFY(hadamard->isEnabled());
        QVERIFY(!powerOfTwo->isEnabled()); // fp8-block's option
        auto* note = bench.findChild<QLabel*>("precision.recipe.note");
        QVERIFY2(note->text().contains("first and last GEMMs in bf16: on"), qPrintable(note->text()));

        QUndoStack* undo = bench.document()->undoStack();
        const int before = undo->count();
        chooseByKey(scaleRule, "rceil");
        QCOMPARE(bench.document()->config().recipe.scaleRule, MxScaleRule::RCeil);
        chooseByKey(stochastic, "on");
        QCOMPARE(bench.document()->config().recipe.stochasticRounding, RecipeSwitch::On);
        QVERIFY2(note->text().contains("gradients round stochastically: on"), qPrintable(note->text()));
        chooseByKey(keep, "off");
        QCOMPARE(bench.document()->config().recipe.keepFirstLast, RecipeSwitch::Off);
        QCOMPARE(undo->count(), before + 3);
        // The table follows the options: MX's scale rule shows in the format.
        auto* model = recipe->formatModel();
        QVERIFY2(cell(model, RecipeFormatTableModel::Scale, GemmOperand::Weight).contains("rceil"),
                 qPrintable(cell(model, RecipeFormatTableModel::Scale, GemmOperand::Weight)));

        undo->undo();
        QCOMPARE(bench.document()->config().recipe.keepFirstLast, RecipeSwitch::Auto);
        QCOMPARE(keep->currentData().toString(), QString("auto"));
        undo->undo();
        undo->undo();
        QCOMPARE(bench.document()->config().recipe.scaleRule, MxScaleRule::Floor);
        QCOMPARE(scaleRule->currentData().toString(), QString("floor"));
        QCOMPARE(bench.document()->config().precision, PrecisionMode::Mxfp4);

        chooseByKey(bench.findChild<QComboBox*>("precision.mode"), "fp8-delayed");
        QVERIFY(history->isEnabled());
        QVERIFY(!scaleRule->isEnabled());
        history->setValue(16);
        QCOMPARE(bench.document()->config().recipe.amaxHistory, 16);
        QVERIFY(cell(model, RecipeFormatTableModel::Scale, GemmOperand::Activation).contains("16 steps"));
        undo->undo();
        QCOMPARE(bench.document()->config().recipe.amaxHistory, 1024);
        QCOMPARE(history->value(), 1024);

        // fp8-block: power-of-two tile scales, auto (convolutions only); one undo step to on.
        chooseByKey(bench.findChild<QComboBox*>("precision.mode"), "fp8-block");
        QVERIFY(powerOfTwo->isEnabled());
        QCOMPARE(powerOfTwo->currentData().toString(), QString("auto"));
        QVERIFY2(note->text().contains("power-of-two tile scales: convolutions"), qPrintable(note->text()));
        const int beforePow2 = undo->count();
        chooseByKey(powerOfTwo, "on");
        QCOMPARE(undo->count(), beforePow2 + 1);
        QCOMPARE(bench.document()->config().recipe.powerOfTwoScales, RecipeSwitch::On);
        QVERIFY2(note->text().contains("power-of-two tile scales: all layers"), qPrintable(note->text()));
        chooseByKey(powerOfTwo, "off");
        QVERIFY2(note->text().contains("power-of-two tile scales: none"), qPrintable(note->text()));
        undo->undo();
        undo->undo();
        QCOMPARE(bench.document()->config().recipe.powerOfTwoScales, RecipeSwitch::Auto);

        // NVFP4: the tiles and the Hadamard transform are on by default, each one undo step off.
        chooseByKey(bench.findChild<QComboBox*>("precision.mode"), "nvfp4");
        QVERIFY(tiles->isEnabled());
        QVERIFY2(note->text().contains("Hadamard-rotated: on") && note->text().contains("16×16 tiles: on"),
                 qPrintable(note->text()));
        QCOMPARE(cell(model, RecipeFormatTableModel::Block, GemmOperand::Weight), QString::fromUtf8("16×16"));
        const int beforeNvfp4 = undo->count();
        chooseByKey(tiles, "off");
        chooseByKey(hadamard, "off");
        QCOMPARE(undo->count(), beforeNvfp4 + 2);
        QCOMPARE(bench.document()->config().recipe.weightBlocks2d, RecipeSwitch::Off);
        QCOMPARE(bench.document()->config().recipe.hadamardWgrad, RecipeSwitch::Off);
        QCOMPARE(cell(model, RecipeFormatTableModel::Block, GemmOperand::Weight), QString::fromUtf8("1×16"));
        QVERIFY2(note->text().contains("Hadamard-rotated: off") && note->text().contains("16×16 tiles: off"),
                 qPrintable(note->text()));
        undo->undo();
        undo->undo();
        QCOMPARE(bench.document()->config().recipe, RecipeOptions{});

        chooseByKey(bench.findChild<QComboBox*>("precision.mode"), "fp32");
        QVERIFY(recipe->isHidden());
        QCOMPARE(model->rowCount(), 0);
    }

    void theFormatTableGivesEachOperandsFormatAndRange_data()
    {
        QTest::addColumn<PrecisionMode>("mode");
        QTest::addColumn<GemmOperand>("operand");
        QTest::addColumn<QString>("element");
        QTest::addColumn<QString>("block");
        QTest::addColumn<QString>("scale");
        QTest::addColumn<double>("max");
        QTest::addColumn<double>("minNormal");
        QTest::addColumn<double>("minSubnormal");
        // OCP MX v1.0: E2M1 elements, 32 to an E8M0 scale.
        QTest::newRow("mxfp4 activations") << PrecisionMode::Mxfp4 << GemmOperand::Activation << "FP4 E2M1"
                                           << "1×32"
                                           << "E8M0" << 6.0 << 1.0 << 0.5;
        QTest::newRow("mxfp4 gradients") << PrecisionMode::Mxfp4 << GemmOperand::Gradient << "FP4 E2M1"
                                         << "1×32"
                                         << "E8M0" << 6.0 << 1.0 << 0.5;
        // Transformer Engine's HYBRID: E4M3 forward, E5M2 for the gradients, one fp32 scale per tensor.
        QTest::newRow("fp8-hybrid activations") << PrecisionMode::Fp8Hybrid << GemmOperand::Activation << "FP8 E4M3"
                                                << "whole tensor"
                                                << "fp32 per tensor" << 448.0 << 0.015625 << 0.001953125;
        QTest::newRow("fp8-hybrid weights") << PrecisionMode::Fp8Hybrid << GemmOperand::Weight << "FP8 E4M3"
                                            << "whole tensor"
                                            << "fp32 per tensor" << 448.0 << 0.015625 << 0.001953125;
        QTest::newRow("fp8-hybrid gradients") << PrecisionMode::Fp8Hybrid << GemmOperand::Gradient << "FP8 E5M2"
                                              << "whole tensor"
                                              << "fp32 per tensor" << 57344.0 << 6.103515625e-05 << 1.52587890625e-05;
        // DeepSeek-V3: 128x128 weight tiles.
        QTest::newRow("fp8-block weights") << PrecisionMode::Fp8Block << GemmOperand::Weight << "FP8 E4M3"
                                           << "128×128"
                                           << "fp32 per 128×128 tile" << 448.0 << 0.015625 << 0.001953125;
        // NVIDIA's NVFP4 recipe: 16x16 weight tiles, 1x16 blocks for the others.
        QTest::newRow("nvfp4 weights") << PrecisionMode::Nvfp4 << GemmOperand::Weight << "FP4 E2M1"
                                       << "16×16"
                                       << "E4M3 × fp32 per tensor" << 6.0 << 1.0 << 0.5;
        QTest::newRow("nvfp4 activations") << PrecisionMode::Nvfp4 << GemmOperand::Activation << "FP4 E2M1"
                                           << "1×16"
                                           << "E4M3 × fp32 per tensor" << 6.0 << 1.0 << 0.5;
        QTest::newRow("mxfp6 gradients") << PrecisionMode::Mxfp6 << GemmOperand::Gradient << "FP6 E3M2"
                                         << "1×32"
                                         << "E8M0" << 28.0 << 0.25 << 0.0625;
    }

    void theFormatTableGivesEachOperandsFormatAndRange()
    {
        QFETCH(PrecisionMode, mode);
        QFETCH(GemmOperand, operand);
        QFETCH(QString, element);
        QFETCH(QString, block);
        QFETCH(QString, scale);
        QFETCH(double, max);
        QFETCH(double, minNormal);
        QFETCH(double, minSubnormal);
        Workbench bench;
        bench.loadPreset("mlp");
        setMode(bench, mode);
        RecipeFormatTableModel* model = bench.precisionPanel()->recipePanel()->formatModel();
        QAbstractItemModelTester tester(model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QCOMPARE(model->rowCount(), int(RecipeFormatTableModel::RowCount));
        QCOMPARE(model->columnCount(), 3);
        QCOMPARE(cell(model, RecipeFormatTableModel::Element, operand), element);
        QCOMPARE(cell(model, RecipeFormatTableModel::Block, operand), block);
        QVERIFY2(cell(model, RecipeFormatTableModel::Scale, operand).startsWith(scale),
                 qPrintable(cell(model, RecipeFormatTableModel::Scale, operand)));
        QCOMPARE(value(model, RecipeFormatTableModel::Max, operand), max);
        QCOMPARE(value(model, RecipeFormatTableModel::MinNormal, operand), minNormal);
        QCOMPARE(value(model, RecipeFormatTableModel::MinSubnormal, operand), minSubnormal);
        QCOMPARE(cell(model, RecipeFormatTableModel::Max, operand), QString::number(max, 'g', 6));
        QCOMPARE(value(model, RecipeFormatTableModel::SpanBinades, operand), std::log2(max / minSubnormal));
        // Nothing measured yet, and the panel says so.
        QCOMPARE(cell(model, RecipeFormatTableModel::MeasuredAmax, operand), QString::fromUtf8("—"));
        auto* measured = bench.findChild<QLabel*>("precision.recipe.measured");
        QVERIFY2(measured->text().contains("not yet"), qPrintable(measured->text()));
    }

    void formatLimitsReadAsPowersOfTwoBelowOne()
    {
        QCOMPARE(formatLimitText(448), QString("448"));
        QCOMPARE(formatLimitText(57344), QString("57344"));
        QCOMPARE(formatLimitText(7.5), QString("7.5"));
        QCOMPARE(formatLimitText(0.001953125), QString("0.001953 (2^-9)"));
        QCOMPARE(formatLimitText(0.5), QString("0.5 (2^-1)"));
    }

    // After a run that sampled its statistics, the table puts the tensors' measured range beside
    // the formats', and the quantisation's figures only while the recipe is the run's.
    void aRunWithStatisticsFillsTheMeasuredRanges()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        Workbench bench;
        QVERIFY(bench.setDatabasePath(dir.filePath("runs.sqlite")));
        bench.loadPreset("mlp");
        RunConfig c = quickConfig(bench.document()->config(), 8, 512);
        c.precision = PrecisionMode::Mxfp4;
        c.numerics.every = 4;
        bench.document()->apply(c, "quick mxfp4 run with statistics");
        RecipePanel* recipe = bench.precisionPanel()->recipePanel();
        QVERIFY2(recipe->measuredNote()->text().contains("next run samples its tensors every 4 steps"),
                 qPrintable(recipe->measuredNote()->text()));
        QSignalSpy finished(&bench, &Workbench::runFinished);
        QVERIFY(bench.startRun());
        QTRY_VERIFY_WITH_TIMEOUT(finished.count() == 1, 120000);

        QVERIFY(recipe->measurement().has_value());
        QCOMPARE(recipe->measurement()->step, qint64(8));
        RecipeFormatTableModel* model = recipe->formatModel();
        // The figures the engine measured at that step, read from the run's record: per operand,
        // every GEMM input's quantisation merged, and the weights' per-tensor amax.
        const NumericsRecord record = bench.store()->numerics(recipe->measurement()->runId, 8);
        std::map<GemmOperand, QuantStats> engine;
        for (const GemmInputNumerics& g : record.gemmInputs)
            engine[g.operand].merge(g.stats);
        float weightAmaxLow = INFINITY, weightAmaxHigh = 0;
        for (const TensorNumerics& t : record.tensors)
            if (t.kind == TensorKind::Weight && t.tensor.ends_with(".weight")) {
                weightAmaxLow = std::min(weightAmaxLow, t.stats.amax);
                weightAmaxHigh = std::max(weightAmaxHigh, t.stats.amax);
            }
        QVERIFY(weightAmaxHigh > weightAmaxLow); // the mlp's weights differ in range
        QCOMPARE(cell(model, RecipeFormatTableModel::MeasuredAmax, GemmOperand::Weight),
                 QString::fromUtf8("%1 – %2").arg(QString::number(weightAmaxLow, 'g', 3),
                                                  QString::number(weightAmaxHigh, 'g', 3)));
        // A cell's number, without its unit: "12.34 %" -> 12.34, "23.4 dB" -> 23.4.
        const auto number = [](const QString& text, const char* unit) {
            bool ok = false;
            const double v = text.endsWith(unit) ? text.chopped(int(std::strlen(unit))).trimmed().toDouble(&ok) : NAN;
            return ok ? v : NAN;
        };
        for (const auto& entry : enumEntries<GemmOperand>()) {
            const GemmOperand operand = entry.value;
            const OperandMeasurement& m = (*recipe->measurement())[operand];
            QVERIFY2(m.tensors > 0, entry.key.data());
            QVERIFY(m.amaxHigh >= m.amaxLow && m.amaxLow > 0);
            QVERIFY2(cell(model, RecipeFormatTableModel::MeasuredAmax, operand) != QString::fromUtf8("—"),
                     entry.key.data());
            QVERIFY(value(model, RecipeFormatTableModel::MeasuredSpan, operand) > 0);
            // The run used this recipe: its GEMM inputs' clipping, flushing and SQNR are shown,
            // each the engine's figure to the digits the cell gives (2 decimals of a percent,
            // 1 of a dB).
            QVERIFY2(engine.count(operand) && engine[operand].blocks > 0, entry.key.data());
            const QuantStats& q = engine[operand];
            const QString clipped = cell(model, RecipeFormatTableModel::ClippedBlocks, operand);
            const QString flushed = cell(model, RecipeFormatTableModel::Flushed, operand);
            const QString sqnr = cell(model, RecipeFormatTableModel::Sqnr, operand);
            QVERIFY2(std::fabs(number(clipped, "%") - 100.0 * q.clippedBlockFraction()) <= 0.005 + 1e-9,
                     qPrintable(QStringLiteral("%1 clipped: %2 shown, %3 measured")
                                    .arg(entry.key.data(), clipped)
                                    .arg(100.0 * q.clippedBlockFraction())));
            QVERIFY2(std::fabs(number(flushed, "%") - 100.0 * q.flushedFraction()) <= 0.005 + 1e-9,
                     qPrintable(QStringLiteral("%1 flushed: %2 shown, %3 measured")
                                    .arg(entry.key.data(), flushed)
                                    .arg(100.0 * q.flushedFraction())));
            // MXFP4 keeps 2 mantissa bits: the noise is real, the ratio finite.
            QVERIFY2(std::isfinite(q.sqnrDb()), entry.key.data());
            QVERIFY2(std::fabs(number(sqnr, "dB") - q.sqnrDb()) <= 0.05 + 1e-9,
                     qPrintable(
                         QStringLiteral("%1 SQNR: %2 shown, %3 measured").arg(entry.key.data(), sqnr).arg(q.sqnrDb())));
        }
        QVERIFY2(recipe->measuredNote()->text().contains("at step 8"), qPrintable(recipe->measuredNote()->text()));

        // A block format rescales every block: the tensors' span is not held against it...
        const QModelIndex gradientSpan = model->index(RecipeFormatTableModel::MeasuredSpan, int(GemmOperand::Gradient));
        QVERIFY(!model->data(gradientSpan, Qt::BackgroundRole).isValid());
        // ...one scale per tensor is: the gradients span more binades than E4M3's 17.8 holds.
        setMode(bench, PrecisionMode::Fp8E4m3);
        QVERIFY2(value(model, RecipeFormatTableModel::MeasuredSpan, GemmOperand::Gradient) > 17.8,
                 qPrintable(cell(model, RecipeFormatTableModel::MeasuredSpan, GemmOperand::Gradient)));
        QVERIFY(model->data(gradientSpan, Qt::BackgroundRole).isValid());

        // Another recipe on the same model: the ranges still apply, the clipping does not.
        setMode(bench, PrecisionMode::Nvfp4);
        QVERIFY(cell(model, RecipeFormatTableModel::MeasuredAmax, GemmOperand::Weight) != QString::fromUtf8("—"));
        QCOMPARE(cell(model, RecipeFormatTableModel::ClippedBlocks, GemmOperand::Weight), QString::fromUtf8("—"));
        QVERIFY2(recipe->measuredNote()->text().contains("need a run with this recipe"),
                 qPrintable(recipe->measuredNote()->text()));

        // The note's link opens the run's GEMM inputs in the Numerics tab.
        auto* rightTabs = bench.findChild<QTabWidget*>("rightTabs");
        rightTabs->setCurrentIndex(0);
        emit recipe->measuredNote()->linkActivated("numerics");
        QCOMPARE(rightTabs->currentWidget(), static_cast<QWidget*>(bench.numerics()));

        // Another model: the measurement is not this one's.
        RunConfig wider = bench.document()->config();
        wider.model.layers[1].units *= 2;
        bench.document()->apply(wider, "wider first layer");
        QCOMPARE(cell(model, RecipeFormatTableModel::MeasuredAmax, GemmOperand::Weight), QString::fromUtf8("—"));
        QVERIFY2(recipe->measuredNote()->text().contains("not for this model"),
                 qPrintable(recipe->measuredNote()->text()));
        bench.document()->undoStack()->undo();
        QVERIFY(cell(model, RecipeFormatTableModel::MeasuredAmax, GemmOperand::Weight) != QString::fromUtf8("—"));
    }

    void eachComparedConfigDiffersOnlyInPrecision()
    {
        RunConfig c;
        c.precision = PrecisionMode::MixedFp16;
        c.lossScale.type = LossScaleType::Static;
        c.training.seed = 7;
        const QList<RunConfig> runs =
            comparisonConfigs(c, {PrecisionMode::Fp32, PrecisionMode::MixedFp16, PrecisionMode::Nvfp4});
        QCOMPARE(runs.size(), 3);
        QCOMPARE(runs[0].precision, PrecisionMode::Fp32);
        QCOMPARE(runs[0].lossScale.type, LossScaleType::Auto);
        QCOMPARE(runs[1].lossScale.type, LossScaleType::Static); // the config's own keeps its scaling
        QCOMPARE(runs[2].lossScale.type, LossScaleType::Auto);
        for (const RunConfig& r : runs)
            QCOMPARE(r.training.seed, std::uint64_t(7));
    }

    void thePrecisionSetDefaultsToFp32AndTheConfigsModeAndIsRemembered()
    {
        Workbench bench;
        bench.loadPreset("mlp");
        PrecisionSetMenu* set = bench.comparisonPrecisions();
        QCOMPARE(set->modes(PrecisionMode::MixedBf16), (QList{PrecisionMode::Fp32, PrecisionMode::MixedBf16}));
        QCOMPARE(set->modes(PrecisionMode::Fp32), (QList{PrecisionMode::Fp32, PrecisionMode::MixedFp16}));
        set->modeAction(PrecisionMode::Nvfp4)->setChecked(true);
        set->modeAction(PrecisionMode::Bf16)->setChecked(true);
        QCOMPARE(set->modes(PrecisionMode::MixedBf16),
                 (QList{PrecisionMode::Fp32, PrecisionMode::MixedBf16, PrecisionMode::Bf16, PrecisionMode::Nvfp4}));
        QVERIFY2(bench.compareAction()->toolTip().contains("nvfp4"), qPrintable(bench.compareAction()->toolTip()));

        const QByteArray layout = bench.saveLayout();
        Workbench other;
        QCOMPARE(other.comparisonPrecisions()->checkedKeys(), (QStringList{"config", "fp32"}));
        other.restoreLayout(layout);
        QCOMPARE(other.comparisonPrecisions()->checkedKeys(), set->checkedKeys());
        // An unknown key (a mode of a newer version) is ignored, not an error.
        other.comparisonPrecisions()->setCheckedKeys({"fp32", "fp2-future"});
        QCOMPARE(other.comparisonPrecisions()->checkedKeys(), QStringList{"fp32"});

        // One precision is no comparison: refused with the reason.
        set->setCheckedKeys({"fp32"});
        QVERIFY(!bench.startComparison());
        QVERIFY2(bench.compareAction()->toolTip().contains("two or more"),
                 qPrintable(bench.compareAction()->toolTip()));
    }

    void comparingThreePrecisionsTrainsThemWithOneSeedAndOverlaysThem()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        Workbench bench;
        QVERIFY(bench.setDatabasePath(dir.filePath("runs.sqlite")));
        bench.loadPreset("mlp");
        RunConfig c = quickConfig(bench.document()->config(), 12, 1024);
        c.precision = PrecisionMode::MixedBf16;
        c.training.seed = 11;
        bench.document()->apply(c, "quick comparison");
        bench.comparisonPrecisions()->setCheckedKeys({"config", "fp32", "fp8-hybrid"});
        QSignalSpy compared(&bench, &Workbench::comparisonFinished);
        QVERIFY(bench.startComparison());
        QTRY_VERIFY_WITH_TIMEOUT(compared.count() == 1, 180000);

        QCOMPARE(bench.comparison()->runCount(), 3);
        for (PlotWidget* plot : bench.comparison()->plots().mid(0, 2)) {
            QCOMPARE(plot->graphCount(), 3);
            for (int i = 0; i < 3; ++i)
                QVERIFY2(plot->graph(i)->dataCount() > 0, qPrintable(plot->graph(i)->name()));
        }
        QVERIFY2(bench.comparison()->plots()[0]->graph(2)->name().contains("fp8-hybrid"),
                 qPrintable(bench.comparison()->plots()[0]->graph(2)->name()));

        const auto stored = bench.store()->listRuns();
        QCOMPARE(stored.size(), 3);
        QStringList precisions;
        for (const auto& run : stored) {
            QVERIFY(run.groupId.has_value());
            QCOMPARE(run.groupId, stored[0].groupId);
            const RunConfig config = parseRunConfig(run.configJson.toStdString(), "stored run");
            QCOMPARE(config.training.seed, std::uint64_t(11));
            precisions << run.precision;
        }
        precisions.sort();
        QCOMPARE(precisions, (QStringList{"fp32", "fp8-hybrid", "mixed-bf16"}));
    }
};

QTEST_MAIN(PrecisionRecipeTest)
#include "precision_recipe_test.moc"
