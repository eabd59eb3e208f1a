#include "ui/precision_panel.h"

#include "engine/backend/cpu/cpu_kernel_plan.h"
#include "ui/number_spin_box.h"
#include "ui/recipe_panel.h"

#include <QComboBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QLabel>
#include <QSpinBox>
#include <QVBoxLayout>

namespace mantissa::ui {

namespace {

// What the mode's compute type runs on on this machine's CPU, so that a user knows before
// training whether a speedup would be the hardware's (cpu_kernel_plan.h decides it).
QString kernelNote(const RunConfig& c)
{
    const DType compute = PrecisionPolicy(c.precision).layer().compute();
    if (compute == DType::F32 || c.training.device.rfind("cuda", 0) == 0)
        return {};
    const cpu::CpuKernelPlan plan = cpu::planCpuKernels(c.training.cpuKernels);
    const std::string& path = compute == DType::BF16 ? plan.bf16Path : plan.fp16Path;
    QString note =
        QObject::tr("On this CPU, %1 runs %2").arg(fromView(dtypeName(compute)), QString::fromStdString(path));
    try {
        cpu::requireNativeKernels(plan, compute);
    } catch (const Error& e) {
        note = QObject::tr("<b>Training will refuse to start:</b> %1")
                   .arg(QString::fromStdString(e.what()).toHtmlEscaped());
    }
    return note;
}

} // namespace

PrecisionPanel::PrecisionPanel(ConfigDocument* document, QWidget* parent) : ConfigForm(document, parent)
{
    auto* modeBox = new QGroupBox(tr("Precision"));
    auto* modeForm = new QFormLayout(modeBox);
    m_mode = addEnumCombo<PrecisionMode>(modeForm, tr("Mode"), "precision.mode",
                                         [](RunConfig& c, PrecisionMode mode) { c.precision = mode; });
    m_modeNote = new QLabel;
    m_modeNote->setWordWrap(true);
    modeForm->addRow(m_modeNote);
    m_cpuKernels = addEnumCombo<CpuKernels>(modeForm, tr("CPU kernels"), "training.cpu_kernels",
                                            [](RunConfig& c, CpuKernels kernels) { c.training.cpuKernels = kernels; });
    m_kernelNote = new QLabel;
    m_kernelNote->setObjectName("precision.kernel_note");
    m_kernelNote->setWordWrap(true);
    modeForm->addRow(m_kernelNote);

    m_recipe = new RecipePanel(document);

    auto* scaleBox = new QGroupBox(tr("Loss scaling"));
    auto* form = new QFormLayout(scaleBox);
    m_scaleType = addEnumCombo<LossScaleType>(form, tr("Type"), "precision.loss_scale.type",
                                              [](RunConfig& c, LossScaleType type) { c.lossScale.type = type; });
    m_scaleNote = new QLabel;
    m_scaleNote->setWordWrap(true);
    form->addRow(m_scaleNote);
    m_static = addNumber(form, tr("Static value"), "precision.loss_scale.value", 1.0 / 65536, 1e9,
                         [](RunConfig& c, double v) { c.lossScale.value = static_cast<float>(v); });
    m_initial = addNumber(form, tr("Initial scale"), "precision.loss_scale.initial", 1.0 / 65536, 1e9,
                          [](RunConfig& c, double v) { c.lossScale.initial = static_cast<float>(v); });
    m_growth = addNumber(form, tr("Growth factor"), "precision.loss_scale.growth_factor", 1.0, 16.0,
                         [](RunConfig& c, double v) { c.lossScale.growthFactor = static_cast<float>(v); });
    m_backoff = addNumber(form, tr("Backoff factor"), "precision.loss_scale.backoff_factor", 0.01, 1.0,
                          [](RunConfig& c, double v) { c.lossScale.backoffFactor = static_cast<float>(v); });
    m_interval =
        addInteger(form, tr("Growth interval (steps)"), "precision.loss_scale.growth_interval", 1,
                   static_cast<int>(kMaxLossScaleCount), [](RunConfig& c, int v) { c.lossScale.growthInterval = v; });
    m_hysteresis =
        addInteger(form, tr("Hysteresis (overflows)"), "precision.loss_scale.hysteresis", 1,
                   static_cast<int>(kMaxLossScaleCount), [](RunConfig& c, int v) { c.lossScale.hysteresis = v; });
    m_min = addNumber(form, tr("Minimum scale"), "precision.loss_scale.min", 1e-10, 1e9,
                      [](RunConfig& c, double v) { c.lossScale.minScale = static_cast<float>(v); });
    m_max = addNumber(form, tr("Maximum scale"), "precision.loss_scale.max", 1e-10, 1e12,
                      [](RunConfig& c, double v) { c.lossScale.maxScale = static_cast<float>(v); });
    for (NumberSpinBox* s : {m_static, m_initial, m_min, m_max})
        s->setMultiplicativeSteps(true); // scales live on powers of two
    m_growth->setSingleStep(0.5);
    m_backoff->setSingleStep(0.05);

    auto* layout = new QVBoxLayout(this);
    layout->addWidget(modeBox);
    layout->addWidget(m_recipe);
    layout->addWidget(scaleBox);
    layout->addStretch();
    reload();
}

void PrecisionPanel::load(const RunConfig& c)
{
    setEnumComboValue(m_mode, c.precision);
    m_modeNote->setText(fromView(enumEntry(c.precision).description));
    setEnumComboValue(m_cpuKernels, c.training.cpuKernels);
    m_kernelNote->setText(kernelNote(c));
    const LossScaleSpec& ls = c.lossScale;
    setEnumComboValue(m_scaleType, ls.type);
    const LossScaleType type = PrecisionPolicy(c.precision).resolveLossScale(ls.type);
    if (ls.type == LossScaleType::Auto) {
        m_scaleNote->setText(tr("auto: %1 for %2").arg(fromView(enumKey(type)), fromView(enumKey(c.precision))));
    } else {
        m_scaleNote->setText(c.precision == PrecisionMode::Fp32 && type != LossScaleType::None
                                 ? tr("fp32 gradients do not underflow; scaling only costs a multiply")
                                 : QString());
    }
    m_scaleNote->setVisible(!m_scaleNote->text().isEmpty());
    m_static->setValue(ls.value);
    m_initial->setValue(ls.initial);
    m_growth->setValue(ls.growthFactor);
    m_backoff->setValue(ls.backoffFactor);
    m_interval->setValue(static_cast<int>(ls.growthInterval));
    m_hysteresis->setValue(ls.hysteresis);
    m_min->setValue(ls.minScale);
    m_max->setValue(ls.maxScale);
    m_static->setEnabled(type == LossScaleType::Static);
    for (QWidget* w :
         std::initializer_list<QWidget*>{m_initial, m_growth, m_backoff, m_interval, m_hysteresis, m_min, m_max})
        w->setEnabled(type == LossScaleType::Dynamic);
}

} // namespace mantissa::ui
